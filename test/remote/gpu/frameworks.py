"""Framework workloads for the remote GPU's check on a real GPU (frameworks.sh).

Usage: frameworks.py WORKLOAD
Each workload prints "result NAME VALUE" lines, compared between a native run
and a remote one (numbers within 1e-3 relative), and "ok NAME" lines for
what it checks itself.  It exits non-zero on an error.
"""
import sys


def ok(res):
    """A cuda-python call's results after its error code, which must be 0."""
    err = res[0]
    assert int(err) == 0, res
    return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)


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


def _ipc_child(tensors, sums):
    import torch
    t = tensors.get()  # the parent's CUDA tensor, opened by its IPC handle
    t.add_(1)
    torch.cuda.synchronize()
    sums.put(float(t.double().sum()))
    tensors.get()  # the parent's word that it has read the tensor back


def torch_ipc():
    """A CUDA tensor sent to a process torch.multiprocessing started: the
    child writes it in place, the parent sees the writes (cuIpc*)."""
    import torch
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    tensors, sums = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_ipc_child, args=(tensors, sums))
    child.start()
    t = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    tensors.put(t)
    child_sum = sums.get(timeout=300)
    torch.cuda.synchronize()
    print("result ipc_child_sum %.6e" % child_sum)
    print("result ipc_parent_sum %.6e" % float(t.double().sum()))
    tensors.put(None)
    child.join(300)
    assert child.exitcode == 0, child.exitcode
    print("ok torch tensor written in place by a torch.multiprocessing child")


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


