"""The carried calls of the remote call spec, as C: a call whose every
parameter is of a kind gen_remote_abi.py names (its docstring says which)
crosses as words.

The guest packs its values (one 64-bit word each, after a word whose bits
say which of its pointers are NULL), then the bytes of the structs it reads,
waits for the reply and writes back what it returns: out-values, the
structs it writes, its char buffers.  The executor checks each handle
against those this guest was given, calls the driver and registers the
handles it returns (and forgets the one an `ends` call ended), and each
device pointer against the driver's device allocations (vgpu_exec_device_memory:
never the executor's own memory) unless the call only asks about it
(`queries`); a char buffer is the executor's, of at most 4 KiB, whatever size
the guest says.  `async` calls with nothing to return are sent without
waiting; their errors come back with the next `sync` call.
"""
import re
import sys

RAW = {"i1": "uint8_t", "i2": "uint16_t", "i4": "uint32_t", "i8": "uint64_t", "f4": "float", "f8": "double",
       "h": "void *", "hs": "void *", "d": "uint64_t"}
TEXT_MAX = 4096  # the executor's char buffer: a name, a UUID, a version string

MEMSET = re.compile(r"^cuMemsetD(2D)?(8|16|32)(Async)?(_v2)?(_ptsz|_ptds)?$")
DTOD = re.compile(r"^cuMemcpyDtoD(Async)?(_v2)?(_ptsz|_ptds)?$")


def flag(b):
    return "true" if b else "false"


def extent(name):
    """The device range a memset or a device-to-device copy touches, as the
    indexes of its parameters: (pitch, width, element size, height), None
    for a pitch of 0 or a height of 1; None for a call that touches one
    address (the executor then checks that address only)."""
    m = MEMSET.match(name)
    if m:
        size = int(m.group(2)) // 8
        return (1, 3, size, 4) if m.group(1) else (None, 2, size, None)
    if DTOD.match(name):
        return (None, 2, 1, None)
    return None


def remote_notices(lib, flags):
    """The lines a guest's function ends with to tell what it keeps (cache.h) that
    the call changed: contexts (`changes`), what tuning answers (`tunes`)."""
    if lib["id"] != 0:
        return []
    lines = []
    if "changes" in flags:
        lines.append("    vgpu_remote_context_changed();")
    if "tunes" in flags:
        lines.append("    vgpu_remote_tuned();")
    return lines


def declaration(params):
    """A stub's parameter list: each value as its word's C type, each pointer void *."""
    return ", ".join("%s a%d" % (RAW.get(k, "void *"), i) for i, k in enumerate(params)) or "void"


