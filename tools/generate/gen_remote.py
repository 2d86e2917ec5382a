#!/usr/bin/env python3
"""Generate a remote driver: the guest's stubs and the executor's dispatchers.

    gen_remote.py --lib cuda|nvml --abi forwarder/remote/spec/LIB.remote --symbols interpose/LIB.symbols
                  [--guest-manual LIST] [--exec-manual LIST]
                  --out-guest G.c --out-exec E.c --out-h H.h

The ABI file (tools/generate/gen_remote_abi.py) says, for every export, whether
its parameters are all plain values, handles, device pointers, pointers to one
value or one struct of plain data, and char buffers with their size
(`carried`), or not (`manual`, `absent`).  Slots are those of the dispatch
table (the sorted function names of the symbol list).

  G.c  vgpu_remote_LIB_table[slot]: the remote driver's function for every
       slot, and vgpu_remote_library, what the library's client needs to know
       (its hash, its error codes, its dispatch table).  A carried call packs
       its values (one 64-bit word each, after a word whose bits say which of
       its pointers are NULL), then the bytes of the structs it reads, waits
       for the reply and writes back what it returns: out-values, the structs
       it writes, its char buffers.  A manual call named in the guest's list is
       vgpu_remote_guest_NAME (forwarder/remote/guest/cuda/manual.h); any other is
       refused with the library's "not supported", logged once
       (vgpu_remote_refuse).
  E.c  vgpu_exec_LIB: the executor's table of the library: the driver it
       loads, each slot's name and handler.  A carried call checks each handle
       against those this guest was given, calls the driver and registers the
       handles it returns (and forgets the one a ...Destroy, ...Unload,
       ...Free or ...Release call ended), and each device pointer against the
       driver's device allocations (vgpu_exec_device_memory: never the
       executor's own memory) unless the call only asks about it (QUERIES); a char buffer is the executor's, of at most
       4 KiB, whatever size the guest says.  A manual one named in the executor's list is
       vgpu_exec_NAME (forwarder/remote/executor/cuda/calls.h).  Launches, records,
       waits and asynchronous memsets (ASYNC) are sent without waiting for a
       reply; their errors come back with the next synchronizing call (SYNC).
       Calls that reach beyond the executor (REFUSED) are refused whatever
       the ABI says.
  H.h  VGPU_REMOTE_LIB_COUNT, VGPU_REMOTE_LIB_ABI_HASH (FNV-1a of the ABI file
       and the slot order: guest and executor must agree on both) and
       VGPU_REMOTE_LIB_ID (which library a HELLO names).
"""
import argparse
import re
import sys

RAW = {"i1": "uint8_t", "i2": "uint16_t", "i4": "uint32_t", "i8": "uint64_t", "f4": "float", "f8": "double",
       "h": "void *", "hs": "void *", "d": "uint64_t"}

# Each library: its id in HELLO, and its codes for success, a handle this
# guest was not given, a call not carried, an entry point the driver lacks,
# no executor to be reached, and a reply that makes no sense.
LIBS = {
    "cuda": {"id": 0, "driver": "libcuda.so.1", "bad_handle": "400", "not_supported": "801", "not_found": "500",
             "unavailable": "46", "unknown": "999", "invalid": "1",
             "guest_h": "forwarder/remote/guest/cuda/manual.h", "exec_h": "forwarder/remote/executor/cuda/calls.h"},
    "nvml": {"id": 1, "driver": "libnvidia-ml.so.1", "bad_handle": "2", "not_supported": "3", "not_found": "13",
             "unavailable": "9", "unknown": "999", "invalid": "2",
             "guest_h": "forwarder/remote/guest/nvml/manual.h", "exec_h": "forwarder/remote/executor/nvml/calls.h"},
}
TEXT_MAX = 4096  # the executor's char buffer: a name, a UUID, a version string

# Calls the guest sends without waiting (they return nothing but an error,
# which the driver too may report later): launches, event records and
# waits, asynchronous memsets and frees, graph launches.
ASYNC = re.compile(r"^(cuLaunchKernel|cuLaunchKernelEx|cuLaunchCooperativeKernel|cuGraphLaunch|cuEventRecord|cuEventRecordWithFlags"
                   r"|cuStreamWaitEvent|cuMemsetD(8|16|32|2D8|2D16|2D32)Async|cuMemFreeAsync"
                   r"|cuMemcpy(HtoD|DtoD|2D)Async)(_v2)?(_ptsz|_ptds)?$")
