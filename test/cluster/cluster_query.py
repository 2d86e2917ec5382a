"""The mediator's answers to the device plugin's requests, in the raw
protocol (docs/protocol.md), for test/cluster/cluster.sh:

  cluster_query.py SOCKET cluster
      CLUSTER as JSON: {"generation": G, "vgpus": [{name, class, flags, xid, ndev, memory, compute}]}
  cluster_query.py SOCKET bind VGPU PID
      BIND; prints the cgroup BOUND gives, or "refused: REASON" (exit 1)
"""
import json
import socket
import struct
import sys

MAGIC, VERSION = 0x4D504756, 1
REFUSE, BIND, BOUND, CLUSTER_REQUEST, CLUSTER = 3, 14, 15, 16, 17


def ask(sock, t, payload=b""):
    sock.sendall(struct.pack("<IHHI", MAGIC, VERSION, t, len(payload)) + payload)
    head = b""
    while len(head) < 12:
        more = sock.recv(12 - len(head))
        if not more:
            raise SystemExit("the mediator closed the connection")
        head += more
    magic, version, rtype, length = struct.unpack("<IHHI", head)
    body = b""
    while len(body) < length:
        more = sock.recv(length - len(body))
        if not more:
            raise SystemExit("the mediator closed the connection mid-answer")
        body += more
    return rtype, body


def cstr(b):
    return b.split(b"\0", 1)[0].decode()


def main():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
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
            print("refused: " + cstr(body[4:]))
            sys.exit(1)
        assert t == BOUND, t
        print(cstr(body[32:]))
    else:
        raise SystemExit(__doc__)


main()
