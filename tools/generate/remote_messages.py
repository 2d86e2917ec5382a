"""The declared messages of the remote call spec, as C (remote_spec.py says
what a declaration is; gen_remote.py writes the files).

For each call that declares fields (its message's owner; a call `as` it
shares them):

  struct vgpu_in_NAME, struct vgpu_out_NAME   its request and its reply as
      the code sees them: a field of the name of one of the owner's
      parameters has that parameter's type, any other its kind's
  guest  vgpu_remote_call_NAME(slot, flags, in, out)    packs the request,
         waits, unpacks the reply into out (a reply's arrays land where out
         points; what only the reply can size lands in out->tail);
         vgpu_remote_send_NAME(slot, flags, in)         the same, not waiting
  exec   parse_NAME(x, req, len, in)   the request checked whole (its
         length, counts, bounds, integers' ranges: else the connection
         closes) and then its handles (else the library's bad-handle code);
         vgpu_exec_reply_NAME(x, r, in, out)   the reply packed, the handles
         it gives (new) made the guest's

A side not written by hand is generated whole from the prototype: each
parameter is the field of its name.
"""
from remote_spec import SCALARS, SpecError

SMALL = 512  # an array or a struct of at most this many bytes is copied, not pointed at


def pad8(n):
    return (n + 7) & ~7


def strip_const(t):
    return " ".join(w for w in t.replace("*", " * ").split() if w != "const").replace(" *", "*").replace("* ", "*")


def pointee(t):
    """The type a pointer type points to (one level), or None."""
    t = t.strip()
    if not t.endswith("*"):
        return None
    return strip_const(t[:-1].strip())


class Lib:
    def __init__(self, lib):
        self.name = lib["name"]
        self.invalid = lib["invalid"]
        self.unknown = lib["unknown"]
        self.bad_handle = lib["bad_handle"]
        self.oom = lib["oom"]


