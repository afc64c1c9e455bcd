#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""
Runs a selection of rdma-core's pyverbs tests on one device and turns the
unittest output into results (driven by tests/guest/pyverbs.sh).

  run.py expand  --suite DIR --selection FILE [--ids FILE]
      print the test ids the selection names (one per line); entries that
      name no test are printed as "UNKNOWN <entry>"
  run.py run     --suite DIR --selection FILE --dev DEV --gid N --out PREFIX
                 [--ids FILE] [--not-passed-in DUT.json [--canaries K]]
      run them with `run_tests.py --dev DEV --port 1 --gid N -v ID...`, parse
      unittest's verbose output (stderr; the tests' own prints go to stdout)
      and write PREFIX.json with one outcome per test id. If the python
      process dies mid-test (a crash in the driver or the provider), the test
      that was running is recorded as "crash" and the rest are run again in a
      new process. With --not-passed-in (the reference run), only the
      tests that DUT.json's device did not pass are run, and the first K
      it passed (8): a test the device under test passed cannot be a
      regression whatever the reference does, and the K show that the
      reference run works.
  run.py report  --dut DUT.json --ref REF.json --allowed-skips FILE
                 --counts FILE [--dut-label L] [--ref-label L] [--list-ids FILE]
      print one result line per test of the device under test
      (PASS/FAIL/SKIP <id>), a FAIL regression/<id> for each test that
      passes on the reference (C rxe) but not on the device under test (or
      one PASS no-regression-vs-reference), and write the counts of both
      runs side by side ("-" for a test the reference did not run);
      pyverbs.sh records them as pyverbs/...
  run.py selftest
      check the parser on canned unittest output

--ids FILE: the suite's test ids (`run_tests.py --list-tests`, which
scripts/testprogs.sh writes on the host), instead of listing them here.

Selection file: one entry per line, a module (tests.test_pd), a class
(tests.test_cq.CQAPITest) or a test (tests.test_qp.QPTest.test_query_rc_qp);
the "tests." prefix is optional; "#" starts a comment.

Allowed-skips file: "ID | text the skip message must contain | why", one
test per line. A skip not listed, or whose message lacks the text, is a FAIL.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys

OUTCOMES = ('ok', 'skip', 'fail', 'error', 'xfail', 'upass', 'crash', 'missing')

# unittest (3.11) prints "test_m (tests.mod.Class.test_m)" for a test, older
# Pythons "test_m (tests.mod.Class)"; a docstring's first line may follow on
# the next line, then " ... " and, once the test ends, the outcome.
START_RE = re.compile(r'^(?P<meth>\w+) \((?P<where>[A-Za-z_][\w.]*)\)', re.M)
OUTCOME_RE = re.compile(
    r"(?:^|\s)(?P<word>ok|FAIL|ERROR|expected failure|unexpected success|"
    r"skipped (?P<q>['\"])(?P<reason>.*)(?P=q))$", re.M)
DOTS_RE = re.compile(r' \.\.\.(?= |$)', re.M)
FOOTER_RE = re.compile(r'^(?P<kind>FAIL|ERROR): (?P<meth>\w+) \((?P<where>[\w.]+)\)\s*$', re.M)
SEP = '=' * 70
RAN_RE = re.compile(r'^Ran (?P<n>\d+) tests? in ', re.M)
WORD = {'ok': 'ok', 'FAIL': 'fail', 'ERROR': 'error', 'expected failure': 'xfail',
        'unexpected success': 'upass'}


def full_id(meth, where):
    return where if where.endswith('.' + meth) else f'{where}.{meth}'


