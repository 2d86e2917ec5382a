"""What a user of each load order must see, for the Python consumers
(test/interpose/python_load.py, test/gpu/clients/loadorder_clients.py): the same
TEST_EXPECT_* as test/loadorder/probe.h, and which library answers."""
import ctypes
import os
import sys

failures = []


def check(ok, what):
    if not ok:
        print("FAIL " + what, file=sys.stderr)
        failures.append(what)


def expect(name):
    """TEST_EXPECT_VGPU, TEST_EXPECT_COUNT or TEST_EXPECT_QUOTA as an int, or None."""
    v = os.environ.get(name, "")
    return int(v) if v else None


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def library_of(address):
    """The real path of the library holding address, as dladdr says."""
    info = DlInfo()
    libc = ctypes.CDLL(None)
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    if not address or not libc.dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return "(nowhere)"
    return os.path.realpath(info.dli_fname.decode())


def check_library(function_address, vgpu_name, what):
    """cuInit (or nvmlInit_v2) comes from vgpu, or not, as TEST_EXPECT_VGPU says; returns where."""
    where = library_of(function_address)
    want = expect("TEST_EXPECT_VGPU")
    if want is not None:
        check((vgpu_name in where) == (want == 1), "%s comes from %s" % (what, where))
    return where


def open_driver_first(opener):
    """Opens TEST_DRIVER_FIRST (the real driver's path) with opener, where set."""
    if os.environ.get("TEST_DRIVER_FIRST"):
        opener(os.environ["TEST_DRIVER_FIRST"])
