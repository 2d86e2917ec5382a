#!/usr/bin/env python3
"""Generate the remote CUDA driver: the guest's stubs and the executor's dispatchers.

    gen_remote.py --abi forwarder/remote/cuda.remote --symbols interpose/cuda.symbols
                  --guest-manual forwarder/remote/guest_manual.list
                  --exec-manual tools/executor/exec_manual.list
                  --out-guest G.c --out-exec E.c --out-h H.h

The ABI file (tools/generate/gen_remote_abi.py) says, for every export, whether
its parameters are all plain values, handles, device pointers and pointers to
one value the call writes (`carried`), or not (`manual`, `absent`).  Slots are
those of the dispatch table (the sorted function names of the symbol list).

  G.c  vgpu_remote_cuda_table[slot]: the remote driver's function for every
       slot.  A carried call packs its values (one 64-bit word each, after a
       word whose bits say which out-pointers are NULL), waits for the reply
       and writes the values it returns through the caller's pointers.  A
       manual call named in the guest's list is vgpu_remote_guest_NAME
       (forwarder/remote/guest_manual.h); any other is refused with
       CUDA_ERROR_NOT_SUPPORTED, logged once (vgpu_remote_refuse).
  E.c  vgpu_exec_cuda_names[slot], and vgpu_exec_cuda_table[slot]: the executor's handler for every slot it
       serves: a carried call checks each handle against those this guest was
       given, calls the driver and registers the handles it returns (and
       forgets the one a ...Destroy or ...Unload call ended); a manual
       one named in the executor's list is vgpu_exec_NAME (tools/executor/exec_manual.h).
       Launches, records, waits and asynchronous memsets (ASYNC below) are
       sent without waiting for a reply; their errors come back with the
       next synchronizing call (SYNC).  A call with structs of plain data
       (bN, sN) carries their bytes after its words (struct_call).  Calls
       that reach beyond the executor (REFUSED) are refused whatever the
       ABI says.
  H.h  VGPU_REMOTE_CUDA_COUNT and VGPU_REMOTE_ABI_HASH (FNV-1a of the ABI
       file and the slot order: guest and executor must agree on both).
"""
import argparse
import re
import sys

RAW = {"i1": "uint8_t", "i2": "uint16_t", "i4": "uint32_t", "i8": "uint64_t", "f4": "float", "f8": "double",
       "h": "void *", "d": "uint64_t"}


def read_list(path):
    out = []
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


# Calls the guest sends without waiting (they return nothing but an error,
# which the driver too may report later): launches, event records and
# waits, asynchronous memsets and frees, graph launches.
ASYNC = re.compile(r"^(cuLaunchKernel|cuGraphLaunch|cuEventRecord|cuEventRecordWithFlags|cuStreamWaitEvent"
                   r"|cuMemsetD(8|16|32|2D8|2D16|2D32)Async|cuMemFreeAsync)(_v2)?(_ptsz|_ptds)?$")
# Calls that synchronize: an asynchronous call's error comes back with them.
SYNC = re.compile(r"Synchronize|Query|^cuMemcpyDtoH(_v2)?(_ptds)?$")


# Calls no guest may make whatever their arguments: they reach beyond its
# executor (other processes by pid, IPC handles of other processes, the
# profiler of the host).
REFUSED = re.compile(r"^(cuCheckpoint|cuIpc|cuProfiler)")


