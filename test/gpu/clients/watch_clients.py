"""The processes of test/gpu/mediator/watch.sh, and the clock on them.

  watch_clients.py torch-hold
      PyTorch allocates 1 GiB on GPU 0, prints "ready PID", and waits to be
      killed (under vgpu or not: the caller's environment decides).
  watch_clients.py caught NAME BOUND_MS [--may-not-run] [--from-ready] -- COMMAND...
      Runs COMMAND (the environment as given) and reads the driver's process
      list on GPU 0 through NVML every 10 ms: the watch must kill the process
      within BOUND_MS of the driver first listing it (with --from-ready, of
      its printing "ready": a process admitted first, and over its quota
      only from then on).  Prints one "ok NAME:
      ..." or "FAIL NAME: ..." line; exits 0 (ok), 1 (killed too late), 2
      (not killed within a minute) or 3 (it ended by itself, as a static
      program that cannot load the driver does: with --may-not-run, said
      on a "#" line, not as a failure).
"""
import os
import signal
import subprocess
import sys
import threading
import time


def torch_hold():
    import torch
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    print("ready %d" % os.getpid(), flush=True)
    while x is not None:
        time.sleep(60)


def caught(name, bound_ms, may_not_run, from_ready, command):
    import pynvml
    pynvml.nvmlInit()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    start = time.monotonic()
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, ready = [], []

    def read():  # its output, and when it said "ready"
        for line in p.stdout:
            lines.append(line)
            if line.startswith("ready") and not ready:
                ready.append(time.monotonic())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen = None
    while p.poll() is None and time.monotonic() - start < 60:
        if seen is None:
            pids = [q.pid for q in pynvml.nvmlDeviceGetComputeRunningProcesses(gpu)]
            if p.pid in pids:
                seen = time.monotonic()
        time.sleep(0.01)
    ended = time.monotonic()
    running = p.poll() is None
    if running:
        p.kill()
    p.wait()
    reader.join(5)
    out = "".join(lines).strip().replace("\n", " | ")[-400:]
    listed = "never listed it" if seen is None else "listed it %.0f ms after it started" % ((seen - start) * 1e3)
    if from_ready and seen is not None:
        seen = ready[0] if ready else None
        listed += ", and it said ready %s" % ("%.0f ms after it started" % ((seen - start) * 1e3) if ready else "never")
    if running:
        print("FAIL %s: the driver %s, and it was not killed within a minute: %s" % (name, listed, out), flush=True)
        return 2
    if p.returncode != -signal.SIGKILL or seen is None:
        print("%s %s: it ended by itself (exit %s) %.0f ms after it started; the driver %s: %s"
              % ("#" if may_not_run else "FAIL", name, p.returncode, (ended - start) * 1e3, listed, out), flush=True)
        return 3
    took = (ended - seen) * 1e3
    verdict = "ok" if took <= bound_ms else "FAIL"
    print("%s %s: killed by SIGKILL %.0f ms after %s (bound %d ms; the driver %s; it said: %s)"
          % (verdict, name, took, "it was ready" if from_ready else "the driver first listed it", bound_ms, listed,
             out or "nothing"), flush=True)
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["torch-hold"]:
        torch_hold()
    elif sys.argv[1:2] == ["caught"] and "--" in sys.argv[4:7] and sys.argv[-1] != "--":
        at = sys.argv.index("--", 4)
        sys.exit(caught(sys.argv[2], int(sys.argv[3]), "--may-not-run" in sys.argv[4:at], "--from-ready" in sys.argv[4:at],
                        sys.argv[at + 1:]))
    else:
        sys.exit(__doc__)
