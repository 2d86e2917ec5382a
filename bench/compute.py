#!/usr/bin/env python3
"""The compute-share benchmark: tenants' throughput under vgpu's compute
share, as ratios to the same loop running alone without vgpu.

    python3 bench/compute.py BUILD_DIR [--rounds N] [--seconds S]
                             [--loops matmul,launch] [--json FILE] [--only CASE,...]
                             [--interleave N [--cpu C] [--switched]]
                             [--keep DIR [--debug]]

Each tenant is bench/compute_worker.py (PyTorch), running one of its loops
(its docstring): `matmul` (bf16 4096^2 matmuls back to back: the GPU is
the bottleneck), `launch` (tiny element-wise kernels: the host's launch
path is), `matmul-syncN` (matmuls with a synchronize every N), `mlp` (a
small model's training step: launch-bound, the GPU idle most of the time)
or `decode` (GEMVs and a synchronize a token, as LLM decoding).  Every case runs once
per round, between two bare runs of its loop (no vgpu), and its ratios are
to their mean: a launch-bound loop's bare rate drifts by more than the gate
costs over minutes, but little between runs seconds apart.  The table gives
each ratio's median over the rounds and its spread (min-max); the last
lines say how much neighbouring bare runs differed, the noise under every
ratio, and, for the launch loop's one-tenant cases, what share of the time
the tenant could launch (its steps of 64 launches that did not wait for
the GPU) and its rate meanwhile, as a ratio to bare: a cap's time and what
the loop did with it, apart.

A tenant's throughput is taken after its first second (the worker's
`steady`): a capped tenant that waited for the start brings up to two
quanta of budget (docs/design/compute.md, a cap's burst), which is not what a cap
gives over time.  Where pynvml is there, the GPU's SM clock and power are
sampled every 100 ms during each case and printed beside it: a GPU that
rests between a cap's turns runs them at higher clocks than one that is
never idle, and throughput shows it.

Cases (docs/design/compute.md says what each mode means):
  bare          the loop alone, without vgpu (the reference)
  bare pair     two of it at once, without vgpu: what the driver's own
                time-slicing gives, against which the shares' cases are read
  no-share      alone under vgpu, no compute share: what the launch path costs
  cap S         alone, a hard cap of S% (VGPU_COMPUTE_MODE=cap), S = 10..90
  share 30      alone, a work-conserving share of 30%: it should get the GPU
  25/75, 50/50, 10/20/30/40
                tenants at once, work-conserving shares, each its own vGPU
                (standalone: they arbitrate through the user's page)
  mediated 25/75
                the same through vgpu-mediatord
  mps 25/75     NVIDIA MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, where the
                image has nvidia-cuda-mps-control
  converge      a 30% tenant alone, then a 70% one joins: how long until
                both are within 5 points of their shares over a second

With --interleave N --switched, one more long-lived process runs in a
vGPU of its own vgpu-mediatord, which the benchmark switches by reload
(SIGHUP) between a work-conserving 50% share (`switched share`: alone, the
whole GPU through the same gate) and each selected `cap S` (`switched cap
S`), every run beside bare runs as the others are.  Separate processes of
one launch loop run at rates up to 10-15% apart on a busy host, so a cap
measured against a bare process carries that; a line per cap then gives
the switched process's capped rate as a part of its own uncapped rate in
the same round: what the cap alone takes.

--keep DIR keeps the benchmark's files in DIR (made anew: it must not
exist): each run's tenants' stderr (NNN-LOOP-CASE-tI.err, in the order
run) and each mediator's log (NNN-LOOP-CASE-mediatord.log); with --debug
the tenants and the mediator log at VGPU_LOG=debug, so that each change of
holder and why it came is there (docs/design/compute.md, "Seeing it").
"""
import argparse
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.environ.get("COMPUTE_WORKER", os.path.join(HERE, "compute_worker.py"))
MEDIATORD = os.environ.get("COMPUTE_MEDIATORD")  # a stand-in for BUILD/tools/vgpu-mediatord (bench/check/)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--loops", default="matmul,launch")
    p.add_argument("--json", default=None)
    p.add_argument("--only", default=None, help="comma-separated case names")
    p.add_argument("--interleave", type=int, default=0, metavar="N",
                   help="one-tenant cases: N alternations of long-lived processes (see the docstring)")
    p.add_argument("--cpu", type=int, default=None, help="--interleave's CPU (default: this process's last)")
    p.add_argument("--switched", action="store_true",
                   help="with --interleave: the caps again in one process switched by the mediator's reload")
    p.add_argument("--keep", default=None, metavar="DIR", help="keep the tenants' and mediators' logs in DIR (new)")
    p.add_argument("--debug", action="store_true", help="with --keep: tenants and mediators log at VGPU_LOG=debug")
    args = p.parse_args()
    if args.debug and not args.keep:
        p.error("--debug needs --keep")
    if args.keep and os.path.exists(args.keep):
        p.error(f"--keep {args.keep}: it exists; name a new directory (a vGPU joins the window it finds there)")
    if args.switched and not args.interleave:
        p.error("--switched needs --interleave")
    return args


