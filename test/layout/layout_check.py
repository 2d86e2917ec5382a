#!/usr/bin/env python3
"""The tree's layout, checked (docs/design/architecture.md, "Layout"):

  layout_check.py SOURCE_ROOT BUILD_ROOT RULE
  layout_check.py SOURCE_ROOT BUILD_ROOT --list

RULE is one of the rules below (--list names them, one a line, as
test/layout/meson.build runs them).  Each prints what it found and exits 1
if the tree breaks it, saying what to do.  The areas of the tree have ranks
(RANK): what a file includes and calls lies at its own rank or below.

  folders          no folder holds more than MAX_FLAT source files of its own
                   (a larger one is split by concern into sub-folders)
  include-ranks    no #include "..." from an area into a higher-ranked one
  call-ranks       no call from an area's source to a function defined in a
                   higher-ranked one, read from the built objects (nm)
  remote-parts     forwarder/remote/: transport/ includes nothing of guest/,
                   executor/ or spec/'s generated code, guest/ and executor/
                   nothing of each other; the mediator includes nothing of
                   forwarder/remote/ but transport/
  interfaces       hooks/ include nothing of the backend but
                   vgpu_backend/backend.h; tools/, test/fuzz and test/stress
                   nothing of it at all
  module-circles   no modules include each other round a circle (a .c and
                   the .h of its name are one module; a header alone is one)
  call-circles     no two source files of vgpu call each other round a
                   circle, read from the built objects: a function's callers
                   lie above it
  sources          no meson.build compiles a source file of another folder by
                   a '../' path: what is shared is a library
  word-indexes     the remote code reads and writes what crosses by named
                   fields (forwarder/remote/spec/ declares them): no array of
                   64-bit words indexed by a literal, no word read by
                   position (vgpu_exec_word)

A new rule is a function decorated with @rule below (its name, what it
checks, what to do when it fails) returning the breaches it found, and a
line in test/layout/meson.build.  What the rules share (the tree's source
files, their includes resolved, the objects' symbols) is read once, by
Tree.
"""
import functools
import json
import os
import re
import subprocess
import sys

MAX_FLAT = 15
SOURCE_EXT = ('.c', '.h', '.S', '.py', '.sh', '.go')
SKIP_DIRS = {'.git', 'docs', 'shared'}

# Each top area's rank: an area reaches its own rank and below, never above
# (docs/design/architecture.md: a call flows one way, interpose -> hooks -> backend
# -> forwarder; common/, with common/contract/, below them all; the
# programs above the libraries; the tests and benchmarks above everything).
# include/ is vgpu's declarations of the driver APIs: below everything.
RANK = {'include': 0, 'common': 0, 'forwarder': 1, 'vgpu_backend': 2, 'hooks': 3, 'interpose': 4, 'tools': 5,
        'test': 6, 'bench': 6}
# Headers the build generates at its root, and the area they belong to:
# the dispatch tables' slot numbers, which forwarder/dispatch.h's
# VGPU_REAL_CUDA and VGPU_REAL_NVML index.  A generated header in a
# sub-folder of the build belongs to the same folder of the tree.
ROOT_GENERATED = {'vgpu_cuda_slots.h': 'forwarder', 'vgpu_nvml_slots.h': 'forwarder'}
# The remote driver: spec/, transport/, guest/, executor/ (remote-parts).
REMOTE = 'forwarder/remote/'

# Generated tables and stubs: data that names every hook (the remote
# drivers': every stub, and their library's description), not calls.
GENERATED = re.compile(r'vgpu_(cuda|nvml)_(table\.c|dispatch\.S)$|vgpu_remote_(cuda|nvml)_(guest|exec)\.c$')
# Symbols whose address is taken, never called, by the files that name
# them: the dlopen thunks, which interpose/rebind.c writes into other
# objects' GOTs (the thunks call the C that decides, not the other way).
ADDRESSES = {'vgpu_dlopen_thunk', 'vgpu_dlmopen_thunk'}
# The C library's functions that vgpu exports in front of it (interpose/):
# a call to one is a call to the C library, whichever answers it.
C_LIBRARY = {'dlopen', 'dlmopen'}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


def area(path):
    return path.split('/', 1)[0]


def under(path, *folders):
    return any(path == f.rstrip('/') or path.startswith(f.rstrip('/') + '/') for f in folders)


class NotBuilt(Exception):
    """A rule that reads the built objects, run before the build."""