class Message:
    """One owner's message: its fields and how the code sees them."""

    def __init__(self, owner, lib):
        self.owner = owner
        self.lib = lib
        self.name = owner.name
        self.params = dict((n, t) for t, n in owner.params())
        self.ins = owner.ins
        self.outs = owner.outs
        self.in_by_name = dict((f.name, f) for f in self.ins)
        self.out_by_name = dict((f.name, f) for f in self.outs)

    # ---- C types of the members ----
    def value_type(self, f):
        """The C type of a scalar member, or of an array's element."""
        p = self.params.get(f.name)
        if p is not None:
            inner = pointee(p)
            if f.scalar() and f.dir == "in" and (inner is None or inner == "void"):
                return strip_const(p) if inner == "void" else p
            if inner is not None and inner != "void":
                # an array the driver hands out (const T **): its elements are T
                if not f.scalar() and f.kind != "struct" and pointee(inner) not in (None, "void"):
                    return pointee(inner)
                if f.kind == "struct" and pointee(inner) not in (None, "void"):
                    return pointee(inner)
                return inner
        if f.kind == "struct":
            return f.struct
        if f.kind == "stream":
            return "CUstream"
        return SCALARS[f.kind][0] if f.kind in SCALARS else "unsigned char"

    def member(self, f):
        """The member's declaration(s)."""
        t = self.value_type(f)
        c = "const " if f.dir == "in" else ""
        if f.kind == "text":
            return ["const char *%s;" % f.name]
        if f.kind == "bytes" and f.count.kind == "fixed":
            return ["unsigned char %s[%d];" % (f.name, f.count.fixed)]
        if f.kind == "bytes":
            return ["%svoid *%s;" % (c, f.name), "uint64_t %s_size;" % f.name]
        if f.kind == "host" and f.dir == "in":
            return ["%svoid *%s;" % (c, f.name), "uint64_t %s_shared; /* the guest's address, when shared */" % f.name]
        if f.kind == "host":
            return ["void *%s;" % f.name]
        if f.count.kind == "one":
            return ["%s %s;" % (t, f.name)]
        if f.count.kind == "fixed":
            return ["%s %s[%d];" % (t, f.name, f.count.fixed)]
        return ["%s%s *%s;" % (c, t, f.name)]

    def pointerish(self, f):
        t = self.value_type(f)
        return f.kind in ("handle", "stream") or "*" in t

    def to_word(self, f, v):
        if self.pointerish(f):
            return "(uint64_t)(uintptr_t)(%s)" % v
        if f.kind in ("i32", "i64"):
            return "(uint64_t)(int64_t)(%s)" % v
        return "(uint64_t)(%s)" % v

    def from_word(self, f, w):
        t = self.value_type(f)
        if self.pointerish(f):
            return "(%s)(uintptr_t)(%s)" % (t, w)
        if f.kind in ("i32", "i64"):
            return "(%s)(int64_t)(%s)" % (t, w)
        return "(%s)(%s)" % (t, w)

    def signed(self, f):
        return f.kind in ("i32", "i64")

    # ---- the header ----
    def declarations(self):
        out = ["/* %s's request and reply (its declaration: forwarder/remote/spec/%s.remote). */"
               % (self.name, self.lib.name)]
        for fields, which in ((self.ins, "in"), (self.outs, "out")):
            out.append("struct vgpu_%s_%s {" % (which, self.name))
            for f in fields:
                for d in self.member(f):
                    out.append("    " + d)
            if which == "in":
                for f in self.outs:
                    if f.kind == "host":
                        out.append("    uint64_t %s_shared; /* the guest's address of the reply's %s, when shared */"
                                   % (f.name, f.name))
            if which == "out" and self.tail_fields():
                out.append("    void *tail; /* the guest's: where what the reply sizes itself lands */")
                out.append("    uint64_t tail_size;")
            if not fields and not (which == "out" and self.tail_fields()):
                out.append("    char none;")
            out.append("};")
        for f in self.ins + self.outs:
            if f.bound is not None:
                out.append("#define VGPU_%s_%s_%s_MAX %d" % (f.dir.upper(), self.name, f.name, f.bound))
            if f.kind in ("struct",) or (f.count.kind not in ("one",) and f.kind in SCALARS):
                t = self.value_type(f)
                size = f.size if f.kind == "struct" else f.elem()[1]
                out.append('_Static_assert(sizeof(%s) == %d, "%s.%s crosses as %d bytes: the spec and cuda.h differ");'
                           % (t, size, self.name, f.name, size))
                if f.count.kind not in ("one",):
                    out.append('_Static_assert(_Alignof(%s) <= 8, "%s.%s: an array of it lies 8-aligned");'
                               % (t, self.name, f.name))
        out.append("")
        return out

    def tail_fields(self):
        """The reply's fields from the first whose size only the reply says."""
        for i, f in enumerate(self.outs):
            if not self.known_before(f):
                return self.outs[i:]
        return []

    def known_before(self, f):
        """Whether a reply field's size is known before the reply comes."""
        return f.fixed_size() is not None or (f.count.kind == "field" and f.count.of_request) or f.kind == "host"

    # ---- sizes ----
    def count_c(self, f, base, guest):
        """C statements setting n_NAME, the element count of a counted field
        (base: the expression of the struct holding the field it counts by)."""
        ref = f.count.field
        src = "in" if f.count.of_request or f.dir == "in" else base
        return "%s->%s" % (src if src != base else base, ref)

    # ---- packing (the guest's request, the executor's reply) ----
    def may_pad(self, f):
        """Whether a variable part's bytes may end off a multiple of 8 (and so
        be padded, when another field follows)."""
        return f.kind in ("bytes", "text", "host") or f.elem()[1] % 8 != 0

    def n(self, f):
        """The name of the variable holding a variable part's byte count."""
        return "%s_%s" % ("n" if f.dir == "in" else "r", f.name)

    def out_hosts(self):
        return [f for f in self.outs if f.kind == "host"]

    def pack(self, fields, src, side, flags_expr, all_expr=None):
        """Statements that pack fields of *src into q[] (nq) from small[]
        (as), for side 'guest' (a request) or 'exec' (a reply).  Returns
        (statements, the most bytes of small[])."""
        lines = []
        small_max = 0
        iovecs = [0, False]  # the most q[] can take, and whether small[] holds bytes not yet in it
        lines.append("size_t at = 0, seg = 0;")
        lines.append("int nq = 0;")
        last = len(fields) - 1 if not (side == "guest" and self.out_hosts()) else len(fields)

        def flush():
            iovecs[0] += 1 if iovecs[1] else 0
            iovecs[1] = False
            lines.append("if (at > seg) { q[nq++] = (struct iovec){ small + seg, at - seg }; seg = at; }")

        for i, f in enumerate(fields):
            v = "%s->%s" % (src, f.name)
            pad = i != last
            if all_expr is not None and "always" not in f.opts:
                lines.append("if (!(%s)) goto packed;" % all_expr)
            if f.scalar():
                lines.append("{ uint64_t w = %s; memcpy(small + at, &w, 8); at += 8; }" % self.to_word(f, v))
                small_max += 8
                iovecs[1] = True
                continue
            fixed = f.fixed_size()
            if fixed is not None and fixed <= SMALL:
                lines.append("memcpy(small + at, %s%s, %d);" % ("&" if f.count.kind == "one" else "", v, fixed))
                lines.append("at += %d;" % (pad8(fixed) if pad else fixed))
                small_max += pad8(fixed)
                iovecs[1] = True
                continue
            # a variable part: its byte count
            size, data = self.part_size(f, src, side, flags_expr)
            lines.extend(size)
            if f.kind == "host" and side == "guest" and f.dir == "in":
                lines.append("if (host_shared) { uint64_t w = (uint64_t)(uintptr_t)%s; memcpy(small + at, &w, 8); "
                             "at += 8; } else {" % v)
                small_max += 8
                iovecs[1] = True
            elif f.kind == "host":  # a reply's: no bytes when a shared block takes them
                lines.append("if (!host_shared) {")
            mx = f.max_size(dict((g.name, g) for g in self.ins + self.outs))
            n = self.n(f)
            if f.kind == "bytes" and f.count.kind == "one":
                lines.append("{ uint64_t w = %s; memcpy(small + at, &w, 8); at += 8; }" % n)
                small_max += 8
                iovecs[1] = True
            if mx is not None and mx <= SMALL and f.kind not in ("bytes", "text", "host"):
                lines.append("if (%s) memcpy(small + at, %s, %s);" % (n, data, n))
                lines.append("at += %s;" % ("(%s + 7) & ~(size_t)7" % n if pad else n))
                small_max += pad8(mx)
                iovecs[1] = True
            else:
                flush()
                iovecs[0] += 2 if pad and self.may_pad(f) else 1
                lines.append("if (%s) q[nq++] = (struct iovec){ (void *)%s, %s };" % (n, data, n))
                if pad:
                    lines.append("if (%s & 7) q[nq++] = (struct iovec){ (void *)zeros, 8 - (%s & 7) };" % (n, n))
            if f.kind == "host":
                lines.append("}")
        if side == "guest":
            for f in self.out_hosts():  # where the reply's bytes go, when a shared block takes them
                lines.append("if (host_shared) { uint64_t w = (uint64_t)(uintptr_t)out->%s; memcpy(small + at, &w, 8); "
                             "at += 8; }" % f.name)
                small_max += 8
                iovecs[1] = True
        if all_expr is not None:
            lines.append("goto packed;")
            lines.append("packed:")
        flush()
        if iovecs[0] > 8:
            raise SpecError("%s: its %s takes up to %d parts, past the 8 a message has: fewer arrays and bytes, or "
                            "their fields together" % (self.name, "request" if side == "guest" else "reply", iovecs[0]))
        return lines, small_max

    def part_size(self, f, src, side, flags_expr):
        """Statements computing n_NAME (bytes) of a variable part, and the
        expression of its data (n_ is the request's, r_ the reply's)."""
        v = "%s->%s" % (src, f.name)
        lines = []
        if f.kind == "text":  # a reply's: cut to its bound, as the guest has room for no more
            lines.append("size_t %s = %s ? strnlen(%s, %d) : 0;" % (self.n(f), v, v, f.bound - 1))
            return lines, v
        if f.kind == "bytes" and f.count.kind in ("one", "rest"):
            lines.append("size_t %s = %s_size;" % (self.n(f), v))
            return lines, v
        if f.count.kind == "fixed":
            lines.append("size_t %s = %d;" % (self.n(f), f.fixed_size()))
            return lines, v
        base = "in" if (f.count.of_request or f.dir == "in") else src
        count = f.count.c("(uint64_t)%s->%s" % (base, f.count.field))
        lines.append("size_t %s = (size_t)(%s) * %d;" % (self.n(f), count, f.elem()[1]))
        if f.kind == "host":
            lines[-1] = "size_t %s = host_shared ? 0 : (size_t)(%s);" % (self.n(f), count)
        return lines, v

    # ---- the guest's side ----
    def guest_call(self, asyncable):
        """vgpu_remote_call_NAME, and vgpu_remote_send_NAME where a call of the
        message may be sent without waiting: the request checked and packed,
        then waited for and unpacked, or only sent."""
        name = self.name
        pack, small_max = self.pack(self.ins, "in", "guest", "flags")
        request = list(self.guest_request_checks())
        request += ["bool host_shared = (flags & VGPU_REMOTE_SHARED) != 0;", "(void)host_shared;",
                    "unsigned char small[%d];" % max(8, small_max), "struct iovec q[8] = { { 0 } };"] + pack
        out = ["int vgpu_remote_call_%s(unsigned slot, uint32_t flags, const struct vgpu_in_%s *in, "
               "struct vgpu_out_%s *out)" % (name, name, name), "{"]
        out.extend("    " + line for line in request)
        if self.outs:
            out.extend("    " + line for line in self.guest_receive())
        else:
            out.append("    (void)out;")
            out.append("    return vgpu_remote_call_flagged(slot, flags, q, nq, NULL, 0, NULL);")
        out += ["}", ""]
        if not asyncable:
            return out
        if self.out_hosts():  # a shared block takes the reply's bytes: where it is, in out
            out.append("int vgpu_remote_send_%s(unsigned slot, uint32_t flags, const struct vgpu_in_%s *in, "
                       "void *shared_host)" % (name, name))
            out += ["{", "    struct vgpu_out_%s o;" % name, "    memset(&o, 0, sizeof(o));",
                    "    o.%s = shared_host;" % self.out_hosts()[0].name, "    struct vgpu_out_%s *out = &o;" % name]
        else:
            out += ["int vgpu_remote_send_%s(unsigned slot, uint32_t flags, const struct vgpu_in_%s *in)"
                    % (name, name), "{"]
        out.extend("    " + line for line in request)
        out += ["    return vgpu_remote_send_flagged(slot, flags, q, nq);", "}", ""]
        return out

    def guest_request_checks(self):
        """What the guest checks before packing: bounds (refused: more than
        vgpu carries), counts that would be negative, missing data (invalid)."""
        lines = []
        for f in self.ins:
            v = "in->%s" % f.name
            if f.scalar() and f.bound is not None:
                if self.signed(f):
                    lines.append("if (%s < 0)\n    return %s;" % (v, self.lib.invalid))
                past = self.lib.invalid if "invalid" in f.opts else "vgpu_remote_refuse(slot)"
                lines.append("if ((uint64_t)%s > %d)\n    return %s;" % (v, f.bound, past))
            if "nonzero" in f.opts:
                lines.append("if (!%s)\n    return %s;" % (v, self.lib.invalid))
            if f.count.kind == "field" and (f.count.sub or f.count.mul != 1):
                ref = "(uint64_t)in->%s" % f.count.field
                lines.append("if (%s * %d < %d)\n    return %s;" % (ref, f.count.mul, f.count.sub, self.lib.invalid))
            if f.kind == "text":
                lines.append("if (!%s || strnlen(%s, %d) >= %d)\n    return %s;" % (v, v, f.bound, f.bound,
                                                                                    self.lib.invalid))
            elif f.kind == "bytes" and f.count.kind in ("one", "rest"):
                lines.append("if (%s_size && !%s)\n    return %s;" % (v, v, self.lib.invalid))
                if f.bound is not None:
                    lines.append("if (%s_size > %d)\n    return vgpu_remote_refuse(slot);" % (v, f.bound))
            elif f.count.kind == "field":
                count = f.count.c("(uint64_t)in->%s" % f.count.field)
                lines.append("if ((%s) && !%s)\n    return %s;" % (count, v, self.lib.invalid))
        return lines

    def guest_receive(self):
        """The reply's iovecs, the call, and out filled: statements."""
        lines = []
        prefix = [f for f in self.outs if f not in self.tail_fields()]
        tail = self.tail_fields()
        head_size = sum(pad8(f.fixed_size()) for f in prefix if f.fixed_size() is not None)
        lines.append("unsigned char head[%d], pad[8];" % max(8, head_size))
        lines.append("(void)pad;")
        lines.append("struct iovec a[8] = { { 0 } };")
        lines.append("int na = 0;")
        lines.append("size_t hat = 0, hseg = 0;")
        last = len(self.outs) - 1
        offsets = {}
        for i, f in enumerate(prefix):
            fixed = f.fixed_size()
            padded = i != last
            if fixed is not None:
                offsets[f.name] = "hat"
                lines.append("size_t at_%s = hat;" % f.name)
                lines.append("hat += %d;" % (pad8(fixed) if padded else fixed))
                continue
            lines.append("if (hat > hseg) { a[na++] = (struct iovec){ head + hseg, hat - hseg }; hseg = hat; }")
            size, data = self.part_size(f, "out", "guest", "flags")
            lines.extend(size)
            n = self.n(f)
            lines.append("if (%s) a[na++] = (struct iovec){ (void *)out->%s, %s };" % (n, f.name, n))
            if padded:
                lines.append("if (%s & 7) a[na++] = (struct iovec){ pad, 8 - (%s & 7) };" % (n, n))
        lines.append("if (hat > hseg) a[na++] = (struct iovec){ head + hseg, hat - hseg };")
        parts, pending = 0, False
        for f in prefix:
            if f.fixed_size() is not None:
                pending = True
                continue
            parts += (1 if pending else 0) + 1 + (1 if self.outs.index(f) != last and self.may_pad(f) else 0)
            pending = False
        parts += (1 if pending else 0) + (1 if tail else 0)
        if parts > 8:
            raise SpecError("%s: its reply takes up to %d parts, past the 8 the guest reads into" % (self.name, parts))
        text = tail and tail[-1].kind == "text"
        if text:
            lines.append("if (out->tail_size < 1)\n    return %s;" % self.lib.unknown)
        if tail:
            lines.append("a[na++] = (struct iovec){ out->tail, out->tail_size%s };" % (" - 1" if text else ""))
        lines.append("size_t got = 0;")
        lines.append("int r = vgpu_remote_call_flagged(slot, flags, q, nq, a, na, &got);")
        # r not 0: only the always fields came, or nothing
        always = [f for f in self.outs if "always" in f.opts]
        if not always:
            lines.append("if (r != 0)\n    return r;")
            lines.append("bool all = true;")
        else:
            lines.append("if (r != 0 && got == 0)\n    return r;")
            lines.append("bool all = r == 0;")
        lines.append("size_t need = 0;")
        lines.append("(void)all;")
        for i, f in enumerate(prefix):
            padded = i != last
            if "always" not in f.opts:
                lines.append("if (!all) goto done;")
            fixed = f.fixed_size()
            if fixed is not None:
                lines.append("need += %d;" % (pad8(fixed) if padded else fixed))
                lines.append("if (got < need)\n    return %s;" % self.lib.unknown)
                if f.scalar():
                    lines.append("{ uint64_t w; memcpy(&w, head + at_%s, 8); out->%s = %s; }"
                                 % (f.name, f.name, self.from_word(f, "w")))
                    if f.bound is not None:
                        lines.append("if ((uint64_t)out->%s > %d)\n    return %s;" % (f.name, f.bound,
                                                                                      self.lib.unknown))
                else:
                    lines.append("memcpy(%sout->%s, head + at_%s, %d);" % ("&" if f.count.kind == "one" else "",
                                                                           f.name, f.name, fixed))
            else:
                lines.append("need += %s;" % ("(%s + 7) & ~(size_t)7" % (self.n(f), ) if padded else self.n(f)))
                lines.append("if (got < need)\n    return %s;" % self.lib.unknown)
        if tail:
            lines.append("{")
            lines.append("    const unsigned char *t = out->tail;")
            lines.append("    size_t tat = 0, tlen = got - need;")
            lines.append("    (void)t;")
            for j, f in enumerate(tail):
                i = self.outs.index(f)
                padded = i != last
                if "always" not in f.opts:
                    lines.append("    if (!all) goto done;")
                lines.extend("    " + l for l in self.tail_field(f, padded))
            lines.append("    need += tat;")
            lines.append("}")
        lines.append("goto done;")
        lines.append("done:")
        lines.append("if (got != need)\n    return %s;" % self.lib.unknown)
        lines.append("return r;")
        return lines

    def tail_field(self, f, padded):
        """Statements reading one reply field from the tail t (tat, tlen)."""
        u = self.lib.unknown
        lines = []
        if f.scalar():
            lines.append("if (tlen - tat < 8)\n    return %s;" % u)
            lines.append("{ uint64_t w; memcpy(&w, t + tat, 8); out->%s = %s; }" % (f.name, self.from_word(f, "w")))
            if f.bound is not None:
                lines.append("if ((uint64_t)out->%s > %d)\n    return %s;" % (f.name, f.bound, u))
            lines.append("tat += 8;")
            return lines
        if f.kind == "text":
            lines.append("out->%s = (const char *)t + tat;" % f.name)
            lines.append("((char *)out->tail)[tlen] = 0;")
            lines.append("tat = tlen;")
            return lines
        if f.kind == "bytes" and f.count.kind == "one":
            lines.append("if (tlen - tat < 8)\n    return %s;" % u)
            lines.append("{ uint64_t w; memcpy(&w, t + tat, 8); out->%s_size = w; }" % f.name)
            lines.append("tat += 8;")
            lines.append("if (tlen - tat < %s)\n    return %s;" % (
                "((out->%s_size + 7) & ~(size_t)7)" % f.name if padded else "out->%s_size" % f.name, u))
            lines.append("out->%s = (void *)(t + tat);" % f.name)
            lines.append("tat += %s;" % ("(out->%s_size + 7) & ~(size_t)7" % f.name if padded else
                                        "out->%s_size" % f.name))
            return lines
        if f.count.kind == "rest":
            if f.kind == "bytes":
                lines.append("out->%s = (void *)(t + tat);" % f.name)
                lines.append("out->%s_size = tlen - tat;" % f.name)
                lines.append("tat = tlen;")
                return lines
            raise SpecError("%s: a reply's rest is bytes or text" % f.name)
        # an array counted by a field, or of a fixed size
        if f.count.kind == "fixed":
            n = "%d" % f.fixed_size()
        else:
            base = "in" if f.count.of_request else "out"
            ref = "(uint64_t)%s->%s" % (base, f.count.field)
            if f.count.sub:
                lines.append("if (%s * %d < %d)\n    return %s;" % (ref, f.count.mul, f.count.sub, u))
            n = "(size_t)(%s) * %d" % (f.count.c(ref), f.elem()[1])
        lines.append("{")
        lines.append("    size_t n = %s;" % n)
        lines.append("    if (tlen - tat < %s)\n    return %s;" % ("((n + 7) & ~(size_t)7)" if padded else "n", u))
        if f.count.kind == "fixed" or f.count.kind == "one":
            lines.append("    memcpy(%sout->%s, t + tat, n);" % ("&" if f.count.kind == "one" else "", f.name))
        else:
            lines.append("    out->%s = (%s *)(void *)(t + tat);" % (f.name, self.value_type(f)))
        lines.append("    tat += %s;" % ("(n + 7) & ~(size_t)7" if padded else "n"))
        lines.append("}")
        return lines

    # ---- the executor's side ----
    def exec_parse(self):
        """static int parse_NAME(x, req, len, in): 0, VGPU_EXEC_CLOSE, or the code to reply."""
        lines = ["static int parse_%s(struct vgpu_exec *x, void *req, size_t len, struct vgpu_in_%s *in, "
                 "const char *call)" % (self.name, self.name), "{"]
        lines.append("    const unsigned char *b = req;")
        lines.append("    size_t at = 0;")
        lines.append("    memset(in, 0, sizeof(*in));")
        lines.append("    (void)b;")
        last = len(self.ins) - 1 if not self.out_hosts() else len(self.ins)
        for i, f in enumerate(self.ins):
            padded = i != last
            lines.extend("    " + l for l in self.parse_field(f, padded))
        for f in self.out_hosts():
            lines.append("    if (x->shared_host) {")
            lines.append("        if (len - at < 8)\n    return vgpu_exec_malformed(call, len);")
            lines.append("        memcpy(&in->%s_shared, b + at, 8);" % f.name)
            lines.append("        at += 8;")
            lines.append("    }")
        lines.append("    if (at != len)\n    return vgpu_exec_malformed(call, len);")
        for f in self.ins:
            lines.extend("    " + l for l in self.check_field(f))
        lines.append("    (void)x;")
        lines.append("    return 0;")
        lines.append("}")
        lines.append("")
        return lines

    def parse_field(self, f, padded):
        bad = "return vgpu_exec_malformed(call, len);"
        lines = []
        if f.scalar():
            lines.append("if (len - at < 8)\n    %s" % bad)
            lines.append("{")
            lines.append("    uint64_t w;")
            lines.append("    memcpy(&w, b + at, 8);")
            if f.kind == "u32":
                lines.append("    if (w > UINT32_MAX)\n    %s" % bad)
            if f.kind == "i32":
                lines.append("    if ((int64_t)w < INT32_MIN || (int64_t)w > INT32_MAX)\n    %s" % bad)
            if f.bound is not None:
                if self.signed(f):
                    lines.append("    if ((int64_t)w < 0 || (int64_t)w > %d)\n    %s" % (f.bound, bad))
                else:
                    lines.append("    if (w > %d)\n    %s" % (f.bound, bad))
            lines.append("    in->%s = %s;" % (f.name, self.from_word(f, "w")))
            lines.append("}")
            lines.append("at += 8;")
            return lines
        step = "(n + 7) & ~(size_t)7" if padded else "n"
        if f.kind == "text":
            lines.append("if (len - at >= %d)\n    %s" % (f.bound, bad))
            lines.append("((char *)req)[len] = 0; /* the message's buffer has a byte to spare */")
            lines.append("in->%s = (const char *)b + at;" % f.name)
            lines.append("at = len;")
            return lines
        if f.kind == "host":
            lines.append("if (x->shared_host) {")
            lines.append("    if (len - at < 8)\n    %s" % bad)
            lines.append("    memcpy(&in->%s_shared, b + at, 8);" % f.name)
            lines.append("    at += %s;" % ("8" if True else ""))
            lines.append("} else {")
            count = f.count.c("(uint64_t)in->%s" % f.count.field)
            lines.append("    size_t n = (size_t)(%s);" % count)
            lines.append("    if (len - at < n)\n    %s" % bad)
            lines.append("    in->%s = b + at;" % f.name)
            lines.append("    at += %s;" % step)
            lines.append("    if (at > len)\n    %s" % bad)
            lines.append("}")
            return lines
        if f.kind == "bytes" and f.count.kind == "one":
            lines.append("if (len - at < 8)\n    %s" % bad)
            lines.append("memcpy(&in->%s_size, b + at, 8);" % f.name)
            lines.append("at += 8;")
            if f.bound is not None:
                lines.append("if (in->%s_size > %d)\n    %s" % (f.name, f.bound, bad))
            lines.append("if (len - at < in->%s_size)\n    %s" % (f.name, bad))
            lines.append("in->%s = b + at;" % f.name)
            lines.append("{ size_t n = in->%s_size; at += %s; }" % (f.name, step))
            lines.append("if (at > len)\n    %s" % bad)
            return lines
        if f.count.kind == "rest":
            lines.append("in->%s = b + at;" % f.name)
            lines.append("in->%s_size = len - at;" % f.name)
            if f.bound is not None:
                lines.append("if (in->%s_size > %d)\n    %s" % (f.name, f.bound, bad))
            lines.append("at = len;")
            return lines
        lines.append("{")
        if f.count.kind == "one":
            lines.append("    size_t n = %d;" % f.size)
        elif f.count.kind == "fixed":
            lines.append("    size_t n = %d;" % f.fixed_size())
        else:
            ref = "(uint64_t)in->%s" % f.count.field
            if f.count.sub:
                lines.append("    if (%s * %d < %d)\n    %s" % (ref, f.count.mul, f.count.sub, bad))
            lines.append("    size_t n = (size_t)(%s) * %d;" % (f.count.c(ref), f.elem()[1]))
        lines.append("    if (len - at < n)\n    %s" % bad)
        if f.count.kind in ("one", "fixed"):
            lines.append("    memcpy(%sin->%s, b + at, n);" % ("&" if f.count.kind == "one" else "", f.name))
        elif f.kind == "bytes":
            lines.append("    in->%s = b + at;" % f.name)
            lines.append("    in->%s_size = n;" % f.name)
        else:
            lines.append("    in->%s = (const %s *)(const void *)(b + at);" % (f.name, self.value_type(f)))
        lines.append("    at += %s;" % step)
        lines.append("    if (at > len)\n    %s" % bad)
        lines.append("}")
        return lines

    def check_field(self, f):
        """Checks after the request parsed whole: handles, and integers that
        may not be 0 (the code to reply)."""
        if "nonzero" in f.opts:
            return ["if (!in->%s)\n    return %s;" % (f.name, self.lib.invalid)]
        if f.kind not in ("handle", "stream"):
            return []
        stream = "true" if f.kind == "stream" else "false"
        bad = "return %s;" % self.lib.bad_handle
        if f.scalar():
            w = self.to_word(f, "in->%s" % f.name)
            cond = "!vgpu_exec_handle_known(x, %s, %s)" % (w, stream)
            if "nonnull" in f.opts:
                cond = "!%s || %s" % (w, cond)
            return ["if (%s)\n    %s" % (cond, bad)]
        if f.count.kind == "fixed":
            n = str(f.count.fixed)
        else:
            n = f.count.c("(uint64_t)in->%s" % f.count.field)
        return ["for (size_t i = 0; i < (size_t)(%s); i++)" % n,
                "    if (!vgpu_exec_handle_known(x, (uint64_t)(uintptr_t)in->%s[i], %s))\n    %s"
                % (f.name, stream, bad)]

    def exec_reply(self):
        name = self.name
        lines = ["int vgpu_exec_reply_%s(struct vgpu_exec *x, int r, const struct vgpu_in_%s *in, "
                 "const struct vgpu_out_%s *out)" % (name, name, name), "{"]
        lines.append("    (void)in;")
        lines.append("    bool host_shared = x->shared_host;")
        lines.append("    (void)host_shared;")
        # a count past its bound (the hand-written side's mistake) is never sent: an error instead
        for f in self.outs:
            if f.scalar() and f.bound is not None:
                lines.append("    if (r == 0 && (uint64_t)out->%s > %d)\n    r = %s;" % (f.name, f.bound, self.lib.unknown))
        # handles it gives
        for f in self.outs:
            if "new" not in f.opts:
                continue
            if f.scalar():
                lines.append("    if (r == 0)\n    vgpu_exec_handle_add(x, %s);" % self.to_word(f, "out->%s" % f.name))
            else:
                if f.count.kind == "fixed":
                    n = str(f.count.fixed)
                else:
                    base = "in" if f.count.of_request else "out"
                    n = f.count.c("(uint64_t)%s->%s" % (base, f.count.field))
                lines.append("    for (size_t i = 0; r == 0 && out->%s && i < (size_t)(%s); i++)" % (f.name, n))
                lines.append("        vgpu_exec_handle_add(x, (uint64_t)(uintptr_t)out->%s[i]);" % f.name)
        pack, small_max = self.pack(self.outs, "out", "exec", None,
                                    all_expr="r == 0" if self.outs else None)
        lines.append("    unsigned char small[%d];" % max(8, small_max))
        lines.append("    struct iovec q[8] = { { 0 } };")
        lines.append("    (void)out;")
        lines.extend("    " + l for l in pack)
        lines.append("    return vgpu_exec_reply(x, r, q, nq);")
        lines.append("}")
        lines.append("")
        return lines

    # ---- whole calls generated from the prototype ----
    def mapped(self, call):
        """Whether call's parameters are its message's fields, one for one,
        and (a call `as` the message's owner) of the owner's types, which
        the fields have."""
        names = set(self.in_by_name) | set(self.out_by_name)
        pnames = [n for t, n in call.params()]
        return set(pnames) == names and all(self.params.get(n) == t for t, n in call.params())

    def guest_whole(self, call, slot, changes):
        """The guest's function of a call generated from its prototype; changes: the
        lines that tell the guest's kept answers what it changed (remote_notices)."""
        msg = self.name
        params = call.params()
        lines = ["static %s g_%s(%s)" % (call.result(), call.name, call.declaration()), "{"]
        lines.append("    struct vgpu_in_%s in;" % msg)
        lines.append("    struct vgpu_out_%s out;" % msg)
        lines.append("    memset(&in, 0, sizeof(in));")
        lines.append("    memset(&out, 0, sizeof(out));")
        tail_max = 0
        invalid = "    if (!%s)\n    return (%s)%s;"
        rooms = []
        for t, n in params:
            fi, fo = self.in_by_name.get(n), self.out_by_name.get(n)
            if fo is not None and fo.kind in ("text", "bytes"):
                raise SpecError("%s: generated whole, its reply's %s would point into the call's own memory: "
                                "write its guest side by hand" % (call.name, n))
            if fo is not None and "optional" not in fo.opts and fo.count.kind in ("one", "fixed"):
                lines.append(invalid % (n, call.result(), self.lib.invalid))
            elif fo is not None and fo.count.kind == "field" and fo.count.of_request:
                rooms.append(n)  # the reply lands in the caller's array: checked once the counts are read
            if fi is not None:
                if fi.kind == "struct" and fi.count.kind == "one" and pointee(t) is None:
                    lines.append("    in.%s = %s;" % (n, n))  # a struct passed by value (an IPC handle)
                elif fi.kind == "struct" and fi.count.kind == "one":
                    if fo is None or fo.count.kind != "one":
                        lines.append(invalid % (n, call.result(), self.lib.invalid))
                    lines.append("    memcpy(&in.%s, %s, sizeof(in.%s));" % (n, n, n))
                elif fi.scalar() and pointee(t) not in (None, "void"):
                    lines.append("    if (!%s)\n    return (%s)%s;" % (n, call.result(), self.lib.invalid))
                    lines.append("    in.%s = *%s;" % (n, n))
                elif fi.count.kind == "fixed":
                    lines.append(invalid % (n, call.result(), self.lib.invalid))
                    lines.append("    memcpy(in.%s, %s, sizeof(in.%s));" % (n, n, n))
                else:
                    lines.append("    in.%s = %s;" % (n, n))
            if fo is not None and fo.count.kind not in ("one", "fixed") and self.known_before(fo):
                lines.append("    out.%s = %s;" % (n, n))
        for n in rooms:
            fo = self.out_by_name[n]
            lines.append("    if ((%s) && !%s)\n    return (%s)%s;" % (
                fo.count.c("(uint64_t)in.%s" % fo.count.field), n, call.result(), self.lib.invalid))
        tail = self.tail_fields()
        if tail:
            fields = dict((g.name, g) for g in self.ins + self.outs)
            tail_max = sum(pad8(f.max_size(fields) or 0) + 8 for f in tail) + 1
            if any(f.max_size(fields) is None for f in tail) or tail_max > 65536:
                raise SpecError("%s: generated whole, its reply's tail needs bounds of at most 64 KiB" % call.name)
            lines.append("    unsigned char tail[%d];" % tail_max)
            lines.append("    out.tail = tail;")
            lines.append("    out.tail_size = sizeof(tail);")
        lines.append("    int r = vgpu_remote_call_%s(%d, 0, &in, &out);" % (msg, slot))
        for t, n in params:
            fo = self.out_by_name.get(n)
            if fo is None:
                continue
            if fo.count.kind == "one":
                guard = "r == 0 && %s" % n if "optional" in fo.opts else "r == 0"
                lines.append("    if (%s)\n    memcpy(%s, &out.%s, sizeof(out.%s));" % (guard, n, n, n))
            elif fo.count.kind == "fixed":
                lines.append("    if (r == 0)\n    memcpy(%s, out.%s, sizeof(out.%s));" % (n, n, n))
            elif not self.known_before(fo):
                raise SpecError("%s: generated whole, %s's size must be the request's" % (call.name, n))
        lines.extend(changes)
        lines.append("    return (%s)r;" % call.result())
        lines.append("}")
        lines.append("")
        return lines

    def exec_whole(self, call):
        """The executor's body of a call generated from its prototype: the
        driver called with the request's fields, its outputs replied."""
        msg = self.name
        params = call.params()
        lines = []
        frees = []
        args = []
        for t, n in params:
            fi, fo = self.in_by_name.get(n), self.out_by_name.get(n)
            if fo is not None:
                vt = self.value_type(fo)
                if fo.count.kind == "one":
                    lines.append("%s o_%s;" % (vt, n))
                    lines.append("memset(&o_%s, 0, sizeof(o_%s));" % (n, n))
                    if fi is not None:
                        src = "&in->%s" % n
                        lines.append("memcpy(&o_%s, %s, sizeof(o_%s));" % (n, src, n))
                    args.append("&o_%s" % n)
                elif fo.count.kind == "fixed":
                    lines.append("%s o_%s[%d];" % (vt, n, fo.count.fixed))
                    lines.append("memset(o_%s, 0, sizeof(o_%s));" % (n, n))
                    args.append("o_%s" % n)
                else:
                    base = "in" if fo.count.of_request else None
                    if base is None:
                        raise SpecError("%s: generated whole, %s must be sized by the request" % (call.name, n))
                    count = fo.count.c("(uint64_t)in->%s" % fo.count.field)
                    lines.append("size_t c_%s = (size_t)(%s);" % (n, count))
                    lines.append("%s *o_%s = calloc(c_%s ? c_%s : 1, sizeof(*o_%s));" % (vt, n, n, n, n))
                    lines.append("if (!o_%s) {" % n)
                    lines.extend("    free(o_%s);" % g for g in frees)
                    lines.append("    return vgpu_exec_reply(x, %s, NULL, 0);" % self.oom())
                    lines.append("}")
                    frees.append(n)
                    if fi is not None:
                        lines.append("if (c_%s)\n    memcpy(o_%s, in->%s, c_%s * sizeof(*o_%s));" % (n, n, n, n, n))
                    args.append("o_%s" % n)
                continue
            if fi.kind == "dptr" and fi.scalar() and "queries" not in call.flags:  # never the executor's memory
                lines.insert(0, "if (in->%s && !vgpu_exec_device_memory(x, (uint64_t)in->%s, \"%s\"))\n    "
                             "return vgpu_exec_reply(x, %s, NULL, 0);" % (n, n, call.name, self.lib.invalid))
            if fi.kind == "struct" and fi.count.kind == "one":
                args.append("&in->%s" % n if pointee(t) is not None else "in->%s" % n)
            elif fi.scalar() and pointee(t) not in (None, "void"):
                lines.append("%s v_%s = in->%s;" % (self.value_type(fi), n, n))
                args.append("&v_%s" % n)
            elif fi.count.kind == "fixed" or fi.scalar():
                args.append("in->%s" % n)
            else:
                args.append("(%s)in->%s" % (t, n) if "const" not in t and "*" in t else "in->%s" % n)
        ftype = "%s (*)(%s)" % (call.result(), ", ".join(t for t, n in params) or "void")
        lines.append("int r = (int)((%s)fn)(%s);" % (ftype, ", ".join(args)))
        outs = []
        for f in self.outs:
            if f.count.kind in ("one", "fixed"):
                outs.append(".%s = %so_%s" % (f.name, "", f.name) if f.count.kind == "one" else None)
            else:
                outs.append(".%s = o_%s" % (f.name, f.name))
        lines.append("struct vgpu_out_%s out;" % msg)
        lines.append("memset(&out, 0, sizeof(out));")
        for f in self.outs:
            if f.count.kind == "one":
                lines.append("memcpy(&out.%s, &o_%s, sizeof(out.%s));" % (f.name, f.name, f.name))
            elif f.count.kind == "fixed":
                lines.append("memcpy(out.%s, o_%s, sizeof(out.%s));" % (f.name, f.name, f.name))
            else:
                lines.append("out.%s = o_%s;" % (f.name, f.name))
        lines.append("int sent = vgpu_exec_reply_%s(x, r, in, &out);" % msg)
        lines.extend("free(o_%s);" % n for n in frees)
        lines.append("return sent;")
        return lines

    def oom(self):
        return self.lib.oom
