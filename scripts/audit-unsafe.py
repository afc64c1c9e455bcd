#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Audit of `unsafe` in rdma_rrxe.

Fails (exit 1, listing each place) if:
- a Rust file of the driver outside the abstraction layer (rdma/) uses
  `unsafe` at all;
- an `unsafe` block or impl in rdma/ has no `// SAFETY:` comment on its line
  or in the run of comment/attribute lines just above the statement;
- an `unsafe fn` in rdma/ (other than an `extern "C"` callback) has no
  `# Safety` section in its doc comment;
- the protocol crate does not `#![forbid(unsafe_code)]`.
"""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRV = os.path.join("drivers", "infiniband", "sw", "rrxe")
UNSAFE = re.compile(r"\bunsafe\b")
BLOCK = re.compile(r"\bunsafe\s*(\{|impl\b)")
FN = re.compile(r"\bunsafe\s+(extern\s+\"C\"\s+)?fn\b")


def code(line):
    """The line without its // comment and string contents (roughly)."""
    line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
    return line.split("//", 1)[0]


def comment_above(lines, i, marker):
    """Whether `marker` is in the comment/attribute run above line i (or on
    it), walking up over the statement's own preceding code lines too."""
    if marker in lines[i]:
        return True
    j = i - 1
    code_lines = 0
    while j >= 0:
        s = lines[j].strip()
        if marker in s:
            return True
        if s.startswith("//") or s.startswith("#[") or s.startswith("///"):
            j -= 1
            continue
        # Allow a couple of code lines (`let x =` etc.) between the
        # comment and the `unsafe` that is part of the same statement.
        code_lines += 1
        if code_lines > 2 or s.endswith(";") or s.endswith("}") or s == "":
            return False
        j -= 1
    return False


def main():
    problems = []
    for root, dirs, files in os.walk(os.path.join(TOP, DRV)):
        dirs[:] = [d for d in dirs if d not in ("target", "fuzz")]
        for name in files:
            if not name.endswith(".rs") or name == "bindings_generated.rs":
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, TOP)
            in_rdma = os.sep + "rdma" + os.sep in rel
            in_proto = os.sep + "proto" + os.sep in rel
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines):
                c = code(line)
                if not UNSAFE.search(c):
                    continue
                if in_proto or not in_rdma:
                    problems.append(f"{rel}:{i + 1}: unsafe outside rdma/")
                    continue
                if FN.search(c):
                    if "extern" in c:
                        continue
                    if not comment_above(lines, i, "# Safety"):
                        problems.append(f"{rel}:{i + 1}: unsafe fn without # Safety")
                elif BLOCK.search(c) and not comment_above(lines, i, "SAFETY:"):
                    problems.append(f"{rel}:{i + 1}: unsafe without // SAFETY:")
    lib = os.path.join(TOP, DRV, "proto", "src", "lib.rs")
    if os.path.exists(lib) and "#![forbid(unsafe_code)]" not in open(lib).read():
        problems.append(f"{os.path.relpath(lib, TOP)}: does not forbid unsafe_code")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