# Calls that synchronize: an asynchronous call's error comes back with them.
SYNC = re.compile(r"Synchronize|Query|^cuMemcpyDtoH(Async)?(_v2)?(_ptds|_ptsz)?$"
                  r"|^cuMemcpy2D(Unaligned)?(Async)?(_v2)?(_ptds|_ptsz)?$")
# Calls no guest may make whatever their arguments: they reach beyond its
# executor (other processes by pid, IPC handles of other processes, the
# profiler of the host), or change the physical GPU for every tenant (NVML's
# setters, resets, instances; other processes' names and accounting).  An
# NVML event set may be made and freed (nvidia-smi makes one): registering
# for events stays refused.
REFUSED = re.compile(r"^(cuCheckpoint|cuIpc|cuProfiler"
                     r"|nvml(?!EventSet(Create|Free)$)\w*(Set|Clear|Reset|Create|Destroy|Remove|Modify|Register|Discover|Inject)"
                     r"|nvmlSystemGetProcessName|nvmlDeviceGetAccounting|nvmlDeviceGetRetiredPages)")
# Calls that only ask the driver about a device address, which the driver
# looks up and never reads through: any address may be asked about (the
# guest tells its own memory from the GPU's with them).
QUERIES = re.compile(r"^cuMemGetAddressRange(_v2)?$")
# Calls that change the executor's current context, its primary contexts,
# or unload modules: what the guest keeps of them (forwarder/remote/guest/cuda/
# cache.c) is forgotten after each.
CHANGES = re.compile(r"^cu(Init|Ctx(Create|Destroy|Detach|SetCurrent|PushCurrent|PopCurrent|SetFlags|FromGreenCtx)"
                     r"|DevicePrimaryCtx(Retain|Release|Reset|SetFlags)|GreenCtx(Create|Destroy)"
                     r"|ModuleUnload|LibraryUnload)")
# Calls that change what occupancy queries answer (a function's or a
# context's shared memory, cache or limits): the guest forgets those too.
TUNES = re.compile(r"^cu(Func|Kernel)Set(Attribute|CacheConfig|SharedMemConfig)"
                   r"|^cuCtxSet(CacheConfig|SharedMemConfig|Limit)")
# The handle a call of these names ends, as its first argument.
ENDS = re.compile(r"(Destroy|Unload|Free|Release)(_v2)?$")


def read_list(path):
    out = []
    if not path:
        return out
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                out.append(line)
    return out


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def flag(b):
    return "true" if b else "false"


MEMSET = re.compile(r"^cuMemsetD(2D)?(8|16|32)(Async)?(_v2)?(_ptsz|_ptds)?$")
DTOD = re.compile(r"^cuMemcpyDtoD(Async)?(_v2)?(_ptsz|_ptds)?$")


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


def declaration(params):
    """A stub's parameter list: each value as its word's C type, each pointer void *."""
    return ", ".join("%s a%d" % (RAW.get(k, "void *"), i) for i, k in enumerate(params)) or "void"


