"""A stand-in for bench/compute_worker.py (bench/check/compute_check.py
points bench/compute.py at it through COMPUTE_WORKER): it speaks the
worker's protocol (`ready`, a start time on stdin, one JSON line) and
reports a rate made up from how it was run, so that the benchmark's
arithmetic can be checked without a GPU.

The bare rate drifts: each bare run (a process's or, with --serve, a
measurement's) is 10% faster than the one before (a count in $STUB_DIR),
and a run under vgpu gets the rate halfway between the bare runs before
and after it, times what its case should give: `VGPU_COMPUTE_SHARE`
percent for a cap or a tenant beside others, 0.96 for the work-conserving
share alone (its BAR0 file is `share*`: the gate's cost), 0.97 with no
share; a mediated one reads its vGPU's share and mode from the benchmark's
mediator config at each run (a `cap` of its share, else 0.96 alone).  The
benchmark, comparing each case with the bare runs beside it,
should print those factors exactly.  A capped tenant says it could launch
for its factor / 0.9 of the time (`waited_s` of `steady_s`), at 0.9 of the
bare rate meanwhile (`going_rate`).
"""
import json
import os
import re
import sys

loop, seconds = sys.argv[1], float(sys.argv[2])
vgpu = bool(os.environ.get("LD_PRELOAD"))


def case():
    """(factor, capped) for this run: looked up at each run, since a
    mediated vGPU's settings change by reload between the runs of one
    process (--switched)."""
    if not vgpu:
        return 1.0, False
    sock = os.environ.get("VGPU_MEDIATOR_SOCKET")
    if sock:
        # The benchmark's mediator config, beside its socket: this vGPU's share and mode, and how many vGPUs.
        text = open(os.path.join(os.path.dirname(sock), "mediatord.conf")).read()
        mine = text.split(f"[vgpu.{os.environ['VGPU_NAME']}]")[1].split("[vgpu.")[0]
        share = int(re.search(r"compute = (\d+)", mine).group(1))
        capped = "compute_mode = cap" in mine
        alone = text.count("[vgpu.") == 1
        return (0.96 if alone and not capped else share / 100), capped
    share = os.environ.get("VGPU_COMPUTE_SHARE")
    capped = os.environ.get("VGPU_COMPUTE_MODE") == "cap"
    if share is None:
        return 0.97, False
    if os.path.basename(os.environ.get("VGPU_BAR0", "")).startswith("share"):
        return 0.96, False  # the `share 30` case: alone, so all of the GPU but for the gate
    return float(share.rstrip("%")) / 100, capped  # a cap, or one of tenants at once


def measure(seconds):
    count = os.path.join(os.environ["STUB_DIR"], f"bare-{loop}")
    bare_runs = int(open(count).read()) if os.path.exists(count) else 0
    if not vgpu:
        open(count, "w").write(str(bare_runs + 1))
        base = 1.1 ** bare_runs
    else:
        base = (1.1 ** (bare_runs - 1) + 1.1 ** bare_runs) / 2  # between the bare run before and the one after
    factor, capped = case()
    rate = round(1000.0 * base * factor, 6)
    # A cap's tenant may launch for factor / 0.9 of the time, at 0.9 of bare meanwhile.
    going, held = (0.9, factor / 0.9) if capped else (factor, 1.0)
    return {"loop": loop, "pid": os.getpid(), "rate": rate, "steady": rate, "seconds": seconds, "windows": [rate],
            "steady_s": 10.0, "waited_s": 10.0 * (1 - held), "going_rate": 1000.0 * base * going}


print("ready", flush=True)
if "--serve" in sys.argv:
    for line in sys.stdin:
        print(json.dumps(measure(float(line))), flush=True)
    sys.exit(0)
if "--go" in sys.argv:
    sys.stdin.readline()
print(json.dumps(measure(seconds)), flush=True)
