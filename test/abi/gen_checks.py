#!/usr/bin/env python3
"""Generate the C programs that compare include/vgpu/cuda_abi.h with a toolkit's cuda.h.

    gen_checks.py --cc CC HEADER OUTDIR

Parses HEADER (the carried declarations) with pycparser and writes:

  OUTDIR/layout.c      compiled twice, once against each cuda.h, with
                       -D__CUDA_API_VERSION_INTERNAL; it prints sizeof and
                       alignof of every carried typedef, struct and union (and
                       the signedness of the scalar ones), offsetof and sizeof
                       of every field (nested ones by their path), the value of
                       every enum constant and of every macro. The two outputs
                       must be identical.
  OUTDIR/prototypes.c  compiled against the toolkit's cuda.h only: one
                       _Static_assert per carried prototype, typedef, field type
                       and macro type, that the carried declaration (its text,
                       read with the toolkit's meaning of each name) is the
                       toolkit's type. Declarations that HEADER makes only with
                       __CUDA_API_VERSION_INTERNAL are checked only under it, so
                       compiling it with and without the define also checks that
                       the rest is what cuda.h declares without it.

CC preprocesses HEADER (twice: with and without __CUDA_API_VERSION_INTERNAL)
against stub <stddef.h> and <stdint.h> that only name their types, because
pycparser reads C, not the C library's GNU extensions. The counts of what was
checked go to stdout.
"""
import argparse
import copy
import os
import re
import shlex
import subprocess
import sys
import tempfile

try:
    from pycparser import c_ast, c_generator, c_parser
except ImportError:
    sys.exit("gen_checks.py: the Python module pycparser is missing: apt-get install python3-pycparser")

# Names the stub headers declare; the real ones come from the C library when the
# generated programs are compiled.
STUBS = {
    "stddef.h": "typedef unsigned long size_t;\n",
    "stdint.h": "".join("typedef int %s;\n" % t for t in
                        ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                         "uint32_t", "uint64_t", "intptr_t", "uintptr_t")),
}

GEN = c_generator.CGenerator()


def preprocess(cc, header, internal):
    with tempfile.TemporaryDirectory() as stubs:
        for name, text in STUBS.items():
            with open(os.path.join(stubs, name), "w") as f:
                f.write(text)
        cmd = shlex.split(cc) + ["-E", "-nostdinc", "-I", stubs, "-U__cplusplus", header]
        if internal:
            cmd.append("-D__CUDA_API_VERSION_INTERNAL")
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def carried(ast, header):
    """Top-level declarations written in HEADER itself (not in the stubs)."""
    real = os.path.realpath(header)
    return [d for d in ast.ext if d.coord and os.path.realpath(d.coord.file) == real]


def abstract(node):
    """The C text of a type with every declarator name removed: `int (*)(char *)`."""
    node = copy.deepcopy(node)
    for n in walk(node):
        if isinstance(n, c_ast.TypeDecl):
            n.declname = None
        elif isinstance(n, c_ast.Decl):
            n.name = None
    return GEN.visit(c_ast.Typename(None, [], None, node))


def walk(node):
    yield node
    for _, child in node.children():
        yield from walk(child)


def tag_only(node):
    """`struct X` for a struct, union or enum definition; None where it has no tag."""
    if not node.name:
        return None
    kind = {c_ast.Struct: "struct", c_ast.Union: "union", c_ast.Enum: "enum"}[type(node)]
    return "%s %s" % (kind, node.name)


def record_of(node):
    """The struct, union or enum a declaration's type is, or None."""
    if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union, c_ast.Enum)):
        return node.type
    return None


class Carried:
    """What HEADER declares, in declaration order."""

    def __init__(self, decls):
        self.typedefs = []   # (name, type node)
        self.records = []    # (C type expression, Struct/Union node)
        self.enumerators = []
        self.functions = []  # (name, FuncDecl)
        self.scalar = set()  # typedef names of integer or enum types
        for d in decls:
            rec = record_of(d.type)
            if isinstance(d, c_ast.Typedef):
                self.typedefs.append((d.name, d.type))
                self.note_record(rec, d.name)
                if self.is_scalar(d.type):
                    self.scalar.add(d.name)
            elif isinstance(d, c_ast.Decl) and isinstance(d.type, c_ast.FuncDecl):
                self.functions.append((d.name, d.type))
            elif isinstance(d, c_ast.Decl) and d.name is None:
                self.note_record(rec, None)
            else:
                sys.exit("gen_checks.py: %s: a declaration it cannot check: %s" % (d.coord, GEN.visit(d)))

    def names(self):
        """Typedef, function and struct or union tag names."""
        return ({n for n, _ in self.typedefs} | {n for n, _ in self.functions} |
                {t.split()[-1] for t, _ in self.records})

    def note_record(self, rec, typedef_name):
        if isinstance(rec, c_ast.Enum) and rec.values:
            self.enumerators += [e.name for e in rec.values.enumerators]
        elif isinstance(rec, (c_ast.Struct, c_ast.Union)) and rec.decls is not None:
            self.records.append((tag_only(rec) or typedef_name, rec))

    def is_scalar(self, node):
        if not isinstance(node, c_ast.TypeDecl):
            return False
        if isinstance(node.type, c_ast.Enum):
            return True
        if isinstance(node.type, c_ast.IdentifierType):
            names = node.type.names
            if len(names) == 1 and names[0] in dict(self.typedefs):
                return names[0] in self.scalar
            return True  # a base type (unsigned long long) or the C library's (uint64_t)
        return False