def carried(g, gtable, e, etable, slot, name, params, lib, wrapped=False):
    """One carried call, both sides (the module docstring says what crosses).
    A wrapped one's stub is vgpu_remote_carried_NAME, which the guest's
    vgpu_remote_wrapped_NAME (its table's entry) calls."""
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
    is_async = plain and not outs and bool(ASYNC.match(name))
    syncs = bool(SYNC.search(name))

    # ---- the guest ----
    decl = declaration(params)
    g.append("%s(%s)" % ("int vgpu_remote_carried_" + name if wrapped else "static int g_" + name, decl))
    g.append("{")
    g.append("    uint64_t in[%d], out[%d];" % (nin, max(1, len(outs))))
    g.append("    in[0] = 0;")
    for i, k in ptrs:
        g.append("    if (!a%d)\n        in[0] |= 1ull << %d;" % (i, bit[i]))
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
        g.append("    if (r == 0 && got != %s)\n        return vgpu_remote_library.unknown;" % expected)
    for j, (i, k) in enumerate(outs):
        size = 8 if k in ("oh", "od") else int(k[1:])
        g.append("    if (r == 0 && a%d)\n        memcpy(a%d, &out[%d], %d);" % (i, i, j, size))
    if lib["id"] == 0 and (CHANGES.match(name) or TUNES.match(name)):
        g.append("    vgpu_remote_context_changed();")
    g.append("    return r;")
    g.append("}")
    g.append("")
    gtable.append("    [%d] = (void *)%s%s," % (slot, "vgpu_remote_wrapped_" if wrapped else "g_", name))

    # ---- the executor ----
    if plain:
        e.append("static int x_%s(struct vgpu_exec *x, void *fn, const uint64_t *in, uint64_t *out)" % name)
        e.append("{")
        e.append("    (void)x;\n    (void)in;\n    (void)out;")
        bad = "return %s;" % lib["bad_handle"]
    else:
        total = nin * 8 + sum(n for _, _, n in structs)
        e.append("static int x_%s(struct vgpu_exec *x, void *fn, const void *req, size_t len)" % name)
        e.append("{")
        e.append("    if (len != %d)\n        return vgpu_exec_malformed(\"%s\", len);" % (total, name))
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
            e.append("    if ((int32_t)%s <= 0 && %s)\n        return vgpu_exec_reply(x, %s, NULL, 0);"
                     % (w, w, lib["invalid"]))
            e.append("    uint64_t n%d = (in[0] >> %d) & 1 ? 0 : %s < %d ? %s : %d;" % (i, bit[i], w, TEXT_MAX, w,
                                                                                   TEXT_MAX))
        bad = "return vgpu_exec_reply(x, %s, NULL, 0);" % lib["bad_handle"]
    for i, k in ins:
        if k in ("h", "hs"):
            e.append("    if (!vgpu_exec_handle_known(x, in[%d], %s))\n        %s" % (ii[i] + 1, flag(k == "hs"), bad))
        if k == "d" and not QUERIES.match(name):
            rows = extent(name)
            w = lambda j: "in[%d]" % (ii[j] + 1)
            check = ("vgpu_exec_device_rows(x, in[%d], %s, %s, %d, %s, \"%s\")"
                     % (ii[i] + 1, w(rows[0]) if rows[0] is not None else "0", w(rows[1]), rows[2],
                        w(rows[3]) if rows[3] is not None else "1", name) if rows
                     else "vgpu_exec_device_memory(x, in[%d], \"%s\")" % (ii[i] + 1, name))
            e.append("    if (in[%d] && !%s)\n        %s"
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
    e.append("    int r = ((%s)fn)(%s);" % (ftype, ", ".join(args)))
    for j, (i, k) in enumerate(outs):
        if k == "oh":
            e.append("    if (r == 0 && !((in[0] >> %d) & 1))\n        vgpu_exec_handle_add(x, out[%d]);" % (bit[i], j))
    if ENDS.search(name) and params and params[0] in ("h", "hs"):
        e.append("    if (r == 0)\n        vgpu_exec_handle_drop(x, in[1]);")
    if lib["id"] == 0 and CHANGES.match(name):
        e.append("    vgpu_exec_context_changed(x);")
    if plain:
        e.append("    return r;")
        etable.append("    [%d] = { x_%s, %d, %d, NULL, %s, %s }," % (slot, name, nin, len(outs), flag(is_async),
                                                                     flag(syncs)))
    else:
        v = ["{ out, r == 0 ? %d : 0 }" % (len(outs) * 8)]
        v += ["{ s%d, r == 0 ? %d : 0 }" % (i, n) for i, k, n in written]
        v += ["{ t%d, r == 0 ? n%d : 0 }" % (i, i) for i in texts]
        e.append("    struct iovec v[%d] = { %s };" % (len(v), ", ".join(v)))
        e.append("    return vgpu_exec_reply(x, r, v, %d);" % len(v))
        etable.append("    [%d] = { NULL, 0, 0, x_%s, false, %s }," % (slot, name, flag(syncs)))
    e.append("}")
    e.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", choices=sorted(LIBS), required=True)
    ap.add_argument("--guest-manual")
    ap.add_argument("--exec-manual")
    ap.add_argument("--guest-wrapped", help="carried calls the guest wraps (answers it keeps, handles it tracks)")
    for opt in ("--abi", "--symbols", "--out-guest", "--out-exec", "--out-h"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
    lib = LIBS[a.lib]
    up = a.lib.upper()
    funcs = sorted(n for n, k in read_list(a.symbols) if k == "func")
    abi = {}
    with open(a.abi) as f:
        abi_text = f.read()
    for line in abi_text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        abi[parts[0]] = (parts[1], parts[2:])
    missing = [n for n in funcs if n not in abi]
    if missing:
        sys.exit("gen_remote: %s lacks %s: run tools/generate/gen_remote_abi.py again" % (a.abi, ", ".join(missing)))
    guest_manual = {l[0] for l in read_list(a.guest_manual)}
    exec_manual = {l[0] for l in read_list(a.exec_manual)}
    guest_wrapped = {l[0] for l in read_list(a.guest_wrapped)}
    bad = [n for n in guest_wrapped if n not in abi or abi[n][0] != "carried"]
    if bad:
        sys.exit("gen_remote: %s names calls that are not carried ones: %s" % (a.guest_wrapped, ", ".join(sorted(bad))))
    for lst, path in ((guest_manual, a.guest_manual), (exec_manual, a.exec_manual)):
        bad = [n for n in lst if n not in abi or abi[n][0] == "carried"]
        if bad:
            sys.exit("gen_remote: %s names calls that are not manual ones: %s" % (path, ", ".join(sorted(bad))))
    digest = fnv1a(abi_text.encode() + "\n".join(funcs).encode())

    with open(a.out_h, "w") as h:
        h.write("/* Generated by tools/generate/gen_remote.py: do not edit. */\n#pragma once\n\n")
        h.write("#define VGPU_REMOTE_%s_COUNT %d\n" % (up, len(funcs)))
        h.write("#define VGPU_REMOTE_%s_ABI_HASH 0x%016xull\n" % (up, digest))
        h.write("#define VGPU_REMOTE_%s_ID %d\n" % (up, lib["id"]))
        if guest_wrapped:
            h.write("\n#include <stdint.h>\n\n/* The carried stubs of the calls the guest wraps. */\n")
        for name in sorted(guest_wrapped):
            h.write("int vgpu_remote_carried_%s(%s);\n" % (name, declaration(abi[name][1])))

    g = ["/* Generated by tools/generate/gen_remote.py: do not edit. */", '#include "forwarder/dispatch.h"',
         '#include "forwarder/remote/guest/client.h"']
    if guest_manual:
        g.append('#include "%s"' % lib["guest_h"])
    if lib["id"] == 0:
        g.append('#include "forwarder/remote/guest/cuda/cache.h"')
    g += ['#include "vgpu_remote_%s.h"' % a.lib, "", "#include <stdint.h>", "#include <string.h>", ""]
    e = ["/* Generated by tools/generate/gen_remote.py: do not edit. */", '#include "forwarder/remote/executor/executor.h"']
    if exec_manual:
        e.append('#include "%s"' % lib["exec_h"])
    e += ['#include "vgpu_remote_%s.h"' % a.lib, "", "#include <stdint.h>", "#include <string.h>", ""]
    gtable, etable = [], []
    for slot, name in enumerate(funcs):
        kind, params = abi[name]
        if kind == "carried" and not REFUSED.match(name):
            carried(g, gtable, e, etable, slot, name, params, lib, name in guest_wrapped)
            continue
        if name in guest_manual:
            gtable.append("    [%d] = (void *)vgpu_remote_guest_%s," % (slot, name))
        else:
            g.append("static int u_%s(void)\n{\n    return vgpu_remote_refuse(%d);\n}\n" % (name, slot))
            gtable.append("    [%d] = (void *)u_%s," % (slot, name))
        if name in exec_manual:
            etable.append("    [%d] = { NULL, 0, 0, vgpu_exec_%s, %s, %s }," % (
                slot, name, flag(bool(ASYNC.match(name))), flag(bool(SYNC.search(name)))))
    g.append("/* The remote driver's function of each slot. */")
    g.append("void *const vgpu_remote_%s_table[%d] = {" % (a.lib, len(funcs)))
    g.extend(gtable)
    g.append("};")
    g.append("")
    g.append("const struct vgpu_remote_library vgpu_remote_library = {")
    g.append("    .id = %d, .hash = VGPU_REMOTE_%s_ABI_HASH, .count = %d, .dispatch = &vgpu_%s," % (
        lib["id"], up, len(funcs), a.lib))
    g.append("    .unavailable = %s, .unknown = %s, .not_supported = %s," % (
        lib["unavailable"], lib["unknown"], lib["not_supported"]))
    g.append("};")
    e.append("static const char *const names[%d] = {" % len(funcs))
    e.extend('    "%s",' % n for n in funcs)
    e.append("};")
    e.append("")
    e.append("static const struct vgpu_exec_call table[%d] = {" % len(funcs))
    e.extend(etable)
    e.append("};")
    e.append("")
    e.append("const struct vgpu_exec_library vgpu_exec_%s = {" % a.lib)
    e.append('    .id = %d, .hash = VGPU_REMOTE_%s_ABI_HASH, .driver = "%s", .names = names, .table = table,'
             % (lib["id"], up, lib["driver"]))
    e.append("    .count = %d, .bad_handle = %s, .not_supported = %s, .not_found = %s," % (
        len(funcs), lib["bad_handle"], lib["not_supported"], lib["not_found"]))
    e.append("};")
    with open(a.out_guest, "w") as f:
        f.write("\n".join(g) + "\n")
    with open(a.out_exec, "w") as f:
        f.write("\n".join(e) + "\n")


if __name__ == "__main__":
    main()
