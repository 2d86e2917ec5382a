"""Writes a seed corpus for bar0_fuzz: layout-2 windows (standalone,
mediated, guest) with devices and live slots, each prefixed by the byte
that picks the file size.  Usage: seeds_bar0.py DIR"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def cstr(s, n):
    return s.encode().ljust(n, b"\0")[:n - 1] + b"\0"


def window(flags, name, devices, slots):
    header = struct.pack("<QIIQIIIIIIII", 0x3052414255504756, 2, 128, 172032, 0x100, 0x1000, 0x2000,
                         16, 1024, 160, 1, flags) + cstr(name, 32) + bytes(40)
    config = struct.pack("<II", len(devices), 0) + bytes(248)
    for physical, limit in devices:
        config += cstr(physical, 48) + struct.pack("<QII", limit, 100, 0) + cstr("", 64)
    w = header.ljust(0x100, b"\0") + config
    w = w.ljust(0x1000, b"\0")
    used = sum(h for _, _, h in slots)
    status = struct.pack("<QII", 0, len(slots), 1) + bytes(48) + struct.pack("<QQQQ", used, 256 << 20, 0, 0)
    w += status
    w = w.ljust(0x2000, b"\0")
    for pid, start, held in slots:
        w += struct.pack("<QQ", pid << 8 | 1, start) + struct.pack("<16Q", *([held] + [0] * 15)) + bytes(16)
    return w


seeds = {
    "standalone": window(0, "", [("0", 4 << 30)], [(4242, 100, 1 << 30)]),
    "mediated": window(1, "train", [("GPU-fa4e0000-0000-0000-0000-000000000000", 8 << 30)] * 2,
                       [(1, 5, 1 << 20), (4243, 7, 2 << 20)]),
    "guest": window(2, "vm", [("0", 0)], []),
}
for name, data in seeds.items():
    for size_byte in (0, 1):
        with open(os.path.join(out, "%s-%d" % (name, size_byte)), "wb") as f:
            f.write(bytes([size_byte]) + data)
