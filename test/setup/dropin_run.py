#!/usr/bin/env python3
"""Runs a program as systemd would run the service a vgpu drop-in is for,
without systemd: with exactly the Environment= lines of the drop-in (and of
the unit files given before it), over a clean environment.

    dropin_run.py [--machine NAME=VALUE]... UNIT_OR_DROPIN... -- PROGRAM [ARGS...]

Files are applied in order, as systemd layers a unit and its drop-ins.  The
--machine variables stand for the machine rather than the service: where
the (fake) driver is, which a real machine's loader would know.  This is an
independent reading of systemd's rules (systemd.exec(5): quotes, backslash
escapes, %% for %, an empty Environment= resets), not vgpu-setup's own."""
import os
import shlex
import sys


def environment(files):
    env = {}
    for path in files:
        section = None
        with open(path) as f:
            lines = f.read().replace("\\\n", " ").splitlines()
        for line in lines:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            key, _, value = line.partition("=")
            if section != "[Service]" or key.strip() != "Environment":
                continue
            words = shlex.split(value.strip().replace("%%", "\0"))
            if not words:
                env.clear()
            for w in words:
                name, eq, val = w.replace("\0", "%").partition("=")
                if not eq:
                    raise SystemExit(f"{path}: Environment= word without '=': {w!r}")
                env[name] = val
    return env


def main():
    args = sys.argv[1:]
    machine = {}
    while args and args[0] == "--machine":
        name, _, value = args[1].partition("=")
        machine[name] = value
        args = args[2:]
    split = args.index("--")
    files, command = args[:split], args[split + 1:]
    # systemd's manager environment for a system service: a PATH, nothing of the caller's.
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    # ...and a sanitized test run's settings, without which a sanitized library cannot load.
    env.update({k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                                                          "TSAN_OPTIONS")})
    env.update(machine)
    env.update(environment(files))
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
