"""The remote call spec (forwarder/remote/spec/LIB.remote), read.

One line per export of the library, written by gen_remote_abi.py from the
toolkit's header (its mechanical part):

  NAME carried KIND...      every parameter of a kind gen_remote.py packs itself
  NAME manual PROTOTYPE     not: carried only as declared below it, or refused
  NAME absent               not in the header (interop, the debugger's)

and under a line, indented, what a person declared for the call (kept
verbatim when the mechanical part is written again):

  flags FLAG...      async    the guest may send it without waiting for a reply
                     sync     it synchronizes: errors of calls sent without
                              waiting come back with it
                     shared   a copy that may name a block of page-locked memory
                              shared with the executor (VGPU_REMOTE_SHARED)
                     by_hash  a load whose image may be named by its SHA-256
                     changes  it changes the current context, primary contexts,
                              or unloads code: the guest forgets what it keeps
                     tunes    it changes what occupancy, a function's attributes
                              or a context's limits answer
                     queries  it only asks the driver about a device address
                     ends     it ends the handle its first parameter is
  refused REASON     no guest may make it (the reason is logged and documented)
  guest REASON       answered in the guest, with no message of its own (by
                     vgpu_remote_guest_NAME: a carried call's, of the
                     header's prototype, declared in the guest's manual.h)
  hand SIDE...       the sides written by hand: guest, executor
  as OTHER           its message is OTHER's (the fields declared there)
  prototype PROTO    an absent call's C prototype (the header lacks it)
  in TYPE NAME...    a field of its request, in the order they cross
  out TYPE NAME...   a field of its reply

A field:  TYPE NAME[COUNT] [<= N | < N] [OPTION...]

  TYPE   u64 i64 u32 i32    an integer (one 64-bit word; checked to fit)
         dptr               a device address (a word)
         handle             a handle the executor gave this guest (a word),
                            checked; stream: the same or a default stream
         struct T(SIZE)     a C struct of SIZE bytes (checked at compile time)
         bytes              bytes
         text               a string: the message's last field; NUL-ended
                            on arrival
         host               the guest's memory a copy reads (in) or writes
                            (out): its bytes in the request or the reply, or,
                            when the call comes shared, the guest's address
                            of a block shared with the executor, one word
                            of the request (after its other fields)
  COUNT  (none)             one; for bytes: a length word, then the bytes
         N                  a fixed count
         FIELD, FIELD-N, N*FIELD
                            an earlier field of the message (in.FIELD: of
                            the request, in a reply)
         rest               the rest of the message (its last field)
  <= N   the most a count, or a value, may be (< N for text: its bytes);
         the executor closes a connection that sends more, the guest
         refuses a call that needs more
  OPTION nonnull            a handle that may not be NULL
         new                a handle the executor gives the guest (a reply's)
         optional           an out-value the caller may pass NULL for
         always             a reply's field that comes back whatever the call
                            returned (the leading fields of a reply only)
         invalid            past its bound, the call's argument is invalid (the
                            API's own limit), not more than vgpu carries
         nonzero            an integer that may not be 0 (the call's invalid
                            argument)

Every array and string crosses at its elements' own size; every field but
the last is padded to 8 bytes.
"""
import re

FLAGS = {"async", "sync", "shared", "by_hash", "changes", "tunes", "queries", "ends"}
SCALARS = {"u64": ("uint64_t", 8), "i64": ("int64_t", 8), "u32": ("uint32_t", 4), "i32": ("int32_t", 4),
           "dptr": ("uint64_t", 8), "handle": ("uint64_t", 8), "stream": ("uint64_t", 8)}
