"""vgpu-mediatord under load, in the raw protocol (docs/reference/protocol.md), for
test/stress/mediator_load.sh.  The mediator's config has vGPU a, which
admits this user, and b, which does not.

  mediator_load.py SOCKET probe STOP CROWD
      a normal client's admission (HELLO -> ADMIT), timed, every 20 ms until
      the file STOP exists; prints how many and the slowest, apart for those
      that came while a crowd did (the file CROWD says "N in" then)
  mediator_load.py SOCKET crowd N ROUNDS CROWD
      N clients connect at once and say HELLO (for vGPU a, for none, for b
      or for one that does not exist); one in 8 admitted asks for a slot;
      then all leave at once.  ROUNDS times
  mediator_load.py SOCKET slow N
      at once: N clients that send their HELLO a byte at a time, N that send
      half a frame and shut their side, N that send half a frame and close,
      N that send HELLO and close before the answer, N that connect and say
      nothing until the others are done
  mediator_load.py SOCKET malformed SEEDS_DIR SEED
      every seed of the protocol fuzzer (test/fuzz/seeds.py): whole, cut
      short at every length, and corrupted (300 of each: 1 to 4 bytes
      overwritten at random, from SEED); and oversized frames.  Each on its
      own connection, 32 at a time
  mediator_load.py SOCKET stranger N
      N clients at once, run as a user no vGPU admits: every one refused

Every answer is checked: nobody is admitted to b, or by anyone but this
user; an admission names vGPU a and brings two descriptors; a connection
the mediator gives up on is closed within 5 s.  Each action prints its
counts; a failed check exits 1, saying what.
"""
import asyncio
import os
import random
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mediator"))
from mediator_tenant import ADMIT, ENTER, ENTERED, REFUSE, frame, hello, reason, receive  # noqa: E402

failures = []
lock = threading.Lock()


def failed(what):
    with lock:
        failures.append(what)


def connect(path):
    """Connected, then with a 5 s timeout: a blocking connect waits for room
    in a full backlog, as a process's does."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(5)
    return s


def answer(s):
    """The mediator's answer: (type, payload), the descriptors closed."""
    t, payload, fds = receive(s)
    for fd in fds:
        os.close(fd)
    if t == ADMIT and len(fds) != 2:
        failed("an ADMIT came with %d descriptors, not 2" % len(fds))
    return t, payload


def admitted_to(payload):
    return payload[8:40].split(b"\0")[0].decode(errors="replace")


def check_answer(t, payload, want_admit, what):
    """What a HELLO naming a vGPU may get: ADMIT to a, or REFUSE; anything else fails."""
    if t == ADMIT:
        if admitted_to(payload) != "a":
            failed("%s: admitted to vGPU %r" % (what, admitted_to(payload)))
        elif not want_admit:
            failed("%s: admitted" % what)
    elif t == REFUSE:
        if want_admit:
            failed("%s: refused: %s" % (what, reason(payload)))
    else:
        failed("%s: answered with message %s" % (what, t))


def closed_within(s, seconds=5):
    """Reads until the mediator closes; False if it has not in time."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        return False
    except OSError:
        pass
    return True


# ---- probe ----

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def probe(path, stop, crowd_file):
    """A client that comes with a crowd waits its turn behind it: those are
    told apart (the crowd's file said the same before and after, and no
    crowd was in)."""
    times, crowded, refused = [], [], 0
    while not os.path.exists(stop):
        before = read(crowd_file)
        t0 = time.monotonic()
        try:
            s = connect(path)
            s.sendall(hello("a"))
            t, payload = answer(s)
            s.close()
        except OSError as e:
            t, payload = None, str(e).encode()
        if t == ADMIT:
            after = read(crowd_file)
            (times if after == before and not after.endswith(" in") else crowded).append((time.monotonic() - t0) * 1e3)
        else:
            refused += 1
            failed("the normal client was not admitted: %s" % (reason(payload) if t == REFUSE else payload))
        time.sleep(0.02)
    times.sort()
    crowded.sort()
    print("probe: %d admissions of a normal client, %d not admitted; median %.1f ms, slowest %.1f ms; and %d that "
          "came with a crowd, the slowest in %.1f ms"
          % (len(times), refused, times[len(times) // 2] if times else 0, times[-1] if times else 0, len(crowded),
             crowded[-1] if crowded else 0))
    print("slowest ms %.1f" % (times[-1] if times else 1e9))
    print("slowest with a crowd ms %.1f" % (crowded[-1] if crowded else 0))


# ---- crowd ----

async def readable(s):
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(s.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await asyncio.wait_for(ready, 5)
    finally:
        loop.remove_reader(s.fileno())


async def async_connect(path):
    """A connection; while the mediator's backlog is full, tried again every
    millisecond, as a blocking connect waits."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    while True:
        try:
            s.connect(path)
            return s
        except (BlockingIOError, InterruptedError):
            await asyncio.sleep(0.001)


