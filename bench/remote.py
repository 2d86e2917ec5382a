"""What a remote GPU costs a guest (docs/design/remote.md), beside running natively.

    python3 bench/remote.py --build BUILD [--rounds 3] [--seconds 3] [--loops mlp,launch,matmul32,decode]
                            [--transports ring,socket,bar] [--measures micro,startup,launch_c,wake,loops,generate]
                            [--tokens 32]

Runs on a machine with a GPU.  Starts `vgpu-executor --listen` under vgpu
(no quota, no share), then in each round, the sides' order rotating,
measures the same things natively (no vgpu at all) and as a guest of the
executor (`VGPU_REMOTE`, both of vgpu's libraries preloaded, as a container
without the GPU runs) over each transport asked for (the shared-memory ring;
the socket, `VGPU_REMOTE_TRANSPORT=socket`; `bar`: channels of a file in
/dev/shm standing in for a VM's PCI BAR, served by `vgpu-executor --bar`,
as a VM's guest reaches its vGPU):

- `sync_call_us`: a synchronous driver call's round trip (`cuDeviceGetCount`
  from cuda-python, µs a call; the guest keeps no answer of it);
- `launch_issue_us`: the guest's cost of an asynchronous launch (an empty
  kernel, µs a `cuLaunchKernel` call, the synchronize after them not timed);
- `launch_rate`: those launches a second with their synchronize;
- `launch_issue_c_us`: the same cost from C (bench/launch_cost.c, the
  build's `bench/launch_cost`), with no interpreter in it;
- `htod_gbps`, `dtoh_gbps`: copies of 256 MiB between page-locked host
  memory and the device;
- `htod_pageable_gbps`, `dtoh_pageable_gbps`: the same between pageable
  memory (a Python buffer) and the device;
- `wake_us_GAP`, `wake_p90_us_GAP`: a synchronous call's µs (median, 90th
  percentile) after its caller was busy GAP µs (bench/wake_cost.c, the
  build's `bench/wake_cost`): what waking an executor that stopped
  spinning costs (`wake`, not among the default measures);
- `startup_s`: `python3 -c "import torch; torch.zeros(1, device='cuda')"`,
  its second run's wall time (PyTorch's kernels' images loaded, the first
  CUDA call's set-up);
- each of bench/compute_worker.py's loops (PyTorch), its rate over --seconds
  (a loop that fails on one side is reported as failed);
- `generate`: bench/generate_worker.py, a Hugging Face transformers generate
  of a LLaMA-shaped 1.3 B model with random weights (where transformers is
  installed): `generate_tokens_per_s`, `generate_load_gbps` (its weights
  loaded from pageable host memory), `generate_unload_gbps` (and saved to
  it), and in a guest `generate_crossed_per_token` and
  `generate_launches_per_token` (from the guest's record of its calls);
  `generate_nocudnn` the same with PyTorch's cuDNN attention off (see
  docs/guide/remote.md: a guest's cuDNN compiles its attention kernels
  without the driver's help).

Prints a table: each side's median over the rounds with its range, and for
each transport the median and range of the rounds' ratios (remote / native;
for the costs in µs and seconds, native / remote, so that below 1 is slower either way: a rate
per second, `_per_s`, is no cost).  `--worker` is the
micro-benchmark one side runs (one JSON line).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

PTX = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry empty()
{
    ret;
}
"""


