#!/usr/bin/env python3
"""Write the reference of the remote calls (docs/reference/remote-calls.md)
from the call specs: every export of each library, and what a guest's call
of it does.

    gen_remote_doc.py forwarder/remote/spec/cuda.remote forwarder/remote/spec/nvml.remote > remote-calls.md
    gen_remote_doc.py --fates forwarder/remote/spec/cuda.remote

The test remote_calls_reference_is_current runs it and compares with the
committed page.  With --fates it prints each export of the spec's library
and its fate, and fails when one is refused with no reason given (the
test remote_every_driver_export_has_a_fate).
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
| not carried yet | refused so, with no reason of its own: the test `remote_every_driver_export_has_a_fate` fails on one of libcuda's |
| absent | not in the toolkit's header (interop with graphics APIs, undocumented calls): refused so, for the reason given |

"""


def fate(c):
    """(fate, detail) of a call."""
    if c.refused is not None and c.kind != "absent":
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
        return "absent", c.refused or ""
    return "not carried yet", ""


def refused_share(spec):
    """A paragraph: what share of the driver's exports a guest may not call."""
    fates = [(name, fate(spec.calls[name])[0], spec.calls[name].refused or "") for name in spec.order]
    refused = [f for f in fates if f[1] in ("refused", "absent", "not carried yet")]
    interop = [f for f in refused
               if f[2].startswith(("interop with", "external memory", "external semaphores", "a graphics resource"))]
    rest = len(refused) - len(interop)
    total = len(fates)
    return ["Of libcuda's %d exports, %d (%.1f%%) are refused: %d are interop with another API of the "
            "guest's (OpenGL, EGL, VDPAU, Vulkan's and Direct3D's external memory and semaphores), which a guest "
            "has on no GPU of the host; the other %d (%.1f%% of the exports) are named with their reasons "
            "below." % (total, len(refused), 100.0 * len(refused) / total, len(interop), rest, 100.0 * rest / total),
            ""]


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
    out.extend(refused_share(specs[0][1]))
    out.extend(tables)
    return "\n".join(out)


def fates(spec):
    """Each export and its fate; 1 when one is refused with no reason."""
    bad = 0
    for name in spec.order:
        f, why = fate(spec.calls[name])
        print("%s %s%s" % (name, f, ": " + why if why else ""))
        if f in ("refused", "absent", "not carried yet") and not why:
            print("FAIL: %s is refused with no reason: carry it, answer it in the guest, or say why not "
                  "(`refused REASON` in the spec)" % name)
            bad = 1
    return bad


def main():
    args = sys.argv[1:]
    check = args[:1] == ["--fates"]
    try:
        specs = [("libcuda" if "cuda" in os.path.basename(p) else "NVML", Spec(p)) for p in args[check:]]
    except SpecError as e:
        sys.exit("gen_remote_doc: %s" % e)
    if check:
        sys.exit(max(fates(s) for _, s in specs))
    sys.stdout.write(page(specs))


if __name__ == "__main__":
    main()
