"""What a compute share must leave correct (run by compute.sh, under vgpu
with a share, while another vGPU competes for the GPU).

`python3 compute_clients.py CHECK` prints "ok ..." or "FAIL ..." lines:
  graph     a captured CUDA graph replayed 200 times gives the same tensor
            as the eager loop
  threads   8 threads, each on its own stream and cuBLAS handle, matmuls
            checked against the CPU
  cudnn     a convolution and its backward pass against the CPU
  context   the context queries frameworks make before launching:
            cuCtxGetDevice, cuDevicePrimaryCtxGetState, the current device
  rate      LOOP SECONDS: the throughput of a graph-replay or matmul loop,
            one JSON line (for the cap check)
"""
import json
import sys
import threading
import time

import torch

check_name = sys.argv[1]


def check(name, cond, detail=""):
    print(("ok " if cond else "FAIL ") + name + (": " + detail if detail else ""), flush=True)


def graph():
    x = torch.randn(1 << 20, device="cuda")
    static = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm up on a side stream, as PyTorch asks
            y = static * 1.0001 + 0.5
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = static * 1.0001 + 0.5
        z = torch.sin(y)
    want = torch.sin(x * 1.0001 + 0.5)
    for i in range(200):
        static.copy_(x)
        g.replay()
    torch.cuda.synchronize()
    check("graph replay", torch.allclose(z, want), f"max error {float((z - want).abs().max()):.3g}")


def threads():
    torch.manual_seed(0)
    n = 512
    mats = [torch.randn(n, n, dtype=torch.float64) for _ in range(8)]
    results = [None] * 8

    def work(i):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            a = mats[i].cuda()
            acc = torch.zeros_like(a)
            for _ in range(50):
                acc += a @ a
        s.synchronize()
        results[i] = acc.cpu()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    bad = [i for i in range(8) if results[i] is None or not torch.allclose(results[i], 50 * (mats[i] @ mats[i]))]
    check("8 threads' matmuls on their own streams", not bad, f"wrong in threads {bad}" if bad else "")


def cudnn():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 16, 3, padding=1).double()
    x = torch.randn(4, 3, 32, 32, dtype=torch.float64, requires_grad=True)
    y = conv(x)
    y.sum().backward()
    gconv = torch.nn.Conv2d(3, 16, 3, padding=1).double().cuda()
    gconv.load_state_dict(conv.state_dict())
    gx = x.detach().cuda().requires_grad_()
    gy = gconv(gx)
    gy.sum().backward()
    check("cuDNN convolution, forward and backward",
          torch.allclose(gy.cpu(), y) and torch.allclose(gx.grad.cpu(), x.grad), "")


def context():
    from cuda.bindings import driver as d
    torch.zeros(1, device="cuda")
    r, ctx = d.cuCtxGetCurrent()
    r2, dev = d.cuCtxGetDevice()
    r3, flags, active = d.cuDevicePrimaryCtxGetState(0)
    check("context queries", int(r) == 0 and int(r2) == 0 and int(dev) == 0 and int(r3) == 0 and active == 1,
          f"cuCtxGetDevice {int(r2)} -> {int(dev)}, primary active {active}")
    check("current device", torch.cuda.current_device() == 0)


def rate(loop, seconds):
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    if loop == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            torch.mm(a, b)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(16):
                torch.mm(a, b)

        def step():
            g.replay()
    else:
        def step():
            for _ in range(16):
                torch.mm(a, b)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t0, done = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        step()
        done += 16
        torch.cuda.synchronize()
    print(json.dumps({"loop": loop, "rate": done * 2.0 * n ** 3 / 1e12 / (time.perf_counter() - t0)}), flush=True)


if check_name == "rate":
    rate(sys.argv[2], float(sys.argv[3]))
else:
    {"graph": graph, "threads": threads, "cudnn": cudnn, "context": context}[check_name]()
