#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
The driver's module graph: which of its modules uses which, and the cycles
in it (strongly connected components of more than one module).

A module is any `mod NAME;` of the driver, nested ones included (`engine`,
`engine::req`, `net::rx`, ...); `rdma` (the abstraction layer) and `proto`
(the protocol crate) count as one module each. A module uses another when
its code names a path into it: `crate::a::b::...` (the longest prefix that
is a module), `super::...` (from the parent module), or `NAME::...` for a
child module NAME. A facade (`engine.rs`) that calls into its child
(`engine/req.rs`) and a child that names the facade's own items
(`super::run`) make a cycle, like any other pair.

  scripts/modgraph.py            print the edges and the cycles
  scripts/modgraph.py --check    also exit 1 if there is a cycle
  scripts/modgraph.py --dot      print the graph for graphviz
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'drivers', 'infiniband',
                   'sw', 'rrxe')
MODS_RE = re.compile(r'^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;',
                     re.M)
PATH_RE = re.compile(r'(?<![A-Za-z0-9_:])((?:crate|super|[a-z_][a-z0-9_]*)(?:::[A-Za-z_][A-Za-z0-9_]*)+)')
# The layers counted as one module each.
LEAVES = ('rdma', 'proto')


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'"([^"\\]|\\.)*"', '""', text)
    return re.sub(r'//[^\n]*', '', text)


def read(path):
    with open(path) as f:
        return strip_comments(f.read())


def modules(top):
    """{module path: [its files]} and {module path: [child names]}."""
    files, children = {}, {}

    def walk(name, path, subdir):
        files[name] = [path]
        kids = [] if name in LEAVES else MODS_RE.findall(read(path))
        children[name] = kids
        if name in LEAVES:
            # Every file of the layer is the one module.
            d = os.path.join(top, name)
            for root, dirs, names in os.walk(d):
                dirs[:] = [x for x in dirs if x not in ('target', 'tests', 'benches', 'examples',
                                                        'fuzz')]
                files[name] += [os.path.join(root, n) for n in names if n.endswith('.rs')]
            return
        for k in kids:
            single = os.path.join(subdir, k + '.rs')
            nested = os.path.join(subdir, k, 'mod.rs')
            p = single if os.path.exists(single) else nested
            walk(f'{name}::{k}' if name else k, p, os.path.join(subdir, k))

    root = os.path.join(top, 'rrxe.rs')
    for k in MODS_RE.findall(read(root)):
        if k == 'proto':
            files['proto'], children['proto'] = [], []
            walk('proto', os.path.join(top, 'proto', 'src', 'lib.rs'), os.path.join(top, 'proto'))
            continue
        single = os.path.join(top, k + '.rs')
        p = single if os.path.exists(single) else os.path.join(top, k, 'mod.rs')
        walk(k, p, os.path.join(top, k))
    return files, children


def resolve(mods, here, path):
    """The module that `path`, named in module `here`, leads into."""
    parts = path.split('::')
    if parts[0] == 'crate':
        base, rest = [], parts[1:]
    elif parts[0] == 'super':
        base = here.split('::')[:-1]
        rest = parts[1:]
        while rest and rest[0] == 'super':
            base, rest = base[:-1], rest[1:]
    elif parts[0] == 'self':
        base, rest = here.split('::'), parts[1:]
    else:
        # A child module of `here`, or a path that is not ours.
        if f'{here}::{parts[0]}' not in mods:
            return None
        base, rest = here.split('::'), parts
    # The longest prefix that is a module.
    best = '::'.join(base) or None
    cur = list(base)
    for p in rest:
        cur.append(p)
        name = '::'.join(cur)
        if name in mods:
            best = name
        else:
            break
    if best is None:
        return None
    # Inside a leaf layer, the layer itself.
    return best.split('::')[0] if best.split('::')[0] in LEAVES else best


def graph(top):
    files, _ = modules(top)
    mods = set(files)
    edges = {m: set() for m in mods if '::' not in m or m.split('::')[0] not in LEAVES}
    for m in edges:
        if m == 'proto':
            # Its own crate (cargo builds it alone): it uses nothing here.
            continue
        for path in files[m]:
            for used in PATH_RE.findall(read(path)):
                if m in LEAVES and not used.startswith('crate::'):
                    # Within the layer's own files: paths of the layer.
                    continue
                to = resolve(mods, m, used)
                if to and to != m and to in edges:
                    edges[m].add(to)
    return edges


def cycles(edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    edges = graph(TOP)
    if '--dot' in sys.argv[1:]:
        print('digraph rrxe {')
        for m in sorted(edges):
            for t in sorted(edges[m]):
                print(f'  "{m}" -> "{t}";')
        print('}')
        return
    for m in sorted(edges):
        print(f'{m} -> {" ".join(sorted(edges[m])) or "-"}')
    found = cycles(edges)
    for comp in found:
        mutual = sorted(f'{a} <-> {b}' for a in comp for b in comp
                        if a < b and b in edges[a] and a in edges[b])
        print(f'cycle: {" ".join(comp)}' + (f' (mutual: {", ".join(mutual)})' if mutual else ''))
    if not found:
        print('no cycle')
    if '--check' in sys.argv[1:] and found:
        sys.exit(1)


if __name__ == '__main__':
    main()