def struct_call(g, gtable, e, etable, slot, name, params):
    """A carried call with structs of plain data (bN read, sN read and\n    written): the words as for any carried call (the NULL mask covering the\n    out-values and the structs, in order), then each struct's bytes; the\n    reply, the out-words then each written struct's bytes.  The executor's\n    side replies itself."""
    ins = [(i, k) for i, k in enumerate(params) if k[0] not in "obs"]
    outs = [(i, k) for i, k in enumerate(params) if k[0] == "o"]
    ptrs = [(i, k) for i, k in enumerate(params) if k[0] in "obs"]  # the NULL mask's order
    structs = [(i, k, int(k[1:])) for i, k in enumerate(params) if k[0] in "bs"]
    written = [(i, k, n) for i, k, n in structs if k[0] == "s"]
    nin = 1 + len(ins)
    total = nin * 8 + sum(n for _, _, n in structs)
    bit = {i: j for j, (i, k) in enumerate(ptrs)}
    decl = ", ".join("%s a%d" % (RAW.get(k, "void *"), i) for i, k in enumerate(params))
    g.append("static CUresult g_%s(%s)" % (name, decl))
    g.append("{")
    g.append("    static const unsigned char none[%d];" % max(n for _, _, n in structs))
    g.append("    unsigned char scratch[%d];" % max([n for _, _, n in written] + [1]))
    g.append("    uint64_t in[%d], out[%d];" % (nin, max(1, len(outs))))
    g.append("    in[0] = 0;")
    for i, k in ptrs:
        g.append("    if (!a%d)\n        in[0] |= 1ull << %d;" % (i, bit[i]))
    for j, (i, k) in enumerate(ins):
        if k in ("f4", "f8"):
            g.append("    in[%d] = 0;\n    memcpy(&in[%d], &a%d, %s);" % (j + 1, j + 1, i, k[1]))
        elif k == "h":
            g.append("    in[%d] = (uint64_t)(uintptr_t)a%d;" % (j + 1, i))
        else:
            g.append("    in[%d] = (uint64_t)a%d;" % (j + 1, i))
    q = ["{ in, sizeof(in) }"] + ["{ a%d ? (void *)a%d : (void *)none, %d }" % (i, i, n) for i, k, n in structs]
    r = ["{ out, %d }" % (len(outs) * 8)] + ["{ a%d ? (void *)a%d : (void *)scratch, %d }" % (i, i, n)
                                             for i, k, n in written]
    g.append("    struct iovec q[%d] = { %s };" % (len(q), ", ".join(q)))
    g.append("    struct iovec a[%d] = { %s };" % (len(r), ", ".join(r)))
    g.append("    size_t got = 0;")
    g.append("    (void)scratch;")
    g.append("    CUresult r = vgpu_remote_call(%d, q, %d, a, %d, &got);" % (slot, len(q), len(r)))
    g.append("    if (r == CUDA_SUCCESS && got != %d)\n        return CUDA_ERROR_UNKNOWN;"
             % (len(outs) * 8 + sum(n for _, _, n in written)))
    for j, (i, k) in enumerate(outs):
        size = 8 if k in ("oh", "od") else int(k[1:])
        g.append("    if (r == CUDA_SUCCESS && a%d)\n        memcpy(a%d, &out[%d], %d);" % (i, i, j, size))
    g.append("    return r;")
    g.append("}")
    g.append("")
    gtable.append("    [%d] = (void *)g_%s," % (slot, name))

    e.append("static int x_%s(struct vgpu_exec *x, void *fn, const void *req, size_t len)" % name)
    e.append("{")
    e.append("    if (len != %d)\n        return vgpu_exec_malformed(\"%s\", len);" % (total, name))
    e.append("    uint64_t in[%d], out[%d] = { 0 };" % (nin, max(1, len(outs))))
    e.append("    memcpy(in, req, sizeof(in));")
    at = nin * 8
    for i, k, n in structs:
        e.append("    _Alignas(16) unsigned char s%d[%d];\n    memcpy(s%d, (const char *)req + %d, %d);" % (i, n, i, at, n))
        at += n
    ii = {i: j for j, (i, k) in enumerate(ins)}
    oi = {i: j for j, (i, k) in enumerate(outs)}
    for i, k in ins:
        if k == "h":
            e.append("    if (!vgpu_exec_handle_known(x, in[%d]))\n"
                     "        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);" % (ii[i] + 1))
    args = []
    for i, k in enumerate(params):
        null = "(in[0] >> %d) & 1 ? NULL : " % bit[i] if i in bit else ""
        if k[0] == "o":
            args.append(null + "(void *)&out[%d]" % oi[i])
        elif k[0] in "bs":
            args.append(null + "(void *)s%d" % i)
        elif k in ("f4", "f8"):
            e.append("    %s v%d;\n    memcpy(&v%d, &in[%d], %s);" % ("float" if k == "f4" else "double", i, i,
                                                                     ii[i] + 1, k[1]))
            args.append("v%d" % i)
        elif k == "h":
            args.append("(void *)(uintptr_t)in[%d]" % (ii[i] + 1))
        else:
            args.append("(%s)in[%d]" % (RAW[k], ii[i] + 1))
    ftype = "CUresult (*)(%s)" % ", ".join(RAW.get(k, "void *") for k in params)
    e.append("    CUresult r = ((%s)fn)(%s);" % (ftype, ", ".join(args)))
    for j, (i, k) in enumerate(outs):
        if k == "oh":
            e.append("    if (r == CUDA_SUCCESS && !((in[0] >> %d) & 1))\n"
                     "        vgpu_exec_handle_add(x, out[%d]);" % (bit[i], j))
    v = ["{ out, r == CUDA_SUCCESS ? %d : 0 }" % (len(outs) * 8)] + \
        ["{ s%d, r == CUDA_SUCCESS ? %d : 0 }" % (i, n) for i, k, n in written]
    e.append("    struct iovec v[%d] = { %s };" % (len(v), ", ".join(v)))
    e.append("    return vgpu_exec_reply(x, r, v, %d);" % len(v))
    e.append("}")
    e.append("")
    etable.append("    [%d] = { NULL, 0, 0, x_%s, false, %s }," % (slot, name, flag(syncs(name))))


