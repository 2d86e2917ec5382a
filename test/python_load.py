"""Loading vgpu from Python (ctypes, cffi) while other threads run must not
deadlock, and calls must reach the driver.  Usage: python_load.py ctypes|cffi LIB"""
import sys
import threading
import ctypes
import ctypes.util

mode, lib = sys.argv[1], sys.argv[2]
stop = threading.Event()


def busy():
    # Other threads loading libraries and calling into C at the same time.
    while not stop.is_set():
        ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6").cos(ctypes.c_double(1.0))


threads = [threading.Thread(target=busy, daemon=True) for _ in range(4)]
for t in threads:
    t.start()

if mode == "ctypes":
    cuda = ctypes.CDLL(lib)
    count = ctypes.c_int(0)
    assert cuda.cuInit(0) == 0, "cuInit"
    assert cuda.cuDeviceGetCount(ctypes.byref(count)) == 0, "cuDeviceGetCount"
    n = count.value
else:
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int cuInit(unsigned int); int cuDeviceGetCount(int *);")
    cuda = ffi.dlopen(lib)
    count = ffi.new("int *")
    assert cuda.cuInit(0) == 0, "cuInit"
    assert cuda.cuDeviceGetCount(count) == 0, "cuDeviceGetCount"
    n = count[0]

stop.set()
for t in threads:
    t.join()
assert n == 2, "device count %d" % n
print("ok - %s load with threads running" % mode)
