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

With --lints, checks instead that the compiler enforces the first rule: the
crate root denies `unsafe_code`, its one exception is the attribute
`#[allow(unsafe_code)]` on `mod rdma;` there, and no other file names the
lint at all (an `allow`, `warn` or `expect` of it would reopen a module).
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


LINT = re.compile(r"#!?\[\s*(allow|warn|expect|deny|forbid)\s*\([^)]*\bunsafe_code\b")


def lint_attrs():
    """Problems with the `unsafe_code` lint attributes (see --lints)."""
    problems = []
    root = os.path.join(DRV, "rrxe.rs")
    with open(os.path.join(TOP, root), encoding="utf-8") as f:
        lines = f.read().split("\n")
    deny = [i for i, l in enumerate(lines) if code(l).strip() == "#![deny(unsafe_code)]"]
    if not deny:
        problems.append(f"{root}: the crate root does not #![deny(unsafe_code)]")
    allowed = set()
    for i, l in enumerate(lines):
        if code(l).strip() == "mod rdma;" and i > 0:
            if code(lines[i - 1]).strip() == "#[allow(unsafe_code)]":
                allowed.add((root, i - 1))
    for dirpath, dirs, files in os.walk(os.path.join(TOP, DRV)):
        dirs[:] = [d for d in dirs if d not in ("target", "fuzz")]
        for name in files:
            if not name.endswith(".rs") or name == "bindings_generated.rs":
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), TOP)
            if os.sep + "proto" + os.sep in rel:
                continue
            with open(os.path.join(TOP, rel), encoding="utf-8") as f:
                for i, l in enumerate(f.read().split("\n")):
                    if not LINT.search(code(l)):
                        continue
                    if (rel, i) in allowed or (rel == root and i in deny):
                        continue
                    problems.append(f"{rel}:{i + 1}: names unsafe_code: {l.strip()}")
    return problems


def main():
    if sys.argv[1:] == ["--lints"]:
        problems = lint_attrs()
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
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
