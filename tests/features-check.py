#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks that every "yes" of rrxe in Documentation/features.md is proven.

    tests/features-check.py [DOC] [--results FILE] [--pyverbs-ids FILE]

DOC defaults to Documentation/features.md of this repository. The script
reads every Markdown table of DOC whose header has the columns "feature",
"rrxe", "C rxe 6.12", "upstream rxe ..." and "proof", and maybe
"siw 6.12", and checks:

- each status cell is "yes", "no", "partial (why)" or, in the C rxe 6.12,
  upstream and siw 6.12 columns only, "?"; in the siw 6.12 column also
  "no (iWARP)" or "no (iWARP: why)". The siw cells are checked for this
  format only: they need no proof;
- a row whose rrxe cell is "yes" cites at least one check in its proof
  cell, in backticks, and names at least one test file (a path under
  tests/, outside backticks);
- every file a proof cell names exists;
- every check a proof cell cites, in any row, is found in the files that
  cell names, by this rule:

  A check name is GROUP/PART/.../LAST, as the tests record it. GROUP must
  be the group of a named script: a `GROUP=NAME` assignment in a named
  file, or the stem of a named .sh file (tests/guest/lib.sh's default).
  A part that is a pyverbs test id (tests.test_MODULE[.Class[.test]])
  must be listed in a named tests/pyverbs/selection*.txt as itself or as
  a module or class that contains it, and, when the suites' id lists are
  at hand (--pyverbs-ids, else out/tests/pyverbs/all-ids and
  current/all-ids, those that exist), be one of a suite's tests. Every other part (each one after GROUP,
  not only the last) must be found in the text of a named file in one
  of three ways:
    a. literally, as a whole name: not preceded or followed by a letter,
       digit, "_", "." or "-" (so "link-add" is not found inside
       "link-add-noname"); a "word" below is found the same way;
    b. as the fill of a name template of a file: a run of name
       characters and slashes with placeholders ($var, ${...}, $((...)),
       printf's %s and %d, Python's {var}) and at least two letters or
       digits of its own, such as rc-pingpong-$size, cq%d, rw/%s-%s or
       $id/a.$DRV_A-to-b.$DRV_B. The part, alone or with the parts
       before it ("rw/write-multi-sge"), must match the whole template,
       and each placeholder must stand for nothing, or for words (split
       at "/") each found in a named file as a word or found before as a
       part of the same check ("$where/link-carries-$netmtu").
       Placeholders side by side ($size${5:-}) stand together for as
       many such words, each after the first starting with "-" ("4000"
       and "-events");
    c. as words of one line: split at "-", every piece is found on one
       and the same line of a named file, not preceded or followed by a
       letter, digit or "_" (names a script builds from a command and
       its argument, such as ib_atomic_bw-CMP_AND_SWAP from
       `perf ib_atomic_bw ... CMP_AND_SWAP`).
  A part that none of these finds is a typo, or a check that does not
  exist in the files named. The rule cannot tell which values a script
  combines: rc-pingpong-$size takes any size the file mentions
  (ud-pingpong-5000 passes, although UD runs only 100 and 1024);
  --results closes that gap.
- with --results FILE (a results.txt of `make check` or of a guest
  run), every cited check also has a "PASS NAME" line in FILE.

