"""The real clients of the load-order matrix on a GPU (test/gpu/install/loadorder.sh):
loadorder_clients.py torch|cupy|cudapy.  Each opens TEST_DRIVER_FIRST first
where set, then checks what it sees against TEST_EXPECT_VGPU (which library
answers libcuda.so.1), TEST_EXPECT_COUNT and TEST_EXPECT_QUOTA (bytes: the
total it reports, and an allocation past it refused with the framework's
out-of-memory error), and prints one line."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "loadorder"))
from expect import check, check_library, expect, failures, open_driver_first  # noqa: E402

GiB = 1 << 30
client = sys.argv[1]
open_driver_first(ctypes.CDLL)
quota, count = expect("TEST_EXPECT_QUOTA"), expect("TEST_EXPECT_COUNT")


def which_driver():
    """The library the loader gives anyone who asks for libcuda.so.1, as the framework's runtime did."""
    h = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    return check_library(ctypes.cast(h.cuInit, ctypes.c_void_p).value, "libvgpu-cuda", "cuInit")


if client == "torch":
    import torch
    n = torch.cuda.device_count()
    free, total = torch.cuda.mem_get_info()
    past = "not tried"
    if quota is not None:
        try:
            torch.empty(quota + GiB, dtype=torch.uint8, device="cuda")
            past = "allocated"
        except torch.OutOfMemoryError:
            past = "OutOfMemoryError"
        check(past == "OutOfMemoryError", "torch: %d bytes past a %d-byte quota: %s" % (quota + GiB, quota, past))
elif client == "cupy":
    import cupy
    n = cupy.cuda.runtime.getDeviceCount()
    free, total = cupy.cuda.runtime.memGetInfo()
    past = "not tried"
    if quota is not None:
        try:
            cupy.empty(quota + GiB, dtype=cupy.uint8)
            past = "allocated"
        except cupy.cuda.memory.OutOfMemoryError:
            past = "OutOfMemoryError"
        check(past == "OutOfMemoryError", "cupy: %d bytes past a %d-byte quota: %s" % (quota + GiB, quota, past))
else:
    try:
        from cuda.bindings import driver as d
    except ImportError:
        from cuda import cuda as d
    check(d.cuInit(0)[0] == d.CUresult.CUDA_SUCCESS, "cuda-python: cuInit")
    n = d.cuDeviceGetCount()[1]
    dev = d.cuDeviceGet(0)[1]
    ctx = d.cuDevicePrimaryCtxRetain(dev)[1]
    d.cuCtxSetCurrent(ctx)
    _, free, total = d.cuMemGetInfo()
    past = "not tried"
    if quota is not None:
        check(d.cuDeviceTotalMem(dev)[1] == quota, "cuda-python: cuDeviceTotalMem is not the quota")
        err, ptr = d.cuMemAlloc(quota + GiB)
        past = err.name
        check(err == d.CUresult.CUDA_ERROR_OUT_OF_MEMORY, "cuda-python: past the quota: %s" % err.name)

where = which_driver()
if count is not None:
    check(n == count, "%s: %d device(s), expected %d" % (client, n, count))
if quota is not None:
    check(total == quota, "%s: total memory %d, expected the quota %d" % (client, total, quota))
print("%s: libcuda.so.1 is %s, %d device(s), total %.2f GiB, past the quota: %s"
      % (client, where, n, total / GiB, past))
sys.exit(1 if failures else 0)