def worker():
    from cuda.bindings import driver as d
    import ctypes

    def ok(res):
        if int(res[0]) != 0:
            raise SystemExit("cuda error %s" % (res,))
        return res[1] if len(res) == 2 else (res[1:] if len(res) > 2 else None)

    ok(d.cuInit(0))
    dev = ok(d.cuDeviceGet(0))
    ctx = ok(d.cuDevicePrimaryCtxRetain(dev))
    ok(d.cuCtxSetCurrent(ctx))
    mod = ok(d.cuModuleLoadData(PTX))
    fn = ok(d.cuModuleGetFunction(mod, b"empty"))
    out = {}

    n = 2000
    for _ in range(100):
        ok(d.cuDeviceGetCount())
    t = time.perf_counter()
    for _ in range(n):
        ok(d.cuDeviceGetCount())
    out["sync_call_us"] = (time.perf_counter() - t) / n * 1e6

    n = 20000
    for _ in range(200):
        ok(d.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0))
    ok(d.cuCtxSynchronize())
    t = time.perf_counter()
    for _ in range(n):
        ok(d.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0))
    issued = time.perf_counter()
    ok(d.cuCtxSynchronize())
    done = time.perf_counter()
    out["launch_issue_us"] = (issued - t) / n * 1e6
    out["launch_rate"] = n / (done - t)

    size = 256 << 20
    host = ok(d.cuMemAllocHost(size))
    ctypes.memset(host, 1, size)
    dptr = ok(d.cuMemAlloc(size))
    pageable = bytearray(size)
    pageable[::4096] = b"\x01" * (size // 4096)
    address = ctypes.addressof(ctypes.c_char.from_buffer(pageable))
    for name, call in (("htod_gbps", lambda: d.cuMemcpyHtoD(dptr, host, size)),
                       ("dtoh_gbps", lambda: d.cuMemcpyDtoH(host, dptr, size)),
                       ("htod_pageable_gbps", lambda: d.cuMemcpyHtoD(dptr, address, size)),
                       ("dtoh_pageable_gbps", lambda: d.cuMemcpyDtoH(address, dptr, size))):
        ok(call())
        best = None
        for _ in range(3):
            t = time.perf_counter()
            ok(call())
            s = time.perf_counter() - t
            best = s if best is None else min(best, s)
        out[name] = size / best / 1e9
    ok(d.cuMemFree(dptr))
    ok(d.cuMemFreeHost(host))
    print(json.dumps(out), flush=True)


def startup(env):
    """A PyTorch process's first CUDA tensor: the second run's seconds."""
    cmd = [sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"]
    took = None
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
        took = time.perf_counter() - t
    return took


def run(cmd, env, must=True):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        if must:
            raise SystemExit("failed (exit status %d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
        print("failed (exit status %d): %s: %s" % (p.returncode, " ".join(cmd), p.stderr.strip()[-300:]),
              file=sys.stderr)
        return None
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--loops", default="mlp,launch,matmul32,decode")
    ap.add_argument("--transports", default="ring,socket")
    ap.add_argument("--measures", default="micro,startup,launch_c,loops,generate")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        return worker()
    build = os.path.abspath(a.build)
    libs = "%s/libvgpu-cuda.so %s/libvgpu-nvml.so" % (build, build)
    tmp = tempfile.mkdtemp(prefix="vgpu-bench-remote.")
    sock = os.path.join(tmp, "sock")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    executor = subprocess.Popen([os.path.join(build, "tools/vgpu-executor"), "--listen", sock],
                                env=dict(env, LD_PRELOAD=libs, VGPU_BAR0=os.path.join(tmp, "bar0")),
                                stderr=open(os.path.join(tmp, "executor.err"), "w"))
    transports = [t for t in a.transports.split(",") if t]
    bar = "/dev/shm/vgpu-bench-remote.%d.bar" % os.getpid()
    supervisor = None
    if "bar" in transports:
        # 4 channels of 512 MiB: streams of 4 MiB, the rest page-locked memory (256 MiB copies fit).
        with open(bar, "wb") as f:
            f.truncate(2 << 30)
        supervisor = subprocess.Popen([os.path.join(build, "tools/vgpu-executor"), "--bar", bar, "--channels", "4"],
                                      env=dict(env, LD_PRELOAD=libs, VGPU_BAR0=os.path.join(tmp, "bar0")),
                                      stderr=open(os.path.join(tmp, "supervisor.err"), "w"))
    try:
        for _ in range(200):
            if os.path.exists(sock) and (not supervisor or "serving" in open(os.path.join(tmp, "supervisor.err")).read()):
                break
            time.sleep(0.05)
        remote = dict(env, LD_PRELOAD=libs, VGPU_REMOTE=sock)
        sides = {"native": env}
        for t in transports:
            sides[t] = dict(remote, VGPU_REMOTE="bar:" + bar) if t == "bar" else dict(remote, VGPU_REMOTE_TRANSPORT=t)
        loops = [l for l in a.loops.split(",") if l]
        measures = set(m for m in a.measures.split(",") if m)
        results = {s: {} for s in sides}
        names = list(sides)
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for side in order:
                got = {}
                if "micro" in measures:
                    got.update(run([sys.executable, os.path.abspath(__file__), "--worker"], sides[side]))
                if "startup" in measures:
                    got["startup_s"] = startup(sides[side])
                if "wake" in measures:
                    got.update(run([os.path.join(build, "bench/wake_cost")], sides[side]))
                if "launch_c" in measures:
                    got["launch_issue_c_us"] = run([os.path.join(build, "bench/launch_cost")],
                                                   sides[side])["launch_issue_c_us"]
                for loop in loops if "loops" in measures else []:
                    res = run([sys.executable, os.path.join(HERE, "compute_worker.py"), loop, str(a.seconds)],
                              sides[side], must=False)
                    got[loop] = res["rate"] if res else None
                for name, extra in (("generate", []), ("generate_nocudnn", ["--no-cudnn-attention"])):
                    if "generate" not in measures:
                        continue
                    res = run([sys.executable, os.path.join(HERE, "generate_worker.py"), "--tokens", str(a.tokens)]
                              + extra, sides[side], must=False)
                    if res is not None and "skipped" in res:
                        continue
                    for k in ("tokens_per_s", "load_gbps", "unload_gbps", "crossed_per_token",
                              "launches_per_token"):
                        if side != "native" or not k.endswith("_per_token"):
                            got["%s_%s" % (name, k)] = res.get(k) if res else None
                for k, v in got.items():
                    results[side].setdefault(k, []).append(v)
                print("round %d %s: %s" % (r + 1, side, json.dumps(got)), file=sys.stderr, flush=True)
        remotes = names[1:]
        print("| measure | " + " | ".join(names) + " | " + " | ".join("%s against native" % t for t in remotes) + " |")
        print("| --- " * (len(names) + len(remotes)) + "|")

        def fmt(v):
            return "%.3g [%.3g-%.3g]" % (statistics.median(v), min(v), max(v))
        keys = list(results["native"]) + [k for k in results[names[-1]] if k not in results["native"]]
        for k in keys:
            row = [k]
            cells = []
            for side in names:
                v = results[side].get(k)
                row.append("-" if v is None else "failed" if None in v else fmt(v))
            for t in remotes:
                if k not in results["native"]:
                    cells.append("-")
                    continue
                n, m = results["native"][k], results[t][k]
                if None in n or None in m:
                    cells.append("failed")
                    continue
                cost = k.endswith(("_us", "_s")) and not k.endswith("_per_s")
                ratios = [(x / y if cost else y / x) for x, y in zip(n, m)]
                cells.append("%.1f%% [%.1f-%.1f]" % (100 * statistics.median(ratios), 100 * min(ratios),
                                                   100 * max(ratios)))
            print("| " + " | ".join(row + cells) + " |")
    finally:
        for p in [executor, supervisor]:
            if p:
                p.terminate()
                p.wait()
        if supervisor:
            os.unlink(bar)


if __name__ == "__main__":
    main()
