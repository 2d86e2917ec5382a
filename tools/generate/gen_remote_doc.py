#!/usr/bin/env python3
"""Write the reference of the remote calls (docs/reference/remote-calls.md)
from the call specs: every export of each library, and what a guest's call
of it does.

    gen_remote_doc.py forwarder/remote/spec/cuda.remote forwarder/remote/spec/nvml.remote > remote-calls.md

The test remote_calls_reference_is_current runs it and compares with the
committed page.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from remote_spec import Spec, SpecError  # noqa: E402

INTRO = """# Remote calls

What a guest's call of each export of the driver (libcuda) and of NVML
does, as the call specs declare it (`forwarder/remote/spec/cuda.remote`,
`forwarder/remote/spec/nvml.remote`; `tools/generate/remote_spec.py` says
how a declaration reads).  This page is written from them by
`tools/generate/gen_remote_doc.py`; the test `remote_calls_reference_is_current`
fails when it is not what they say.

| fate | what the guest's call does |
| --- | --- |
| carried | crosses to the executor as its parameters' words and structs, generated from its signature; the executor checks each handle and device address |
| declared | crosses as the message its spec declares (fields in order, counts and bounds); *generated* where both sides are generated whole from that declaration, else the side written by hand is named |
| guest | answered in the guest, with no message of its own: the reason says how |
| refused | `CUDA_ERROR_NOT_SUPPORTED` (`NVML_ERROR_NOT_SUPPORTED`), logged once, for the reason given |
| not carried yet | refused so, until a declaration carries it |
| absent | not in the toolkit's header (interop with other graphics APIs, the debugger): refused so |

"""


def fate(c):
    """(fate, detail) of a call."""
    if c.refused is not None:
        return "refused", c.refused
    if c.guest is not None:
        return "guest", c.guest
    if c.kind == "carried":
        flags = sorted(c.flags)
        detail = ", ".join(flags)
        if "guest" in c.hand:
            detail = ("the guest keeps or finishes its answer; " + detail).rstrip("; ")
        return "carried", detail
    if c.has_message():
        sides = sorted(c.hand)
        detail = "generated" if not sides else "by hand: " + ", ".join(sides)
        if c.like:
            detail += "; %s's message" % c.like
        flags = sorted(c.flags)
        if flags:
            detail += "; " + ", ".join(flags)
        return "declared", detail
    if c.kind == "absent":
        return "absent", ""
    return "not carried yet", ""


def page(specs):
    out = [INTRO.rstrip("\n"), ""]
    summary = ["| library | exports | carried | declared | guest | refused | not carried yet | absent |",
               "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    tables = []
    for title, spec in specs:
        counts = {}
        rows = []
        for name in spec.order:
            f, d = fate(spec.calls[name])
            counts[f] = counts.get(f, 0) + 1
            rows.append("| `%s` | %s | %s |" % (name, f, d.replace("|", "\\|")))
        summary.append("| %s | %d | %s |" % (title, len(spec.order), " | ".join(
            str(counts.get(k, 0)) for k in ("carried", "declared", "guest", "refused", "not carried yet", "absent"))))
        tables.append("## %s\n\n| export | fate | how |\n| --- | --- | --- |\n%s\n" % (title, "\n".join(rows)))
    out.extend(summary)
    out.append("")
    out.extend(tables)
    return "\n".join(out)


def main():
    try:
        specs = [("libcuda" if "cuda" in os.path.basename(p) else "NVML", Spec(p)) for p in sys.argv[1:]]
    except SpecError as e:
        sys.exit("gen_remote_doc: %s" % e)
    sys.stdout.write(page(specs))


if __name__ == "__main__":
    main()
