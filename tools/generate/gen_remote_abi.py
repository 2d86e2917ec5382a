#!/usr/bin/env python3
"""Write the remote driver's ABI description from a toolkit's cuda.h or nvml.h.

    gen_remote_abi.py --cc CC --header /usr/local/cuda/include/cuda.h \
        --symbols interpose/cuda.symbols --merge forwarder/remote/spec/cuda.remote > new.remote
    gen_remote_abi.py --cc CC --lib nvml --header .../nvml.h \
        --symbols interpose/nvml.symbols --merge forwarder/remote/spec/nvml.remote > new.remote

It writes the spec's mechanical part (one line per export); with --merge,
what a person declared under each call's line in the committed spec
(tools/generate/remote_spec.py) is kept under it, as vgpu-symdump --merge
keeps names.  The test remote_abi_matches_the_toolkit runs it so against
the toolkit's headers and compares with the committed spec.

For every function the library exports (the committed symbol list) it finds
the prototype the header declares under that exact name (read with
-D__CUDA_API_VERSION_INTERNAL, or NVML_NO_UNVERSIONED_FUNC_DEFS, so that
versioned names are distinct functions) and classifies each parameter by
what crossing a process boundary needs:

  i1 i2 i4 i8   an integer or enum, passed by value (its size)
  f4 f8         a float or double, by value
  h             an opaque handle (a pointer to an incomplete struct: CUcontext,
                nvmlDevice_t, ...), passed by value; the executor checks it is one
                it gave this guest
  hs            a CUstream: the same, or one of the default streams (NULL,
                CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)
  d             a device pointer (CUdeviceptr), by value
  o2 o4 o8      a pointer to one integer or float the call writes (its size;
                not a char, which is a string or a buffer)
  bN            a pointer to one struct of plain data (integers, floats, enums,
                device pointers, arrays of them: no pointer, no handle) the call
                reads (const), N bytes
  sN            a pointer to one such struct the call reads and writes (an
                NVML-style versioned struct, a CUuuid), N bytes
  t             a char buffer the call writes, whose size is the integer
                parameter right after it (a name, a UUID, a version string)
  oh od         a pointer to one handle or device pointer the call writes

A function all of whose parameters are of these kinds, returning CUresult
(nvmlReturn_t),
is `carried`: tools/generate/gen_remote.py writes its guest stub and its
executor dispatcher.  Any other parameter (a string, an array, a struct, a
host pointer, a callback) makes the function `manual`: carried by hand-written
code (forwarder/remote/manual_*.c) or refused with CUDA_ERROR_NOT_SUPPORTED.
An export cuda.h does not declare (OpenGL, EGL, VDPAU interop, the profiler)
is `absent`.  Output, one line per export, sorted:

  NAME carried KIND...          e.g. "cuDeviceGet carried o4 i4"
  NAME manual  C-PROTOTYPE
  NAME absent
"""
import argparse
import copy
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_spec import read_functions  # noqa: E402

try:
    from pycparser import c_ast, c_generator, c_parser
except ImportError:
    sys.exit("gen_remote_abi.py: the Python module pycparser is missing: apt-get install python3-pycparser")

