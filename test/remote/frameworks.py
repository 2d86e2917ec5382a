"""Framework workloads for the remote GPU's check on a real GPU (frameworks.sh).

Usage: frameworks.py WORKLOAD
Each workload prints "result NAME VALUE" lines, compared between a native run
and a remote one (numbers within 1e-3 relative), and "ok NAME" lines for
what it checks itself.  It exits non-zero on an error.
"""
import sys


def torch_train():
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(1024, 256).cuda()
    y = torch.randint(0, 10, (1024,)).cuda()
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    for i in (0, 19):
        print("result train_loss_%d %.6f" % (i, losses[i]))
    assert losses[19] < losses[0], losses
    print("ok torch training step lowers the loss")


def torch_bf16():
    # bf16 and fp16 GEMMs: on Hopper, cuBLASLt's kernels that ask the driver's
    # private table for the device's layout.
    import torch
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    model = model.to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = (model(x).float() - x.float()).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    for i in (0, 9):
        print("result bf16_loss_%d %.4f" % (i, losses[i]))
    assert losses[9] < losses[0], losses
    h = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    print("result fp16_matmul_sum %.2f" % float((h @ h).float().abs().sum()))
    print("ok torch bf16 training lowers the loss; fp16 matmul")


def torch_infer():
    import torch
    torch.manual_seed(1)
    conv = torch.nn.Conv2d(3, 16, 3).cuda().eval()
    x = torch.randn(8, 3, 64, 64).cuda()
    with torch.no_grad():
        y = conv(x)
        a = torch.randn(2048, 2048, device="cuda")
        b = a @ a
    torch.cuda.synchronize()
    print("result conv_sum %.6e" % float(y.double().sum()))
    print("result conv_abs %.6e" % float(y.abs().double().sum()))
    print("result matmul_abs %.6e" % float(b.abs().double().sum()))
    host = torch.randn(1 << 20).pin_memory()
    dev = host.cuda(non_blocking=True)
    torch.cuda.synchronize()
    assert torch.equal(dev.cpu(), host)
    print("ok torch pinned round trip")