def parse(text):
    """Outcomes from unittest's verbose output: {id: (outcome, detail)},
    plus the id of a test that started but has no outcome (or None) and
    the footer's "Ran N" count (or None)."""
    res = {}
    body_end = text.find('\n' + SEP + '\n')
    if body_end < 0:
        ran = RAN_RE.search(text)
        body_end = ran.start() if ran else len(text)
    body = text[:body_end]
    starts = list(START_RE.finditer(body))
    running = None
    for i, m in enumerate(starts):
        tid = full_id(m.group('meth'), m.group('where'))
        seg_end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        seg = body[m.end():seg_end]
        dots = DOTS_RE.search(seg)
        out = OUTCOME_RE.search(seg, dots.end()) if dots else None
        if out is None:
            running = tid
            continue
        word = out.group('word')
        if word.startswith('skipped'):
            res[tid] = ('skip', out.group('reason'))
        else:
            res[tid] = (WORD[word], '')
    # The footer: tracebacks of failures and errors (authoritative).
    footer = text[body_end:]
    blocks = footer.split(SEP)
    for blk in blocks:
        fm = FOOTER_RE.search(blk)
        if not fm:
            continue
        tid = full_id(fm.group('meth'), fm.group('where'))
        kind = 'fail' if fm.group('kind') == 'FAIL' else 'error'
        tb = blk.split('-' * 70, 1)[-1].strip().splitlines()
        last = next((ln.strip() for ln in reversed(tb) if ln.strip()), '')
        # A class or module fixture's error is kept under
        # "<class>.setUpClass"; cmd_run blames the class's tests on it.
        res[tid] = (kind, last[:300])
        if running == tid:
            running = None
    ran = RAN_RE.search(text)
    return res, running, (int(ran.group('n')) if ran else None)


# --- selection ---------------------------------------------------------------------

def read_lines(path):
    with open(path) as f:
        for raw in f:
            line = raw.split('#', 1)[0].strip()
            if line:
                yield line


def list_tests(suite, ids_file=None):
    """The suite's test ids: from IDS_FILE if given (scripts/testprogs.sh
    lists them on the host: a Python that imports every test module takes
    some 14 s in a debug guest under TCG, under 1 s there), else listed."""
    if ids_file:
        with open(ids_file) as f:
            text, where = f.read(), ids_file
    else:
        p = subprocess.run([sys.executable, 'run_tests.py', '--list-tests'], cwd=suite,
                           capture_output=True, text=True, check=False)
        text, where = p.stdout, f'run_tests.py --list-tests ({p.stderr[-500:]})'
    ids = [ln.strip() for ln in text.splitlines() if ln.startswith('tests.')]
    if not ids:
        sys.exit(f'{where} lists no test')
    return ids


def expand(suite, selection, ids_file=None):
    all_ids = list_tests(suite, ids_file)
    chosen, unknown = [], []
    for entry in read_lines(selection):
        name = entry if entry.startswith('tests.') else 'tests.' + entry
        hits = [t for t in all_ids if t == name or t.startswith(name + '.')]
        if not hits:
            unknown.append(entry)
        for t in hits:
            if t not in chosen:
                chosen.append(t)
    return chosen, unknown, all_ids


# --- running -------------------------------------------------------------------------