def carried(g, gtable, e, etable, slot, call, lib):
    """One carried call, both sides.  A call whose guest side is written by
    hand gets its stub as vgpu_remote_carried_NAME, which the hand-written
    vgpu_remote_guest_NAME (its table's entry) calls."""
    name, params, flags = call.name, call.kinds, call.flags
    wrapped = "guest" in call.hand
    ins = [(i, k) for i, k in enumerate(params) if k[0] not in "obst"]
    outs = [(i, k) for i, k in enumerate(params) if k[0] == "o"]
    ptrs = [(i, k) for i, k in enumerate(params) if k[0] in "obst"]  # the NULL mask's order
    structs = [(i, k, int(k[1:])) for i, k in enumerate(params) if k[0] in "bs"]
    written = [(i, k, n) for i, k, n in structs if k[0] == "s"]
    texts = [i for i, k in enumerate(params) if k == "t"]  # each one's size is parameter i + 1
    if len(outs) > 8:
        sys.exit("gen_remote: %s writes %d values: the executor has room for 8" % (name, len(outs)))
    plain = not structs and not texts
    nin = 1 + len(ins)
    bit = {i: j for j, (i, k) in enumerate(ptrs)}
    ii = {i: j for j, (i, k) in enumerate(ins)}
    oi = {i: j for j, (i, k) in enumerate(outs)}
    if "async" in flags and not (plain and not outs):
        sys.exit("gen_remote: %s is async but returns something" % name)
    is_async = "async" in flags
    syncs = "sync" in flags
    changes = remote_notices(lib, flags)

    # ---- the guest ----
    decl = declaration(params)
    g.append("%s(%s)" % ("int vgpu_remote_carried_" + name if wrapped else "static int g_" + name, decl))
    g.append("{")
    g.append("    uint64_t in[%d], out[%d];" % (nin, max(1, len(outs))))
    g.append("    in[0] = 0;")
    for i, k in ptrs:
        g.append("    if (!a%d)\n    in[0] |= 1ull << %d;" % (i, bit[i]))
    for j, (i, k) in enumerate(ins):
        if k in ("f4", "f8"):
            g.append("    in[%d] = 0;\n    memcpy(&in[%d], &a%d, %s);" % (j + 1, j + 1, i, k[1]))
        elif k in ("h", "hs"):
            g.append("    in[%d] = (uint64_t)(uintptr_t)a%d;" % (j + 1, i))
        else:
            g.append("    in[%d] = (uint64_t)a%d;" % (j + 1, i))
    if plain:
        if is_async:
            g.append("    (void)out;")
            g.append("    int r = vgpu_remote_send_words(%d, in, %d);" % (slot, nin))
        else:
            g.append("    int r = vgpu_remote_call_words(%d, in, %d, out, %d);" % (slot, nin, len(outs)))
    else:
        if structs:
            g.append("    static const unsigned char none[%d];" % max(n for _, _, n in structs))
        g.append("    unsigned char scratch[%d];" % max([n for _, _, n in written] + [1]))
        q = ["{ in, sizeof(in) }"] + ["{ a%d ? (void *)a%d : (void *)none, %d }" % (i, i, n) for i, k, n in structs]
        r = ["{ out, %d }" % (len(outs) * 8)]
        r += ["{ a%d ? (void *)a%d : (void *)scratch, %d }" % (i, i, n) for i, k, n in written]
        for i in texts:
            g.append("    size_t t%d = a%d && (int32_t)a%d > 0 ? (size_t)a%d < %d ? (size_t)a%d : %d : 0;"
                     % (i, i, i + 1, i + 1, TEXT_MAX, i + 1, TEXT_MAX))
            r.append("{ a%d, t%d }" % (i, i))
        g.append("    struct iovec q[%d] = { %s };" % (len(q), ", ".join(q)))
        g.append("    struct iovec a[%d] = { %s };" % (len(r), ", ".join(r)))
        g.append("    size_t got = 0;")
        g.append("    (void)scratch;")
        g.append("    int r = vgpu_remote_call(%d, q, %d, a, %d, &got);" % (slot, len(q), len(r)))
        expected = " + ".join([str(len(outs) * 8 + sum(n for _, _, n in written))] + ["t%d" % i for i in texts])
        g.append("    if (r == 0 && got != %s)\n    return vgpu_remote_library.unknown;" % expected)
    for j, (i, k) in enumerate(outs):
        size = 8 if k in ("oh", "od") else int(k[1:])
        g.append("    if (r == 0 && a%d)\n    memcpy(a%d, &out[%d], %d);" % (i, i, j, size))
    g.extend(changes)
    g.append("    return r;")
    g.append("}")
    g.append("")
    gtable.append("    [%d] = (void *)%s%s," % (slot, "vgpu_remote_guest_" if wrapped else "g_", name))

    # ---- the executor ----
    if plain:
        e.append("static int x_%s(struct vgpu_exec *x, void *fn, const uint64_t *in, uint64_t *out)" % name)
        e.append("{")
        e.append("    (void)x;\n    (void)in;\n    (void)out;")
        bad = "return %s;" % lib["bad_handle"]
    else:
        total = nin * 8 + sum(n for _, _, n in structs)
        e.append("static int x_%s(struct vgpu_exec *x, void *fn, void *req, size_t len)" % name)
        e.append("{")
        e.append("    if (len != %d)\n    return vgpu_exec_malformed(\"%s\", len);" % (total, name))
        e.append("    uint64_t in[%d], out[%d] = { 0 };" % (nin, max(1, len(outs))))
        e.append("    memcpy(in, req, sizeof(in));")
        at = nin * 8
        for i, k, n in structs:
            e.append("    _Alignas(16) unsigned char s%d[%d];\n    memcpy(s%d, (const char *)req + %d, %d);"
                     % (i, n, i, at, n))
            at += n
        for i in texts:
            w = "in[%d]" % (ii[i + 1] + 1)
            e.append("    char t%d[%d] = { 0 };" % (i, TEXT_MAX))
            e.append("    if ((int32_t)%s <= 0 && %s)\n    return vgpu_exec_reply(x, %s, NULL, 0);"
                     % (w, w, lib["invalid"]))
            e.append("    uint64_t n%d = (in[0] >> %d) & 1 ? 0 : %s < %d ? %s : %d;" % (i, bit[i], w, TEXT_MAX, w,
                                                                                   TEXT_MAX))
        bad = "return vgpu_exec_reply(x, %s, NULL, 0);" % lib["bad_handle"]
    for i, k in ins:
        if k in ("h", "hs"):
            e.append("    if (!vgpu_exec_handle_known(x, in[%d], %s))\n    %s" % (ii[i] + 1, flag(k == "hs"), bad))
        if k == "d" and "queries" not in flags:
            rows = extent(name)
            w = lambda j: "in[%d]" % (ii[j] + 1)
            check = ("vgpu_exec_device_rows(x, in[%d], %s, %s, %d, %s, \"%s\")"
                     % (ii[i] + 1, w(rows[0]) if rows[0] is not None else "0", w(rows[1]), rows[2],
                        w(rows[3]) if rows[3] is not None else "1", name) if rows
                     else "vgpu_exec_device_memory(x, in[%d], \"%s\")" % (ii[i] + 1, name))
            e.append("    if (in[%d] && !%s)\n    %s"
                     % (ii[i] + 1, check, bad.replace(lib["bad_handle"], lib["invalid"])))
    args = []
    for i, k in enumerate(params):
        null = "(in[0] >> %d) & 1 ? NULL : " % bit[i] if i in bit else ""
        if k[0] == "o":
            args.append(null + "(void *)&out[%d]" % oi[i])
        elif k[0] in "bs":
            args.append(null + "(void *)s%d" % i)
        elif k == "t":
            args.append(null + "(void *)t%d" % i)
        elif i - 1 in texts:
            args.append("(%s)n%d" % (RAW[k], i - 1))
        elif k in ("f4", "f8"):
            e.append("    %s v%d;\n    memcpy(&v%d, &in[%d], %s);" % ("float" if k == "f4" else "double", i, i,
                                                                     ii[i] + 1, k[1]))
            args.append("v%d" % i)
        elif k in ("h", "hs"):
            args.append("(void *)(uintptr_t)in[%d]" % (ii[i] + 1))
        else:
            args.append("(%s)in[%d]" % (RAW[k], ii[i] + 1))
    ftype = "int (*)(%s)" % (", ".join(RAW.get(k, "void *") for k in params) or "void")
    if "ends" in flags:
        if not params or params[0] not in ("h", "hs"):
            sys.exit("gen_remote: %s ends a handle but its first parameter is none" % name)
        # Forgotten before the driver ends it: another lane's handle the driver gives at the same
        # address after is never forgotten with it; still the guest's if the driver refused.
        e.append("    vgpu_exec_handle_drop(x, in[1]);")
    e.append("    int r = ((%s)fn)(%s);" % (ftype, ", ".join(args)))
    for j, (i, k) in enumerate(outs):
        if k == "oh":
            e.append("    if (r == 0 && !((in[0] >> %d) & 1))\n    vgpu_exec_handle_add(x, out[%d]);" % (bit[i], j))
    if "ends" in flags:
        e.append("    if (r != 0)\n    vgpu_exec_handle_add(x, in[1]);")
    if lib["id"] == 0 and "changes" in flags:
        e.append("    vgpu_exec_context_changed(x);")
    if plain:
        e.append("    return r;")
        etable.append("    [%d] = { .words = x_%s, .nin = %d, .nout = %d, .async = %s, .sync = %s },"
                      % (slot, name, nin, len(outs), flag(is_async), flag(syncs)))
    else:
        v = ["{ out, r == 0 ? %d : 0 }" % (len(outs) * 8)]
        v += ["{ s%d, r == 0 ? %d : 0 }" % (i, n) for i, k, n in written]
        v += ["{ t%d, r == 0 ? n%d : 0 }" % (i, i) for i in texts]
        e.append("    struct iovec v[%d] = { %s };" % (len(v), ", ".join(v)))
        e.append("    return vgpu_exec_reply(x, r, v, %d);" % len(v))
        etable.append("    [%d] = { .manual = x_%s, .sync = %s }," % (slot, name, flag(syncs)))
    e.append("}")
    e.append("")
