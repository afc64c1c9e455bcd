#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
Long functions of the driver and proto/src: each `fn` from its first line
(the signature) to its closing brace, the doc comment not counted.

  scripts/fnlen.py              list the functions over the limit
  scripts/fnlen.py --check      also exit 1 if there is one
  scripts/fnlen.py --limit N    another limit (default 80 lines)
  scripts/fnlen.py --all        every function, longest first

Tables (a `const` or `static` holding data, such as the ops table) are
not functions and are not counted. rustfmt's layout is assumed: a body
ends at the first line that is its indent and `}`.
"""
import os
import re
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'drivers', 'infiniband',
                   'sw', 'rrxe')
FN_RE = re.compile(r'^(\s*)(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+)?(?:unsafe\s+)?'
                   r'(?:extern\s+"C"\s+)?fn\s+(\w+)')
SKIP_DIRS = ('target', 'tests', 'fuzz', 'examples', 'benches')


def functions(top):
    for root, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for n in sorted(names):
            if not n.endswith('.rs') or n == 'bindings_generated.rs':
                continue
            path = os.path.join(root, n)
            with open(path) as f:
                lines = f.read().split('\n')
            for i, line in enumerate(lines):
                m = FN_RE.match(line)
                if not m:
                    continue
                indent = m.group(1)
                # The signature ends at `{` (a body) or `;` (none).
                j = i
                while j < len(lines) and not lines[j].rstrip().endswith(('{', ';')):
                    j += 1
                if j >= len(lines) or lines[j].rstrip().endswith(';'):
                    continue
                if lines[j].rstrip().endswith('}'):
                    continue
                k = j + 1
                while k < len(lines) and lines[k] != indent + '}':
                    k += 1
                yield k - i + 1, os.path.relpath(path, top), i + 1, m.group(2)


def main():
    args = sys.argv[1:]
    limit = 80
    if '--limit' in args:
        limit = int(args[args.index('--limit') + 1])
    found = sorted(functions(TOP), key=lambda f: (-f[0], f[1], f[2]))
    long = [f for f in found if f[0] > limit]
    for n, path, line, name in (found if '--all' in args else long):
        print(f'{path}:{line}: {name}: {n} lines')
    if not long:
        print(f'no function over {limit} lines')
    if '--check' in args and long:
        sys.exit(1)


if __name__ == '__main__':
    main()