def run_once(suite, dev, gid, ids, log_prefix, attempt, timeout):
    cmd = [sys.executable, 'run_tests.py', '--dev', dev, '--port', '1', '--gid', str(gid), '-v'] + ids
    with open(f'{log_prefix}.{attempt}.stdout', 'w') as so, open(f'{log_prefix}.{attempt}.stderr', 'w') as se:
        try:
            p = subprocess.run(cmd, cwd=suite, stdout=so, stderr=se, timeout=timeout, check=False,
                               env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1', PYTHONUNBUFFERED='1'))
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = 'timeout'
    with open(f'{log_prefix}.{attempt}.stderr', errors='replace') as f:
        return rc, f.read()


def not_passed(ids, dut_results, canaries):
    """The ids of `ids` that the device under test did not pass (by its
    results, id -> [outcome, detail]), and the first `canaries` it did,
    in the selection's order; and how many passed ids that leaves out."""
    passed = [t for t in ids if dut_results.get(t, ('missing',))[0] in ('ok', 'xfail')]
    skip = set(passed[canaries:])
    run = [t for t in ids if t not in skip]
    return run, len(ids) - len(run)


def cmd_run(a):
    ids, unknown, _ = expand(a.suite, a.selection, a.ids)
    omitted = 0
    if a.not_passed_in:
        with open(a.not_passed_in) as f:
            ids, omitted = not_passed(ids, json.load(f)['results'], a.canaries)
    results = {}
    runs = []
    todo = list(ids)
    attempt = 0
    while todo and attempt < a.max_respawn + 1:
        attempt += 1
        rc, text = run_once(a.suite, a.dev, a.gid, todo, a.out, attempt, a.timeout)
        res, running, ran = parse(text)
        runs.append({'attempt': attempt, 'rc': rc, 'tests': len(todo), 'parsed': len(res), 'ran': ran})
        for tid, v in res.items():
            if tid in todo:
                results[tid] = v
        normal_end = ran is not None
        if normal_end:
            for tid in todo:
                if tid not in results:
                    cls = tid.rsplit('.', 1)[0]
                    fixture = res.get(f'{cls}.setUpClass') or res.get(f'{cls}.tearDownClass')
                    results[tid] = ('error', f'setUpClass: {fixture[1]}') if fixture else \
                        ('missing', f'no outcome in the verbose output (rc {rc})')
            break
        # The process died: blame the test that was running, rerun the rest.
        if running and running in todo and running not in results:
            why = f'killed by signal {-rc} ({signal.Signals(-rc).name})' if isinstance(rc, int) and rc < 0 \
                else f'python exited {rc} during this test'
            results[running] = ('crash', why)
        rest = [t for t in todo if t not in results]
        if len(rest) == len(todo):
            # No progress at all (it died before the first test).
            for tid in rest:
                results[tid] = ('crash', f'run_tests.py ended ({rc}) before running it')
            break
        todo = rest
    for tid in ids:
        results.setdefault(tid, ('missing', 'not run (too many respawns)'))
    with open(a.out + '.json', 'w') as f:
        json.dump({'dev': a.dev, 'ids': ids, 'unknown': unknown, 'runs': runs, 'omitted': omitted,
                   'results': {k: list(v) for k, v in results.items()}}, f, indent=1)
    n = {o: sum(1 for v in results.values() if v[0] == o) for o in OUTCOMES}
    print(f'{a.dev}: {len(ids)} tests, ' + ', '.join(f'{k} {v}' for k, v in n.items() if v) +
          f'; {len(runs)} python run(s)' +
          (f'; {omitted} passed on the device under test not run' if omitted else ''))


# --- report --------------------------------------------------------------------------

GENERIC_SKIPS = ('No IB devices found', 'No supported port is up', 'No relevant GID found',
                 'No IB device found')


def read_allowed(path):
    allowed, bad = {}, []
    for line in read_lines(path):
        parts = [p.strip() for p in line.split('|')]
        if len(parts) != 3 or not all(parts):
            bad.append(line)
            continue
        allowed[parts[0]] = (parts[1], parts[2])
    return allowed, bad


def counts(results):
    r = results.values()
    p = sum(1 for v in r if v[0] in ('ok', 'xfail'))
    s = sum(1 for v in r if v[0] == 'skip')
    return p, s, len(results) - p - s


def emit(kind, name, why=''):
    print(f'{kind} {name}' + (f': {" ".join(why.split())}' if kind != 'PASS' else ''))


def cmd_report(a):
    with open(a.dut) as f:
        dut = json.load(f)
    ref = None
    if a.ref and os.path.exists(a.ref):
        with open(a.ref) as f:
            ref = json.load(f)
    allowed, bad = read_allowed(a.allowed_skips)
    listed = os.path.basename(a.allowed_skips)
    for line in bad:
        emit('FAIL', 'allowed-skips-format', f'not "ID | message text | why": {line}')
    if a.list_ids:
        with open(a.list_ids) as f:
            known = {ln.strip() for ln in f if ln.strip()}
        for tid in allowed:
            if tid not in known:
                emit('FAIL', 'allowed-skips-names-a-test', f'{tid} is not a test of the suite')
    for entry in dut.get('unknown', []):
        emit('FAIL', 'selection-names-a-test', f'"{entry}" matches no test of the suite')
    if not dut['ids']:
        emit('FAIL', 'selection-not-empty', 'the selection names no test')

    res = {k: tuple(v) for k, v in dut['results'].items()}
    for tid in dut['ids']:
        outcome, detail = res.get(tid, ('missing', ''))
        if outcome in ('ok', 'xfail'):
            emit('PASS', tid)
        elif outcome == 'skip':
            rule = allowed.get(tid)
            if rule and rule[0] in detail and not any(g in detail for g in GENERIC_SKIPS):
                emit('SKIP', tid, f'{detail} ({rule[1]})')
            elif rule:
                emit('FAIL', tid, f'skipped "{detail}", but {listed} allows only a skip saying "{rule[0]}"')
            else:
                emit('FAIL', tid, f'skipped "{detail}", not listed in {listed}')
        else:
            emit('FAIL', tid, f'{outcome}: {detail}')

    lines = []
    dp, ds, df = counts(res)
    lines.append(f'{a.dut_label} ({dut["dev"]}): {dp} passed {ds} skipped {df} failed')
    if ref is not None:
        rres = {k: tuple(v) for k, v in ref['results'].items()}
        rp, rs, rf = counts(rres)
        lines[0] += f' / {a.ref_label} ({ref["dev"]}): {rp} passed {rs} skipped {rf} failed'
        if ref.get('omitted'):
            lines[0] += f' ({ref["omitted"]} that {a.dut_label} passed not run)'
        regress = [t for t in dut['ids'] if rres.get(t, ('',))[0] in ('ok', 'xfail')
                   and res.get(t, ('missing',))[0] not in ('ok', 'xfail')]
        for tid in regress:
            emit('FAIL', f'regression/{tid}',
                 f'passes on {a.ref_label}, {res.get(tid, ("missing", ""))[0]} on {a.dut_label}')
        n_ref_ok = sum(1 for t in dut['ids'] if rres.get(t, ('',))[0] in ('ok', 'xfail'))
        if not regress:
            if n_ref_ok:
                emit('PASS', 'no-regression-vs-reference')
            else:
                emit('FAIL', 'no-regression-vs-reference', f'no test passed on {a.ref_label}: reference run broken?')
        lines.append('')
        lines.append(f'{"test":<78} {a.dut_label:>8} {a.ref_label:>8}')
        for tid in dut['ids']:
            theirs = rres.get(tid, ('-' if ref.get('omitted') and tid not in ref['ids'] else 'missing',))[0]
            lines.append(f'{tid:<78} {res.get(tid, ("missing",))[0]:>8} {theirs:>8}')
    elif a.ref:
        emit('FAIL', 'reference-run', f'no reference results ({a.ref})')
    with open(a.counts, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    sys.stderr.write(lines[0] + '\n')


# --- selftest --------------------------------------------------------------------------

CANNED = """\
libibverbs: Warning: couldn't load driver 'libfoo-rdmav34.so'
test_a (tests.test_x.C.test_a) ... ok
test_b (tests.test_x.C.test_b)
Doc line of b ... skipped 'Device memory is not supported'
test_c (tests.test_x.C) ... rxe: some provider noise
FAIL
test_d (tests.test_x.C.test_d)
Doc ... skipped "it's \\"quoted\\" here"
test_e (tests.test_x.C.test_e) ... ERROR
test_f (tests.test_x.D.test_f) ... expected failure
test_g (tests.test_x.D.test_g) ...
ok

======================================================================
ERROR: test_e (tests.test_x.C.test_e)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "x.py", line 1, in test_e
pyverbs.pyverbs_error.PyverbsRDMAError: Failed to create QP. Errno: 95, Operation not supported

======================================================================
FAIL: test_c (tests.test_x.C.test_c)
Doc of c
----------------------------------------------------------------------
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 7 tests in 1.000s

FAILED (failures=1, errors=1, skipped=2, expected failures=1)
"""

CANNED_CRASH = """\
test_a (tests.test_x.C.test_a) ... ok
test_b (tests.test_x.C.test_b)
Doc of b ... """


def cmd_selftest(_a):
    res, running, ran = parse(CANNED)
    want = {
        'tests.test_x.C.test_a': 'ok', 'tests.test_x.C.test_b': 'skip', 'tests.test_x.C.test_c': 'fail',
        'tests.test_x.C.test_d': 'skip', 'tests.test_x.C.test_e': 'error', 'tests.test_x.D.test_f': 'xfail',
        'tests.test_x.D.test_g': 'ok'}
    bad = [f'{k}: {res.get(k)} want {v}' for k, v in want.items() if res.get(k, ('?',))[0] != v]
    if res.get('tests.test_x.C.test_b', ('', ''))[1] != 'Device memory is not supported':
        bad.append(f'skip reason {res.get("tests.test_x.C.test_b")}')
    if 'Errno: 95' not in res.get('tests.test_x.C.test_e', ('', ''))[1]:
        bad.append(f'error detail {res.get("tests.test_x.C.test_e")}')
    if running is not None or ran != 7 or len(res) != 7:
        bad.append(f'running {running} ran {ran} parsed {len(res)}')
    res2, running2, ran2 = parse(CANNED_CRASH)
    if running2 != 'tests.test_x.C.test_b' or ran2 is not None or list(res2) != ['tests.test_x.C.test_a']:
        bad.append(f'crash parse: {res2} running {running2} ran {ran2}')
    # The reference run's ids: what the device under test did not pass,
    # and the first 2 it passed (the xfail counts as passed).
    ids = [f't.{c}' for c in 'abcdefg']
    dres = {'t.a': ['skip', ''], 't.b': ['ok', ''], 't.c': ['crash', ''], 't.d': ['xfail', ''],
            't.e': ['ok', ''], 't.g': ['fail', '']}
    got = not_passed(ids, dres, 2)
    if got != (['t.a', 't.b', 't.c', 't.d', 't.f', 't.g'], 1):
        bad.append(f'not_passed: {got}')
    if bad:
        print('FAIL parser-selftest: ' + '; '.join(bad))
        sys.exit(1)
    print('PASS parser-selftest')


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    e = sub.add_parser('expand')
    e.add_argument('--suite', required=True)
    e.add_argument('--selection', required=True)
    e.add_argument('--ids', help='the suite\'s test ids, one per line (else listed)')
    r = sub.add_parser('run')
    r.add_argument('--suite', required=True)
    r.add_argument('--selection', required=True)
    r.add_argument('--ids', help='the suite\'s test ids, one per line (else listed)')
    r.add_argument('--dev', required=True)
    r.add_argument('--gid', type=int, default=1)
    r.add_argument('--out', required=True)
    r.add_argument('--timeout', type=int, default=3600)
    r.add_argument('--max-respawn', type=int, default=8)
    r.add_argument('--not-passed-in', help='results of the device under test: run only what it did not pass')
    r.add_argument('--canaries', type=int, default=8, help='and the first K it passed')
    p = sub.add_parser('report')
    p.add_argument('--dut', required=True)
    p.add_argument('--ref')
    p.add_argument('--allowed-skips', required=True)
    p.add_argument('--counts', required=True)
    p.add_argument('--list-ids')
    p.add_argument('--dut-label', default='rrxe')
    p.add_argument('--ref-label', default='C rxe')
    sub.add_parser('selftest')
    a = ap.parse_args()
    if a.cmd == 'expand':
        ids, unknown, _ = expand(a.suite, a.selection, a.ids)
        for t in ids:
            print(t)
        for u in unknown:
            print(f'UNKNOWN {u}')
    elif a.cmd == 'run':
        cmd_run(a)
    elif a.cmd == 'report':
        cmd_report(a)
    else:
        cmd_selftest(a)


if __name__ == '__main__':
    main()
