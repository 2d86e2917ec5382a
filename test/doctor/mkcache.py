#!/usr/bin/env python3
"""Writes an ld.so cache (glibc's "new" format, as ldconfig writes it):

    mkcache.py OUT SONAME=PATH...

one entry per argument, in the order given (the loader takes the first
entry of a name).  ldconfig itself cannot write one for a fake root without
chroot, which needs root."""
import struct
import sys

MAGIC = b"glibc-ld.so.cache1.1"
HEADER = struct.Struct("<20sIIB3sI12s")   # magic, nlibs, len_strings, flags, pad, extension_offset, unused
ENTRY = struct.Struct("<iIIIQ")           # flags, key, value, osversion, hwcap
FLAGS = 0x0303                            # FLAG_ELF_LIBC6 | FLAG_X8664_LIB64

out, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
# String offsets count from the start of the header.
strings = bytearray()
base = HEADER.size + len(pairs) * ENTRY.size
entries = []
for key, value in pairs:
    k = base + len(strings)
    strings += key.encode() + b"\0"
    v = base + len(strings)
    strings += value.encode() + b"\0"
    entries.append(ENTRY.pack(FLAGS, k, v, 0, 0))
with open(out, "wb") as f:
    f.write(HEADER.pack(MAGIC, len(pairs), len(strings), 0, b"\0" * 3, 0, b"\0" * 12))
    f.write(b"".join(entries))
    f.write(strings)
