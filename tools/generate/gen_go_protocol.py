#!/usr/bin/env python3
"""The mediator protocol for Go, generated from the C headers.

  gen_go_protocol.py --root SOURCE_ROOT --output protocol_gen.go [--depfile FILE]
                     [--gofmt GOFMT] --header PATH... -- CC [CC-ARGS...]

Reads each header (relative to SOURCE_ROOT) for its object-like #defines,
its enums' values and its structs, has the C compiler compute them (a probe
program that includes the headers and prints every value, sizeof and
offsetof: the compiler's layout, not one worked out again here), and
writes one Go package, `protocol`, that vgpu-device-plugin imports
(tools/device-plugin/build.sh puts it in the GOPATH tree as
vgpu.dev/protocol):

  const VGPU_MSG_STATUS = 7                    every #define and enum value, by its C name
  const StatusVGPUSize = 2488                  sizeof(struct vgpu_status_vgpu)
  func StatusVGPUFlags(b []byte) uint32        an integer field, read; its Go type is the
  func PutStatusVGPUFlags(b []byte, v uint32)  field's width, written
  func StatusVGPUName(b []byte) []byte         a char array: the field's bytes
  func StatusVGPUDev(b []byte, i uint32) []byte  element i of an array of structs
  const StatusVGPUDevLen = 16                  an array's length

Why generated rather than checked by a test: a test compares the values
it was told to compare, and a number the Go code writes inline (an offset
in `r[36:]`) is in no such list; generated, the Go code holds no layout of
its own.  It names what it reads, a field that moves moves the Go with it,
a field that widens changes the accessor's type and the Go stops compiling
until it follows, and a field that goes stops it compiling too.  The
plugin's TestNoLayoutLiterals keeps numbers out of its protocol code.

A struct the generator cannot lay out (a pointer, a union) fails the build,
unless NOT_WIRE names it as no message's payload.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Structs of the headers that travel on no wire: in-process state.
NOT_WIRE = {'vgpu_msg'}
# Integer field types: (Go type, bytes, binary.LittleEndian's method suffix).
INTS = {'uint8_t': ('uint8', 1, None), 'uint16_t': ('uint16', 2, '16'), 'uint32_t': ('uint32', 4, '32'),
        'uint64_t': ('uint64', 8, '64')}
INITIALISMS = {'vgpu': 'VGPU', 'gpu': 'GPU', 'gpus': 'GPUs', 'uuid': 'UUID', 'pid': 'PID', 'uid': 'UID', 'xid': 'XID',
               'ns': 'NS', 'ms': 'MS', 'id': 'ID'}


def fail(msg):
    sys.exit('gen_go_protocol.py: ' + msg)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def braced(text, start):
    """The text between the brace at start and its match."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == '{':
            depth += 1
        elif text[i] == '}':
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    fail('unbalanced braces')


def scan(path, text, known):
    """The header's #defines, enum constants and structs, in order (known:
    the structs of the headers before it)."""
    text = strip_comments(text)
    defines = []
    for m in re.finditer(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)([ \t]+[^\n]*)?$', text, re.M):
        name, value = m.group(1), (m.group(2) or '').strip()
        if not value:
            continue  # a flag macro with no value
        if value.startswith('"'):
            fail('%s: #define %s is a string: teach the generator strings, or name it in C otherwise' %
                 (path, name))
        defines.append((name, ' '.join(value.split())))
    enums = []
    for m in re.finditer(r'\benum\s+(\w+)\s*\{', text):
        for item in braced(text, m.end() - 1).split(','):
            item = item.strip()
            if item:
                enums.append((re.match(r'(\w+)', item).group(1), m.group(1)))
    structs = []
    for m in re.finditer(r'\bstruct\s+(\w+)\s*\{', text):
        name, body = m.group(1), braced(text, m.end() - 1)
        if name in NOT_WIRE:
            continue
        fields = []
        for decl in body.split(';'):
            decl = ' '.join(decl.split())
            if not decl:
                continue
            f = re.fullmatch(r'(struct \w+|\w+) (\w+)((?:\[[^\]]+\])?)', decl)
            if not f or '{' in decl:
                fail('%s: struct %s: cannot lay out "%s" (only integers, char arrays and structs): '
                     'add it to NOT_WIRE if it is no message' % (path, name, decl))
            ctype, field, dim = f.group(1), f.group(2), f.group(3)[1:-1] if f.group(3) else None
            if ctype not in INTS and ctype != 'char' and not ctype.startswith('struct '):
                fail('%s: struct %s: field %s has type %s: the generator knows %s, char and structs' %
                     (path, name, field, ctype, ', '.join(INTS)))
            if ctype == 'char' and dim is None:
                ctype = 'uint8_t'
            if ctype.startswith('struct ') and ctype[7:] not in known | {s[0] for s in structs}:
                fail('%s: struct %s: field %s is a %s, which no header before it lays out' % (path, name, field, ctype))
            fields.append((field, ctype, dim))
        structs.append((name, fields))
    return defines, enums, structs


