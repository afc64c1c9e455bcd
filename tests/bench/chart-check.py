#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check what report.py drew from tests/bench/fixture (scripts/check.sh).

    chart-check.py OUTDIR [--wire]    OUTDIR: report.py's output for the
                                      fixture (--wire: with wire.py's)

Prints what is wrong and exits 1, or exits 0: OUTDIR/bench.png is a PNG
whose tEXt "Software" says matplotlib, and OUTDIR/bench-chart.json lists
the panels and series the fixture's results call for (each driver's
bandwidth by size for each test and QP count, latency typical and p99,
efficiency against the limit, message rate, the NVMe-oF rows), with the
fixture's one failed case drawn as missing; and where OUTDIR has wire.py's
wire.json (which --wire demands), a panel per eth0 MTU of the wire part,
a series per driver with a point per case.

The drivers are A rrxe and B C rxe, and siw when OUTDIR/vm/raw.txt has
slot S (the fixture has; scripts/check.sh also runs this on the fixture
without those lines, as BENCH_SIW=0 would leave it). With siw, the
fixture's siw case marked unsupported (SIW_NA below) is missing from the
chart, and OUTDIR/table.txt has the siw and A/siw columns and says "not
supported" in that case's row.
"""
import json
import os
import struct
import sys

# the fixture's case that siw "does not support" (status=unsupported), and
# the panels that draw it
SIW_NA = 'send_bw-1m-q4'
# the scaling panel's figures, and the scaling check's verdict per driver
# on the fixture's figures (64 QPs over 4: rrxe 0.95-0.97, C rxe
# 0.93-1.10, siw 0.62-0.70 against the goal 0.9)
SCALE_FIGURES = ('write 4 KiB', 'write 64 KiB', 'write 1 MiB', 'rate 2 B')
SCALE_MET = {'A rrxe': 'met', 'B C rxe': 'met', 'siw': 'not met'}


def png_text(path):
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return None
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        return None
    text, i = {}, 8
    while i + 8 <= len(data):
        n, kind = struct.unpack('>I4s', data[i:i + 8])
        if kind == b'tEXt':
            k, _, v = data[i + 8:i + 8 + n].partition(b'\0')
            text[k.decode('latin-1')] = v.decode('latin-1')
        i += 12 + n
    return text


def table_check(out, siw):
    """the bandwidth table's header, the siw-unsupported case's row and
    rrxe's ICRC measurements under the limit line"""
    try:
        with open(os.path.join(out, 'table.txt')) as f:
            lines = f.read().split('\n')
    except OSError as e:
        return ['table.txt: %s' % e]
    head = next((x.split() for x in lines if x.split()[:1] == ['case'] and 'eff' in x.split()), None)
    row = next((x for x in lines if x.split()[:1] == [SIW_NA]), '')
    cols = ['case', 'A', 'rrxe', 'B', 'C', 'rxe', 'A/B'] + (['siw', 'A/siw'] if siw else []) + \
        ['eff', 'A', 'eff', 'B'] + (['eff', 'siw'] if siw else [])
    bad = []
    for d, verdict in SCALE_MET.items():
        if d == 'siw' and not siw:
            continue
        lab = d.split(' ', 1)[1] if d[:2] in ('A ', 'B ') else d
        line = next((x for x in lines if x.strip().startswith('%s: scaling,' % lab)), None)
        if line is None or not line.rstrip().endswith('; ' + verdict):
            bad.append('table.txt: scaling check for %s is %r, want it to end "; %s"' % (lab, line, verdict))
    if head != cols:
        bad.append('table.txt: bandwidth header %s, want %s' % (head, cols))
    icrc = next((x for x in lines if "rrxe's ICRC in the kernel" in x), '')
    if 'table 539 [531-547] MiB/s' not in icrc or 'multiply 193 [187-199] MiB/s' not in icrc or \
            not icrc.rstrip().endswith('it uses table'):
        bad.append("table.txt: rrxe's ICRC line is %r" % icrc.strip())
    if siw != ('not supported' in row):
        bad.append('table.txt: %s row %r %s "not supported"' % (SIW_NA, row.strip(),
                                                                'lacks' if siw else 'has'))
    return bad


