#!/bin/bash
# Copied from the project's shared GPU checks; the real clients vgpu must carry unchanged.
# Real CUDA clients for checks on the GPU machine; run them with and without vgpu and compare.
# Usage: clients.sh <which>   which: torch jax cupy cudapy triton smi pynvml
export PYTHONUNBUFFERED=1
case "$1" in
torch) python3 - <<'P'
import torch
print("dev", torch.cuda.get_device_name(0), "count", torch.cuda.device_count())
print("mem_get_info", torch.cuda.mem_get_info())
a = torch.randn(2048, 2048, device="cuda"); b = a @ a; torch.cuda.synchronize()
x = torch.randn(8, 3, 64, 64, device="cuda"); c = torch.nn.Conv2d(3, 16, 3).cuda(); y = c(x)
print("ok torch", float(b.sum()) != 0, y.shape)
P
;;
jax) python3 - <<'P'
import jax, jax.numpy as jnp
print(jax.devices())
x = jnp.ones((1024, 1024)); print("ok jax", float(jax.jit(lambda a: a @ a)(x).sum()))
P
;;
cupy) python3 - <<'P'
import cupy as cp
a = cp.arange(1 << 20, dtype=cp.float32); print("ok cupy", float((a * 2).sum()))
k = cp.RawKernel(r'extern "C" __global__ void f(float* x){x[threadIdx.x]+=1;}', 'f'); k((1,), (32,), (a,)); cp.cuda.runtime.deviceSynchronize()
print("mem", cp.cuda.runtime.memGetInfo())
P
;;
numba) python3 - <<'P'
from numba import cuda
import numpy as np
@cuda.jit
def inc(x):
    i = cuda.grid(1)
    if i < x.size: x[i] += 1
a = cuda.to_device(np.zeros(1000, dtype=np.float32)); inc[4, 256](a); print("ok numba", a.copy_to_host().sum())
P
;;
triton) cat > /tmp/tri.py <<'P'
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, o, n, B: tl.constexpr):
    p = tl.program_id(0) * B + tl.arange(0, B); m = p < n
    tl.store(o + p, tl.load(x + p, mask=m) + tl.load(y + p, mask=m), mask=m)
x = torch.randn(4096, device="cuda"); o = torch.empty_like(x)
add[(4,)](x, x, o, 4096, B=1024); print("ok triton", torch.allclose(o, 2 * x))
P
python3 /tmp/tri.py
;;
cudapy) python3 - <<'P'
from cuda.bindings import driver as d, nvrtc as r
d.cuInit(0); _, dev = d.cuDeviceGet(0); _, ctx = d.cuCtxCreate(None, 0, dev)
src = b'extern "C" __global__ void f(float* x){x[threadIdx.x]+=1.0f;}'
_, prog = r.nvrtcCreateProgram(src, b"f.cu", 0, [], []); r.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_90"])
_, n = r.nvrtcGetPTXSize(prog); ptx = b" " * n; r.nvrtcGetPTX(prog, ptx)
_, mod = d.cuModuleLoadData(ptx); _, fn = d.cuModuleGetFunction(mod, b"f")
_, buf = d.cuMemAlloc(128); d.cuMemsetD32(buf, 0, 32)
import ctypes, numpy as np
arg = np.array([int(buf)], dtype=np.uint64); args = np.array([arg.ctypes.data], dtype=np.uint64)
print("launch", d.cuLaunchKernel(fn, 1,1,1, 32,1,1, 0, 0, args.ctypes.data, 0)); d.cuCtxSynchronize()
out = np.zeros(32, dtype=np.float32); d.cuMemcpyDtoH(out.ctypes.data, buf, 128); print("ok cudapy", out.sum())
P
;;
smi) nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv ;;
pynvml) python3 -c "
import pynvml as n; n.nvmlInit(); h=n.nvmlDeviceGetHandleByIndex(0); print('ok pynvml', n.nvmlDeviceGetName(h), n.nvmlDeviceGetMemoryInfo(h).total)" ;;
esac
