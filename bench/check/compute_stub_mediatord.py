#!/usr/bin/env python3
"""A stand-in for vgpu-mediatord (bench/check/compute_check.py points
bench/compute.py at it through COMPUTE_MEDIATORD): it makes the socket its
--config names (a plain file: the stand-in workers never connect), logs
`reloaded` on each SIGHUP as the real one does, and exits on SIGTERM.  The
stand-in workers read their vGPU's settings from the config themselves.
"""
import re
import signal
import sys

conf = sys.argv[sys.argv.index("--config") + 1]
sock = re.search(r"^socket = (.*)$", open(conf).read(), re.M).group(1)
signal.signal(signal.SIGHUP, lambda *_: print(f"stub vgpu-mediatord: info: reloaded {conf}", flush=True))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
open(sock, "w").close()
while True:
    signal.pause()