def camel(c_name):
    """vgpu_status_vgpu -> StatusVGPU, gpu_name -> GPUName."""
    words = [w for w in c_name.split('_') if w]
    return ''.join(INITIALISMS.get(w, w[:1].upper() + w[1:]) for w in words)


def go_struct_name(c_name):
    return camel(c_name[5:] if c_name.startswith('vgpu_') else c_name)


def probe_source(headers, defines, enums, structs):
    lines = ['#include <stddef.h>', '#include <stdio.h>']
    lines += ['#include "%s"' % h for h in headers]
    lines += ['int main(void)', '{']
    for name, _ in defines + [(e, None) for e, _ in enums]:
        lines.append('    if ((%s) < 0)' % name)
        lines.append('        printf("value %s %%lld\\n", (long long)(%s));' % (name, name))
        lines.append('    else')
        lines.append('        printf("value %s %%llu\\n", (unsigned long long)(%s));' % (name, name))
    for name, fields in structs:
        lines.append('    printf("size %s %%zu\\n", sizeof(struct %s));' % (name, name))
        for field, _, dim in fields:
            lines.append('    printf("field %s %s %%zu %%zu\\n", offsetof(struct %s, %s),' % (name, field, name, field))
            lines.append('           sizeof(((struct %s *)0)->%s));' % (name, field))
            if dim is not None:
                lines.append('    printf("dim %s %s %%zu\\n", sizeof(((struct %s *)0)->%s) / '
                             'sizeof(((struct %s *)0)->%s[0]));' % (name, field, name, field, name, field))
    lines += ['    return 0;', '}', '']
    return '\n'.join(lines)


def run_probe(root, headers, source, cc, depfile, output):
    with tempfile.TemporaryDirectory() as tmp:
        c, exe = os.path.join(tmp, 'probe.c'), os.path.join(tmp, 'probe')
        with open(c, 'w') as f:
            f.write(source)
        cmd = cc + ['-I', root, '-o', exe, c]
        if depfile:
            cmd += ['-MD', '-MF', depfile, '-MT', output]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            fail('the probe of %s did not compile (%s):\n%s' % (', '.join(headers), ' '.join(cmd), r.stderr))
        if depfile:
            # The headers, not the probe: it is gone when the build next looks.
            with open(depfile) as f:
                deps = f.read().replace(c, '')
            with open(depfile, 'w') as f:
                f.write(deps)
        r = subprocess.run([exe], capture_output=True, text=True)
        if r.returncode:
            fail('the probe failed: %s' % r.stderr)
        return r.stdout