async def async_answer(s):
    await readable(s)
    s.settimeout(5)  # the frame came whole: one sendmsg
    try:
        return answer(s)
    finally:
        s.setblocking(False)


def crowd(path, n, rounds, crowd_file):
    """One thread, so that the crowd's clients come at once without taking
    the mediator's CPU from it."""
    names = ["a", "", "b", "nosuch"]
    counts = {"admitted": 0, "refused": 0, "entered": 0, "slot refused": 0}

    async def client(i, leave):
        name = names[i % len(names)]
        s = await async_connect(path)
        try:
            s.send(hello(name))
            t, payload = await async_answer(s)
            check_answer(t, payload, name in ("a", ""), "crowd HELLO %r" % name)
            counts["admitted" if t == ADMIT else "refused"] += 1
            if t == ADMIT and i % 8 == 0:
                s.send(frame(ENTER))
                t, payload = await async_answer(s)
                counts["entered" if t == ENTERED else "slot refused"] += 1
                if t not in (ENTERED, REFUSE):
                    failed("ENTER answered with message %s" % t)
        except (OSError, asyncio.TimeoutError) as e:
            failed("crowd client %d (%r): %r" % (i, name, e))
        await leave.wait()
        s.close()

    def say(text):
        with open(crowd_file + ".tmp", "w") as f:
            f.write(text)
        os.rename(crowd_file + ".tmp", crowd_file)

    async def one_round(r):
        leave = asyncio.Event()
        say("%d in" % r)
        t0 = time.monotonic()
        clients = [asyncio.ensure_future(client(i, leave)) for i in range(n)]
        while sum(counts[k] for k in ("admitted", "refused")) < (r + 1) * n and not all(c.done() for c in clients):
            await asyncio.sleep(0.005)
        served = time.monotonic() - t0
        leave.set()  # all leave at once
        await asyncio.gather(*clients)
        say("%d out" % r)
        slowest[0] = max(slowest[0], served)
        print("crowd round %d: %d clients in %.2f s" % (r + 1, n, time.monotonic() - t0), flush=True)

    slowest = [0]
    for r in range(rounds):
        asyncio.run(one_round(r))
    print("crowd: %d connections: %d admitted (%d of them given a slot, %d refused one: 4 a process), "
          "%d refused (vGPU b, or none of that name); the slowest crowd answered in %.0f ms"
          % (n * rounds, counts["admitted"], counts["entered"], counts["slot refused"], counts["refused"],
             slowest[0] * 1e3))


# ---- slow and half-open ----

def slow(path, n):
    data = hello("a")
    counts = {k: 0 for k in ("byte at a time", "half then shut", "half then closed", "gone before the answer",
                             "silent")}
    silent = []
    silent_lock = threading.Lock()
    done = threading.Event()

    def trickle(i):
        s = connect(path)
        for b in data:
            s.sendall(bytes([b]))
            time.sleep(0.02)
        t, payload = answer(s)
        check_answer(t, payload, True, "a HELLO sent a byte at a time")
        s.close()
        return "byte at a time"

    def half_shut(i):
        s = connect(path)
        s.sendall(data[:6 + i % 40])
        s.shutdown(socket.SHUT_WR)
        if not closed_within(s):
            failed("a connection that sent half a frame and shut its side was not closed within 5 s")
        s.close()
        return "half then shut"

    def half_closed(i):
        s = connect(path)
        s.sendall(data[:6 + i % 40])
        s.close()
        return "half then closed"

    def gone(i):
        s = connect(path)
        s.sendall(data)
        s.close()
        return "gone before the answer"

    def quiet(i):
        s = connect(path)
        with silent_lock:
            silent.append(s)
        done.wait(60)
        return "silent"

    kinds = [trickle, half_shut, half_closed, gone, quiet]
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(kinds) * n) as pool:
        futures = {kind: [pool.submit(kind, i) for i in range(n)] for kind in kinds}
        # Everything but the silent ones finishes; then they leave too.
        for kind in kinds[:-1]:
            for f in futures[kind]:
                try:
                    counts[f.result(timeout=60)] += 1
                except Exception as e:  # noqa: BLE001 - a client's own failure is a finding
                    failed("%s client: %r" % (kind.__name__, e))
        done.set()
        for f in futures[quiet]:
            counts[f.result(timeout=60)] += 1
    for s in silent:
        s.close()
    print("slow: %s in %.1f s" % (", ".join("%d %s" % (v, k) for k, v in counts.items()), time.monotonic() - t0))