OPTIONS = {"nonnull", "new", "optional", "always", "invalid", "nonzero"}
# Where each option may stand: the request's fields, or the reply's.
OPTION_DIRS = {"nonnull": "in", "invalid": "in", "nonzero": "in", "new": "out", "optional": "out", "always": "out"}
COUNT = re.compile(r"^(?:(\d+)\*)?(in\.)?([A-Za-z_]\w*)(?:-(\d+))?$")
FIELD = re.compile(r"^(in|out)\s+(struct\s+\w+\(\d+\)|\w+)\s+([A-Za-z_]\w*)(?:\[([^\]]+)\])?(.*)$")


class SpecError(Exception):
    pass


class Count:
    """How many elements a field has: a number, rest, its own length word
    (counted), or a function of an earlier field (mul * field - sub)."""

    def __init__(self, text):
        self.text = text
        self.fixed = self.field = None
        self.mul, self.sub, self.of_request = 1, 0, False
        if text is None:
            self.kind = "one"
        elif text == "rest":
            self.kind = "rest"
        elif text.isdigit():
            self.kind, self.fixed = "fixed", int(text)
        else:
            m = COUNT.match(text)
            if not m:
                raise SpecError("a count %r is not N, FIELD, FIELD-N or N*FIELD" % text)
            self.kind = "field"
            self.mul = int(m.group(1) or 1)
            self.of_request = bool(m.group(2))
            self.field = m.group(3)
            self.sub = int(m.group(4) or 0)

    def c(self, value):
        """The C expression of the count, given the C expression of its field."""
        e = value if self.mul == 1 else "%d * %s" % (self.mul, value)
        return "(%s - %d)" % (e, self.sub) if self.sub else e


class Field:
    def __init__(self, direction, line):
        m = FIELD.match(line)
        if not m:
            raise SpecError("not a field: %r" % line)
        self.dir, t, self.name, count, rest = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5).split()
        self.struct = None
        if t.startswith("struct"):
            sm = re.match(r"struct\s+(\w+)\((\d+)\)", t)
            self.kind, self.struct, self.size = "struct", sm.group(1), int(sm.group(2))
        elif t in SCALARS or t in ("bytes", "text", "host"):
            self.kind, self.size = t, None
        else:
            raise SpecError("field %s: no type %r" % (self.name, t))
        self.count = Count(count)
        self.bound, self.strict, self.opts = None, False, set()
        i = 0
        while i < len(rest):
            if rest[i] in ("<=", "<"):
                self.strict = rest[i] == "<"
                self.bound = int(rest[i + 1], 0)
                if self.bound < 0:
                    raise SpecError("field %s: a bound is not negative" % self.name)
                i += 2
                continue
            if rest[i] not in OPTIONS:
                raise SpecError("field %s: no option %r" % (self.name, rest[i]))
            if OPTION_DIRS[rest[i]] != direction:
                raise SpecError("field %s: %s is an option of the %s's fields" % (
                    self.name, rest[i], "request" if OPTION_DIRS[rest[i]] == "in" else "reply"))
            self.opts.add(rest[i])
            i += 1
        if self.strict and self.kind != "text":
            raise SpecError("field %s: `< N` bounds a string's bytes; an integer's or a count's is `<= N`" % self.name)
        if self.opts & {"invalid", "nonzero"} and not (self.kind in SCALARS and self.count.kind == "one"):
            raise SpecError("field %s: invalid and nonzero are an integer's options" % self.name)
        if self.kind == "text" and (self.count.kind != "one" or self.bound is None or not self.strict):
            raise SpecError("text %s: a string is `text NAME < N`" % self.name)
        if self.kind == "host" and self.count.kind != "field":
            raise SpecError("host %s: guest memory is `host NAME[FIELD]`" % self.name)
        if self.kind == "bytes" and self.count.kind == "one" and self.bound is None:
            self.bound = None  # a length word: bounded by the message's length

    # ---- what a field is ----
    def scalar(self):
        return self.kind in SCALARS and self.count.kind == "one"

    def elem(self):
        """(C type, bytes) of one element on the wire."""
        if self.kind in SCALARS:
            return SCALARS[self.kind] if self.count.kind != "one" else ("uint64_t", 8)
        if self.kind == "struct":
            return (self.struct, self.size)
        return ("unsigned char", 1)

    def fixed_size(self):
        """Its bytes on the wire when they do not depend on the message, else None."""
        if self.scalar():
            return 8
        if self.kind == "struct" and self.count.kind == "one":
            return self.size
        if self.count.kind == "fixed" and self.kind != "text":
            return self.elem()[1] * self.count.fixed
        return None

    def max_size(self, fields):
        """Its most bytes on the wire, or None when unbounded (bytes, text's bound)."""
        f = self.fixed_size()
        if f is not None:
            return f
        if self.kind == "text":
            return self.bound
        if self.count.kind == "field":
            ref = fields.get(self.count.field)
            if ref is None or ref.bound is None:
                return None
            return self.elem()[1] * self.count.mul * ref.bound
        if self.kind == "bytes" and self.count.kind == "one" and self.bound is not None:
            return 8 + self.bound
        return None