SIZE_T = "#ifndef STUB_SIZE_T\n#define STUB_SIZE_T\ntypedef unsigned long size_t;\n#endif\n"
STUBS = {
    "stddef.h": SIZE_T,
    "stdlib.h": SIZE_T,
    "stdint.h": "".join("typedef int %s;\n" % t for t in
                        ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                         "uint32_t", "uint64_t", "intptr_t", "uintptr_t")),
}
# The stub typedefs above are all "int"; their real sizes:
STUB_SIZES = {"size_t": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
              "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "intptr_t": 8, "uintptr_t": 8}
BASE_SIZES = {"char": 1, "signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2,
              "int": 4, "unsigned int": 4, "unsigned": 4, "long": 8, "unsigned long": 8,
              "long long": 8, "unsigned long long": 8, "float": -4, "double": -8}
GEN = c_generator.CGenerator()


# What each library's header needs defined to declare every exported name
# under its own name, and the type its calls return.
LIBS = {
    "cuda": {"define": "-D__CUDA_API_VERSION_INTERNAL", "result": "CUresult"},
    "nvml": {"define": "-DNVML_NO_UNVERSIONED_FUNC_DEFS", "result": "nvmlReturn_t"},
}


def preprocess(cc, header, define):
    with tempfile.TemporaryDirectory() as stubs:
        for name, text in STUBS.items():
            with open(os.path.join(stubs, name), "w") as f:
                f.write(text)
        cmd = shlex.split(cc) + ["-E", "-P", "-nostdinc", "-I", stubs, "-U__cplusplus",
                                 define, "-D__attribute__(x)=", "-D_Alignas(x)=", header]
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


class Types:
    def __init__(self, ast):
        self.typedefs = {}
        self.records = {}  # struct/union name -> its node with members
        self.structs = {}  # the C text of each struct type a parameter points to -> whether it is plain data
        for d in ast.ext:
            if isinstance(d, c_ast.Typedef):
                self.typedefs[d.name] = d.type

        class Records(c_ast.NodeVisitor):
            def visit_Struct(v, node):
                if node.name and node.decls is not None:
                    self.records[("struct", node.name)] = node
                v.generic_visit(node)

            def visit_Union(v, node):
                if node.name and node.decls is not None:
                    self.records[("union", node.name)] = node
                v.generic_visit(node)
        Records().visit(ast)

    def record(self, t):
        """The struct or union (with its members) a type is, or None."""
        t, _ = self.resolve(t)
        if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, (c_ast.Struct, c_ast.Union)):
            return None
        r = t.type
        if r.decls is None:
            r = self.records.get(("struct" if isinstance(r, c_ast.Struct) else "union", r.name))
        return r

    def plain(self, t, depth=0):
        """Whether a type is plain data: integers, floats, enums, device
        pointers, and arrays, structs and unions of them; no pointer and no
        handle, whose values mean something in one process only."""
        if depth > 16:
            return False
        if isinstance(t, c_ast.ArrayDecl):
            return self.plain(t.type, depth + 1)
        k = self.kind_by_value(t)
        if k:
            return k not in ("h", "hs")
        r = self.record(t)
        if r is None or not r.decls:
            return False
        return all(self.plain(m.type, depth + 1) for m in r.decls)

    def resolve(self, t):
        """Follows typedef names to the type; returns (node, the last typedef name seen)."""
        name = None
        while isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.IdentifierType):
            n = " ".join(t.type.names)
            if n in STUB_SIZES or n not in self.typedefs:
                return t, name if name else n
            name = n
            t = self.typedefs[n]
        return t, name

    def scalar(self, t):
        """Size of an integer/enum/floating type (negative for floating), or None."""
        t, _ = self.resolve(t)
        if not isinstance(t, c_ast.TypeDecl):
            return None
        if isinstance(t.type, c_ast.Enum):
            return 4
        if isinstance(t.type, c_ast.IdentifierType):
            n = " ".join(x for x in t.type.names if x not in ("signed",)) or "int"
            if n in STUB_SIZES:
                return STUB_SIZES[n]
            return BASE_SIZES.get(n) or BASE_SIZES.get(" ".join(t.type.names))
        return None

    def kind_by_value(self, t):
        if self.is_devptr(t):
            return "d"
        if self.is_handle(t):
            # A stream may also be one of the default streams' constants.
            return "hs" if self.resolve(t)[1] == "CUstream" else "h"
        s = self.scalar(t)
        if s is None:
            return None
        return "f%d" % -s if s < 0 else "i%d" % s

    def is_devptr(self, t):
        _, name = self.resolve(t)
        return name in ("CUdeviceptr", "CUdeviceptr_v2", "CUdeviceptr_v1") and self.scalar(t) is not None

    def is_handle(self, t):
        """A typedef'd pointer to a struct that cuda.h never completes."""
        if not (isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.IdentifierType)):
            return False
        r, _ = self.resolve(t)
        if not isinstance(r, c_ast.PtrDecl):
            return False
        inner = r.type
        return (isinstance(inner, c_ast.TypeDecl) and isinstance(inner.type, c_ast.Struct)
                and inner.type.decls is None and not inner.quals)

    def kind(self, t):
        k = self.kind_by_value(t)
        if k:
            return k
        if isinstance(t, c_ast.PtrDecl) and not t.quals:
            inner = t.type
            if self.record(inner) is not None and self.plain(inner):
                # One struct of plain data: read (const), or read and written.
                text = GEN.visit(c_ast.Typename(None, [], None, strip_quals(inner)))
                self.structs[text] = True
                return ("b:" if "const" in inner.quals else "s:") + text
            if isinstance(inner, c_ast.TypeDecl) and "const" in inner.quals:
                return None  # an input through a pointer: an array, a string
            k = self.kind_by_value(inner)
            if k == "d" and self.resolve(inner)[1] == "CUdeviceptr_v1":
                return "o4"  # CUDA 3.x's 32-bit device pointer: four bytes written
            if k and k[0] in "ifd":
                return "o" + (k[1:] if k[0] in "if" else "d")
            if k in ("h", "hs"):
                return "oh"
        return None


