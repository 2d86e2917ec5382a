"""Loading vgpu from Python (ctypes, cffi) while other threads run must not
deadlock, and calls must reach the driver.
Usage: python_load.py ctypes|ctypes-global|cffi LIB (ctypes: RTLD_LOCAL)

Also the load-order matrix's Python consumer (test/loadorder/matrix.sh): it
checks what it saw against TEST_EXPECT_* as test/loadorder/probe.h does,
opens TEST_DRIVER_FIRST (the real driver's path) before LIB where set, and
TEST_NVML_LIB after it."""
import ctypes
import ctypes.util
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "loadorder"))
from expect import check, check_library, expect, failures, open_driver_first  # noqa: E402

mode, lib = sys.argv[1], sys.argv[2]
stop = threading.Event()


def busy():
    # Other threads loading libraries and calling into C at the same time.
    while not stop.is_set():
        ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").cos(ctypes.c_double(1.0))


def load(name):
    """Opens name the way mode does; returns (cuInit's address, a ctypes handle on the same library)."""
    if mode.startswith("ctypes"):
        h = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL if mode == "ctypes-global" else ctypes.RTLD_LOCAL)
        return ctypes.cast(h.cuInit, ctypes.c_void_p).value if hasattr(h, "cuInit") else None, h
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int cuInit(unsigned int);")
    h = ffi.dlopen(name)
    address = int(ffi.cast("uintptr_t", ffi.addressof(h, "cuInit")))
    # The library cffi opened is already loaded: ctypes gets the same one.
    return address, ctypes.CDLL(name)


threads = [threading.Thread(target=busy, daemon=True) for _ in range(4)]
for t in threads:
    t.start()

open_driver_first(load)
init_address, cuda = load(lib)
count = ctypes.c_int(0)
result = cuda.cuInit(0)
if result == 0:
    result = cuda.cuDeviceGetCount(ctypes.byref(count))

stop.set()
for t in threads:
    t.join()

where = check_library(init_address, "libvgpu-cuda", "cuInit")
print("cuInit from %s; %d device(s) (result %d)" % (where, count.value, result))
want_count, quota = expect("TEST_EXPECT_COUNT"), expect("TEST_EXPECT_QUOTA")
want_count = 2 if want_count is None else want_count
check(count.value == want_count, "device count %d, expected %d (result %d)" % (count.value, want_count, result))

if quota is not None and result == 0:
    dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
    total, free, ctx_total = ctypes.c_size_t(0), ctypes.c_size_t(0), ctypes.c_size_t(0)
    small, big = ctypes.c_uint64(0), ctypes.c_uint64(0)
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0, "cuDeviceGet")
    check(cuda.cuDeviceTotalMem_v2(ctypes.byref(total), dev) == 0, "cuDeviceTotalMem_v2")
    check(total.value == quota, "cuDeviceTotalMem_v2 shows %d bytes, expected the quota %d" % (total.value, quota))
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0,
          "a context on device 0")
    check(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(ctx_total)) == 0, "cuMemGetInfo_v2")
    check(ctx_total.value == quota,
          "cuMemGetInfo_v2 shows a total of %d bytes, expected the quota %d" % (ctx_total.value, quota))
    check(cuda.cuMemAlloc_v2(ctypes.byref(small), 1 << 20) == 0, "1 MiB under the quota was refused")
    past = cuda.cuMemAlloc_v2(ctypes.byref(big), 2 * quota)
    check(past == 2, "an allocation of twice the quota returned %d, expected CUDA_ERROR_OUT_OF_MEMORY (2)" % past)
    print("quota: total %d, cuMemGetInfo total %d, 2x quota -> %d" % (total.value, ctx_total.value, past))

if os.environ.get("TEST_NVML_LIB"):
    nvml = ctypes.CDLL(os.environ["TEST_NVML_LIB"])
    where = check_library(ctypes.cast(nvml.nvmlInit_v2, ctypes.c_void_p).value, "libvgpu-nvml", "nvmlInit_v2")
    n = ctypes.c_uint(0)
    check(nvml.nvmlInit_v2() == 0 and nvml.nvmlDeviceGetCount_v2(ctypes.byref(n)) == 0, "NVML init and count")
    check(n.value == want_count, "NVML: %d device(s), expected %d" % (n.value, want_count))
    if quota is not None:
        handle, memory = ctypes.c_void_p(), (ctypes.c_ulonglong * 3)()
        check(nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0 and
              nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) == 0, "NVML memory info")
        check(memory[0] == quota, "NVML shows a total of %d bytes, expected the quota %d" % (memory[0], quota))
    print("NVML from %s: %d device(s)" % (where, n.value))

if failures:
    sys.exit(1)
print("ok - %s load with threads running" % mode)