class Call:
    def __init__(self, name, kind, rest):
        self.name, self.kind = name, kind
        self.kinds = rest if kind == "carried" else []
        self.prototype = " ".join(rest) if kind == "manual" else None
        self.flags, self.refused, self.guest, self.hand, self.like = set(), None, None, set(), None
        self.ins, self.outs, self.block = [], [], []

    def declare(self, line):
        self.block.append(line)
        word, _, rest = line.partition(" ")
        if word not in ("refused", "guest"):  # a reason is prose, a '#' in it is its own
            rest = rest.split("#", 1)[0]
        rest = rest.strip()
        if word == "flags":
            bad = set(rest.split()) - FLAGS
            if bad:
                raise SpecError("%s: no flag %s" % (self.name, ", ".join(sorted(bad))))
            self.flags |= set(rest.split())
        elif word == "refused":
            self.refused = rest
        elif word == "guest":
            self.guest = rest
        elif word == "hand":
            bad = set(rest.split()) - {"guest", "executor"}
            if bad:
                raise SpecError("%s: hand names the sides guest and executor, not %s" % (self.name, ", ".join(bad)))
            self.hand |= set(rest.split())
        elif word == "as":
            self.like = rest
        elif word == "prototype":
            if self.kind != "absent":
                raise SpecError("%s: only an absent call is given a prototype" % self.name)
            self.prototype = rest
        elif word in ("in", "out"):
            (self.ins if word == "in" else self.outs).append(Field(word, word + " " + rest))
        else:
            raise SpecError("%s: %r declares nothing" % (self.name, line))

    def has_message(self):
        return bool(self.ins or self.outs or self.like)

    def params(self):
        """[(C type, name)] of a manual call's prototype."""
        m = re.match(r"^(.*?)\b%s\s*\((.*)\)\s*;?$" % re.escape(self.name), self.prototype)
        inner = m.group(2).strip()
        if inner in ("", "void"):
            return []
        out = []
        for p in inner.split(","):
            p = p.strip()
            pm = re.match(r"^(.*?)([A-Za-z_]\w*)\s*((?:\[\d*\])*)$", p)
            t = " ".join(pm.group(1).split()) + ("*" if pm.group(3) else "")
            t = t.replace(" *", "*").replace("*", " *").replace("* *", "**").replace(" * ", " *")
            out.append((t, pm.group(2)))
        return out

    def declaration(self):
        """Its parameter list, as C."""
        return ", ".join(t + n if t.endswith("*") else "%s %s" % (t, n) for t, n in self.params()) or "void"

    def result(self):
        return re.match(r"^(.*?)\b%s\s*\(" % re.escape(self.name), self.prototype).group(1).strip()