def tail(f):
    """The end of a tenant's (or the mediator's) log file, for an error message."""
    with open(f.name) as r:
        return r.read()[-800:]


class Clocks:
    """The GPU's SM clock (MHz) and power (W), sampled every 100 ms from
    start() to stop() through pynvml, in this process (never under vgpu);
    stop() gives their medians, or None where pynvml is not there."""

    def __init__(self):
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # no pynvml, no driver: the table goes without clocks
            self.nvml = None
        self.thread, self.samples = None, []

    def start(self):
        if not self.nvml:
            return
        self.samples, self.stopping = [], threading.Event()

        def sample():
            while not self.stopping.wait(0.1):
                try:
                    self.samples.append((self.nvml.nvmlDeviceGetClockInfo(self.h, self.nvml.NVML_CLOCK_SM),
                                         self.nvml.nvmlDeviceGetPowerUsage(self.h) / 1000.0))
                except self.nvml.NVMLError:
                    pass
        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()

    def stop(self):
        if not self.thread:
            return None
        self.stopping.set()
        self.thread.join()
        self.thread = None
        if not self.samples:
            return None
        return (statistics.median(c for c, _ in self.samples), statistics.median(w for _, w in self.samples))


class Bench:
    def __init__(self, args):
        self.build = os.path.abspath(args.build)
        self.seconds = args.seconds
        self.keep, self.debug = args.keep, args.debug
        if self.keep:
            os.makedirs(self.keep)
        self.tmp = os.path.abspath(self.keep) if self.keep else tempfile.mkdtemp(prefix="vgpu-bench-")
        self.label, self.nrun = "", 0  # what runs now, and how many runs so far: the kept files' names
        self.preload = f"{self.build}/libvgpu-cuda.so {self.build}/libvgpu-nvml.so"
        self.mediator = None  # vgpu-mediatord, while a case runs one: its socket, config and log below
        self.sock = self.conf = self.mediator_log = None
        self.clocks = Clocks()
        self.clock = None  # the last run's (SM MHz, W), medians over the run

    def env(self, vgpu, extra):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("VGPU_") and not k.startswith("VGPU_REAL_"):
                del e[k]  # each case sets its own; the driver's whereabouts stay
        e.pop("LD_PRELOAD", None)
        if vgpu:
            e["LD_PRELOAD"] = self.preload
            e["VGPU_LOG"] = "debug" if self.debug else "warn"
        e.update(extra)
        return e

    def run(self, tenants):
        """tenants: [(loop, vgpu, env, delay_s, seconds)]; once every one has
        set up, all start together (each after its delay); returns their JSON."""
        procs = []
        self.nrun += 1
        for i, (loop, vgpu, extra, delay, secs) in enumerate(tenants):
            cmd = [sys.executable, WORKER, loop, str(secs or self.seconds), "--go", "--delay", str(delay)]
            err = open(os.path.join(self.tmp, f"{self.nrun:03d}-{self.label}-t{i}.err".replace(" ", "_")), "w")
            procs.append((subprocess.Popen(cmd, env=self.env(vgpu, extra), stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=err, text=True), err))
        try:
            for p, err in procs:
                # A tenant that is not ready in a minute has hung (a PyTorch start takes seconds).
                if not select.select([p.stdout], [], [], 60)[0]:
                    p.kill()
                    raise RuntimeError(f"tenant not ready after 60 s: {tail(err)}")
                if p.stdout.readline().strip() != "ready":
                    p.wait(timeout=60)
                    raise RuntimeError(f"tenant exited {p.returncode} before it was ready: {tail(err)}")
            go = f"{time.time() + 0.3}\n"
            for p, _ in procs:
                p.stdin.write(go)
                p.stdin.flush()
            self.clocks.start()
            out = []
            for p, err in procs:
                try:
                    stdout, _ = p.communicate(timeout=60 + 2 * max(t[4] or self.seconds for t in tenants))
                except subprocess.TimeoutExpired:
                    p.kill()
                    raise RuntimeError(f"tenant did not finish in time: {tail(err)}")
                err.close()
                line = [l for l in stdout.splitlines() if l.startswith("{")]
                if p.returncode != 0 or not line:
                    raise RuntimeError(f"tenant exited {p.returncode}: {tail(err)}")
                out.append(json.loads(line[-1]))
            return out
        finally:
            self.clock = self.clocks.stop()
            for p, _ in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def standalone(self, name, share=None, mode=None):
        e = {"VGPU_BAR0": os.path.join(self.tmp, f"{name}.bar0")}
        if share is not None:
            e["VGPU_COMPUTE_SHARE"] = f"{share}%"
        if mode:
            e["VGPU_COMPUTE_MODE"] = mode
        return e

    # ---- the mediator, for the mediated case ----
    def start_mediator(self, vgpus):
        """vgpus: [(name, share)] or [(name, share, mode)]; the mediator's socket."""
        self.sock = os.path.join(self.tmp, "sock")
        self.write_conf(vgpus)
        self.mediator_log = os.path.join(self.tmp, f"{self.nrun + 1:03d}-{self.label}-mediatord.log".replace(" ", "_"))
        log = open(self.mediator_log, "w")
        cmd = [MEDIATORD or f"{self.build}/tools/vgpu-mediatord", "--config", self.conf, "--foreground"]
        self.mediator = subprocess.Popen(cmd, env=self.env(False, {"VGPU_LOG": "debug" if self.debug else "info"}),
                                         stdout=log, stderr=log)
        log.close()
        for _ in range(500):
            if os.path.exists(self.sock):
                return self.sock
            time.sleep(0.02)
        raise RuntimeError("vgpu-mediatord did not start: " + tail(open(self.mediator_log)))

    def write_conf(self, vgpus):
        self.conf = os.path.join(self.tmp, "mediatord.conf")
        with open(self.conf + ".new", "w") as f:
            f.write(f"[mediator]\nsocket = {self.sock}\nstate_dir = {self.tmp}/state\n")
            for name, share, *mode in vgpus:
                f.write(f"[vgpu.{name}]\ndevices = 0\nmemory = 8G\ncompute = {share}\n"
                        + (f"compute_mode = {mode[0]}\n" if mode else "") + f"uids = {os.getuid()}\n")
        os.replace(self.conf + ".new", self.conf)

    def reload(self, vgpus):
        """The running mediator's vGPUs set anew (SIGHUP); returns once it says it reloaded."""
        said = open(self.mediator_log).read().count("reloaded")
        self.write_conf(vgpus)
        self.mediator.send_signal(signal.SIGHUP)
        for _ in range(500):
            if open(self.mediator_log).read().count("reloaded") > said:
                return
            if self.mediator.poll() is not None:
                code = self.mediator.returncode
                raise RuntimeError(f"vgpu-mediatord ended on reload ({f'signal {-code}' if code < 0 else f'exit {code}'}): "
                                   + tail(open(self.mediator_log)))
            time.sleep(0.02)
        raise RuntimeError(f"vgpu-mediatord, running, did not reload in 10 s ({said} reloads before): "
                           + tail(open(self.mediator_log)))

    def stop_mediator(self):
        if self.mediator:
            self.mediator.send_signal(signal.SIGTERM)
            self.mediator.wait(timeout=10)
            self.mediator = None

    # ---- MPS, where the image has it ----
    def mps(self, shares, loop):
        ctl = shutil.which("nvidia-cuda-mps-control")
        if not ctl:
            return None
        pipe, logd = os.path.join(self.tmp, "mps-pipe"), os.path.join(self.tmp, "mps-log")
        os.makedirs(pipe, exist_ok=True)
        os.makedirs(logd, exist_ok=True)
        env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=logd)
        if subprocess.run([ctl, "-d"], env=env).returncode != 0:
            return None
        try:
            return self.run([(loop, False, {"CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_MPS_LOG_DIRECTORY": logd,
                                            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(s)}, 0, None) for s in shares])
        finally:
            subprocess.run([ctl], input="quit\n", text=True, env=env)