# ---- malformed and oversized ----

def inputs(seeds_dir, seed):
    rng = random.Random(seed)
    for name in sorted(os.listdir(seeds_dir)):
        with open(os.path.join(seeds_dir, name), "rb") as f:
            data = f.read()
        yield "whole", data
        for cut in range(1, len(data)):
            yield "cut short", data[:cut]
        for _ in range(300):
            b = bytearray(data)
            for _ in range(1 + rng.randrange(4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            yield "corrupted", bytes(b)
    magic = 0x4D504756
    yield "oversized", struct.pack("<IHHI", magic, 1, 1, 1 << 30)          # a 1 GiB HELLO announced
    yield "oversized", struct.pack("<IHHI", magic, 1, 1, 257) + bytes(257)  # one byte past the limit
    yield "oversized", struct.pack("<IHHI", magic, 1, 6, 0xFFFFFFFF)        # the largest length
    yield "oversized", hello("a") + bytes(1 << 20)                          # a HELLO, then 1 MiB more
    yield "oversized", bytes(rng.randrange(256) for _ in range(1 << 16))    # 64 KiB of noise


def malformed(path, seeds_dir, seed):
    counts = {}

    def one(item):
        kind, data = item
        s = connect(path)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the mediator closed it already: it read enough to refuse
        answers = []
        try:
            while True:
                t, payload = answer(s)
                if t is None:
                    break
                answers.append(t)
                if t == ADMIT and admitted_to(payload) != "a":
                    failed("%s input admitted to vGPU %r" % (kind, admitted_to(payload)))
        except socket.timeout:
            failed("a %s input of %d bytes: the connection was neither answered nor closed in 5 s"
                   % (kind, len(data)))
        except OSError:
            pass  # reset: closed
        s.close()
        return kind, ("refused" if REFUSE in answers else "admitted" if ADMIT in answers
                      else "answered" if answers else "closed")

    t0 = time.monotonic()
    items = list(inputs(seeds_dir, seed))
    with ThreadPoolExecutor(max_workers=32) as pool:
        for kind, outcome in pool.map(one, items):
            counts.setdefault(kind, {}).setdefault(outcome, 0)
            counts[kind][outcome] += 1
    print("malformed: %d inputs in %.1f s, seed %d" % (len(items), time.monotonic() - t0, seed))
    for kind, outcomes in counts.items():
        print("  %s: %d (%s)" % (kind, sum(outcomes.values()),
                                  ", ".join("%d %s" % (v, k) for k, v in sorted(outcomes.items()))))


# ---- another user ----

def stranger(path, n):
    start = threading.Barrier(n)
    refused = []

    def client(i):
        try:
            start.wait()
            s = connect(path)
            s.sendall(hello(["", "a", "b"][i % 3]))
            t, payload = answer(s)
            s.close()
        except OSError as e:
            failed("stranger %d: %s" % (i, e))
            return
        if t != REFUSE:
            failed("uid %d, whom no vGPU admits, got message %s%s" % (
                os.getuid(), t, " for vGPU %r" % admitted_to(payload) if t == ADMIT else ""))
        else:
            with lock:
                refused.append(reason(payload))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("stranger: %d connections of uid %d, %d refused; e.g. %s" % (n, os.getuid(), len(refused),
                                                                     refused[0] if refused else "-"))


def main():
    path, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if what == "probe":
        probe(path, args[0], args[1])
    elif what == "crowd":
        crowd(path, int(args[0]), int(args[1]), args[2])
    elif what == "slow":
        slow(path, int(args[0]))
    elif what == "malformed":
        malformed(path, args[0], int(args[1]))
    elif what == "stranger":
        stranger(path, int(args[0]))
    else:
        sys.exit("mediator_load.py: unknown action %s" % what)
    for f in failures[:20]:
        print("FAIL: %s" % f)
    if len(failures) > 20:
        print("FAIL: ... and %d more" % (len(failures) - 20))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