class Tree:
    """What the rules read of the source tree and the build, each read once."""

    def __init__(self, root, build):
        self.root, self.build = os.path.realpath(root), os.path.realpath(build)

    def source_dirs(self):
        for d, dirs, files in os.walk(self.root):
            rel = os.path.relpath(d, self.root)
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith(('build', '.')))
            if rel != '.' and os.path.exists(os.path.join(d, 'meson-private')):
                dirs[:] = []  # a build directory inside the tree
                continue
            yield rel, sorted(f for f in files if f.endswith(SOURCE_EXT))

    @functools.cached_property
    def sources(self):
        """The tree's C sources and headers, relative to the root."""
        return [os.path.normpath(os.path.join(rel, f)) for rel, files in self.source_dirs()
                for f in files if f.endswith(('.c', '.h', '.S'))]

    @functools.cached_property
    def generated(self):
        """Headers the build generated: name -> where it belongs in the tree
        (a path that names no file of the tree)."""
        out = {}
        for d, dirs, files in os.walk(self.build):
            dirs[:] = [x for x in dirs if not x.endswith('.p') and not x.startswith(('meson-', '.')) and
                       x not in ('gopath', 'go-k8s-cache')]
            rel = os.path.relpath(d, self.build)
            for f in files:
                if f.endswith('.h'):
                    home = ROOT_GENERATED.get(f, '') if rel == '.' else rel
                    if home:
                        out.setdefault(f, os.path.normpath(os.path.join(home, f)))
        return out

    def resolve(self, path, inc):
        """The file an #include "inc" of path means, as the compiler looks for
        it (the tree's root, the includer's folder, include/, the build), or
        None."""
        for cand in (inc, os.path.join(os.path.dirname(path), inc), os.path.join('include', inc)):
            cand = os.path.normpath(cand)
            if not cand.startswith('..') and os.path.isfile(os.path.join(self.root, cand)):
                return cand
        return self.generated.get(os.path.basename(inc)) if '/' not in inc else None

    @functools.cached_property
    def includes(self):
        """Each source's #include "..." lines: [(line, as written, resolved or None)]."""
        out = {}
        for path in self.sources:
            with open(os.path.join(self.root, path), errors='replace') as f:
                text = f.read()
            out[path] = [(text.count('\n', 0, m.start()) + 1, m.group(1), self.resolve(path, m.group(1)))
                         for m in INCLUDE.finditer(text)]
        return out

    @functools.cached_property
    def symbols(self):
        """(defined, refs): each global symbol the objects of vgpu's own
        sources define -> those sources; each source -> the symbols it
        references.  The tests' and benchmarks' objects are left out: their
        stand-ins define the driver's names."""
        defined, refs = {}, {}
        try:
            with open(os.path.join(self.build, 'compile_commands.json')) as f:
                entries = json.load(f)
        except OSError:
            raise NotBuilt("no compile_commands.json under %s: build it first" % self.build)
        for e in entries:
            obj = os.path.join(e['directory'], e['output'])
            src = os.path.relpath(os.path.realpath(os.path.join(e['directory'], e['file'])), self.root)
            if GENERATED.search(src) or src.startswith(('..', 'test/', 'bench/')) or area(src) not in RANK or \
                    not os.path.exists(obj):
                continue
            out = subprocess.run(['nm', '--defined-only', '-g', obj], capture_output=True, text=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in 'TDBRV':
                    defined.setdefault(p[2], set()).add(src)
            out = subprocess.run(['nm', '-u', obj], capture_output=True, text=True).stdout
            names = (line.split()[-1] for line in out.splitlines() if line.strip())
            refs.setdefault(src, set()).update(n for n in names if n not in ADDRESSES)
        if not refs:
            raise NotBuilt("no objects of vgpu's own under %s: build it first" % self.build)
        return defined, refs


RULES = {}


def rule(name, fix):
    """Registers a check: f(tree) returns its breaches (lines to print) and
    prints what it found; fix says what to do about a breach."""
    def register(f):
        RULES[name] = (f, fix)
        return f
    return register


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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


def one_circle(graph, comp):
    """A shortest circle through comp's first node, within comp."""
    start, inside = comp[0], set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in inside and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp + [start]


# ---- the rules: one function each, in the order --list gives them ----

@rule('folders', fix='split the folder by concern into sub-folders, each with its own meson.build')
def check_folders(tree):
    bad = []
    for rel, files in tree.source_dirs():
        if len(files) > MAX_FLAT:
            bad.append("%s: %d source files lie flat there (at most %d)" % (rel, len(files), MAX_FLAT))
    print("folders with source files of their own, each at most %d of them: %s" %
          (MAX_FLAT, "all" if not bad else "%d over" % len(bad)))
    return bad


@rule('include-ranks', fix="move what both sides need down to the lower area (common/ is lowest), or pass it down "
      "from above (a registered callback, a parameter) instead of reaching up for it")
def check_include_ranks(tree):
    bad, n = [], 0
    for path, incs in sorted(tree.includes.items()):
        if area(path) not in RANK:
            bad.append("%s: its area %s/ has no rank: give it one in RANK (test/layout/layout_check.py)" %
                       (path, area(path)))
            continue
        for line, inc, dep in incs:
            if dep is None:
                bad.append('%s:%d: #include "%s" is no file of the tree or the build (build first?)' %
                           (path, line, inc))
                continue
            n += 1
            if area(dep) in RANK and RANK[area(dep)] > RANK[area(path)]:
                bad.append('%s:%d: #include "%s": %s/ (rank %d) includes %s/ (rank %d), above it' %
                           (path, line, inc, area(path), RANK[area(path)], area(dep), RANK[area(dep)]))
    print("%d includes of the tree's own headers, ranks %s" %
          (n, ' < '.join('/'.join(sorted(a for a in RANK if RANK[a] == r)) for r in sorted(set(RANK.values())))))
    return bad


@rule('call-ranks', fix="move the function down to the caller's area or below, or have the higher area register it "
      "with the lower one (as memory/quota.h takes the pools' recount) instead of calling up")
def check_call_ranks(tree):
    defined, refs = tree.symbols
    bad, n = [], 0
    for src in sorted(refs):
        for name in sorted(refs[src]):
            homes = defined.get(name, set()) - {src}
            if not homes or name in C_LIBRARY:
                continue
            n += 1
            # A name defined in several programs resolves to the one linked:
            # an arrow up only where every definition is above.
            if all(RANK[area(h)] > RANK[area(src)] for h in homes):
                bad.append("%s calls %s, defined in %s: %s/ (rank %d) calls up" %
                           (src, name, ', '.join(sorted(homes)), area(src), RANK[area(src)]))
    print("%d source files, %d calls to functions of another: %s" %
          (len(refs), n, "none up" if not bad else "%d up" % len(bad)))
    return bad



@rule('remote-parts', fix="move what both parts need into forwarder/remote/transport/ (the framing both sides and "
      "the mediator link) or common/contract/; the guest and the executor meet only on the wire")
def check_remote_parts(tree):
    generated_paths = set(tree.generated.values())
    bad = []

    def forbid(path, line, inc, dep, why):
        bad.append('%s:%d: #include "%s" (%s): %s' % (path, line, inc, dep, why))

    for path, incs in sorted(tree.includes.items()):
        for line, inc, dep in incs:
            if dep is None:
                continue
            if under(path, REMOTE + 'transport'):
                if under(dep, REMOTE + 'guest', REMOTE + 'executor'):
                    forbid(path, line, inc, dep, "the transport knows nothing of the guest or the executor")
                elif under(dep, REMOTE + 'spec') and dep in generated_paths:
                    forbid(path, line, inc, dep, "the transport carries frames, not the spec's calls")
            if under(path, REMOTE + 'guest') and under(dep, REMOTE + 'executor'):
                forbid(path, line, inc, dep, "the guest includes nothing of the executor")
            if under(path, REMOTE + 'executor') and under(dep, REMOTE + 'guest'):
                forbid(path, line, inc, dep, "the executor includes nothing of the guest")
            if under(path, 'tools/mediatord') and under(dep, REMOTE) and not under(dep, REMOTE + 'transport'):
                forbid(path, line, inc, dep, "the mediator includes nothing of forwarder/remote/ but transport/")
    print("forwarder/remote/'s parts and the mediator: %s" %
          ("each includes only what it may" if not bad else "%d include(s) across" % len(bad)))
    return bad


@rule('interfaces', fix="include vgpu_backend/backend.h (hooks) or what common/contract/ offers (tools, fuzz "
      "targets, stress programs), and add there what is missing")
def check_interfaces(tree):
    bad = []
    for path, incs in sorted(tree.includes.items()):
        for line, inc, dep in incs:
            if dep is None or not under(dep, 'vgpu_backend'):
                continue
            if under(path, 'hooks') and dep != 'vgpu_backend/backend.h':
                bad.append("%s:%d includes %s: hooks reach the backend through vgpu_backend/backend.h alone" %
                           (path, line, dep))
            if under(path, 'tools', 'test/fuzz', 'test/stress'):
                bad.append("%s:%d includes %s: tools, fuzz targets and stress programs include nothing of the "
                           "backend" % (path, line, dep))
    print("hooks/ reach the backend through backend.h, tools/, test/fuzz and test/stress not at all: %s" %
          ("so" if not bad else "%d include(s) past it" % len(bad)))
    return bad


def module(path):
    """A .c and the .h of its name are one module."""
    return os.path.splitext(path)[0]


@rule('module-circles', fix="break the circle: move what both modules need into a third module below them both "
      "(as the mediator's connection record became clients/client.h), or pass it down instead of including up")
def check_module_circles(tree):
    graph, why = {}, {}
    for path, incs in tree.includes.items():
        m = module(path)
        graph.setdefault(m, set())
        for line, inc, dep in incs:
            if dep is None or module(dep) == m:
                continue
            graph[m].add(module(dep))
            why.setdefault((m, module(dep)), '%s:%d #include "%s"' % (path, line, inc))
    bad = []
    for comp in cycles(graph):
        circle = one_circle(graph, comp)
        kind = "headers" if all(os.path.isfile(os.path.join(tree.root, m + '.h')) and
                                not os.path.isfile(os.path.join(tree.root, m + '.c')) for m in comp) else "modules"
        inside = sorted(why[a, b] for a in comp for b in graph[a] if b in comp)
        bad.append("%s include each other round a circle: %s; the includes among %s:\n    %s" %
                   (kind, " -> ".join(circle), ", ".join(comp), "\n    ".join(inside)))
    print("%d modules (a .c with the .h of its name), %d includes between them: %s" %
          (len(graph), sum(len(v) for v in graph.values()), "no circle" if not bad else "%d circle(s)" % len(bad)))
    return bad


@rule('call-circles', fix="break the circle: the lower file must not call the higher one; have the higher one "
      "register a callback with it (memory/quota.h) or move the shared part below both")
def check_call_circles(tree):
    defined, refs = tree.symbols
    graph = {s: set() for s in refs}
    for s, names in refs.items():
        for n in names:
            for t in defined.get(n, ()):
                if t != s:
                    graph[s].add(t)
    found = cycles(graph)
    print("%d source files, %d calls between them: %s" % (len(graph), sum(len(v) for v in graph.values()),
                                                          "no circle" if not found else "%d circle(s)" % len(found)))
    return ["source files call each other round a circle: %s" % " <-> ".join(comp) for comp in found]


MESON_SOURCE = re.compile(r"'(\.\./[^']*\.(?:c|S))'")


@rule('sources', fix="depend on the other folder's library (its dependency object) instead")
def check_sources(tree):
    bad = []
    for rel, _ in tree.source_dirs():
        m = os.path.join(tree.root, rel, 'meson.build')
        if not os.path.exists(m):
            continue
        with open(m) as f:
            for n, line in enumerate(f, 1):
                for s in MESON_SOURCE.findall(line):
                    bad.append("%s:%d compiles %s of another folder" %
                               (os.path.normpath(os.path.join(rel, 'meson.build')), n, s))
    print("meson.build files compiling another folder's sources: %s" % (len(bad) or "none"))
    return bad


WORDS_DECLARED = re.compile(r'\buint64_t\b([^;{]*)')
LITERAL_INDEX = re.compile(r'\b(\w+)\s*\[\s*(\d+)\s*\]')


@rule('word-indexes', fix="declare the message's fields in forwarder/remote/spec/LIB.remote and read them by name "
      "(struct vgpu_in_CALL, vgpu_out_CALL), or give what is not a message a struct of its own")
def check_word_indexes(tree):
    bad = []
    files = [p for p in tree.sources if p.startswith(REMOTE) and p.endswith(('.c', '.h'))]
    for path in files:
        with open(os.path.join(tree.root, path), errors='replace') as f:
            lines = f.read().splitlines()
        arrays = set()
        for line in lines:
            for m in WORDS_DECLARED.finditer(line):
                arrays.update(re.findall(r'(\w+)\s*\[', m.group(1)))
        for n, line in enumerate(lines, 1):
            code = line.split('//', 1)[0]
            if 'vgpu_exec_word(' in code:
                bad.append("%s:%d: a word read by position: %s" % (path, n, line.strip()))
            for m in LITERAL_INDEX.finditer(code):
                declared = re.search(r'\buint64_t\b[^;{]*\b%s\s*\[' % re.escape(m.group(1)), code)
                if m.group(1) in arrays and not declared:
                    bad.append("%s:%d: %s[%s], a word by its index: %s" % (path, n, m.group(1), m.group(2),
                                                                          line.strip()))
    print("the remote code's %d files read what crosses by name: %s" %
          (len(files), "all" if not bad else "%d literal word indexes" % len(bad)))
    return bad


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    root, build, what = sys.argv[1:]
    if what == '--list':
        print('\n'.join(RULES))
        return
    if what not in RULES:
        sys.exit("no rule %s: the rules are %s" % (what, ", ".join(RULES)))
    check, fix = RULES[what]
    try:
        bad = check(Tree(root, build))
    except NotBuilt as e:
        print(e)
        sys.exit(1)
    for line in bad:
        print(line)
    if bad:
        print("FAIL - %s: %d breach(es): %s" % (what, len(bad), fix))
        sys.exit(1)
    print("ok - %s" % what)


if __name__ == '__main__':
    main()