def is_async(name, outs):
    return not outs and bool(ASYNC.match(name))


def syncs(name):
    return bool(SYNC.search(name))


def flag(b):
    return "true" if b else "false"


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--abi", "--symbols", "--guest-manual", "--exec-manual", "--out-guest", "--out-exec", "--out-h"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
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
    for lst, path in ((guest_manual, a.guest_manual), (exec_manual, a.exec_manual)):
        bad = [n for n in lst if n not in abi or abi[n][0] == "carried"]
        if bad:
            sys.exit("gen_remote: %s names calls that are not manual ones: %s" % (path, ", ".join(sorted(bad))))
    digest = fnv1a(abi_text.encode() + "\n".join(funcs).encode())

    with open(a.out_h, "w") as h:
        h.write("/* Generated by tools/generate/gen_remote.py: do not edit. */\n#pragma once\n\n")
        h.write("#define VGPU_REMOTE_CUDA_COUNT %d\n" % len(funcs))
        h.write("#define VGPU_REMOTE_ABI_HASH 0x%016xull\n" % digest)

    g = ["/* Generated by tools/generate/gen_remote.py: do not edit. */",
         '#include "forwarder/remote/client.h"', '#include "forwarder/remote/guest_manual.h"', "", "#include <stdint.h>", "#include <string.h>", ""]
    e = ["/* Generated by tools/generate/gen_remote.py: do not edit. */",
         '#include "tools/executor/executor.h"', '#include "tools/executor/exec_manual.h"', "", "#include <stdint.h>", "#include <string.h>", ""]
    gtable, etable = [], []
    for slot, name in enumerate(funcs):
        kind, params = abi[name]
        if kind == "carried" and REFUSED.match(name):
            kind = "refused"
        if kind == "carried" and any(k[0] in "bs" for k in params):
            struct_call(g, gtable, e, etable, slot, name, params)
        elif kind == "carried":
            ins = [(i, k) for i, k in enumerate(params) if not k.startswith("o")]
            outs = [(i, k) for i, k in enumerate(params) if k.startswith("o")]
            decl = ", ".join("%s a%d" % (RAW.get(k, "void *"), i) for i, k in enumerate(params)) or "void"
            g.append("static CUresult g_%s(%s)" % (name, decl))
            g.append("{")
            g.append("    uint64_t in[%d], out[%d];" % (1 + len(ins), max(1, len(outs))))
            g.append("    in[0] = 0;")
            for j, (i, k) in enumerate(outs):
                g.append("    if (!a%d)\n        in[0] |= 1ull << %d;" % (i, j))
            for j, (i, k) in enumerate(ins):
                if k == "f4":
                    g.append("    in[%d] = 0;\n    memcpy(&in[%d], &a%d, 4);" % (j + 1, j + 1, i))
                elif k == "f8":
                    g.append("    memcpy(&in[%d], &a%d, 8);" % (j + 1, i))
                elif k == "h":
                    g.append("    in[%d] = (uint64_t)(uintptr_t)a%d;" % (j + 1, i))
                else:
                    g.append("    in[%d] = (uint64_t)a%d;" % (j + 1, i))
            if is_async(name, outs):
                g.append("    (void)out;")
                g.append("    CUresult r = vgpu_remote_send_words(%d, in, %d);" % (slot, 1 + len(ins)))
            else:
                g.append("    CUresult r = vgpu_remote_call_words(%d, in, %d, out, %d);" % (slot, 1 + len(ins), len(outs)))
            for j, (i, k) in enumerate(outs):
                size = 8 if k in ("oh", "od") else int(k[1:])
                g.append("    if (r == CUDA_SUCCESS && a%d)\n        memcpy(a%d, &out[%d], %d);" % (i, i, j, size))
            g.append("    return r;")
            g.append("}")
            g.append("")
            gtable.append("    [%d] = (void *)g_%s," % (slot, name))

            e.append("static CUresult x_%s(struct vgpu_exec *x, void *fn, const uint64_t *in, uint64_t *out)" % name)
            e.append("{")
            e.append("    (void)x;\n    (void)in;\n    (void)out;")
            args = []
            for j, (i, k) in enumerate(ins):
                w = "in[%d]" % (j + 1)
                if k == "h":
                    e.append("    if (!vgpu_exec_handle_known(x, %s))\n        return CUDA_ERROR_INVALID_HANDLE;" % w)
            oi = {i: j for j, (i, k) in enumerate(outs)}
            ii = {i: j for j, (i, k) in enumerate(ins)}
            for i, k in enumerate(params):
                if k.startswith("o"):
                    args.append("(in[0] >> %d) & 1 ? NULL : (void *)&out[%d]" % (oi[i], oi[i]))
                else:
                    w = "in[%d]" % (ii[i] + 1)
                    if k == "f4":
                        e.append("    float v%d;\n    memcpy(&v%d, &%s, 4);" % (i, i, w))
                        args.append("v%d" % i)
                    elif k == "f8":
                        e.append("    double v%d;\n    memcpy(&v%d, &%s, 8);" % (i, i, w))
                        args.append("v%d" % i)
                    elif k == "h":
                        args.append("(void *)(uintptr_t)%s" % w)
                    else:
                        args.append("(%s)%s" % (RAW[k], w))
            ftype = "CUresult (*)(%s)" % (", ".join(RAW.get(k, "void *") for k in params) or "void")
            e.append("    CUresult r = ((%s)fn)(%s);" % (ftype, ", ".join(args)))
            for j, (i, k) in enumerate(outs):
                if k == "oh":
                    e.append("    if (r == CUDA_SUCCESS && !((in[0] >> %d) & 1))\n"
                             "        vgpu_exec_handle_add(x, out[%d]);" % (j, j))
            if re.search(r"(Destroy|Unload)(_v2)?$", name) and params and params[0] == "h":
                e.append("    if (r == CUDA_SUCCESS)\n        vgpu_exec_handle_drop(x, in[1]);")
            e.append("    return r;")
            e.append("}")
            e.append("")
            etable.append("    [%d] = { x_%s, %d, %d, NULL, %s, %s }," % (slot, name, 1 + len(ins), len(outs),
                                                                         flag(is_async(name, outs)), flag(syncs(name))))
        else:
            if name in guest_manual:
                gtable.append("    [%d] = (void *)vgpu_remote_guest_%s," % (slot, name))
            else:
                g.append("static CUresult u_%s(void)\n{\n    return vgpu_remote_refuse(%d);\n}\n" % (name, slot))
                gtable.append("    [%d] = (void *)u_%s," % (slot, name))
            if name in exec_manual:
                etable.append("    [%d] = { NULL, 0, 0, vgpu_exec_%s, %s, %s }," % (slot, name, flag(is_async(name, [])),
                                                                               flag(syncs(name))))
    g.append("/* The remote driver's function of each slot. */")
    g.append("void *const vgpu_remote_cuda_table[%d] = {" % len(funcs))
    g.extend(gtable)
    g.append("};")
    e.append("const char *const vgpu_exec_cuda_names[%d] = {" % len(funcs))
    e.extend('    "%s",' % n for n in funcs)
    e.append("};")
    e.append("")
    e.append("const struct vgpu_exec_call vgpu_exec_cuda_table[%d] = {" % len(funcs))
    e.extend(etable)
    e.append("};")
    with open(a.out_guest, "w") as f:
        f.write("\n".join(g) + "\n")
    with open(a.out_exec, "w") as f:
        f.write("\n".join(e) + "\n")


if __name__ == "__main__":
    main()
