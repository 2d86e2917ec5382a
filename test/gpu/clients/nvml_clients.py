"""What the gpu suite's NVML check (test/gpu/mediator/nvml.sh) runs:

  busy SECONDS   a PyTorch bf16 matmul loop on GPU 0; prints "ready PID" once it runs
  hold MIB       PyTorch holding MIB on GPU 0, idle; prints "ready PID"
  ask            pynvml, as monitors ask: one JSON line with GPU 0's utilization, the
                 pids of its per-process utilization samples and of its compute processes
"""
import json
import os
import sys
import time


def ready():
    print("ready", os.getpid(), flush=True)


def busy(seconds):
    import torch
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    ready()
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(50):
            a @ b
        torch.cuda.synchronize()


def hold(mib):
    import torch
    x = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    ready()
    time.sleep(600)
    del x


def ask():
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out = {"pid": os.getpid()}
    try:
        out["util"] = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
    except pynvml.NVMLError as e:
        out["util"] = str(e)
    try:
        samples = pynvml.nvmlDeviceGetProcessUtilization(h, int((time.time() - 1) * 1e6))
        out["sampled"] = sorted({s.pid for s in samples})
        out["sampled_sm"] = {str(s.pid): s.smUtil for s in samples}
    except pynvml.NVMLError_NotFound:
        out["sampled"] = []
    except pynvml.NVMLError as e:
        out["sampled"] = str(e)
    out["compute"] = sorted(p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h))
    try:
        out["gpu_set"] = len(pynvml.nvmlSystemGetTopologyGpuSet(0))
    except pynvml.NVMLError as e:
        out["gpu_set"] = str(e)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "busy":
        busy(float(sys.argv[2]))
    elif what == "hold":
        hold(int(sys.argv[2]))
    elif what == "ask":
        ask()
    else:
        sys.exit(__doc__)
