#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's wire part: the two-VM runs of tests/bench/twohost.sh
turned into a table, CSV and JSON.

    wire.py OUTDIR      reads OUTDIR/wire-a/output.log and
                        OUTDIR/wire-b/output.log (the pair's WIRE lines),
                        prints the table and writes OUTDIR/wire.txt,
                        wire.csv, wire.json and wire.png (matplotlib: each
                        case's medians relative to C rxe's, per MTU; the
                        same panels are in make bench's bench.png)
    wire.py --selftest  checks the figures on tests/bench/fixture/wire-*

The figures, per eth0 MTU, case and driver, the median over the rounds
that succeeded:
  MiB/s    a bandwidth case: perftest's iteration count in its -D window
           times the message size, over the window (timed by the guest's
           clock, as the loopback part's perftest figure is)
  us       a latency case: perftest's t_typical (its median), on
           perftest's own clock
  x/y      the first driver's median over the other's (for latency the
           other's over the first's: above 1 is better either way)
  tx, rx   kernel CPU seconds per GiB moved on the VM that sends the data
           and the one that receives it (A, the client, sends for WRITE
           and SEND; B for READ): the VM's system ticks over the run
           (USER_HZ 100) over the bytes counted above
"""
import contextlib
import csv
import json
import os
import shutil
import statistics
import sys
import tempfile

from report import GIB, MIB, num, parse_kv  # the loopback part's parsers

HZ = 100.0
WIDTH = 120
LABEL = {'rrxe': 'rrxe', 'rxe': 'C rxe', 'siw': 'siw'}


def parse_line(line):
    """The key=value fields of a WIRE line, or None."""
    if not line.startswith('WIRE '):
        return None
    out = parse_kv(line)
    return out if {'role', 'mtu', 'driver', 'case', 'round'} <= set(out) else None


def read_runs(a_lines, b_lines):
    """One record per run A reported, with B's ticks for the same run."""
    b = {}
    for line in b_lines:
        r = parse_line(line)
        if r and r['role'] == 'b':
            b[(r['mtu'], r['driver'], r['case'], r['round'])] = r
    runs = []
    for line in a_lines:
        r = parse_line(line)
        if not r or r['role'] != 'a':
            continue
        peer = b.get((r['mtu'], r['driver'], r['case'], r['round']), {})
        r['sys_b'] = peer.get('sys', '-')
        runs.append(r)
    return runs


def is_lat(case):
    return '_lat-' in case


def value(r):
    """The run's figure (MiB/s or us), or None if it failed."""
    if r.get('status') != 'ok':
        return None
    if is_lat(r['case']):
        return num(r.get('t_typical'))
    it, size, dur = num(r.get('iters')), num(r.get('size')), num(r.get('dur'))
    if not it or not size or not dur:
        return None
    return it * size / dur / MIB


def cpu_per_gib(r):
    """(tx, rx) kernel CPU seconds per GiB of a bandwidth run, or Nones."""
    if r.get('status') != 'ok' or is_lat(r['case']):
        return None, None
    it, size = num(r.get('iters')), num(r.get('size'))
    sa, sb = num(r.get('sys')), num(r.get('sys_b'))
    if not it or not size or sa is None or sb is None:
        return None, None
    gib = it * size / GIB
    a, b = sa / HZ / gib, sb / HZ / gib
    return (b, a) if r['case'].startswith('read_') else (a, b)


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize(runs):
    """Rows in the order the runs came: mtu, case, and per driver the
    rounds, median, failures and CPU per GiB."""
    rows, drivers, index = [], [], {}
    for r in runs:
        if r['driver'] not in drivers:
            drivers.append(r['driver'])
        key = (r['mtu'], r['case'])
        if key not in index:
            index[key] = len(rows)
            rows.append({'mtu': int(r['mtu']), 'case': r['case'],
                         'unit': 'us' if is_lat(r['case']) else 'MiB/s', 'drivers': {}})
        d = rows[index[key]]['drivers'].setdefault(r['driver'], {'rounds': [], 'failed': 0,
                                                                 '_tx': [], '_rx': []})
        v = value(r)
        d['rounds'].append(v)
        d['failed'] += v is None
        tx, rx = cpu_per_gib(r)
        d['_tx'].append(tx)
        d['_rx'].append(rx)
    for row in rows:
        for d in row['drivers'].values():
            d['median'] = med(d['rounds'])
            d['tx_cpu_s_per_gib'] = med(d.pop('_tx'))
            d['rx_cpu_s_per_gib'] = med(d.pop('_rx'))
        row['ratios'] = {}
        first = drivers[0] if drivers else None
        for other in drivers[1:]:
            x = row['drivers'].get(first, {}).get('median')
            y = row['drivers'].get(other, {}).get('median')
            if x and y:
                row['ratios'][f'{first}/{other}'] = (y / x) if row['unit'] == 'us' else (x / y)
    return rows, drivers


def fmt(v, nd=1):
    if v is None:
        return 'FAILED'
    return f'{v:,.{nd}f}'


def case_label(case):
    """write_bw-65536-q1 -> write 64K q1; write_lat-64-q1 -> write lat 64."""
    test, _, rest = case.partition('-')
    size, _, q = rest.partition('-')
    n = int(size) if size.isdigit() else 0
    s = f'{n >> 20}M' if n >= MIB and n % int(MIB) == 0 else \
        f'{n >> 10}K' if n >= 1024 and n % 1024 == 0 else size
    kind, _, what = test.partition('_')
    return f'{kind} lat {s}' if what == 'lat' else f'{kind} {s} {q}'


def table(rows, drivers):
    names = [LABEL.get(d, d) for d in drivers]
    ratio_keys = [f'{drivers[0]}/{o}' for o in drivers[1:]] if drivers else []
    ratio_names = [f'{names[0]}/{LABEL.get(o, o)}' for o in drivers[1:]]
    head = f'{"MTU":>4} {"case":<15} {"unit":<5}' + ''.join(f'{n:>10}' for n in names) + \
        ''.join(f'{n:>11}' for n in ratio_names) + '  CPU s/GiB tx, rx'
    lines = [head]
    for row in rows:
        cells = [row['drivers'].get(d, {}) for d in drivers]
        line = f'{row["mtu"]:>4} {case_label(row["case"]):<15} {row["unit"]:<5}' + \
            ''.join(f'{fmt(c.get("median")) if c else "-":>10}' for c in cells) + \
            ''.join(f'{fmt(row["ratios"].get(k), 2) if k in row["ratios"] else "-":>11}'
                    for k in ratio_keys)
        if row['unit'] == 'MiB/s':
            line += '  ' + ' '.join(
                f'{fmt(c.get("tx_cpu_s_per_gib"), 1) if c else "-"}/'
                f'{fmt(c.get("rx_cpu_s_per_gib"), 1) if c else "-"}' for c in cells)
        fails = sum(c.get('failed', 0) for c in cells)
        if fails:
            line += f'  ({fails} failed)'
        lines.append(line)
    return lines


def goals(rows, drivers):
    """Issue 47's lines: the first driver against each other, per case."""
    out = []
    for other in drivers[1:]:
        k = f'{drivers[0]}/{other}'
        have = [r for r in rows if k in r['ratios']]
        met = [r for r in have if r['ratios'][k] >= 1.0]
        big = [r for r in have if r['unit'] == 'MiB/s' and int(r['case'].split('-')[1]) >= 65536]
        big_met = [r for r in big if r['ratios'][k] >= 1.0]
        out.append(f'{LABEL.get(drivers[0], drivers[0])} at least {LABEL.get(other, other)}: '
                   f'{len(met)} of {len(have)} cases; at 64 KiB and more {len(big_met)} of {len(big)}')
    return out


def reference(drivers):
    """The driver the others are drawn relative to: C rxe, else the
    second."""
    return 'rxe' if 'rxe' in drivers else (drivers[1] if len(drivers) > 1 else drivers[0])


def mtu_panel(ax, rows, drivers, mtu):
    """One eth0 MTU's cases: each driver's median relative to the
    reference's (C rxe, else the second driver), latency inverted, so that
    higher is better everywhere. Returns what it drew (make bench's
    bench.png shows these panels too: report.py, chart-check.py)."""
    ref = reference(drivers)
    mine = [r for r in rows if r['mtu'] == mtu]
    width = 0.8 / max(1, len(drivers))
    series = []
    for i, d in enumerate(drivers):
        ys = []
        for r in mine:
            x = r['drivers'].get(d, {}).get('median')
            y = r['drivers'].get(ref, {}).get('median')
            ys.append(((y / x) if r['unit'] == 'us' else (x / y)) if x and y else None)
        ax.bar([j + i * width for j in range(len(mine))], [y or 0 for y in ys], width,
               label=LABEL.get(d, d))
        series.append({'label': LABEL.get(d, d), 'y': ys})
    ax.axhline(1.0, color='grey', linewidth=0.8)
    ax.set_xticks([j + width * (len(drivers) - 1) / 2 for j in range(len(mine))])
    ax.set_xticklabels([case_label(r['case']) for r in mine], fontsize=8)
    ax.set_ylabel(f'x {LABEL.get(ref, ref)}')
    ax.set_title(f'between two VMs, eth0 MTU {mtu}', fontsize=10)
    ax.legend(fontsize=8)
    return {'title': ax.get_title(), 'kind': 'wire', 'series': series}


def chart(path, rows, drivers):
    """wire.png: a panel per MTU ([`mtu_panel`]). Nothing if matplotlib is
    missing."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    mtus = sorted({r['mtu'] for r in rows})
    fig, axes = plt.subplots(len(mtus), 1, figsize=(10, 3.2 * len(mtus)), squeeze=False)
    for ax, mtu in zip((a[0] for a in axes), mtus):
        mtu_panel(ax, rows, drivers, mtu)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def report(outdir):
    def lines(role):
        p = os.path.join(outdir, f'wire-{role}', 'output.log')
        if not os.path.exists(p):
            return []
        with open(p, errors='replace') as f:
            return f.read().splitlines()
    runs = read_runs(lines('a'), lines('b'))
    if not runs:
        sys.exit(f'wire: no WIRE lines in {outdir}/wire-a/output.log')
    rows, drivers = summarize(runs)
    text = ['wire: two VMs, one vCPU each, virtio over a socket; medians of the rounds'] + \
        table(rows, drivers) + [''] + goals(rows, drivers)
    with open(os.path.join(outdir, 'wire.txt'), 'w') as f:
        f.write('\n'.join(text) + '\n')
    with open(os.path.join(outdir, 'wire.json'), 'w') as f:
        json.dump({'drivers': drivers, 'rows': rows}, f, indent=1)
    with open(os.path.join(outdir, 'wire.csv'), 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['mtu', 'case', 'driver', 'round', 'status', 'value', 'unit', 'sys_a', 'sys_b'])
        for r in runs:
            v = value(r)
            w.writerow([r['mtu'], r['case'], r['driver'], r['round'], r.get('status'),
                        '' if v is None else f'{v:.3f}', 'us' if is_lat(r['case']) else 'MiB/s',
                        r.get('sys', ''), r.get('sys_b', '')])
    chart(os.path.join(outdir, 'wire.png'), rows, drivers)
    print('\n'.join(text))
    return text


def selftest():
    here = os.path.dirname(os.path.abspath(__file__))
    fixture = os.path.join(here, 'fixture')
    d = tempfile.mkdtemp()
    try:
        for role in ('a', 'b'):
            shutil.copytree(os.path.join(fixture, f'wire-{role}'), os.path.join(d, f'wire-{role}'))
        with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null):
            text = report(d)
        with open(os.path.join(d, 'wire.json')) as f:
            j = json.load(f)
        png = os.path.exists(os.path.join(d, 'wire.png'))
    finally:
        shutil.rmtree(d)
    bad = []
    rows = {(r['mtu'], r['case']): r for r in j['rows']}

    def want(what, got, exp, tol=1e-6):
        if got is None or abs(got - exp) > tol * max(1.0, abs(exp)):
            bad.append(f'{what}: {got}, want {exp}')
    if j['drivers'] != ['rrxe', 'rxe', 'siw']:
        bad.append(f'drivers {j["drivers"]}')
    w = rows.get((1500, 'write_bw-65536-q1'))
    if not w:
        bad.append('no row 1500 write_bw-65536-q1')
    else:
        # rrxe 1000 and 1200 iterations of 64 KiB in 4 s: median 1100
        want('rrxe median', w['drivers']['rrxe']['median'], 1100 * 65536 / 4 / MIB)
        # C rxe 800 and a failed round: the median of the one left
        want('rxe median', w['drivers']['rxe']['median'], 800 * 65536 / 4 / MIB)
        if w['drivers']['rxe']['failed'] != 1:
            bad.append(f'rxe failed {w["drivers"]["rxe"]["failed"]}, want 1')
        want('rrxe/rxe', w['ratios'].get('rrxe/rxe'), 1100 / 800)
        want('rrxe/siw', w['ratios'].get('rrxe/siw'), 1100 / 2200)
        # rrxe's A ticks 40 and 60, B's 20 and 20, over 1000 and 1200
        # iterations of 64 KiB: A sends a WRITE
        want('rrxe tx', w['drivers']['rrxe']['tx_cpu_s_per_gib'],
             statistics.median([0.4 / (1000 * 65536 / GIB), 0.6 / (1200 * 65536 / GIB)]))
        want('rrxe rx', w['drivers']['rrxe']['rx_cpu_s_per_gib'],
             statistics.median([0.2 / (1000 * 65536 / GIB), 0.2 / (1200 * 65536 / GIB)]))
    rd = rows.get((9000, 'read_bw-65536-q1'))
    if not rd:
        bad.append('no row 9000 read_bw-65536-q1')
    else:
        # a READ's data comes from B: B's 30 ticks are the sender's
        want('read tx', rd['drivers']['rrxe']['tx_cpu_s_per_gib'], 0.3 / (2000 * 65536 / GIB))
        want('read rx', rd['drivers']['rrxe']['rx_cpu_s_per_gib'], 0.5 / (2000 * 65536 / GIB))
    lat = rows.get((1500, 'write_lat-64-q1'))
    if not lat:
        bad.append('no row 1500 write_lat-64-q1')
    else:
        # latency: rrxe 20 us, C rxe 25 us: 1.25 in rrxe's favour
        want('lat rrxe', lat['drivers']['rrxe']['median'], 20.0)
        want('lat rrxe/rxe', lat['ratios'].get('rrxe/rxe'), 1.25)
    long_lines = [t for t in text if len(t) > WIDTH]
    if long_lines:
        bad.append(f'{len(long_lines)} table lines over {WIDTH} columns: {long_lines[0]!r}')
    if not png:
        bad.append('no wire.png (matplotlib: scripts/deps.sh installs it)')
    if not any('1 failed' in t for t in text):
        bad.append('the failed round is not shown')
    if bad:
        print('FAIL wire-selftest: ' + '; '.join(bad))
        return 1
    print('PASS wire-selftest')
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == '--selftest':
        sys.exit(selftest())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    report(sys.argv[1])


if __name__ == '__main__':
    main()
