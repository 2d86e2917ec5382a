"""The mediator's answers to the device plugin's requests, in the raw
protocol (docs/reference/protocol.md), for test/cluster/cluster.sh:

  cluster_query.py SOCKET cluster
      CLUSTER as JSON: {"generation": G, "vgpus": [{name, class, flags, xid, ndev, memory, compute}]}
  cluster_query.py SOCKET bind VGPU PID
      BIND; prints the cgroup BOUND gives, or "refused: REASON" (exit 1)
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "mediator"))
from mediator_tenant import REFUSE, connect, frame, reason, receive  # noqa: E402 (the raw protocol's helpers)

BIND, BOUND, CLUSTER_REQUEST, CLUSTER = 14, 15, 16, 17


def ask(sock, t, payload=b""):
    sock.sendall(frame(t, payload))
    rtype, body, _ = receive(sock)
    if rtype is None:
        raise SystemExit("the mediator closed the connection")
    return rtype, body


def cstr(b):
    return b.split(b"\0", 1)[0].decode()


def main():
    s = connect(sys.argv[1])
    if sys.argv[2] == "cluster":
        t, body = ask(s, CLUSTER_REQUEST)
        assert t == CLUSTER, t
        n, _flags, gen = struct.unpack_from("<IIQ", body)
        out = []
        for i in range(n):
            name, cls, flags, xid, ndev, _r, memory, compute, _r2 = struct.unpack_from("<32s32sIIIIQII", body, 16 + 96 * i)
            out.append(dict(name=cstr(name), **{"class": cstr(cls)}, flags=flags, xid=xid, ndev=ndev, memory=memory,
                            compute=compute))
        print(json.dumps({"generation": gen, "vgpus": out}))
    elif sys.argv[2] == "bind":
        t, body = ask(s, BIND, struct.pack("<32sII", sys.argv[3].encode(), int(sys.argv[4]), 0))
        if t == REFUSE:
            print("refused: " + reason(body))
            sys.exit(1)
        assert t == BOUND, t
        print(cstr(body[32:]))
    else:
        raise SystemExit(__doc__)


main()
