"""What a hostile tenant does to vgpu-mediatord, in the raw protocol
(docs/reference/protocol.md), for test/mediator/mediator.sh:

  mediator_tenant.py SOCKET truncate
      admitted, tries to resize or write what it was given (every way a
      descriptor allows); prints each attempt, exits 1 if any worked
  mediator_tenant.py SOCKET forge SLOT PID
      admitted, writes a LIVE owner for PID (with PID's start time) into
      SLOT of its vGPU's process table, and leaves
  mediator_tenant.py SOCKET jam SLOT BYTES
      admitted, marks SLOT of its vGPU's process table busy (a slot it was
      not given) and adds BYTES to device 0's memory_used, and leaves
  mediator_tenant.py SOCKET epoch VALUE
      admitted, writes VALUE into its window's mediator_epoch, and leaves
  mediator_tenant.py SOCKET grant SECONDS
      admitted, writes 1 into its vGPU's grant on device 0 (wherever the
      window's layout version keeps it) again and again for SECONDS, and
      leaves; prints what it wrote, or why it could not
  mediator_tenant.py SOCKET slots N
      one process asks for N process slots over N connections; prints
      "entered K" and the first refusal
  mediator_tenant.py SOCKET connections N GO
      one process opens N connections, each admitted or refused; prints
      "admitted K" and the first refusal, then holds them until GO exists (or its parent ends)
  mediator_tenant.py SOCKET deaf N
      N connections that keep asking for STATUS and never read the answers;
      then a new process's HELLO -> ADMIT, timed: prints "admitted in MS ms"
  mediator_tenant.py SOCKET remote N NAME GO
      one process asks for N executors of vGPU NAME (REMOTE) over N
      connections and never says HELLO to them; prints "ready K" and the
      first refusal, then holds them until GO exists (or its parent ends)
  mediator_tenant.py SOCKET flood SECONDS
      opens connections as fast as it can for SECONDS, holding every one;
      prints how many were opened and how many were refused with a reason
"""
import errno
import mmap
import os
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x4D504756, 1
HELLO, ADMIT, REFUSE, ENTER, ENTERED, STATUS_REQUEST, STATUS = 1, 2, 3, 4, 5, 6, 7
REMOTE, REMOTE_READY = 12, 13
CONFIG_PAGE = 0x1000
PROC_SIZE = 160
PROCS_IN_STATUS = 0x1000  # the process table, from the start of the status part
EPOCH_IN_STATUS = 12
USED_IN_STATUS = 64     # device 0's memory_used
BUSY_IN_PROC = 144


def frame(t, payload=b""):
    return struct.pack("<IHHI", MAGIC, VERSION, t, len(payload)) + payload


def hello(name=""):
    return frame(HELLO, struct.pack("<II", 0, 0xFFFFFFFF) + name.encode().ljust(32, b"\0"))