def torch_graph():
    import torch
    torch.manual_seed(2)
    w = torch.randn(512, 512, device="cuda")
    static_in = torch.randn(64, 512, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            static_out = torch.relu(static_in @ w)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = torch.relu(static_in @ w)
    total = 0.0
    for i in range(3):
        static_in.copy_(torch.full((64, 512), float(i + 1), device="cuda"))
        g.replay()
        total += float(static_out.double().sum())
    torch.cuda.synchronize()
    want = sum(float(torch.relu(torch.full((64, 512), float(i + 1), device="cuda") @ w).double().sum())
               for i in range(3))
    assert abs(total - want) <= 1e-3 * abs(want), (total, want)
    print("result graph_sum %.6e" % total)
    print("ok torch CUDA graph replays equal eager runs")


def torch_oom():
    import torch
    free, total = torch.cuda.mem_get_info()
    print("result mem_total %d" % total)
    try:
        torch.empty(16 << 30, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError:
        print("ok torch.OutOfMemoryError past the vGPU's quota")
        return
    raise SystemExit("FAIL: 16 GiB past an 8 GiB quota was given")


def cupy_kernel():
    import cupy as cp
    a = cp.arange(1 << 20, dtype=cp.float32)
    k = cp.RawKernel(r'extern "C" __global__ void f(float* x, int n)'
                     r'{int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 2 * x[i] + 1;}', 'f')
    k(((1 << 20) // 256,), (256,), (a, cp.int32(1 << 20)))
    print("result cupy_sum %.6e" % float(a.sum()))
    print("result cupy_mean %.6e" % float((a * 3).mean()))


def cuda_python():
    from cuda.bindings import driver as d, nvrtc as r
    import numpy as np

    def ok(res):
        err = res[0]
        assert int(err) == 0, res
        return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)

    ok(d.cuInit(0))
    dev = ok(d.cuDeviceGet(0))
    ctx = ok(d.cuDevicePrimaryCtxRetain(dev))
    ok(d.cuCtxSetCurrent(ctx))
    src = b'extern "C" __global__ void sq(float *x, int n) { int i = threadIdx.x + blockIdx.x * blockDim.x; ' \
          b'if (i < n) x[i] = x[i] * x[i]; }'
    prog = ok(r.nvrtcCreateProgram(src, b"sq.cu", 0, [], []))
    ok(r.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_90"]))
    size = ok(r.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    ok(r.nvrtcGetPTX(prog, ptx))
    mod = ok(d.cuModuleLoadData(ptx))
    fn = ok(d.cuModuleGetFunction(mod, b"sq"))
    n = 4096
    host = np.arange(n, dtype=np.float32)
    buf = ok(d.cuMemAlloc(n * 4))
    ok(d.cuMemcpyHtoD(buf, host.ctypes.data, n * 4))
    arg_buf = np.array([int(buf)], dtype=np.uint64)
    arg_n = np.array([n], dtype=np.int32)
    args = np.array([arg_buf.ctypes.data, arg_n.ctypes.data], dtype=np.uint64)
    ok(d.cuLaunchKernel(fn, n // 256, 1, 1, 256, 1, 1, 0, 0, args.ctypes.data, 0))
    ok(d.cuCtxSynchronize())
    out = np.zeros(n, dtype=np.float32)
    ok(d.cuMemcpyDtoH(out.ctypes.data, buf, n * 4))
    assert np.array_equal(out, host * host)
    # A 2D copy: 8 rows of 16 floats from the device (pitch 64 floats) into a
    # host array of pitch 16.
    grid = np.zeros((8, 16), dtype=np.float32)
    c = d.CUDA_MEMCPY2D()
    c.srcMemoryType = d.CUmemorytype.CU_MEMORYTYPE_DEVICE
    c.srcDevice = buf
    c.srcPitch = 64 * 4
    c.dstMemoryType = d.CUmemorytype.CU_MEMORYTYPE_HOST
    c.dstHost = grid.ctypes.data
    c.dstPitch = 16 * 4
    c.WidthInBytes = 16 * 4
    c.Height = 8
    ok(d.cuMemcpy2D(c))
    assert np.array_equal(grid, (host * host).reshape(64, 64)[:8, :16])
    print("result cudapy_2d_sum %.6e" % float(grid.sum()))
    name = ok(d.cuDeviceGetName(64, dev))
    print("result cudapy_name %s" % name.split(b"\0")[0].decode().replace(" ", "_"))
    print("result cudapy_sum %.6e" % float(out.sum()))


def jax_jit():
    import jax
    import jax.numpy as jnp
    x = jnp.arange(1024 * 1024, dtype=jnp.float32).reshape(1024, 1024) / (1024 * 1024)
    f = jax.jit(lambda a: jnp.tanh(a @ a.T).sum(axis=0))
    y = f(x)
    print("result jax_devices %d" % len(jax.devices("gpu")))
    print("result jax_sum %.6e" % float(y.sum()))
    print("result jax_max %.6e" % float(y.max()))


def pynvml_query():
    import pynvml
    pynvml.nvmlInit()
    n = pynvml.nvmlDeviceGetCount()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    name = pynvml.nvmlDeviceGetName(h)
    name = name.decode() if isinstance(name, bytes) else name
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    print("result nvml_count %d" % n)
    print("result nvml_name %s" % name.replace(" ", "_"))
    print("result nvml_total %d" % mem.total)
    pynvml.nvmlShutdown()


WORKLOADS = {"torch-train": torch_train, "torch-bf16": torch_bf16, "torch-infer": torch_infer, "torch-graph": torch_graph,
             "torch-oom": torch_oom, "cupy": cupy_kernel, "cudapy": cuda_python, "jax": jax_jit,
             "pynvml": pynvml_query}

if __name__ == "__main__":
    WORKLOADS[sys.argv[1]]()