def cases(b, loop, only):
    """(name, shares or None, run, env) for one loop, where run() gives the
    tenants' JSON (None: the case cannot run here), and env is the one
    tenant's environment where the case has one tenant under vgpu (None
    where it has several)."""
    def alone(env):
        return lambda: b.run([(loop, True, env, 0, None)])

    def together(split):
        return lambda: b.run([(loop, True, b.standalone(f"t{s}-{i}", s), 0, None) for i, s in enumerate(split)])

    def mediated():
        sock = b.start_mediator([("a", 25), ("b", 75)])
        try:
            return b.run([(loop, True, {"VGPU_MEDIATOR_SOCKET": sock, "VGPU_NAME": n}, 0, None) for n in ("a", "b")])
        finally:
            b.stop_mediator()

    singles = [("no-share", None, b.standalone("alone"))]
    singles += [(f"cap {s}", [s], b.standalone(f"cap{s}", s, "cap")) for s in (10, 30, 50, 70, 90)]
    singles += [("share 30", [100], b.standalone("share30", 30))]
    every = [(name, shares, alone(env), env) for name, shares, env in singles]
    every += [("bare pair", None, lambda: b.run([(loop, False, {}, 0, None)] * 2), None)]
    every += [("/".join(map(str, split)), list(split), together(split), None)
              for split in ((25, 75), (50, 50), (10, 20, 30, 40))]
    every += [("mediated 25/75", [25, 75], mediated, None),
              ("mps 25/75", [25, 75], lambda: b.mps((25, 75), loop), None)]
    return [c for c in every if not only or c[0] in only]