def connect(path, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def send(s, data):
    """Sends, unless the mediator already said no and closed (its REFUSE
    waits to be read)."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def receive(s):
    """One message: (type, payload, descriptors); (None, b"", []) if closed."""
    data, fds, _, _ = socket.recv_fds(s, 12, 8)
    if not data:
        return None, b"", fds
    while len(data) < 12:
        more = s.recv(12 - len(data))
        if not more:
            return None, b"", fds
        data += more
    magic, version, t, length = struct.unpack("<IHHI", data)
    payload = b""
    while len(payload) < length:
        more = s.recv(length - len(payload))
        if not more:
            return None, b"", fds
        payload += more
    return t, payload, fds


def reason(payload):
    return payload[4:].split(b"\0")[0].decode(errors="replace")


def admitted(path, name=""):
    """An admitted connection and the window's two descriptors, or exits saying why."""
    s = connect(path)
    send(s, hello(name))
    t, payload, fds = receive(s)
    if t != ADMIT or len(fds) != 2:
        sys.exit("not admitted: %s" % (reason(payload) if t == REFUSE else "message %s, %d fds" % (t, len(fds))))
    return s, fds[0], fds[1]


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def attempt(what, fn, worked):
    try:
        fn()
    except OSError as e:
        print("%s: refused (%s)" % (what, errno.errorcode.get(e.errno, e.errno)))
        return
    print("%s: WORKED" % what)
    worked.append(what)


def truncate(path):
    s, config, status = admitted(path)
    worked = []
    size = os.fstat(status).st_size
    # Growing first, then writing, then shrinking: what is left at the end
    # is a window cut to nothing, as a tenant who wants a crash leaves it.
    attempt("ftruncate(status, bigger)", lambda: os.ftruncate(status, size + 4096), worked)
    if hasattr(os, "posix_fallocate"):
        attempt("posix_fallocate(status, past its end)", lambda: os.posix_fallocate(status, size, 1 << 20), worked)
    attempt("pwrite(config)", lambda: os.pwrite(config, b"\xff" * 8, 0x100 + 48), worked)
    attempt("mmap(config, PROT_WRITE, MAP_SHARED)",
            lambda: mmap.mmap(config, CONFIG_PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE), worked)

    def reopen(fd, action):
        """The descriptor's file, opened again read-write through /proc."""
        def run():
            again = os.open("/proc/self/fd/%d" % fd, os.O_RDWR)
            try:
                action(again)
            finally:
                os.close(again)
        return run
    attempt("open(/proc/self/fd/config, O_RDWR) + pwrite",
            reopen(config, lambda fd: os.pwrite(fd, b"\xff" * 8, 0x100 + 48)), worked)
    attempt("ftruncate(config, 0)", lambda: os.ftruncate(config, 0), worked)
    attempt("open(/proc/self/fd/config, O_RDWR) + ftruncate", reopen(config, lambda fd: os.ftruncate(fd, 0)), worked)
    attempt("open(/proc/self/fd/status, O_RDWR) + ftruncate", reopen(status, lambda fd: os.ftruncate(fd, 0)), worked)
    attempt("ftruncate(status, 0)", lambda: os.ftruncate(status, 0), worked)
    s.close()
    sys.exit(1 if worked else 0)


def forge(path, slot, pid):
    s, config, status = admitted(path)
    window = mmap.mmap(status, os.fstat(status).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    at = PROCS_IN_STATUS + slot * PROC_SIZE
    window[at + 8:at + 16] = struct.pack("<Q", start_time(pid))
    window[at:at + 8] = struct.pack("<Q", pid << 8 | 1)
    s.close()


def jam(path, slot, add):
    s, config, status = admitted(path)
    window = mmap.mmap(status, os.fstat(status).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    at = PROCS_IN_STATUS + slot * PROC_SIZE + BUSY_IN_PROC
    window[at:at + 8] = struct.pack("<Q", 1)
    used = struct.unpack("<Q", window[USED_IN_STATUS:USED_IN_STATUS + 8])[0]
    window[USED_IN_STATUS:USED_IN_STATUS + 8] = struct.pack("<Q", used + add)
    s.close()


def epoch(path, value):
    s, config, status = admitted(path)
    window = mmap.mmap(status, os.fstat(status).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    window[EPOCH_IN_STATUS:EPOCH_IN_STATUS + 4] = struct.pack("<I", value)
    s.close()


GRANT_IN_STATUS_V3 = 64 + 32  # device 0's grant, in the status part (layout 3)
TURNS = 0xC00                 # the turns, on the first page (layout 4)


def grant(path, seconds):
    s, config, status = admitted(path)
    first = mmap.mmap(config, CONFIG_PAGE, mmap.MAP_SHARED, mmap.PROT_READ)
    version = struct.unpack_from("<I", first, 8)[0]
    if version <= 3:
        window, at = mmap.mmap(status, os.fstat(status).st_size, mmap.MAP_SHARED,
                               mmap.PROT_READ | mmap.PROT_WRITE), GRANT_IN_STATUS_V3
    else:
        try:
            window, at = mmap.mmap(config, CONFIG_PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE), TURNS
        except OSError as e:
            print("layout %d: the grant is on the first page, which cannot be mapped writable (%s)" %
                  (version, errno.errorcode.get(e.errno, e.errno)))
            s.close()
            return
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        window[at:at + 4] = struct.pack("<I", 1)
        time.sleep(0.0005)
    print("layout %d: wrote the grant for %.1f s" % (version, seconds))
    s.close()


def slots(path, n):
    held, entered, refusal = [], 0, ""
    for _ in range(n):
        s, config, status = admitted(path)
        os.close(config)
        os.close(status)
        held.append(s)
        s.sendall(frame(ENTER))
        t, payload, _ = receive(s)
        if t == ENTERED:
            entered += 1
        elif not refusal:
            refusal = reason(payload) if t == REFUSE else "message %s" % t
    print("entered %d" % entered)
    print("refused: %s" % refusal)


def connections(path, n, go, ask=HELLO, yes=ADMIT, name=""):
    held, admits, refusal = [], 0, ""
    for _ in range(n):
        try:
            s = connect(path)
            send(s, frame(ask, hello(name)[12:]))
            t, payload, fds = receive(s)
        except OSError as e:
            t, payload, fds = None, b"", []
            refusal = refusal or "connect: %s" % e
        for fd in fds:
            os.close(fd)
        if t == yes:
            admits += 1
            held.append(s)
        elif not refusal:
            refusal = reason(payload) if t == REFUSE else "closed without a word"
    print("%s %d" % ("admitted" if ask == HELLO else "ready", admits), flush=True)
    print("refused: %s" % refusal, flush=True)
    # Until GO, or until the test that started it is gone (a scenario that
    # ends without GO kills only the shell that runs this in the background).
    parent = os.getppid()
    while not os.path.exists(go) and os.getppid() == parent:
        time.sleep(0.01)


def deaf(path, n):
    deafs = []
    for _ in range(n):
        s = connect(path)
        s.setblocking(False)
        deafs.append(s)
    request = frame(STATUS_REQUEST) * 64
    # Ask until the mediator stops taking requests (its answers have
    # nowhere to go), or for long enough.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        sent = 0
        for s in deafs:
            try:
                sent += s.send(request)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass  # dropped by the mediator: fine, it is not listening to us
        if not sent:
            break
        time.sleep(0.01)
    t0 = time.monotonic()
    try:
        s, config, status = admitted(path)
    except TimeoutError:
        sys.exit("not admitted within 5 s")
    ms = (time.monotonic() - t0) * 1e3
    print("admitted in %.1f ms" % ms)


def flood(path, seconds):
    held, opened, refused, reasons = [], 0, 0, set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            s = connect(path, timeout=0.2)
        except OSError:
            time.sleep(0.001)
            continue
        opened += 1
        held.append(s)
        s.setblocking(False)
        # Connections the mediator closed at once, saying why.
        for c in held[-64:]:
            try:
                data = c.recv(512)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data and len(data) >= 16 and struct.unpack("<H", data[6:8])[0] == REFUSE:
                refused += 1
                reasons.add(data[16:].split(b"\0")[0].decode(errors="replace"))
            held.remove(c)
            c.close()
    print("opened %d, refused with a reason %d" % (opened, refused))
    for r in sorted(reasons):
        print("reason: %s" % r)


def main():
    path, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if what == "truncate":
        truncate(path)
    elif what == "forge":
        forge(path, int(args[0]), int(args[1]))
    elif what == "jam":
        jam(path, int(args[0]), int(args[1]))
    elif what == "epoch":
        epoch(path, int(args[0]))
    elif what == "grant":
        grant(path, float(args[0]))
    elif what == "slots":
        slots(path, int(args[0]))
    elif what == "connections":
        connections(path, int(args[0]), args[1])
    elif what == "remote":
        connections(path, int(args[0]), args[2], REMOTE, REMOTE_READY, args[1])
    elif what == "deaf":
        deaf(path, int(args[0]))
    elif what == "flood":
        flood(path, float(args[0]))
    else:
        sys.exit("mediator_tenant.py: unknown action %s" % what)


if __name__ == "__main__":
    main()
