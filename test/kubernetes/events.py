"""The fake kubelet's events (one JSON object a line), for device_plugin.sh:

  events.py wait FILE FROM SECONDS EXPR
      waits for the first event after line FROM of FILE for which the Python
      expression EXPR (over the event, e) holds; prints its JSON (exit 0),
      or says what came instead (exit 1)
  events.py count FILE EXPR
      how many events of FILE EXPR holds for
  events.py get JSON EXPR
      EXPR over the event JSON
"""
import json
import sys
import time


def events(path):
    with open(path) as f:
        lines = f.read().split("\n")
    out = []
    for line in lines[:-1]:  # the last is "" or a line still being written
        try:
            out.append((line, json.loads(line)))
        except ValueError:
            out.append((line, {"event": "not-json", "line": line}))
    return out


def holds(expr, e):
    try:
        return bool(eval(expr, {}, {"e": e}))
    except (KeyError, IndexError, TypeError):
        return False


def main():
    cmd = sys.argv[1]
    if cmd == "wait":
        path, start, seconds, expr = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
        deadline = time.monotonic() + seconds
        while True:
            evs = events(path)
            for line, e in evs[start:]:
                if holds(expr, e):
                    print(line)
                    return 0
            if time.monotonic() > deadline:
                sys.stderr.write("no event where %s in %g s; after line %d came:\n" % (expr, seconds, start))
                for line, _ in evs[start:][-20:]:
                    sys.stderr.write("  %s\n" % line)
                return 1
            time.sleep(0.05)
    if cmd == "count":
        print(sum(1 for _, e in events(sys.argv[2]) if holds(sys.argv[3], e)))
        return 0
    if cmd == "get":
        print(eval(sys.argv[3], {}, {"e": json.loads(sys.argv[2])}))
        return 0
    sys.stderr.write(__doc__)
    return 2


sys.exit(main())