class Beside:
    """One loop's cases, each between two bare runs: every ratio is to the
    mean of the bare runs just before and after its case."""

    def __init__(self, loop, note, label):
        self.loop, self.note, self.label, self.rates = loop, note, label, []

    def bare(self, rate, clock):
        self.rates.append(rate)
        self.note(self.loop, "bare", None, [1.0], 1.0, [clock] if clock else [])

    def case(self, case, shares, outs, clock):
        """A case's tenants' JSON, once the bare run after it is in."""
        bare = (self.rates[-2] + self.rates[-1]) / 2
        rates = [rate(o) for o in outs]
        print(f"{time.strftime('%T')} {self.label} {self.loop} {case}: {rates} (bare {bare:.4g}; SM MHz, W: {clock})",
              file=sys.stderr, flush=True)
        self.note(self.loop, case, shares, rates, bare, [clock] if clock else [], outs)


class Served:
    """A tenant measured again and again: compute_worker.py --serve, its
    loop's thread pinned to one CPU, its rate taken after half a second of
    each run (a cap's burst, after the others' runs, is over by then)."""

    def __init__(self, b, loop, vgpu, env, cpu, name):
        self.err = open(os.path.join(b.tmp, f"served-{name}.err"), "w")
        cmd = [sys.executable, WORKER, loop, "0", "--serve", "--settle", "0.5", "--cpu", str(cpu)]
        self.p = subprocess.Popen(cmd, env=b.env(vgpu, env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True)

    def line(self, timeout, what):
        if not select.select([self.p.stdout], [], [], timeout)[0]:
            raise RuntimeError(f"tenant not {what} after {timeout} s: {tail(self.err)}")
        line = self.p.stdout.readline().strip()
        if not line:
            raise RuntimeError(f"tenant exited {self.p.wait(timeout=60)}: {tail(self.err)}")
        return line

    def measure(self, seconds):
        self.p.stdin.write(f"{seconds}\n")
        self.p.stdin.flush()
        return json.loads(self.line(60 + 2 * seconds, "done"))

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


def interleaved(b, loop, singles, rounds, cpu, note, spans, switched=False):
    """The one-tenant cases, each a long-lived process, and a bare one, all on
    one CPU, taking turns: bare, case, bare, next case, ..., bare, ROUNDS
    times; each case's ratio is to the bare runs just before and after it.
    switched: the caps again, in one process whose vGPU the mediator's
    reload switches (the docstring)."""
    workers = [Served(b, loop, False, {}, cpu, "bare")]
    todo = [(case, shares, None) for case, shares, _, _ in singles]
    try:
        workers += [Served(b, loop, True, env, cpu, str(i)) for i, (_, _, _, env) in enumerate(singles)]
        if switched:
            sock = b.start_mediator([("switched", 50, "share")])
            sw = Served(b, loop, True, {"VGPU_MEDIATOR_SOCKET": sock, "VGPU_NAME": "switched"}, cpu, "switched")
            workers.append(sw)
            todo += [("switched share", [100], ("share", 50))]
            todo += [("switched " + case, shares, ("cap", shares[0])) for case, shares, _, _ in singles
                     if case.startswith("cap ")]
        for w in workers:
            if w.line(60, "ready") != "ready":
                raise RuntimeError(f"tenant said something else than ready: {tail(w.err)}")
        serves = workers[1:len(singles) + 1] + [workers[-1]] * (len(todo) - len(singles))

        def measure(w):
            b.clocks.start()
            try:
                return w.measure(b.seconds)
            finally:
                b.clock = b.clocks.stop()

        for rnd in range(rounds):
            pairs = Beside(loop, note, f"interleaved round {rnd + 1}")
            pairs.bare(rate(measure(workers[0])), b.clock)
            for (case, shares, mode), w in zip(todo, serves):
                if mode:
                    b.reload([("switched", mode[1], mode[0])])
                out, clock = measure(w), b.clock
                pairs.bare(rate(measure(workers[0])), b.clock)
                pairs.case(case, shares, [out], clock)
            spans.setdefault(loop, []).append(pairs.rates)
    finally:
        for w in workers:
            w.close()
        b.stop_mediator()


def main():
    args = parse()
    b = Bench(args)
    loops = args.loops.split(",")
    only = set(args.only.split(",")) if args.only else None
    results = {}  # (loop, case) -> list over rounds of [ratio per tenant]
    shares_of = {}
    clocks_of = {}  # (loop, case) -> [(SM MHz, W)] over rounds
    spans = {}

    turns_of = {}  # (loop, case) -> [(share of the time it could launch, its rate then / bare)]

    def note(loop, case, shares, rates, bare, clocks, outs=()):
        results.setdefault((loop, case), []).append([r / bare for r in rates])
        shares_of[(loop, case)] = shares
        clocks_of.setdefault((loop, case), []).extend(clocks)
        if loop == "launch" and len(outs) == 1 and outs[0].get("going_rate") and outs[0].get("steady_s"):
            o = outs[0]
            turns_of.setdefault((loop, case), []).append((1 - o["waited_s"] / o["steady_s"], o["going_rate"] / bare))

    try:
        for loop in loops:
            if args.interleave:
                singles = [c for c in cases(b, loop, only) if c[3] is not None]
                if singles:
                    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
                    interleaved(b, loop, singles, args.interleave, cpu, note, spans, args.switched)
        for rnd in range(args.rounds):
            for loop in loops:
                todo = [c for c in cases(b, loop, only) if not (args.interleave and c[3] is not None)]
                if not todo:
                    continue
                # A bare run before every case and after the last, seconds
                # apart: a launch-bound loop's bare rate drifts by more than
                # the gate costs over a round's minutes.
                pairs = Beside(loop, note, f"round {rnd + 1}")
                b.label = f"{loop}-bare"
                pairs.bare(rate(b.run([(loop, False, {}, 0, None)])[0]), b.clock)
                for case, shares, run, _ in todo:
                    b.label = f"{loop}-{case}".replace("/", "-")
                    out = run()
                    if out is None:
                        continue  # MPS where the image has none
                    clock = b.clock
                    b.label = f"{loop}-bare"
                    pairs.bare(rate(b.run([(loop, False, {}, 0, None)])[0]), b.clock)
                    pairs.case(case, shares, out, clock)
                spans.setdefault(loop, []).append(pairs.rates)
            # Convergence, once a round, on the matmul loop.
            if "matmul" in loops and (not only or "converge" in only):
                b.label = "matmul-converge"
                out = b.run([("matmul", True, b.standalone("c30", 30), 0, 6.0),
                             ("matmul", True, b.standalone("c70", 70), 2.5, 3.0)])
                spans.setdefault("converge", []).append(converge(out))
    finally:
        b.stop_mediator()
        if not b.keep:
            shutil.rmtree(b.tmp, ignore_errors=True)
    report(results, shares_of, clocks_of, spans, args, turns_of)


UNITS = {"matmul": "TFLOP/s", "matmul-sync": "TFLOP/s", "launch": "kernels/s", "mlp": "steps/s", "decode": "tokens/s"}


def rate(out):
    """A tenant's throughput after its first second (all of it if the run was shorter)."""
    return out["steady"] if out.get("steady") else out["rate"]


def converge(out):
    """Seconds from the second tenant's start until both tenants' throughput
    over the last second is within 5 points of 30% and 70% of what the first
    had alone.  A second, not a 0.25 s window: a 0.25 s window holds five
    50 ms quanta, so 30% of it is one quantum or two, never 30%."""
    a, c = out[0]["windows"], out[1]["windows"]
    alone = statistics.median(a[2:8]) if len(a) > 8 else max(a)
    w, span = 0.25, 4
    start = int(round(2.5 / w))  # the window the second tenant starts in
    for k in range(span - 1, len(c)):
        i = start + k
        if i >= len(a):
            break
        ma = statistics.mean(a[i - span + 1:i + 1]) / alone
        mc = statistics.mean(c[k - span + 1:k + 1]) / alone
        if abs(ma - 0.30) <= 0.05 and abs(mc - 0.70) <= 0.05:
            return (k + 1) * w
    return None


def report(results, shares_of, clocks_of, spans, args, turns_of):
    rows = []
    print(f"compute-share benchmark: {args.rounds} round(s) of {args.seconds:.1f} s runs"
          + (f" ({args.interleave} interleaved for the one-tenant cases)" if args.interleave else "")
          + "; ratios to the same loop alone without vgpu (median over rounds, [min-max])")
    print(f"{'loop':7} {'case':15} {'target':13} {'each tenant':40} {'together':16} {'SM MHz':>7} {'W':>5}")
    for (loop, case), per_round in results.items():
        n = len(per_round[0])
        each = [statistics.median(r[i] for r in per_round) for i in range(n)]
        lo = [min(r[i] for r in per_round) for i in range(n)]
        hi = [max(r[i] for r in per_round) for i in range(n)]
        tot = [sum(r) for r in per_round]
        shares = shares_of[(loop, case)]
        target = "/".join(f"{s}%" for s in shares) if shares else "-" if case.startswith("bare") else "100%"
        each_s = " ".join(f"{e * 100:.1f}% [{l * 100:.0f}-{h * 100:.0f}]" for e, l, h in zip(each, lo, hi))
        tot_s = f"{statistics.median(tot) * 100:.1f}% [{min(tot) * 100:.0f}-{max(tot) * 100:.0f}]"
        clocks = clocks_of.get((loop, case)) or []
        mhz = statistics.median(c for c, _ in clocks) if clocks else None
        watts = statistics.median(w for _, w in clocks) if clocks else None
        clock_s = f"{mhz:7.0f} {watts:5.0f}" if clocks else f"{'-':>7} {'-':>5}"
        print(f"{loop:7} {case:15} {target:13} {each_s:40} {tot_s:16} {clock_s}")
        rows.append({"loop": loop, "case": case, "shares": shares, "each": each, "min": lo, "max": hi,
                     "together": tot, "sm_mhz": mhz, "watts": watts})
    for loop, pairs in spans.items():
        if loop == "converge":
            print("converge: a 70% tenant joining a 30% one: both within 5 points after " +
                  ", ".join("never" if s is None else f"{s:.2f} s" for s in pairs))
        else:
            runs = [r for rnd in pairs for r in rnd]
            steps = [abs(y / x - 1) for rnd in pairs for x, y in zip(rnd, rnd[1:])]
            print(f"bare {loop}: {min(runs):.3g} to {max(runs):.3g} {UNITS.get(loop.rstrip('0123456789'), '')}" +
                  (f"; neighbouring bare runs differ by {statistics.median(steps) * 100:.1f}% (median), "
                   f"{max(steps) * 100:.1f}% at most: a case's noise floor" if steps else ""))
    for (loop, case), turns in turns_of.items():
        if case == "no-share":
            continue
        held = statistics.median(h for h, _ in turns)
        going = statistics.median(g for _, g in turns)
        print(f"{loop} {case}: could launch {held * 100:.1f}% of the time (steps under 2 ms), at {going * 100:.1f}% "
              f"of bare while it could (medians over {len(turns)} round(s))")
    own = {}
    for (loop, case), per_round in results.items():
        ref = results.get((loop, "switched share"))
        if case.startswith("switched cap ") and ref and len(ref) == len(per_round):
            own[f"{loop} {case}"] = [r[0] / u[0] for r, u in zip(per_round, ref)]
            print(f"{loop} {case}: {statistics.median(own[f'{loop} {case}']) * 100:.1f}% of the same process's "
                  f"rate uncapped (switched share) in the same round (median over {len(per_round)} round(s))")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "spans": spans, "turns": {f"{l} {c}": t for (l, c), t in turns_of.items()},
                       "of_own_uncapped": own}, f, indent=1)


if __name__ == "__main__":
    main()