class Spec:
    def __init__(self, path):
        self.calls = {}
        self.order = []
        self.text = open(path).read()
        current = None
        for n, raw in enumerate(self.text.splitlines(), 1):
            line = raw.rstrip()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                if line[0].isspace():
                    if current is None:
                        raise SpecError("a declaration before any call")
                    current.declare(line.strip())
                    continue
                parts = line.split()
                if len(parts) < 2 or parts[1] not in ("carried", "manual", "absent"):
                    raise SpecError("not a call's line: %r" % line)
                current = Call(parts[0], parts[1], parts[2:])
                self.calls[current.name] = current
                self.order.append(current.name)
            except SpecError as e:
                raise SpecError("%s:%d: %s" % (path, n, e))
        for c in self.calls.values():
            self.check(c, path)

    def message_of(self, call):
        """The call whose fields are call's message (itself, or what it is `as`)."""
        return self.calls[call.like] if call.like else call

    def check(self, c, path):
        def fail(why):
            raise SpecError("%s: %s: %s" % (path, c.name, why))
        if c.like and (c.ins or c.outs):
            fail("`as` and fields of its own")
        if c.like and (c.like not in self.calls or not self.calls[c.like].has_message()):
            fail("`as %s`: no message declared there" % c.like)
        if c.kind == "carried" and c.has_message():
            fail("a carried call declares no message: its kinds are its message")
        if c.has_message() and c.prototype is None:
            fail("only a manual call (or an absent one given its prototype) declares a message")
        if (c.refused is not None) + (c.guest is not None) + c.has_message() > 1:
            fail("refused, guest and a message exclude each other")
        if c.guest is not None and c.hand - {"guest"}:
            fail("answered in the guest, it has no executor's side")
        if c.hand and c.kind != "carried" and c.guest is None and not c.has_message():
            fail("a side written by hand, but no message: declare its fields, or `guest REASON`")
        if c.has_message() and "ends" in c.flags:
            fail("`ends` is a carried call's: a declared call's executor side ends its handle by hand")
        if c.guest is not None:
            c.hand.add("guest")
        for fields in (c.ins, c.outs):
            seen = {}
            for i, f in enumerate(fields):
                if f.count.kind == "rest" or f.kind == "text":
                    if i != len(fields) - 1:
                        fail("%s: rest and text are a message's last field" % f.name)
                if f.count.kind == "field" and f.dir == "in" and f.count.of_request:
                    fail("%s: a request's field is counted by an earlier one (FIELD, not in.FIELD)" % f.name)
                if f.count.kind == "field":
                    ref = (dict((g.name, g) for g in c.ins) if f.count.of_request else seen).get(f.count.field)
                    if ref is None or not ref.scalar():
                        fail("%s: counted by %s, which is no earlier integer of the %s" % (
                            f.name, f.count.text, "request" if f.count.of_request or f.dir == "in" else "reply"))
                    if ref.bound is None and (f.kind not in ("bytes", "host") or f.count.mul > 1) and \
                            (f.dir == "in" or f.elem()[1] * f.count.mul > 1):
                        fail("%s: counted by %s, which has no bound (<= N)" % (f.name, f.count.field))
                if "always" in f.opts and any("always" not in g.opts for g in fields[:i]):
                    fail("%s: always fields lead the reply" % f.name)
                if f.kind == "host" and "shared" not in c.flags:
                    fail("%s: guest memory crosses in copies flagged shared" % f.name)
                if f.kind == "host" and f.dir == "out" and any(g.fixed_size() is None for g in c.ins):
                    fail("%s: a reply's guest memory needs a request of fixed fields alone" % f.name)
                if f.kind == "host" and f.dir == "out" and not f.count.of_request:
                    fail("%s: a reply's guest memory is sized by the request (in.FIELD)" % f.name)
                seen[f.name] = f


def read_functions(path):
    """The function names of a symbol list (interpose/LIB.symbols: NAME KIND lines), in its order."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split("#", 1)[0].split()
            if len(p) == 2 and p[1] == "func":
                out.append(p[0])
    return out
