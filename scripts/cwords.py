#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Gate: the abstraction layer hands the driver typed words only.

An opcode, a flag set or an attribute mask that ib_core or a ring gives the
driver is decoded in rdma/ into a Rust type (an enum whose members are the
C values, or a flag set over them: rdma/ib.rs), never passed up as a bare
integer for the engines and verbs to test bits of.

Fails (exit 1, listing each place) if a struct field or a function
parameter in rdma/ whose name says it is such a word (op, opcode, flags,
*_flags, access, mask, *_mask, *_op, *_opcode) has an integer type (a
Rust or C integer, a bindgen alias of a flag, mask or opcode enum, or an
Option of one). The `extern "C"` callbacks are exempt: they are the C
side, where the word comes in; so are locals (`let`).

Not seen by this gate: words inside a bindgen struct that rdma/ hands up
whole (the QP attributes' access flags, `ib_port_modify`'s capability
masks).
"""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RDMA = os.path.join(TOP, "drivers", "infiniband", "sw", "rrxe", "rdma")
NAME = r"_?(?:op|[a-z_]+_op|opcode|[a-z_]+_opcode|flags|[a-z_]+_flags|access|mask|[a-z_]+_mask)"
# An integer: Rust's, C's through ffi, or a bindgen alias of a C enum of
# flags, masks or opcodes (bindings::ib_cq_notify_flags is a u32); bare or
# in an Option.
INT1 = (
    r"(?:u8|u16|u32|u64|usize|i8|i16|i32|i64|isize"
    r"|(?:(?:kernel|core)::)?(?:ffi::)?c_u?(?:char|short|int|long|longlong)"
    r"|(?:b|bindings)::[a-z_]*(?:flags|mask|opcode)[a-z_]*)"
)
INT = r"(?:" + INT1 + r"|Option<\s*" + INT1 + r"\s*>)"
WORD = re.compile(r"(?<![\w.])(" + NAME + r")\s*:\s*(" + INT + r")(?![\w:])")
LET = re.compile(r"\blet\s+(mut\s+)?$")
# (Matched after strip(): `extern "C"` reads `extern ""` there.)
EXTERN = re.compile(r'extern\s+""\s+fn\s+\w+\s*(<(?:[^<>]|<[^<>]*>)*>)?\s*\(')


def strip(text):
    """The text with comments and string contents blanked (lines kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"([^"\\\n]|\\.)*"', '""', text)


def extern_spans(text):
    """The parameter lists of `extern "C"` functions, as (start, end)."""
    spans = []
    for m in EXTERN.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        spans.append((m.end(), i))
    return spans


def main():
    problems = []
    for name in sorted(os.listdir(RDMA)):
        if not name.endswith(".rs") or name.startswith("bindings"):
            continue
        path = os.path.join(RDMA, name)
        with open(path, encoding="utf-8") as f:
            text = strip(f.read())
        spans = extern_spans(text)
        for m in WORD.finditer(text):
            if any(a <= m.start() < b for a, b in spans):
                continue
            # A local (`let mask: u32 = ...`) stays where it is decoded.
            if LET.search(text[text.rfind("\n", 0, m.start()) + 1 : m.start()]):
                continue
            line = text.count("\n", 0, m.start()) + 1
            rel = os.path.relpath(path, TOP)
            problems.append(f"{rel}:{line}: `{m.group(1)}: {m.group(2)}` is a bare word")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