def strip_quals(t):
    t = copy.deepcopy(t)
    if isinstance(t, c_ast.TypeDecl):
        t.quals = []
        t.declname = None
    return t


def sizes(cc, header, define, types):
    """sizeof of each struct type text, from a program compiled against header."""
    if not types:
        return {}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "sizes.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include \"%s\"\nint main(void)\n{\n" % os.path.abspath(header))
            for t in types:
                f.write('    printf("%%zu\\n", sizeof(%s));\n' % t)
            f.write("    return 0;\n}\n")
        exe = os.path.join(d, "sizes")
        subprocess.run(shlex.split(cc) + [define, src, "-o", exe], check=True)
        out = subprocess.run([exe], check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    return dict(zip(types, (int(x) for x in out)))


# The name of a char buffer's size parameter.
BUFFER_SIZE = re.compile(r"^(len|length|size|bufferSize|nameLength|bufSize)$")


# Copies between unified addresses: either side may be the guest's own
# memory, which only the guest can tell from a device pointer.
UNIFIED_COPY = re.compile(r"^cuMemcpy(Async)?(_ptds|_ptsz)?$")


# Calls whose pointer to one value is read and written (the mode this thread
# had goes in, the one it has comes back): crossed as a struct of that size
# the call reads and writes.
READ_AND_WRITTEN = {"cuThreadExchangeStreamCaptureMode"}

# Calls whose values are plain but whose meaning the executor must track by
# hand (a reserved range, freed): manual.
BY_HAND = {"cuMemAddressFree"}

# Calls whose count-like parameter counts something else than the value
# they write (numBlocks: the blocks of a launch, not of the one size
# returned).
ONE_VALUE = {"cuOccupancyAvailableDynamicSMemPerBlock"}


def array_like(params, kinds):
    """Whether a pointer the kinds call an out-value may be an array or a
    buffer: a char (a string, a LUID's bytes), or an out-value beside a count
    (numNodes, count, a buffer's size, by value or through a pointer), which
    says how many it holds.  Such a call is manual: the executor must never
    let the driver write past one value."""
    def counts(name):
        n = (name or "").lower()
        return n.startswith("num") or n in ("count", "buffersize", "size", "length", "len") or n.endswith("count") or \
            n.endswith("setsize")  # NVML's cpuSetSize, nodeSetSize: how many words of a mask
    outs = [(p, k) for p, k in zip(params, kinds) if k and k[0] in "osb"]
    if any(k == "o1" for _, k in outs):
        return True
    values = [p for p, k in outs if not counts(p.name)]
    return bool(values) and any(counts(p.name) for p in params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--header", required=True, help="the toolkit's cuda.h, or nvml.h")
    ap.add_argument("--lib", choices=sorted(LIBS), default="cuda")
    ap.add_argument("--symbols", required=True)
    ap.add_argument("--merge", help="the committed spec, whose declarations are kept")
    a = ap.parse_args()
    blocks = {}
    if a.merge:
        current = None
        for line in open(a.merge):
            line = line.rstrip("\n")
            if line and line[0].isspace():
                if current is None:
                    sys.exit("gen_remote_abi: %s: a declaration before any call" % a.merge)
                blocks.setdefault(current, []).append(line)
            elif line.strip() and not line.startswith("#"):
                current = line.split()[0]
    lib = LIBS[a.lib]
    text = preprocess(a.cc, a.header, lib["define"])
    ast = c_parser.CParser().parse(text, a.header)
    types = Types(ast)
    protos = {}
    for d in ast.ext:
        if isinstance(d, c_ast.Decl) and isinstance(d.type, c_ast.FuncDecl):
            protos[d.name] = d
    exports = read_functions(a.symbols)
    out = ["# The remote call spec: one line per export, generated by tools/generate/gen_remote_abi.py from %s (%s):"
           % (os.path.basename(a.header), header_version(a.cc, a.header)),
           "#   NAME carried KIND... | NAME manual PROTOTYPE | NAME absent",
           "# and under a line, indented, what is declared of the call, by hand, which the generator keeps",
           "# (--merge).  tools/generate/remote_spec.py says what a declaration is."]
    counts = {"carried": 0, "manual": 0, "absent": 0}
    for name in sorted(exports):
        d = protos.get(name)
        if d is None:
            out.append("%s absent" % name)
            counts["absent"] += 1
            continue
        fd = d.type
        ret = GEN.visit(fd.type)
        params = [p for p in (fd.args.params if fd.args else []) if not isinstance(p, c_ast.EllipsisParam)]
        if len(params) == 1 and GEN.visit(params[0].type) == "void":
            params = []
        kinds = [types.kind(p.type) for p in params]
        for i in range(len(params) - 1):
            if kinds[i] == "o1" and kinds[i + 1] in ("i4", "i8") and BUFFER_SIZE.match(params[i + 1].name or ""):
                kinds[i] = "t"
        if name in READ_AND_WRITTEN:
            kinds = ["s" + k[1:] if k and k[0] == "o" else k for k in kinds]
        if (array_like(params, kinds) and name not in ONE_VALUE) or UNIFIED_COPY.match(name) or name in BY_HAND:
            kinds.append(None)
        _, rname = types.resolve(fd.type)
        if (fd.type.type.names == [lib["result"]] if isinstance(fd.type, c_ast.TypeDecl)
                and isinstance(fd.type.type, c_ast.IdentifierType) else False) and all(kinds) \
                and not any(isinstance(p, c_ast.EllipsisParam) for p in (fd.args.params if fd.args else [])):
            out.append((name, kinds))
            counts["carried"] += 1
        else:
            out.append("%s manual %s" % (name, " ".join(GEN.visit(d).split())))
            counts["manual"] += 1
    size = sizes(a.cc, a.header, lib["define"], sorted(types.structs))
    lines = []
    names = set()
    for o in out:
        if isinstance(o, tuple):
            name, kinds = o
            kinds = [k[0] + str(size[k[2:]]) if k[0] in "bs" and k[1] == ":" else k for k in kinds]
            o = "%s carried%s" % (name, "".join(" " + k for k in kinds))
        lines.append(o)
        if not o.startswith("#"):
            name = o.split()[0]
            names.add(name)
            lines.extend(blocks.get(name, []))
    gone = sorted(set(blocks) - names)
    if gone:
        sys.exit("gen_remote_abi: declared in %s but exported no more: %s" % (a.merge, ", ".join(gone)))
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stderr.write("gen_remote_abi: %d carried, %d manual, %d absent\n"
                     % (counts["carried"], counts["manual"], counts["absent"]))


def header_version(cc, header):
    r = subprocess.run(shlex.split(cc) + ["-E", "-dM", header], stdout=subprocess.PIPE, text=True,
                       stderr=subprocess.DEVNULL)
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) >= 3 and p[1] in ("CUDA_VERSION", "NVML_API_VERSION"):
            return "%s %s" % (p[1], p[2])
    return "?"


if __name__ == "__main__":
    main()