def fields(rec, prefix=""):
    """(path, type node, anonymous record or None) of every field, nested ones by path."""
    for f in rec.decls:
        if f.bitsize is not None:
            sys.exit("gen_checks.py: %s: bit-fields are not checked; declare them as cuda.h does" % f.coord)
        inner = record_of(f.type)
        anonymous = inner if isinstance(inner, (c_ast.Struct, c_ast.Union)) and inner.decls is not None else None
        if f.name:
            yield prefix + f.name, f.type, anonymous
        if anonymous is not None:  # a C11 anonymous member's fields are the outer record's
            yield from fields(anonymous, prefix + f.name + "." if f.name else prefix)


def macros(header):
    """Object-like #defines of HEADER but its include guard: (name, value)."""
    text = open(header).read()
    guard = re.search(r"^#ifndef[ \t]+(\w+)", text, re.M)
    out = []
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(?)[ \t]*(.*?)[ \t]*$", text, re.M):
        name, function_like, value = m.groups()
        if function_like:
            sys.exit("gen_checks.py: %s: function-like macro %s is not checked" % (header, name))
        if not (guard and name == guard.group(1)):
            out.append((name, value))
    return out


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def layout_program(c, defines):
    out = ["/* Generated by test/abi/gen_checks.py: do not edit. */",
           "#include <cuda.h>", "#include <stddef.h>", "#include <stdio.h>", "",
           "#define VGPU_STR_(x) #x", "#define VGPU_STR(x) VGPU_STR_(x)", "",
           "int main(void)", "{"]
    for name, _ in c.typedefs:
        out.append('    printf("typedef %s: size %%zu align %%zu\\n", sizeof(%s), _Alignof(%s));' % (name, name, name))
        if name in c.scalar:
            out.append('    printf("typedef %s: signed %%d\\n", (int)((%s)-1 < 0));' % (name, name))
    for ctype, rec in c.records:
        out.append('    printf("%s: size %%zu align %%zu\\n", sizeof(%s), _Alignof(%s));' % (ctype, ctype, ctype))
        for path, _, _ in fields(rec):
            out.append('    printf("%s.%s: offset %%zu size %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                       % (ctype, path, ctype, path, ctype, path))
    for e in c.enumerators:
        out.append('    printf("%s = %%lld\\n", (long long)%s);' % (e, e))
    for name, value in defines:
        if value:
            out.append('    printf("#define %s: value %%llu size %%zu\\n", (unsigned long long)(%s), sizeof(%s));'
                       % (name, name, name))
        else:
            out.append('    printf("#define %s: expands to \\"%%s\\"\\n", VGPU_STR(%s));' % (name, name))
    out += ["    return 0;", "}", ""]
    return "\n".join(out) + "\n"


def assert_same(expr_a, expr_b, what):
    return "_Static_assert(__builtin_types_compatible_p(%s, %s), %s);" % (
        expr_a, expr_b, c_string("%s differs from the toolkit's cuda.h" % what))


def prototype_program(c, internal_names, defines):
    public, internal = [], []
    for name, node in c.typedefs:
        rec = record_of(node)
        text = tag_only(rec) if rec is not None else abstract(node)
        if text:  # None: an untagged struct or enum, whose layout and values layout.c compares
            (internal if name in internal_names else public).append(
                assert_same(name, text, "carried typedef %s = %s" % (name, text)))
    for ctype, rec in c.records:
        for path, ftype, anonymous in fields(rec):
            if anonymous is None:  # else its own fields are checked
                text = abstract(ftype)
                (internal if ctype.split()[-1] in internal_names else public).append(
                    assert_same("__typeof__(((%s *)0)->%s)" % (ctype, path), text,
                                "carried field %s.%s (%s)" % (ctype, path, text)))
    for name, fn in c.functions:
        text = abstract(c_ast.PtrDecl([], fn))
        (internal if name in internal_names else public).append(
            assert_same("__typeof__(&%s)" % name, text, "carried prototype of %s: %s" % (name, text)))
    for name, value in defines:
        if value:
            public.append(assert_same("__typeof__(%s)" % name, "__typeof__(%s)" % value,
                                      "type of carried macro %s (%s)" % (name, value)))
    return "\n".join(["/* Generated by test/abi/gen_checks.py: do not edit. */", "#include <cuda.h>", ""] +
                     public + ["", "#ifdef __CUDA_API_VERSION_INTERNAL"] + internal + ["#endif", ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cc", required=True, help="C compiler command, used as its preprocessor")
    ap.add_argument("header")
    ap.add_argument("outdir")
    args = ap.parse_args()

    parser = c_parser.CParser()
    everything, public = (Carried(carried(parser.parse(preprocess(args.cc, args.header, internal), args.header),
                                          args.header)) for internal in (True, False))
    internal_names = everything.names() - public.names()
    defines = macros(args.header)

    with open(os.path.join(args.outdir, "layout.c"), "w") as f:
        f.write(layout_program(everything, defines))
    with open(os.path.join(args.outdir, "prototypes.c"), "w") as f:
        f.write(prototype_program(everything, internal_names, defines))
    nfields = sum(len(list(fields(r))) for _, r in everything.records)
    print("%d prototypes (%d only with __CUDA_API_VERSION_INTERNAL), %d typedefs, %d structs and unions "
          "with %d fields, %d enum constants, %d macros" % (
              len(everything.functions), len(internal_names & {n for n, _ in everything.functions}),
              len(everything.typedefs), len(everything.records), nfields, len(everything.enumerators),
              len(defines)))


if __name__ == "__main__":
    main()
