"""One tenant of the compute-share benchmark (bench/compute.py).

`python3 compute_worker.py LOOP SECONDS [--go] [--delay S] [--window S] [--settle S]
                          [--serve] [--cpu N]`

LOOP is `matmul` (bf16 4096x4096 matmuls back to back: the GPU is the
bottleneck), `matmul32` (the same in fp32), `matmul-syncN` (the same, synchronising after every N),
`launch` (tiny element-wise kernels: the host's launch path is), `mlp` (a
training step of 8 x Linear(256) at batch 64, synchronising every 20 steps:
launch-bound, as notebooks and small models are) or `decode` (32 bf16
8192x8192 GEMVs and a synchronize a token: memory-bound, as LLM decoding
is).  After warming up it prints `ready`; with --go it then reads a start
time (seconds since the epoch) from stdin and waits for it, plus --delay
(so tenants set up apart start together).  It runs SECONDS and prints one
JSON line: the loop, its throughput (TFLOP/s, kernels/s, steps/s or tokens/s) over the whole
run (`rate`) and over the run after its first --settle seconds (`steady`,
default 1), and the throughput of each --window (default 0.25 s) in order,
to see how shares converge.  Timing is by host clock around synchronised
windows.  For the launch loop, whose steps (64 launches) take well under
2 ms unless a launch waits for the GPU to be given, it also says how the
steady part went: `waited_s` (its steps over 2 ms and over 4 times the
shortest), `steady_s`, and `going_rate` (the throughput of the other
steps: the loop's rate while it may launch).

With --serve it runs the loop once for each line it reads (a number of
seconds), printing that run's JSON line, until stdin ends: one process
measured again and again, for the benchmark's --interleave.  --cpu N pins
the loop's thread to CPU N once CUDA is set up (threads the driver started
before keep every CPU).
"""
import json
import os
import sys
import time

import torch

loop, seconds = sys.argv[1], float(sys.argv[2])
delay = float(sys.argv[sys.argv.index("--delay") + 1]) if "--delay" in sys.argv else 0.0
window = float(sys.argv[sys.argv.index("--window") + 1]) if "--window" in sys.argv else 0.25
settle = float(sys.argv[sys.argv.index("--settle") + 1]) if "--settle" in sys.argv else 1.0
WAITED_S = 0.002  # a step this long, and 4 times the shortest, waited for the GPU to be given

if loop == "matmul":
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    work_per_step, per_call = 2.0 * n ** 3 / 1e12, 8  # TFLOP per matmul; matmuls between checks

    def step():
        for _ in range(per_call):
            torch.mm(a, b)
elif loop.startswith("matmul-sync"):
    n, every = 4096, int(loop[len("matmul-sync"):])
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    work_per_step, per_call = 2.0 * n ** 3 / 1e12, every

    def step():
        for _ in range(per_call):
            torch.mm(a, b)
        torch.cuda.synchronize()
elif loop == "matmul32":
    n = 4096
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    work_per_step, per_call = 2.0 * n ** 3 / 1e12, 8

    def step():
        for _ in range(per_call):
            torch.mm(a, b)
elif loop == "launch":
    x = torch.zeros(256, device="cuda")
    work_per_step, per_call = 1.0, 64  # kernels

    def step():
        for _ in range(per_call):
            x.add_(1.0)
elif loop == "mlp":
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    xb, yb = torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")
    work_per_step, per_call = 1.0, 20  # training steps, a synchronize after every 20

    def step():
        for _ in range(per_call):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
        torch.cuda.synchronize()
elif loop == "decode":
    weights = [torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(32)]
    v = torch.randn(8192, 1, device="cuda", dtype=torch.bfloat16)
    work_per_step, per_call = 1.0, 1  # tokens: 32 GEMVs, then a synchronize

    def step():
        for w in weights:
            torch.mm(w, v)
        torch.cuda.synchronize()
else:
    sys.exit("loop: matmul, matmul32, matmul-syncN, launch, mlp or decode")

for _ in range(20):
    step()
torch.cuda.synchronize()
print("ready", flush=True)


def measure(seconds):
    """Runs the loop SECONDS; its throughput as the JSON line says (module docstring)."""
    windows, done, t0 = [], 0, time.perf_counter()
    w_start, w_done = t0, 0
    settled = None  # (time, work done) at the first window's end after --settle seconds
    waited, going, going_work, before = 0.0, 0.0, 0.0, t0  # after settling: the steps' time, by kind
    shortest = float("inf")
    while True:
        step()
        done += per_call
        w_done += per_call
        now = time.perf_counter()
        shortest = min(shortest, now - before)
        if settled is not None:
            if now - before > max(WAITED_S, 4 * shortest):
                waited += now - before
            else:
                going += now - before
                going_work += per_call * work_per_step
        if now - w_start >= window:
            torch.cuda.synchronize()
            now = time.perf_counter()
            windows.append(round(w_done * work_per_step / (now - w_start), 3))
            w_start, w_done = now, 0
            if settled is None and now - t0 >= settle:
                settled = (now, done)
            if now - t0 >= seconds:
                break
        before = now  # after a window's synchronisation: it is no step's
    end = time.perf_counter()
    elapsed = end - t0
    steady = (done - settled[1]) * work_per_step / (end - settled[0]) if settled and end > settled[0] else None
    return {"loop": loop, "pid": os.getpid(), "rate": round(done * work_per_step / elapsed, 3),
            "steady": round(steady, 3) if steady else None, "seconds": round(elapsed, 3), "windows": windows,
            "steady_s": round(end - settled[0], 4) if settled else None, "waited_s": round(waited, 4),
            "going_rate": round(going_work / going, 3) if going else None}


if "--cpu" in sys.argv:
    # This thread only, after CUDA's set-up: the driver's own threads keep every CPU.
    os.sched_setaffinity(0, {int(sys.argv[sys.argv.index("--cpu") + 1])})
if "--serve" in sys.argv:
    for line in sys.stdin:
        print(json.dumps(measure(float(line))), flush=True)
    sys.exit(0)
if "--go" in sys.argv:
    start_at = float(sys.stdin.readline()) + delay
    time.sleep(max(0.0, start_at - time.time()))
print(json.dumps(measure(seconds)), flush=True)
