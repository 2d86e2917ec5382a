"""Checks bench/compute.py's arithmetic without a GPU: runs it with
bench/check/compute_stub_worker.py as its worker (whose bare rate drifts by
10% a run) and checks that every case's ratio is what the stub was told to
give, to 0.1%: which holds only if each case is compared with the bare runs
beside it, not with a round's first and last, that a capped launch
loop's time and rate within it are told apart, and that a switched
process's caps are given of its own uncapped rate.  Twice: a process per
run, and with --interleave --switched (long-lived processes taking turns).

    python3 compute_check.py BENCH_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

bench = sys.argv[1]
expected = {"no-share": [0.97], "cap 10": [0.10], "cap 30": [0.30], "cap 50": [0.50], "cap 70": [0.70],
            "cap 90": [0.90], "share 30": [0.96], "25/75": [0.25, 0.75], "50/50": [0.50, 0.50],
            "10/20/30/40": [0.10, 0.20, 0.30, 0.40], "bare": [1.0]}


# --switched: one process, its vGPU switched by the (stand-in) mediator's
# reload between a 50% share alone (all of the GPU but the gate's cost) and
# each cap; and each cap's rate as a part of that process's uncapped one.
switched = {"switched share": [0.96], "switched cap 10": [0.10], "switched cap 30": [0.30],
            "switched cap 50": [0.50], "switched cap 70": [0.70], "switched cap 90": [0.90]}
HERE = os.path.dirname(os.path.abspath(__file__))


def check(extra):
    """Runs compute.py with EXTRA arguments; the number of failures."""
    want_rows = dict(expected, **(switched if "--switched" in extra else {}))
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, COMPUTE_WORKER=os.path.join(HERE, "compute_stub_worker.py"), STUB_DIR=tmp,
                   COMPUTE_MEDIATORD=os.path.join(HERE, "compute_stub_mediatord.py"))
        env.pop("LD_PRELOAD", None)
        out = os.path.join(tmp, "out.json")
        # A build directory with no vgpu in it: the stub needs none, and the
        # loader only warns about a preload it cannot find.
        # One loop (the two share every line of the benchmark but the turns' lines, the launch loop's),
        # so that the check starts a few dozen processes, not a hundred and more.
        cmd = [sys.executable, os.path.join(bench, "compute.py"), os.path.join(tmp, "no-build"), "--rounds", "2",
               "--loops", "launch", "--json", out, "--only", ",".join(c for c in expected if c != "bare")]
        r = subprocess.run(cmd + extra, env=env, capture_output=True, text=True, timeout=300)
        print(" ".join(extra) or "(a process per run)")
        print(r.stdout)
        if r.returncode != 0:
            print(f"FAIL compute.py {' '.join(extra)} exited {r.returncode}: {r.stderr[-2000:]}")
            return 1
        rows = json.load(open(out))["rows"]
    failed = 0
    seen = set()
    for row in rows:
        seen.add((row["loop"], row["case"]))
        want = want_rows.get(row["case"])
        if want is None:
            print(f"FAIL {row['loop']} {row['case']}: a row not asked for")
            failed += 1
            continue
        if len(row["each"]) != len(want) or any(abs(g - w) > 0.001 for g, w in zip(row["each"], want)):
            print(f"FAIL {row['loop']} {row['case']}: {row['each']}, expected {want}")
            failed += 1
        rounds = 3 if extra and len(want) == 1 else 2  # --interleave 3 is for the one-tenant cases
        if row["case"] != "bare" and len(row["together"]) != rounds:
            print(f"FAIL {row['loop']} {row['case']}: {len(row['together'])} rounds, expected {rounds}")
            failed += 1
    missing = {("launch", c) for c in want_rows} - seen
    if missing:
        print(f"FAIL no row for {sorted(missing)}")
        failed += 1
    for case, held, going in (("cap 10", 11.1, 90.0), ("cap 50", 55.6, 90.0), ("cap 90", 100.0, 90.0),
                              ("share 30", 100.0, 96.0)):
        line = f"launch {case}: could launch {held:.1f}% of the time (steps under 2 ms), at {going:.1f}% of bare"
        if line not in r.stdout:
            print(f"FAIL no line '{line}'")
            failed += 1
    for cap, own in ((10, 10.4), (50, 52.1), (70, 72.9)):
        line = f"launch switched cap {cap}: {own:.1f}% of the same process's rate uncapped"
        if ("--switched" in extra) != (line in r.stdout):
            print(f"FAIL {'no' if '--switched' in extra else 'a'} line '{line}'")
            failed += 1
    if "neighbouring bare runs differ by 10.0%" not in r.stdout:
        print("FAIL the bare runs' noise floor is not the stub's 10%")
        failed += 1
    return failed


sys.exit(1 if check([]) + check(["--interleave", "3", "--switched"]) else 0)
