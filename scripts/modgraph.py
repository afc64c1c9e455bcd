#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
The driver's module graph: which of its top-level modules uses which
(any `crate::NAME` path in a module's files; `rdma/` and `proto/` count as
one module each), and the cycles in it (strongly connected components of
more than one module).

  scripts/modgraph.py            print the edges and the cycles
  scripts/modgraph.py --check    also exit 1 if there is a cycle

Issue 17 asks for a driver in which no module imports one that imports it
back; until then this prints where the knots are.
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'drivers', 'infiniband',
                   'sw', 'rrxe')
PATH_RE = re.compile(r'\bcrate::([a-z_][a-z0-9_]*)')
MODS_RE = re.compile(r'^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;', re.M)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def module_files(top, name):
    """The source files of top-level module NAME: NAME.rs and NAME/**.rs."""
    files = []
    single = os.path.join(top, name + '.rs')
    if os.path.exists(single):
        files.append(single)
    sub = os.path.join(top, name)
    if os.path.isdir(sub):
        for root, dirs, names in os.walk(sub):
            dirs[:] = [d for d in dirs if d not in ('target', 'tests', 'benches')]
            files += [os.path.join(root, n) for n in names if n.endswith('.rs')]
    return files


def graph(top):
    with open(os.path.join(top, 'rrxe.rs')) as f:
        mods = MODS_RE.findall(strip_comments(f.read()))
    edges = {m: set() for m in mods}
    for m in mods:
        for path in module_files(top, m):
            with open(path) as f:
                for used in PATH_RE.findall(strip_comments(f.read())):
                    if used in edges and used != m:
                        edges[m].add(used)
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
    for m in sorted(edges):
        print(f'{m} -> {" ".join(sorted(edges[m])) or "-"}')
    found = cycles(edges)
    for comp in found:
        mutual = sorted(f'{a} <-> {b}' for a in comp for b in comp if a < b and b in edges[a] and a in edges[b])
        print(f'cycle: {" ".join(comp)}' + (f' (mutual: {", ".join(mutual)})' if mutual else ''))
    if not found:
        print('no cycle')
    if '--check' in sys.argv[1:] and found:
        sys.exit(1)


if __name__ == '__main__':
    main()
