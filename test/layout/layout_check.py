#!/usr/bin/env python3
"""The tree's layout, checked (docs/design/architecture.md, "Layout"):

  layout_check.py SOURCE_ROOT BUILD_ROOT CHECK

CHECK is one of:
  folders   no folder holds more than MAX_FLAT source files of its own
            (a larger one is split by concern into sub-folders)
  includes  no header includes itself round a circle; hooks/ include
            nothing of the backend but vgpu_backend/backend.h; tools/,
            test/fuzz and test/stress nothing of it but its contract
  calls     no two source files of vgpu call each other round a circle,
            read from the symbols of the built objects (nm): a function's
            callers lie above it
  sources   no meson.build compiles a source file of another folder by a
            '../' path: what is shared is a library

Each prints what it found and exits 1 if the tree breaks the rule.
"""
import os
import re
import subprocess
import sys

MAX_FLAT = 16
SOURCE_EXT = ('.c', '.h', '.S', '.py', '.sh', '.go')
SKIP_DIRS = {'.git', 'docs', 'shared'}
# Generated tables and stubs: data that names every hook (the remote
# drivers': every stub, and their library's description), not calls.
GENERATED = re.compile(r'vgpu_(cuda|nvml)_(table\.c|dispatch\.S)$|vgpu_remote_(cuda|nvml)_(guest|exec)\.c$')
# Symbols whose address is taken, never called, by the files that name
# them: the dlopen thunks, which interpose/rebind.c writes into other
# objects' GOTs (the thunks call the C that decides, not the other way).
ADDRESSES = {'vgpu_dlopen_thunk', 'vgpu_dlmopen_thunk'}


def source_dirs(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith(('build', '.')))
        yield rel, [f for f in files if f.endswith(SOURCE_EXT)]


def check_folders(root):
    bad = [(rel, len(files)) for rel, files in source_dirs(root) if len(files) > MAX_FLAT]
    for rel, n in bad:
        print("%s: %d source files lie flat there (at most %d): split it by concern" % (rel, n, MAX_FLAT))
    return not bad


def sources(root, exts=('.c', '.h')):
    for rel, files in source_dirs(root):
        for f in files:
            if f.endswith(exts):
                yield os.path.normpath(os.path.join(rel, f))


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(root, path):
    with open(os.path.join(root, path), errors='replace') as f:
        return INCLUDE.findall(f.read())


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(100000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_includes(root):
    ok = True
    graph = {}
    for path in sources(root):
        deps = includes(root, path)
        if path.endswith('.h'):
            graph[path] = {d for d in deps if d.endswith('.h') and os.path.exists(os.path.join(root, d))}
        backend = [d for d in deps if d.startswith('vgpu_backend/')]
        if path.startswith('hooks/'):
            for d in backend:
                if d != 'vgpu_backend/backend.h':
                    print("%s includes %s: hooks reach the backend through vgpu_backend/backend.h alone" % (path, d))
                    ok = False
        if path.startswith(('tools/', 'test/fuzz/', 'test/stress/')):
            for d in backend:
                if not d.startswith('common/contract/'):
                    print("%s includes %s: tools reach the backend through its contract alone" % (path, d))
                    ok = False
    for comp in cycles(graph):
        print("headers include each other round a circle: %s" % " -> ".join(comp))
        ok = False
    return ok


def objects(build):
    """Each object ninja builds, with the source it is compiled from
    (compile_commands.json, which meson writes)."""
    import json
    with open(os.path.join(build, 'compile_commands.json')) as f:
        for e in json.load(f):
            yield os.path.join(e['directory'], e['output']), os.path.join(e['directory'], e['file'])


def check_calls(root, build):
    defined, refs = {}, {}
    root = os.path.realpath(root)
    for obj, src in objects(build):
        src = os.path.relpath(os.path.realpath(src), root)
        if GENERATED.search(src) or src.startswith(('..', 'test/', 'bench/')) or not os.path.exists(obj):
            continue
        out = subprocess.run(['nm', '--defined-only', '-g', obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBRV':
                defined.setdefault(p[2], set()).add(src)
        out = subprocess.run(['nm', '-u', obj], capture_output=True, text=True).stdout
        refs.setdefault(src, set()).update(n for n in (line.split()[-1] for line in out.splitlines() if line.strip())
                                           if n not in ADDRESSES)
    if not refs:
        print("no objects of vgpu's own under %s: build it first" % build)
        return False
    graph = {s: set() for s in refs}
    for s, names in refs.items():
        for n in names:
            for t in defined.get(n, ()):
                if t != s:
                    graph[s].add(t)
    found = cycles(graph)
    for comp in found:
        print("source files call each other round a circle: %s" % " <-> ".join(comp))
    print("%d source files, %d calls between them: %s" % (len(graph), sum(len(v) for v in graph.values()),
                                                          "no circle" if not found else "%d circle(s)" % len(found)))
    return not found


MESON_SOURCE = re.compile(r"'(\.\./[^']*\.(?:c|S))'")


def check_sources(root):
    ok = True
    for rel, _ in source_dirs(root):
        m = os.path.join(root, rel, 'meson.build')
        if not os.path.exists(m):
            continue
        with open(m) as f:
            for n, line in enumerate(f, 1):
                for s in MESON_SOURCE.findall(line):
                    print("%s:%d compiles %s of another folder: depend on its library" %
                          (os.path.normpath(os.path.join(rel, 'meson.build')), n, s))
                    ok = False
    return ok


def main():
    root, build, what = sys.argv[1], sys.argv[2], sys.argv[3]
    check = {'folders': lambda: check_folders(root), 'includes': lambda: check_includes(root),
             'calls': lambda: check_calls(root, build), 'sources': lambda: check_sources(root)}[what]
    if not check():
        sys.exit(1)
    print("ok - %s" % what)


if __name__ == '__main__':
    main()