def driver_arrays():
    """Arrays through the driver API (cuda-python): a 1D array's bytes to and
    from the host, a 3D array filled by a 3D copy from padded host memory
    and read back by another, and a kernel sampling it through a texture
    object."""
    from cuda.bindings import driver as d, nvrtc as r
    import numpy as np

    ok(d.cuInit(0))
    dev = ok(d.cuDeviceGet(0))
    ctx = ok(d.cuDevicePrimaryCtxRetain(dev))
    ok(d.cuCtxSetCurrent(ctx))
    f32 = d.CUarray_format.CU_AD_FORMAT_FLOAT
    # A 1D array: the host's bytes in, a part of them back from an offset.
    line = np.arange(4096, dtype=np.float32) * 3
    desc1 = d.CUDA_ARRAY_DESCRIPTOR()
    desc1.Width, desc1.Height, desc1.Format, desc1.NumChannels = 4096, 0, f32, 1
    a1 = ok(d.cuArrayCreate(desc1))
    ok(d.cuMemcpyHtoA(a1, 0, line.ctypes.data, line.nbytes))
    part = np.zeros(1024, dtype=np.float32)
    ok(d.cuMemcpyAtoH(part.ctypes.data, a1, 1024 * 4, part.nbytes))
    assert np.array_equal(part, line[1024:2048])
    print("result arrays_1d_sum %.6e" % float(part.sum()))
    # A 3D array of 32 x 8 x 4 floats from padded host memory (40 floats a row, 10 rows a layer).
    w, h, dd = 32, 8, 4
    padded = np.random.default_rng(7).random((dd, 10, 40), dtype=np.float32)
    desc3 = d.CUDA_ARRAY3D_DESCRIPTOR()
    desc3.Width, desc3.Height, desc3.Depth, desc3.Format, desc3.NumChannels, desc3.Flags = w, h, dd, f32, 1, 0
    a3 = ok(d.cuArray3DCreate(desc3))
    c = d.CUDA_MEMCPY3D()
    c.srcMemoryType = d.CUmemorytype.CU_MEMORYTYPE_HOST
    c.srcHost = padded.ctypes.data
    c.srcPitch, c.srcHeight = 40 * 4, 10
    c.dstMemoryType = d.CUmemorytype.CU_MEMORYTYPE_ARRAY
    c.dstArray = a3
    c.WidthInBytes, c.Height, c.Depth = w * 4, h, dd
    ok(d.cuMemcpy3D(c))
    box = np.zeros((dd, h, w), dtype=np.float32)
    b = d.CUDA_MEMCPY3D()
    b.srcMemoryType = d.CUmemorytype.CU_MEMORYTYPE_ARRAY
    b.srcArray = a3
    b.dstMemoryType = d.CUmemorytype.CU_MEMORYTYPE_HOST
    b.dstHost = box.ctypes.data
    b.dstPitch, b.dstHeight = w * 4, h
    b.WidthInBytes, b.Height, b.Depth = w * 4, h, dd
    ok(d.cuMemcpy3D(b))
    assert np.array_equal(box, padded[:, :h, :w])
    print("result arrays_3d_sum %.6e" % float(box.sum()))
    # A texture object over the 3D array, sampled at each texel's centre by a kernel.
    res = d.CUDA_RESOURCE_DESC()
    res.resType = d.CUresourcetype.CU_RESOURCE_TYPE_ARRAY
    res.res.array.hArray = a3
    tex = d.CUDA_TEXTURE_DESC()
    tex.addressMode = [d.CUaddress_mode.CU_TR_ADDRESS_MODE_CLAMP] * 3
    tex.filterMode = d.CUfilter_mode.CU_TR_FILTER_MODE_POINT
    t = ok(d.cuTexObjectCreate(res, tex, None))
    src = (b'extern "C" __global__ void fetch(unsigned long long t, float *out, int w, int h, int d) {'
           b' int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;'
           b' if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f); }')
    prog = ok(r.nvrtcCreateProgram(src, b"fetch.cu", 0, [], []))
    ok(r.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_90"]))
    ptx = b" " * ok(r.nvrtcGetPTXSize(prog))
    ok(r.nvrtcGetPTX(prog, ptx))
    mod = ok(d.cuModuleLoadData(ptx))
    fn = ok(d.cuModuleGetFunction(mod, b"fetch"))
    out = ok(d.cuMemAlloc(box.nbytes))
    args = [np.array([int(t)], dtype=np.uint64), np.array([int(out)], dtype=np.uint64),
            np.array([w], dtype=np.int32), np.array([h], dtype=np.int32), np.array([dd], dtype=np.int32)]
    ptrs = np.array([a.ctypes.data for a in args], dtype=np.uint64)
    ok(d.cuLaunchKernel(fn, h, dd, 1, w, 1, 1, 0, 0, ptrs.ctypes.data, 0))
    ok(d.cuCtxSynchronize())
    sampled = np.zeros_like(box)
    ok(d.cuMemcpyDtoH(sampled.ctypes.data, out, sampled.nbytes))
    assert np.array_equal(sampled, box)
    back = ok(d.cuTexObjectGetResourceDesc(t))
    assert int(back.resType) == int(d.CUresourcetype.CU_RESOURCE_TYPE_ARRAY)
    print("result arrays_texture_sum %.6e" % float(sampled.sum()))
    ok(d.cuTexObjectDestroy(t))
    ok(d.cuMemFree(out))
    ok(d.cuArrayDestroy(a3))
    ok(d.cuArrayDestroy(a1))
    print("ok arrays: 1D and 3D copies, and a texture sampled by a kernel")


def torch_compile():
    # Inductor's code: Triton kernels compiled in this process (a cache of
    # its own, so the guest compiles rather than reads the native run's),
    # their cubins loaded from files (cuModuleLoad); then a CUDA graph of
    # them ("reduce-overhead").
    import os
    import tempfile
    cache = tempfile.mkdtemp(prefix="vgpu-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    import torch
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                                torch.nn.Linear(512, 10)).cuda()
    x = torch.randn(512, 256, device="cuda")
    compiled = torch.compile(model)
    loss = compiled(x).pow(2).mean()
    loss.backward()
    print("result compile_loss %.6f" % float(loss))
    print("result compile_grad_sum %.6f" % float(model[0].weight.grad.abs().sum()))
    fused = torch.compile(lambda a: torch.nn.functional.silu(a) * a.sin(), mode="reduce-overhead")
    for _ in range(3):
        z = fused(x)
    print("result compile_graph_sum %.6f" % float(z.sum()))
    print("ok torch.compile, default and reduce-overhead")


def driver_files():
    # The driver API as a C program calls it (ctypes on libcuda.so.1):
    # contexts as CUDA 13's header spells cuCtxCreate (_v4), with and
    # without execution affinity, a cubin from a file as a module and as a
    # library, PTX through the JIT linker, a device by its bus id.
    import ctypes
    import os
    import tempfile
    from cuda.bindings import nvrtc as r
    cu = ctypes.CDLL("libcuda.so.1")
    p = ctypes.c_void_p
    size = ctypes.c_size_t
    cu.cuMemAlloc_v2.argtypes = [p, size]
    cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, p, size]
    cu.cuMemcpyDtoH_v2.argtypes = [p, ctypes.c_uint64, size]

    def call(name, *args):
        return getattr(cu, name)(*args)

    def ok(name, *args):
        rc = call(name, *args)
        assert rc == 0, "%s: %d" % (name, rc)

    ok("cuInit", 0)
    dev = ctypes.c_int()
    ok("cuDeviceGet", ctypes.byref(dev), 0)
    bus = ctypes.create_string_buffer(32)
    ok("cuDeviceGetPCIBusId", bus, 32, dev)
    by_bus = ctypes.c_int(-1)
    ok("cuDeviceGetByPCIBusId", ctypes.byref(by_bus), bus)
    print("result bus_id_device %d" % by_bus.value)
    ctx = p()
    ok("cuCtxCreate_v4", ctypes.byref(ctx), None, 0, dev)

    class Affinity(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("val", ctypes.c_uint)]

    class Params(ctypes.Structure):
        _fields_ = [("affinity", ctypes.POINTER(Affinity)), ("n", ctypes.c_int), ("cig", p)]

    half = Affinity(0, 66)  # CU_EXEC_AFFINITY_TYPE_SM_COUNT; outside MPS, the driver's own answer
    other = p()
    params = Params(ctypes.pointer(half), 1, None)
    print("result affinity_context %d" % call("cuCtxCreate_v4", ctypes.byref(other), ctypes.byref(params), 0, dev))
    if other.value:
        ok("cuCtxDestroy_v2", other)
    ok("cuCtxSetCurrent", ctx)
    src = b'extern "C" __global__ void sq(float *x, int n) { int i = threadIdx.x + blockIdx.x * blockDim.x; ' \
          b'if (i < n) x[i] = x[i] * x[i]; }'
    err, prog = r.nvrtcCreateProgram(src, b"sq.cu", 0, [], [])
    major = ctypes.c_int()
    minor = ctypes.c_int()
    ok("cuDeviceGetAttribute", ctypes.byref(major), 75, dev)
    ok("cuDeviceGetAttribute", ctypes.byref(minor), 76, dev)
    arch = b"--gpu-architecture=sm_%d%d" % (major.value, minor.value)
    assert int(r.nvrtcCompileProgram(prog, 1, [arch])[0]) == 0
    err, cubin_size = r.nvrtcGetCUBINSize(prog)
    cubin = b" " * cubin_size
    r.nvrtcGetCUBIN(prog, cubin)
    fd, path = tempfile.mkstemp(suffix=".cubin")
    os.write(fd, cubin)
    os.close(fd)
    mod = p()
    ok("cuModuleLoad", ctypes.byref(mod), path.encode())
    fn = p()
    ok("cuModuleGetFunction", ctypes.byref(fn), mod, b"sq")
    lib = p()
    ok("cuLibraryLoadFromFile", ctypes.byref(lib), path.encode(), None, None, 0, None, None, 0)
    kernels = ctypes.c_uint()
    ok("cuLibraryGetKernelCount", ctypes.byref(kernels), lib)
    print("result library_kernels %d" % kernels.value)
    os.unlink(path)
    missing = p()
    print("result missing_file %d" % call("cuModuleLoad", ctypes.byref(missing), b"/nonexistent/sq.cubin"))
    n = 4096
    host = (ctypes.c_float * n)(*range(n))
    buf = ctypes.c_uint64()
    ok("cuMemAlloc_v2", ctypes.byref(buf), n * 4)
    ok("cuMemcpyHtoD_v2", buf, host, n * 4)
    count = ctypes.c_int(n)
    args = (p * 2)(ctypes.cast(ctypes.byref(buf), p), ctypes.cast(ctypes.byref(count), p))
    ok("cuLaunchKernel", fn, n // 256, 1, 1, 256, 1, 1, 0, None, args, None)
    ok("cuCtxSynchronize")
    out = (ctypes.c_float * n)()
    ok("cuMemcpyDtoH_v2", out, buf, n * 4)
    assert all(out[i] == float(i * i) for i in range(n))
    print("result module_file_sum %.6e" % sum(out))
    # The JIT linker (Numba's, CuPy's): the kernel's PTX linked into a cubin,
    # which is loaded and squares the squares; then a link of an input that
    # is none, which fails (a guest hears it from cuLinkComplete).
    cu.cuLinkAddData_v2.argtypes = [p, ctypes.c_int, p, size, ctypes.c_char_p, ctypes.c_uint, p, p]
    err, prog2 = r.nvrtcCreateProgram(src, b"sq.cu", 0, [], [])
    virtual = b"--gpu-architecture=compute_%d%d" % (major.value, minor.value)
    assert int(r.nvrtcCompileProgram(prog2, 1, [virtual])[0]) == 0
    err, ptx_size = r.nvrtcGetPTXSize(prog2)
    ptx = b" " * ptx_size
    r.nvrtcGetPTX(prog2, ptx)
    info = ctypes.create_string_buffer(4096)
    jit = (ctypes.c_int * 2)(3, 4)  # CU_JIT_INFO_LOG_BUFFER, its size
    jit_values = (p * 2)(ctypes.cast(info, p), 4096)
    link = p()
    ok("cuLinkCreate_v2", 2, jit, jit_values, ctypes.byref(link))
    ok("cuLinkAddData_v2", link, 1, ptx, len(ptx), b"sq.ptx", 0, None, None)  # CU_JIT_INPUT_PTX
    linked, linked_size = p(), ctypes.c_size_t()
    ok("cuLinkComplete", link, ctypes.byref(linked), ctypes.byref(linked_size))
    linked_mod = p()
    ok("cuModuleLoadData", ctypes.byref(linked_mod), linked)
    ok("cuLinkDestroy", link)
    fn2 = p()
    ok("cuModuleGetFunction", ctypes.byref(fn2), linked_mod, b"sq")
    ok("cuLaunchKernel", fn2, n // 256, 1, 1, 256, 1, 1, 0, None, args, None)
    ok("cuCtxSynchronize")
    ok("cuMemcpyDtoH_v2", out, buf, n * 4)
    assert all(out[i] == float(i * i) ** 2 for i in range(64))
    print("result linked_sum %.6e" % sum(out))
    bad = p()
    ok("cuLinkCreate_v2", 0, None, None, ctypes.byref(bad))
    junk = b"not a cubin"
    rc = call("cuLinkAddData_v2", bad, 0, junk, len(junk), b"junk.cubin", 0, None, None)  # CU_JIT_INPUT_CUBIN
    if rc == 0:
        rc = call("cuLinkComplete", bad, ctypes.byref(linked), ctypes.byref(linked_size))
    print("result bad_link %d" % rc)
    ok("cuLinkDestroy", bad)
    ok("cuModuleUnload", linked_mod)
    ok("cuMemFree_v2", buf)
    ok("cuLibraryUnload", lib)
    ok("cuModuleUnload", mod)
    ok("cuCtxDestroy_v2", ctx)
    print("ok contexts by cuCtxCreate_v4, a cubin from a file as a module and a library, PTX linked")


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
             "pynvml": pynvml_query,
             "torch-compile": torch_compile, "driver-files": driver_files, "torch-ipc": torch_ipc,
             "driver-arrays": driver_arrays}

if __name__ == "__main__":
    WORKLOADS[sys.argv[1]]()