It prints each failure as DOC:LINE: FEATURE: what is wrong and exits 1,
or prints "features: N rows, M yes, all proven" and exits 0.
"""

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATUS_RE = r"yes|no|\?|partial \(.+\)"
STATUS = re.compile(rf"^({STATUS_RE})$")
SIW_STATUS = re.compile(rf"^({STATUS_RE}|no \(iWARP(: .+)?\))$")
FILE_REF = re.compile(r"(?<![\w./-])(tests/[\w./-]*[\w])")
# What a proof cell cites as a check: a backticked GROUP/NAME without spaces.
CHECK_NAME = re.compile(r"^[\w.+-]+(/[\w.+-]+)+$")
PYVERBS_ID = re.compile(r"^tests\.test_\w+(\.\w+){0,2}$")
GROUP_SET = re.compile(r"^\s*GROUP=([\w-]+)\s*$", re.M)
# A placeholder: shell ($x, ${...}, $((...)), $(...)), printf (%s, %02d,
# %lu) or a Python f-string field ({x}).
PLACEHOLDER = (r"\$\(\([^()\n]*\)\)|\$\([^()\n]*\)|\$\{[^{}\n]*\}|\$\w+"
               r"|%[-+ #0-9.]*[hlzjt]*[sdiuxX]|\{\w+\}")
TEMPLATE_RUN = re.compile(r"(?:[\w.+:/-]|" + PLACEHOLDER + r")+")
PLACEHOLDER_RE = re.compile(PLACEHOLDER)
FILL = re.compile(r"^[\w.+:/-]*$")


def literal(text, s, cls=r"\w.-"):
    """Whether S occurs in TEXT not touching a character of CLS."""
    pat = r"(?<![" + cls + r"])" + re.escape(s) + r"(?![" + cls + r"])"
    return re.search(pat, text) is not None


class Files:
    """The named files of one proof cell, with what the rule needs of them."""

    def __init__(self, paths):
        self.paths = paths
        self.texts = [p.read_text(errors="replace") for p in paths]
        self.groups = {p.stem for p in paths if p.suffix == ".sh"}
        for t in self.texts:
            self.groups.update(GROUP_SET.findall(t))
        self.selection = [t for p, t in zip(paths, self.texts)
                          if p.name.startswith("selection") and p.suffix == ".txt"]
        self._templates = None
        self._words = {}

    def word(self, s):
        if s not in self._words:
            self._words[s] = any(literal(t, s) for t in self.texts)
        return self._words[s]

    def templates(self):
        """The name templates of the files, as lists of literals and
        placeholder counts (`segments`)."""
        if self._templates is None:
            out = set()
            for t in self.texts:
                for run in TEMPLATE_RUN.findall(t):
                    run = run.strip("/")
                    if not PLACEHOLDER_RE.search(run):
                        continue
                    own = PLACEHOLDER_RE.sub("", run)
                    if len(re.findall(r"[A-Za-z0-9]", own)) >= 2:
                        out.add(run)
            self._templates = [segments(r) for r in sorted(out)]
        return self._templates

    def fill_ok(self, s, known, n):
        """Whether N placeholders side by side may stand for S: nothing, or
        words, each found in a file or a part of the check found before;
        with N > 1, a word may also be up to N words, the second and later
        each starting with its "-" ("4000" and "-events")."""
        def chunks_ok(w, n):
            if w in known or self.word(w) or (w.startswith("-") and self.word(w[1:])):
                return True
            return n > 1 and any(chunks_ok(w[:j], 1) and chunks_ok(w[j:], n - 1)
                                 for j in range(1, len(w)) if w[j] == "-")

        if s == "":
            return True
        return FILL.match(s) is not None and all(w and chunks_ok(w, n) for w in s.split("/"))

    def fills(self, segs, s, known):
        """Whether S matches the template SEGS, each placeholder standing
        for an acceptable fill (any split that works)."""
        memo = {}

        def at(i, pos):
            key = (i, pos)
            if key not in memo:
                if i == len(segs):
                    memo[key] = pos == len(s)
                elif isinstance(segs[i], str):
                    memo[key] = s.startswith(segs[i], pos) and at(i + 1, pos + len(segs[i]))
                else:
                    memo[key] = any(self.fill_ok(s[pos:e], known, segs[i]) and at(i + 1, e)
                                    for e in range(pos, len(s) + 1))
            return memo[key]

        return at(0, 0)

    def find(self, parts, i):
        """Whether PARTS[i] of a check name is found (rules a, b and c)."""
        part = parts[i]
        if any(literal(t, part) for t in self.texts):
            return True
        for k in range(i, 0, -1):
            window = "/".join(parts[k:i + 1])
            known = set(parts[1:i])
            if any(all(not isinstance(x, str) or x in window for x in segs)
                   and self.fills(segs, window, known)
                   for segs in self.templates()):
                return True
        pieces = part.split("-")
        if len(pieces) > 1 and all(pieces):
            for t in self.texts:
                for line in t.splitlines():
                    if all(literal(line, p, r"\w") for p in pieces):
                        return True
        return False


def segments(run):
    """RUN as literals, and for placeholders side by side how many there
    are (their split cannot be told)."""
    out, pos = [], 0
    for m in PLACEHOLDER_RE.finditer(run):
        if m.start() > pos:
            out.append(run[pos:m.start()])
        if out and isinstance(out[-1], int):
            out[-1] += 1
        else:
            out.append(1)
        pos = m.end()
    if pos < len(run):
        out.append(run[pos:])
    return out


def in_selection(selection, ident):
    for text in selection:
        for line in text.splitlines():
            entry = line.split("#", 1)[0].strip()
            if entry and (ident == entry or ident.startswith(entry + ".")):
                return True
    return False


def check_name(name, files, ids, passed):
    """What is wrong with citing check NAME from FILES, or None."""
    parts = name.split("/")
    if len(parts) < 2 or not all(parts):
        return f"`{name}` is not a check name (GROUP/NAME)"
    if parts[0] not in files.groups:
        return f"`{name}`: no named script records group {parts[0]!r}"
    for i, part in enumerate(parts[1:], 1):
        if PYVERBS_ID.match(part):
            if not in_selection(files.selection, part):
                return f"`{name}`: {part} is not in a named tests/pyverbs/selection*.txt"
            if ids is not None and part not in ids:
                return f"`{name}`: {part} is not a test of the pyverbs suite"
        elif not files.find(parts, i):
            return f"`{name}`: {part!r} is not found in " + ", ".join(
                str(p.relative_to(ROOT)) for p in files.paths)
    if passed is not None and name not in passed:
        return f"`{name}` did not pass in the results given"
    return None


def split_row(line):
    cells = line.strip().split("|")
    return [c.strip() for c in cells[1:-1]]


def rows(doc):
    """(line number, cells by column name) of every row of the feature tables."""
    lines = doc.read_text().splitlines()
    i = 0
    while i < len(lines):
        head = lines[i]
        sep = lines[i + 1] if i + 1 < len(lines) else ""
        if head.startswith("|") and re.match(r"^\|[\s:|-]+\|$", sep):
            cols = [c.lower() for c in split_row(head)]
            names = {}
            for k, c in enumerate(cols):
                key = ("upstream" if c.startswith("upstream") else c)
                names[key] = k
            want = {"feature", "rrxe", "c rxe 6.12", "upstream", "proof"}
            i += 2
            if not want <= names.keys():
                continue
            while i < len(lines) and lines[i].startswith("|"):
                cells = split_row(lines[i])
                if len(cells) != len(cols):
                    yield i + 1, None
                else:
                    yield i + 1, {k: cells[v] for k, v in names.items()}
                i += 1
        else:
            i += 1


def check_row(cells, ids, passed):
    errs = []
    for col in ("rrxe", "c rxe 6.12", "upstream"):
        v = cells[col]
        if not STATUS.match(v) or (col == "rrxe" and v == "?"):
            errs.append(f"{col} cell {v!r} is not yes, no, partial (why)" +
                        ("" if col == "rrxe" else " or ?"))
    if "siw 6.12" in cells and not SIW_STATUS.match(cells["siw 6.12"]):
        errs.append(f"siw 6.12 cell {cells['siw 6.12']!r} is not yes, no,"
                    " no (iWARP...), partial (why) or ?")
    proof = cells["proof"]
    names = [n for n in re.findall(r"`([^`]+)`", proof) if CHECK_NAME.match(n)]
    refs = FILE_REF.findall(re.sub(r"`[^`]*`", "", proof))
    paths = []
    for r in refs:
        p = ROOT / r
        if not p.is_file():
            errs.append(f"{r} does not exist")
        else:
            paths.append(p)
    if cells["rrxe"] == "yes":
        if not names:
            errs.append("rrxe says yes, but the proof cites no check")
        if not refs:
            errs.append("rrxe says yes, but the proof names no test file")
    if names and paths:
        files = Files(paths)
        for n in names:
            e = check_name(n, files, ids, passed)
            if e:
                errs.append(e)
    elif names and not refs:
        errs.append("checks cited without the file that holds them")
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("doc", nargs="?", default=str(ROOT / "Documentation/features.md"))
    ap.add_argument("--results", help="a results.txt: cited checks must have passed there")
    ap.add_argument("--pyverbs-ids", help="the pyverbs suite's test ids, one a line")
    a = ap.parse_args()
    doc = Path(a.doc)
    shown = os.path.relpath(doc)
    ids = None
    if a.pyverbs_ids:
        ids_file = Path(a.pyverbs_ids)
        if not ids_file.is_file():
            sys.exit(f"{ids_file}: no such file")
        ids = set(ids_file.read_text().split())
    else:
        for f in ("out/tests/pyverbs/all-ids", "out/tests/pyverbs/current/all-ids"):
            if (ROOT / f).is_file():
                ids = (ids or set()) | set((ROOT / f).read_text().split())
    passed = None
    if a.results:
        passed = {ln[5:].split(":", 1)[0].strip() for ln in Path(a.results).read_text().splitlines()
                  if ln.startswith("PASS ")}
    n = yes = 0
    bad = []
    for lineno, cells in rows(doc):
        if cells is None:
            bad.append(f"{shown}:{lineno}: the row has the wrong number of cells")
            continue
        n += 1
        yes += cells["rrxe"] == "yes"
        for e in check_row(cells, ids, passed):
            bad.append(f"{shown}:{lineno}: {cells['feature']}: {e}")
    if n == 0:
        bad.append(f"{shown}: no feature table found")
    if bad:
        print("\n".join(bad))
        print(f"features: {n} rows, {yes} yes, {len(bad)} problems")
        return 1
    print(f"features: {n} rows, {yes} yes, all proven")
    return 0


if __name__ == "__main__":
    sys.exit(main())