def go_source(headers, defines, enums, structs, probe):
    values, sizes, fields, dims = {}, {}, {}, {}
    for line in probe.splitlines():
        p = line.split()
        if p[0] == 'value':
            values[p[1]] = int(p[2])
        elif p[0] == 'size':
            sizes[p[1]] = int(p[2])
        elif p[0] == 'field':
            fields[p[1], p[2]] = (int(p[3]), int(p[4]))
        elif p[0] == 'dim':
            dims[p[1], p[2]] = int(p[3])
    out = ['// Code generated by tools/generate/gen_go_protocol.py from %s. DO NOT EDIT.' % ', '.join(headers),
           '',
           '// Package protocol is the mediator protocol as the C compiler lays it out',
           '// (common/contract/protocol/protocol.h): its constants by their C names, each',
           '// struct\'s size, and an accessor per field.  Little-endian, as the C side.',
           'package protocol',
           '',
           'import "encoding/binary"',
           '',
           'var le = binary.LittleEndian',
           '']
    out += ['// The headers\' #defines: their values, and the C where it is more than a number.', 'const (']
    for name, expr in defines:
        same = re.fullmatch(r'%du?' % values[name], expr)  # 1u, but not 0x1u or (1 << 0)
        out.append('\t%s = %d%s' % (name, values[name], '' if same else ' // ' + expr))
    out.append(')')
    enum_names = []
    for _, enum in enums:
        if enum not in enum_names:
            enum_names.append(enum)
    for enum in enum_names:
        out += ['', '// enum %s' % enum, 'const (']
        out += ['\t%s = %d' % (name, values[name]) for name, e in enums if e == enum]
        out.append(')')
    go_names = set()
    for name, flist in structs:
        g = go_struct_name(name)
        out += ['', '// struct %s' % name, 'const %sSize = %d' % (g, sizes[name])]
        for field, ctype, dim in flist:
            off, size = fields[name, field]
            f = g + camel(field)
            if f in go_names:
                fail('struct %s: two fields are %s in Go' % (name, f))
            go_names.add(f)
            if ctype == 'char':
                out.append('func %s(b []byte) []byte { return b[%d:%d:%d] } // char %s[%d]' %
                           (f, off, off + size, off + size, field, size))
                continue
            n = dims.get((name, field))
            if n is not None:
                out.append('const %sLen = %d' % (f, n))
            if ctype.startswith('struct '):
                esize = sizes[ctype[7:]]
                if n is None:
                    out.append('func %s(b []byte) []byte { return b[%d:%d:%d] } // %s' %
                               (f, off, off + esize, off + esize, ctype))
                else:
                    out.append('func %s(b []byte, i uint32) []byte { return b[%d+%d*i:][:%d:%d] } // %s[%d]' %
                               (f, off, esize, esize, esize, ctype, n))
                continue
            gotype, width, method = INTS[ctype]
            at = '%d' % off if n is None else '%d+%d*i' % (off, width)
            idx = '' if n is None else ', i uint32'
            what = '%s %s' % (ctype, field) + ('' if n is None else '[%d]' % n)
            if method is None:
                out.append('func %s(b []byte%s) %s { return b[%s] } // %s' % (f, idx, gotype, at, what))
                out.append('func Put%s(b []byte%s, v %s) { b[%s] = v }' % (f, idx, gotype, at))
            else:
                out.append('func %s(b []byte%s) %s { return le.Uint%s(b[%s:]) } // %s' %
                           (f, idx, gotype, method, at, what))
                out.append('func Put%s(b []byte%s, v %s) { le.PutUint%s(b[%s:], v) }' % (f, idx, gotype, method, at))
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--root', required=True)
    ap.add_argument('--output', required=True)
    ap.add_argument('--depfile')
    ap.add_argument('--gofmt', default='gofmt', help='the gofmt the output goes through (default: gofmt on PATH)')
    ap.add_argument('--header', action='append', required=True)
    ap.add_argument('cc', nargs='+')
    a = ap.parse_args()
    defines, enums, structs = [], [], []
    for h in a.header:
        with open(os.path.join(a.root, h)) as f:
            d, e, s = scan(h, f.read(), {x[0] for x in structs})
        defines += d
        enums += e
        structs += s
    probe = run_probe(a.root, a.header, probe_source(a.header, defines, enums, structs), a.cc, a.depfile, a.output)
    text = go_source(a.header, defines, enums, structs, probe)
    r = subprocess.run([a.gofmt], input=text, capture_output=True, text=True)
    if r.returncode:
        fail('gofmt refused the generated Go:\n%s' % r.stderr)
    text = r.stdout
    tmp = a.output + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, a.output)


if __name__ == '__main__':
    main()
