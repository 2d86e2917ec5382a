"""Writes a seed corpus for protocol_fuzz: one valid message of each type
(STATUS with a vGPU of two devices and a process, WATCH with a process of
each rule, COMPUTE with two devices and a process on each), and a stream of
several.
Usage: seeds.py DIR"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def frame(t, payload):
    return struct.pack("<IHHI", 0x4D504756, 1, t, len(payload)) + payload


def cstr(s, n):
    return s.encode().ljust(n, b"\0")[:n - 1] + b"\0"


hello = frame(1, struct.pack("<II", 0, 0xFFFFFFFF) + cstr("train", 32))
reattach = frame(1, struct.pack("<II", 1, 3) + cstr("train", 32))
admit = frame(2, struct.pack("<II", 0xFFFFFFFF, 2) + cstr("train", 32))
refuse = frame(3, struct.pack("<I", 1) + cstr("no vGPU admits uid 1000", 492))
enter = frame(4, b"")
entered = frame(5, struct.pack("<II", 7, 0))
request = frame(6, b"")
device = cstr("GPU-fa4e0000-0000-0000-0000-000000000000", 48) + cstr("Fake GPU 0", 64) + \
    struct.pack("<QQQQII", 16 << 30, 8 << 30, 1 << 30, 2, 50, 0)
vgpu = cstr("train", 32) + struct.pack("<IIIIQ", 2, 0, 1, 0, 0) + device * 2 + bytes(152 * 14)
proc = struct.pack("<IIII", 4242, 1000, 0, 3) + cstr("python3", 16) + cstr("alice", 32) + \
    struct.pack("<16Q", *([1 << 30] + [0] * 15))
status = frame(7, struct.pack("<IIIIQ", 1, 1, 2, 1, 0) + cstr("0.1.0", 16) + vgpu + proc)
watch_request = frame(8, b"")
uuid = cstr("GPU-fa4e0000-0000-0000-0000-000000000000", 48)


def case(pid, rule, flags, vgpu_name, quota, vgpu_used):
    return struct.pack("<IIIIIIQQQQ", pid, 1000, 0, rule, flags, 700, 1 << 30, quota, vgpu_used, 1200) + uuid + \
        cstr("python3", 16) + cstr("alice", 32) + cstr(vgpu_name, 32)


cases = case(4242, 1, 3, "", 0, 0) + case(4243, 2, 0, "train", 8 << 30, 0) + \
    case(4244, 3, 2, "train", 8 << 30, 9 << 30)
watch = frame(9, struct.pack("<IIIIQQQQ", 3, 500, 1, 2, 64 << 20, 0b11, 10, 1) + cases)
compute_request = frame(10, b"")
compute_devices = cstr("train", 32) + struct.pack("<IIIIIIIIQQ", 0, 0, 50, 1, 3, 480, 470, 0, 12 << 30, 9000) + \
    cstr("train", 32) + struct.pack("<IIIIIIIIQQ", 1, 1, 100, 0, 4, 0, 1000, 0, 0, 0)
compute_procs = cstr("train", 32) + struct.pack("<IIIIII", 4242, 0, 0, 1, 470, 0) + \
    cstr("train", 32) + struct.pack("<IIIIII", 4242, 1, 1, 0, 0, 0)
compute = frame(11, struct.pack("<IIIIQQ", 2, 2, 1000, 0, 7, 0) + compute_devices + compute_procs)
bind = frame(14, cstr("train-0", 32) + struct.pack("<II", 4242, 0))
bound = frame(15, cstr("train-0", 32) + cstr("/kubepods.slice/pod1.slice/cri-containerd-1.scope", 480))
cluster_request = frame(16, b"")
cluster = frame(17, struct.pack("<IIQ", 2, 0, 3) +
                cstr("train-0", 32) + cstr("train", 32) + struct.pack("<IIIIQII", 3, 0, 1, 0, 4 << 30, 50, 0) +
                cstr("train-1", 32) + cstr("train", 32) + struct.pack("<IIIIQII", 5, 79, 1, 0, 4 << 30, 50, 0))
seeds = {"hello": hello, "reattach": reattach, "admit": admit, "refuse": refuse, "enter": enter,
         "entered": entered, "request": request, "status": status, "watch_request": watch_request,
         "watch": watch, "compute_request": compute_request, "compute": compute,
         "bind": bind, "bound": bound, "cluster_request": cluster_request, "cluster": cluster,
         "stream": hello + enter + request + admit + entered + watch_request + compute_request + bind + cluster_request}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