def main():
    out = sys.argv[1]
    bad = []
    text = png_text(os.path.join(out, 'bench.png'))
    if text is None:
        bad.append('no bench.png, or not a PNG')
    elif 'matplotlib' not in text.get('Software', '').lower():
        bad.append('bench.png: tEXt Software is %r, not matplotlib' % text.get('Software'))
    try:
        with open(os.path.join(out, 'bench-chart.json')) as f:
            chart = json.load(f)
    except (OSError, ValueError) as e:
        print('\n'.join(bad + ['bench-chart.json: %s' % e]))
        return 1
    panels = {p['title']: p for p in chart['panels']}
    try:
        with open(os.path.join(out, 'vm', 'raw.txt')) as f:
            siw = any(' slot=S ' in line for line in f)
    except OSError as e:
        print('\n'.join(bad + ['raw.txt: %s' % e]))
        return 1
    drivers = ('A rrxe', 'B C rxe') + (('siw',) if siw else ())
    want = {}
    for t in ('write', 'read', 'send'):
        want['ib_%s_bw: bandwidth by message size' % t] = [
            '%s, %d QP' % (d, q) for d in drivers for q in (1, 4)]
    want['latency, one-way: bar = typical, dash = p99'] = [
        '%s %s' % (d, m) for d in drivers for m in ('typical', 'p99')]
    want['efficiency: bandwidth / limit (578 MiB/s)'] = list(drivers)
    want['message rate, 64 B writes'] = list(drivers)
    want['NVMe-oF over the device (fio)'] = list(drivers)
    want['scaling: aggregate over QPs / with 4 QPs'] = [
        '%s, %s' % (d, f) for d in drivers for f in SCALE_FIGURES]
    # The wire part's panels when wire.py's figures are there (the siw
    # run of scripts/check.sh), one per MTU, a series per driver, a point
    # per case (None where a driver or C rxe has no figure).
    from wire import LABEL, reference
    wire_want = {}
    try:
        with open(os.path.join(out, 'wire.json')) as f:
            wire = json.load(f)
    except OSError:
        wire = None
    for mtu in sorted({r['mtu'] for r in wire['rows']} if wire else ()):
        rows = [r for r in wire['rows'] if r['mtu'] == mtu]
        ref = reference(wire['drivers'])
        wire_want['between two VMs, eth0 MTU %d' % mtu] = [
            (LABEL.get(d, d), [bool(r['drivers'].get(d, {}).get('median') and
                                    r['drivers'].get(ref, {}).get('median')) for r in rows])
            for d in wire['drivers']]
    for title, series in wire_want.items():
        p = panels.get(title)
        if not p:
            bad.append('no panel %r (panels: %s)' % (title, ', '.join(panels)))
            continue
        got = [(s['label'], [v is not None for v in s['y']]) for s in p['series']]
        if got != series:
            bad.append('%s: series %s, want %s' % (title, got, series))
    for title, labels in want.items():
        p = panels.get(title)
        if not p:
            bad.append('no panel %r (panels: %s)' % (title, ', '.join(panels)))
            continue
        got = [s['label'] for s in p['series']]
        if got != labels:
            bad.append('%s: series %s, want %s' % (title, got, labels))
        for s in p['series']:
            n = sum(v is None for v in s['y'])
            failed = 1 if (s['label'] == 'B C rxe, 4 QP' and title.startswith('ib_read_bw')) or \
                (s['label'] == 'B C rxe' and title.startswith('efficiency')) else 0
            if siw and ((s['label'] == 'siw, 4 QP' and title.startswith('ib_send_bw')) or
                        (s['label'] == 'siw' and title.startswith('efficiency'))):
                failed = 1
            if n != failed or not s['y']:
                bad.append('%s, %s: %d missing points of %d, want %d' % (title, s['label'], n, len(s['y']), failed))
            # the scaling panel's figures are relative to 4 QPs (the 2nd)
            if title.startswith('scaling') and len(s['y']) == 4 and s['y'][1] != 1.0:
                bad.append('%s, %s: %s at 4 QPs, want 1.0' % (title, s['label'], s['y'][1]))
    if len(panels) != len(want) + len(wire_want):
        bad.append('%d panels, want %d' % (len(panels), len(want) + len(wire_want)))
    if '--wire' in sys.argv[2:] and not wire_want:
        bad.append('no wire.json, or no rows in it: the wire part is not drawn')
    bad += table_check(out, siw)
    print('\n'.join(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
