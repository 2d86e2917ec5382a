"""Writes a seed corpus for executor_fuzz: runs of well-formed remote calls
(a carried call's words, a module image, a function's name, copies, a
launch with its parameters), each message a 24-byte header and its payload,
after a first byte that picks the library (0: CUDA).
Usage: seeds_executor.py DIR ABI SYMBOLS (forwarder/remote/spec/cuda.remote,
interpose/cuda.symbols: the slots)."""
import os
import struct
import sys

out, abi, symbols = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
funcs = sorted(l.split()[0] for l in open(symbols) if l.strip() and not l.startswith("#") and l.split()[1] == "func")
slot = {n: i for i, n in enumerate(funcs)}
kinds = {}
for line in open(abi):
    p = line.split()
    if len(p) >= 2 and p[1] == "carried":
        kinds[p[0]] = p[2:]


def msg(name, payload, flags=0):
    return struct.pack("<IHHIIQ", 0x4d524756, 1, 2, slot[name], flags, len(payload)) + payload


def words(*w):
    return struct.pack("<%dQ" % len(w), *w)


def carried(name, values):
    return msg(name, words(0, *values))


h = 0x1000
seeds = {
    "device": carried("cuDeviceGet", [0]) + carried("cuDeviceGetCount", []) + carried("cuCtxSynchronize", []),
    "handles": carried("cuCtxSetCurrent", [h]) + carried("cuStreamSynchronize", [h + 1]) +
               carried("cuStreamSynchronize", [0xdead0000]),
    "module": msg("cuModuleLoadData", words(8) + b"fakegpu\0") +
              msg("cuModuleGetFunction", words(h) + b"add_one"),
    # the messages as forwarder/remote/spec/cuda.remote declares them: a copy's device address, length,
    # stream (0: a synchronous one), bytes; a launch's function, grid, block, shared memory, stream,
    # its parameters' count, their sizes (4 bytes each, padded to 8), their bytes (each padded to 8)
    "copies": msg("cuMemcpyHtoD_v2", words(0x5000, 16, 0) + bytes(16)) + msg("cuMemcpyDtoH_v2", words(0x5000, 16, 0)),
    "launch": msg("cuLaunchKernel", words(h, 1, 1, 1, 32, 1, 1, 0, 0, 2) + struct.pack("<II", 8, 4) +
                  words(0x5000) + words(7), flags=1) + carried("cuCtxSynchronize", []),
    "strings": msg("cuGetErrorString", words(1)) + msg("cuDeviceGetName", words(64, 0)) +
               msg("cuGetProcAddress_v2", words(13000, 0) + b"cuMemAlloc"),
    "events": carried("cuEventRecord", [h + 2, h + 1]) + carried("cuEventQuery", [h + 2]),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\0" + data)  # the first byte picks CUDA
