#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the bench guest's raw.txt into the table, CSV, JSON and PNG.

    report.py OUTDIR            reads OUTDIR/vm/raw.txt and OUTDIR/settings.txt,
                                prints the table and writes OUTDIR/table.txt,
                                results.csv, results.json, bench.png (matplotlib)
                                and bench-chart.json (what the chart shows)
    report.py --count-cases [GLOB]  prints how many cases BENCH_CASES selects
                                (of those GLOB matches, if given)

Every figure says where it comes from (Documentation/bench.md):
  wall     computed here: perftest's iteration count in its -D sample window
           (bytes = iterations x message size) over the window's length in
           real time. perftest times the window with alarm() on the guest's
           clock; two probes around it read the TSC, whose rate was measured
           on the host, and the guest clock, and correct the length by how
           fast the guest clock ran (under TCG it can run slow)
  perftest perftest's own figure: TSC cycles divided by a TSC rate. With
           BENCH_CLOCK=host (default) that rate is the host-measured one,
           handed to perftest by tests/bench/tscshim.c; with native it is
           perftest's own estimate. Shown for latency percentiles (the only
           per-iteration source) and as a check of the wall figures
  fio      the storage cases (nvme_*): fio's own figures (bandwidth, IOPS,
           completion-latency percentiles), on a clock_gettime() that the
           shim runs on the TSC at the host-measured rate

Slots: A and B (rrxe and C rxe by default), and S, siw, when the guest ran
it (BENCH_SIW=1, the default): its column and the ratio A/siw follow each
A/B. A case siw refused is "not supported", not FAILED.
"""
import fnmatch
import functools
import json
import math
import os
import statistics
import sys

MIB = 1048576.0
NA = 'not supported'  # a case siw refused (raw.txt status=unsupported)
GIB = 1073741824.0


def all_cases():
    out = []
    for t in ('write', 'read', 'send'):
        for s in ('4k', '64k', '1m'):
            for q in (1, 4):
                out.append('%s_bw-%s-q%d' % (t, s, q))
    out.append('write_rate-64-q1')
    # scaling (tests/bench/guest.sh): 16 and 64 QPs, and the 2 B rate
    for s in ('4k', '64k', '1m'):
        for q in (16, 64):
            out.append('write_bw-%s-q%d' % (s, q))
    for q in SCALE_QPS:
        out.append('write_rate-2-q%d' % q)
    for t in ('send', 'write'):
        for s in ('2', '64', '4k'):
            out.append('%s_lat-%s' % (t, s))
    out += [c for c, _, _, _, _ in STORAGE]
    return out


# the storage cases (tests/bench/guest.sh): case, row label, metric,
# decimals, goal (A/B at least or at most this; issue 16)
STORAGE = [
    ('nvme_seqread-128k-qd16', 'seq read 128 KiB QD16, MiB/s', 'fio_mibs', 1, ('>=', 1.5)),
    ('nvme_seqwrite-128k-qd16', 'seq write 128 KiB QD16, MiB/s', 'fio_mibs', 1, ('>=', 1.5)),
    ('nvme_randread-4k-qd32', 'rand read 4 KiB QD32, IOPS', 'fio_iops', 0, ('>=', 1.5)),
    ('nvme_lat-4k-qd1', 'read 4 KiB QD1 latency, median, us', 'fio_clat_p50_us', 1, ('<=', 0.7)),
    ('nvme_lat-4k-qd1', 'read 4 KiB QD1 latency, p99, us', 'fio_clat_p99_us', 1, ('<=', 0.7)),
]


def selected(pattern):
    pats = [p for p in pattern.replace(',', ' ').split() if p]
    return [c for c in dict.fromkeys(all_cases()) if any(fnmatch.fnmatchcase(c, p) for p in pats)]


def parse_kv(line):
    d = {}
    for tok in line.split():
        if '=' in tok:
            k, v = tok.split('=', 1)
            d[k] = v
    return d


def num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def probe(v):
    """'TSC,MONO_ns,user,nice,system,idle,...' -> list of ints"""
    if not v:
        return None
    try:
        return [int(x) for x in v.split(',') if x != '']
    except ValueError:
        return None


def stats(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {'median': statistics.median(vals), 'min': min(vals), 'max': max(vals),
            'n': len(vals), 'values': vals}


def fmt(v, nd=1):
    if v is None:
        return '-'
    if abs(v) >= 1000:
        return '%.0f' % v
    if abs(v) >= 100:
        return '%.*f' % (max(nd - 1, 0), v)
    return '%.*f' % (nd, v)


def cell(s, nd=1, failed=None):
    """'median [min-max]' or the failure."""
    if s is None:
        return failed or '-'
    if s['n'] == 1:
        return fmt(s['median'], nd)
    return '%s [%s-%s]' % (fmt(s['median'], nd), fmt(s['min'], nd), fmt(s['max'], nd))


def ratio(a, b):
    if not a or not b or not b['median']:
        return None
    return a['median'] / b['median']


def main():
    if sys.argv[1:2] == ['--count-cases']:
        cs = selected(os.environ.get('BENCH_CASES', '*'))
        if len(sys.argv) > 2:
            cs = [c for c in cs if fnmatch.fnmatchcase(c, sys.argv[2])]
        print(len(cs))
        return 0
    outdir = sys.argv[1]
    settings = {}
    try:
        with open(os.path.join(outdir, 'settings.txt')) as f:
            for line in f:
                if '=' in line:
                    k, v = line.rstrip('\n').split('=', 1)
                    settings[k] = v
    except OSError:
        pass
    env, limits, runs, slots_t, end, nvme, icrc = {}, [], [], [], None, [], []
    with open(os.path.join(outdir, 'vm', 'raw.txt')) as f:
        for line in f:
            d = parse_kv(line)
            k = d.get('kind')
            if k == 'env':
                env = d
            elif k == 'limit':
                limits.append(d)
            elif k == 'icrc':
                icrc.append(d)
            elif k == 'run':
                runs.append(d)
            elif k == 'slot':
                slots_t.append(d)
            elif k == 'nvme':
                nvme.append(d)
            elif k == 'end':
                end = d
    A, B = env.get('A', '?'), env.get('B', '?')
    label = {'rrxe': 'rrxe', 'rxe': 'C rxe', 'base': 'rrxe base'}
    la, lb = label.get(A, A), label.get(B, B)
    if A == B:
        la, lb = la + ' (A)', lb + ' (B)'
    # the third slot, siw (tests/bench/guest.sh, SIW=1)
    siw = env.get('S') == 'siw' or any(r.get('slot') == 'S' for r in runs)
    ls = 'siw'
    slots = [('A', la), ('B', lb)] + ([('S', ls)] if siw else [])
    window = num(env.get('window')) or 1.0
    tsc_mhz = num(env.get('host_tsc_mhz'))
    ncpu = num(env.get('nproc')) or 1

    # ---- per-run figures -------------------------------------------------
    rows = []  # long format for the CSV

    def add(r, metric, value, unit, source):
        rows.append({'round': r['round'], 'slot': r['slot'], 'driver': r['driver'],
                     'case': r['case'], 'metric': metric, 'value': value,
                     'unit': unit, 'source': source})

    per = {}  # (slot, case) -> metric -> [values]
    status = {}  # (slot, case) -> list of (round, status, note)
    order = []
    meta = {}
    for r in runs:
        key = (r['slot'], r['case'])
        if r['case'] not in order:
            order.append(r['case'])
            meta[r['case']] = r
        status.setdefault(key, []).append((r['round'], r['status'], r.get('note', '')))
        m = per.setdefault(key, {})
        if r['status'] != 'ok':
            continue
        if r['type'] == 'fio':
            fio_figures(r, m, add, tsc_mhz)
            continue
        size, it = float(r['size']), float(r['iters'])
        w = num(r.get('window')) or window
        p1, p2 = probe(r.get('probe1')), probe(r.get('probe2'))
        clock, kcpus, tcpus = None, None, None
        if p1 and p2 and tsc_mhz:
            real = (p2[0] - p1[0]) / (tsc_mhz * 1e6)
            guest = (p2[1] - p1[1]) / 1e9
            if real > 0 and guest > 0:
                clock = real / guest
            t = [b - a for a, b in zip(p1[2:], p2[2:])]
            t += [0] * (8 - len(t))
            total = sum(t[:8])
            if total > 0:
                kcpus = (t[2] + t[5] + t[6]) / total * ncpu
                tcpus = (t[0] + t[1] + t[2] + t[5] + t[6]) / total * ncpu
        # the -D window in real seconds: alarm() times it on the guest's
        # clock; the TSC probes around it say how fast that clock ran
        rw = w * (clock or 1.0)

        def put(metric, v, unit, source):
            if v is None:
                return
            m.setdefault(metric, []).append(v)
            add(r, metric, v, unit, source)

        if r['type'] != 'lat':
            put('guest_clock', (1 / clock) if clock else None, 'ratio', 'guest clock / TSC')

        def primary(metric, pt, est, unit):
            """perftest's figure if it gave one, else the probe estimate"""
            if pt is not None and pt > 0:
                put(metric, pt, unit, 'perftest')
                if est is not None and est > 0:
                    put(metric + '_check', est / pt - 1, 'fraction', 'probe estimate vs perftest')
            elif est is not None and clock:
                put(metric, est, unit, 'probe estimate')
                if metric in ('bw_mibs', 'lat_mean_us'):
                    put('fallback', 1, 'count', 'perftest gave no figure')

        if r['type'] in ('bw', 'rate'):
            primary('bw_mibs', num(r.get('pt_bw_avg_mibs')), it * size / rw / MIB, 'MiB/s')
            primary('mpps', num(r.get('pt_mpps')), it / rw / 1e6, 'Mpps')
            gib = it * size / GIB
            if kcpus is not None and gib > 0:
                put('cpu_kernel_s_per_gib', kcpus * rw / gib, 's/GiB', '/proc/stat')
                put('cpu_total_s_per_gib', tcpus * rw / gib, 's/GiB', '/proc/stat')
                put('cpu_kernel_util', kcpus, 'CPUs', '/proc/stat')
                put('cpu_total_util', tcpus, 'CPUs', '/proc/stat')
        else:
            # -n run: the probes sit at the result header and the result
            # line; between them perftest ran the ping-pong and twice its
            # TSC-rate fit (get_cpu_mhz(), 219 ms of busy-waiting each)
            est = None
            if p1 and p2 and tsc_mhz:
                loop = (p2[0] - p1[0]) / (tsc_mhz * 1e6) - 2 * 0.219
                if loop > 0:
                    est = loop * 1e6 / it / 2
            primary('lat_mean_us', num(r.get('t_avg')), est, 'us')
            for k, metric in (('t_typical', 'lat_typical_us'), ('p99', 'lat_p99_us'),
                              ('t_min', 'lat_min_us'), ('p999', 'lat_p999_us')):
                v = num(r.get(k))
                if v is not None and v > 0:
                    put(metric, v, 'us', 'perftest')

    lim = {}
    for k in ('memcpy_mibs', 'memcpy_hot_mibs', 'crc32_sb8_mibs', 'crc32_clmul_mibs', 'crc32_zlib_mibs',
              'tsc_mhz', 'cpuinfo_mhz'):
        lim[k] = stats([num(d.get(k)) for d in limits])
    limit_vals = [min(num(d.get('memcpy_mibs')) or 1e30, num(d.get('crc32_sb8_mibs')) or 1e30)
                  for d in limits]
    lim['limit_mibs'] = stats([v for v in limit_vals if v < 1e29])
    for d in limits:
        rows.append({'round': d.get('round'), 'slot': '-', 'driver': '-', 'case': 'limit',
                     'metric': 'limit_mibs', 'value': min(num(d.get('memcpy_mibs')) or 0,
                                                          num(d.get('crc32_sb8_mibs')) or 0),
                     'unit': 'MiB/s', 'source': 'limit tool'})
    limit = lim['limit_mibs']['median'] if lim['limit_mibs'] else None

    S = {key: {m: stats(v) for m, v in d.items()} for key, d in per.items()}

    def st(slot, case, metric):
        return S.get((slot, case), {}).get(metric)

    def reason(slot, case):
        sts = status.get((slot, case), [])
        first = next((s for s in sts if s[1] in ('fail', 'unsupported')), None)
        if not first:
            return None
        why = first[2] or 'failed'
        return 'not supported: ' + why if first[1] == 'unsupported' else why

    def failure(slot, case):
        sts = status.get((slot, case), [])
        if any(s[1] == 'ok' for s in sts):
            return None
        if any(s[1] == 'unsupported' for s in sts):
            return NA
        return 'FAILED' if sts else 'not run'

    def failed(slot, case):
        """the latency and CPU tables' word for a case without figures"""
        f = failure(slot, case)
        return f if f == NA else f and 'FAILED'

    # ---- text -------------------------------------------------------------
    L = []
    nrounds = env.get('rounds', '?')
    host_clock = env.get('clock') == 'host'
    L.append('rrxe bench  %s  commit %s  accelerator %s  guest: %s vCPUs, kernel %s, clocksource %s'
             % (settings.get('date', '?'), settings.get('commit', '?'), settings.get('accel', '?'),
                env.get('nproc', '?'), env.get('kernel', '?'), env.get('clocksource', '?')))
    if siw:
        L.append('A = %s, B = %s, S = siw; %s rounds A,B,S,A,B,S,...; one device on veth0 (MTU %s), perftest'
                 ' server and client both on it (same-device loopback); perftest %s'
                 % (la, lb, nrounds, env.get('mtu'), settings.get('perftest', '?')))
        L.append('siw: SoftiWARP (built into the kernel), siw0 on veth0; perftest -R (rdma_cm, connection set-up'
                 ' only, outside the timed part); its loopback is TCP over lo. A and B run without -R')
        L.append('cells: median [min-max] over the rounds that ran; A/B and A/siw = ratios of medians;'
                 ' a case that fails is not retried in later rounds; %s: siw refused the case' % NA)
    else:
        L.append('A = %s, B = %s; %s rounds A,B,A,B,...; one device on veth0 (MTU %s), perftest server and'
                 ' client both on it (same-device loopback); perftest %s'
                 % (la, lb, nrounds, env.get('mtu'), settings.get('perftest', '?')))
        L.append('cells: median [min-max] over the rounds that ran; A/B = ratio of medians;'
                 ' a case that fails is not retried in later rounds')
    L.append('time base: %s' % (
        'perftest\'s TSC cycles at the TSC rate measured on the host (%s MHz), which'
        ' tests/bench/tscshim.c hands to perftest' % env.get('host_tsc_mhz', '?') if host_clock else
        'perftest\'s own TSC-rate estimate (BENCH_CLOCK=native)'))
    if settings.get('notes'):
        L.append('notes: ' + settings['notes'].replace('_', ' '))
    L.append('')
    if limit is not None:
        L.append('Limit (source: tests/bench/limit.c in the guest, one thread, 4 KiB buffers over a 4 MiB set,'
                 ' TSC-timed):')
        L.append('  memcpy %s MiB/s; crc32_le slice-by-8 %s MiB/s (user-space copy of the kernel\'s'
                 ' algorithm); the same CRC by carry-less multiply (PCLMULQDQ) %s MiB/s; zlib crc32'
                 ' %s MiB/s' % (cell(lim['memcpy_mibs'], 0), cell(lim['crc32_sb8_mibs'], 0),
                                cell(lim['crc32_clmul_mibs'], 0), cell(lim['crc32_zlib_mibs'], 0)))
        L.append('  limit = min(memcpy, crc32_le) = %s MiB/s (median over rounds); eff = bandwidth / limit'
                 % fmt(limit, 0))
        own = [d for d in icrc if d.get('driver') == 'rrxe']
        if own:
            using = sorted(set(d.get('icrc_using', '?') for d in own))
            L.append('  rrxe\'s ICRC in the kernel, measured at module load (4 KiB, best of 3): table %s MiB/s,'
                     ' carry-less multiply %s MiB/s; it uses %s'
                     % (cell(stats([num(d.get('icrc_table_mibs')) for d in own]), 0),
                        cell(stats([num(d.get('icrc_clmul_mibs')) for d in own]), 0), ' and '.join(using)))
        if siw:
            L.append('  siw computes no CRC (both ends leave MPA CRC off, its default): the crc32_le term does not'
                     ' bound it, and eff siw can pass 100%')
        L.append('')

    def table(title, header, lines):
        L.extend(title.split('\n'))
        widths = [max(len(str(x[i])) for x in [header] + lines) for i in range(len(header))]
        for x in [header] + lines:
            L.append('  ' + '  '.join(str(v).ljust(widths[i]) if i == 0 else str(v).rjust(widths[i])
                                      for i, v in enumerate(x)).rstrip())
        L.append('')

    def rat(a, b):
        r = ratio(a, b)
        return '%.2f' % r if r is not None else '-'

    fio_cases = [c for c in order if meta[c]['type'] == 'fio']
    if fio_cases:
        ra = sorted(set(d.get('register_always', '?') for d in nvme if d.get('status') == 'ok'))
        mib = sorted(set(d.get('mib', '?') for d in nvme if d.get('status') == 'ok'))
        fr = next((r for r in runs if r['type'] == 'fio' and r['status'] == 'ok'), {})
        lines = []
        for c, lab, metric, nd, (op, goal) in STORAGE:
            if c not in meta:
                continue
            a, b = st('A', c, metric), st('B', c, metric)
            r = ratio(a, b)
            met = '-' if r is None else ('yes' if (r >= goal if op == '>=' else r <= goal) else 'no')
            lines.append([lab, cell(a, nd, failure('A', c)), cell(b, nd, failure('B', c)),
                          '%.2f' % r if r is not None else '-', '%s %gx' % (op, goal), met])
            if siw:
                s3 = st('S', c, metric)
                lines[-1] += [cell(s3, nd, failure('S', c)), rat(a, s3)]
        table('Storage (NVMe-oF over the device, loopback): nvmet-rdma target and nvme-rdma host on the one'
              ' device,\n  namespace %s MiB of RAM (null_blk, memory-backed), nvme-rdma register_always=%s;'
              ' fio %s: libaio, O_DIRECT, one job,\n  %s s after %s s ramp-up, on the TSC at the host rate;'
              ' latency = fio\'s completion latency (clat), 4 KiB random reads at QD1.\n'
              '  goal: A/B against the goal of issue 16 (reported, not asserted)'
              % ('/'.join(mib) or '?', '/'.join(ra) or '?', settings.get('fio', '?'),
                 fr.get('fio_secs', '?'), fr.get('ramp', '?')),
              ['figure', 'A ' + la, 'B ' + lb, 'A/B', 'goal', 'met'] + (['siw', 'A/siw'] if siw else []),
              lines)

    bw_cases = [c for c in order if meta[c]['type'] == 'bw']
    rate_cases = [c for c in order if meta[c]['type'] == 'rate']
    lat_cases = [c for c in order if meta[c]['type'] == 'lat']
    if bw_cases:
        lines = []
        for c in bw_cases:
            a, b = st('A', c, 'bw_mibs'), st('B', c, 'bw_mibs')
            ea = '%.1f%%' % (100 * a['median'] / limit) if a and limit else '-'
            eb = '%.1f%%' % (100 * b['median'] / limit) if b and limit else '-'
            row = [c, cell(a, 1, failure('A', c)), cell(b, 1, failure('B', c)), rat(a, b)]
            if siw:
                s3 = st('S', c, 'bw_mibs')
                row += [cell(s3, 1, failure('S', c)), rat(a, s3)]
            row += [ea, eb]
            if siw:
                row.append('%.1f%%' % (100 * s3['median'] / limit) if s3 and limit else '-')
            lines.append(row)
        table('Bandwidth, MiB/s: bytes (iterations x size) over the -D window (%g s on the guest clock),'
              ' timed by perftest with the TSC' % window,
              ['case', 'A ' + la, 'B ' + lb, 'A/B'] + (['siw', 'A/siw'] if siw else []) + ['eff A', 'eff B']
              + (['eff siw'] if siw else []), lines)
    if rate_cases:
        lines = []
        for c in rate_cases:
            a, b = st('A', c, 'mpps'), st('B', c, 'mpps')
            lines.append([c, cell(a, 4, failure('A', c)), cell(b, 4, failure('B', c)), rat(a, b)])
            if siw:
                s3 = st('S', c, 'mpps')
                lines[-1] += [cell(s3, 4, failure('S', c)), rat(a, s3)]
        table('Message rate, million messages/s: iterations over the TSC-timed -D window',
              ['case', 'A ' + la, 'B ' + lb, 'A/B'] + (['siw', 'A/siw'] if siw else []), lines)
    if lat_cases:
        lines = []
        for c in lat_cases:
            row = [c]
            for metric in ('lat_typical_us', 'lat_p99_us', 'lat_mean_us'):
                a, b = st('A', c, metric), st('B', c, metric)
                row += [cell(a, 1, failed('A', c)), cell(b, 1, failed('B', c)), rat(a, b)]
                if siw:
                    s3 = st('S', c, metric)
                    row += [cell(s3, 1, failed('S', c)), rat(a, s3)]
            lines.append(row)
        head = ['case']
        for m in ('typ', 'p99', 'mean'):
            head += ['%s A' % m, '%s B' % m, 'A/B'] + (['%s siw' % m, 'A/siw'] if siw else [])
        table('Latency, us one-way (half the round trip): perftest -n %s, per-iteration TSC times;'
              ' typical = median, p99 = 99th percentile, mean = average' % env.get('lat_iters', '?'),
              head, lines)
    if bw_cases or rate_cases:
        lines = []
        for c in bw_cases + rate_cases:
            row = [c]
            for metric in ('cpu_kernel_s_per_gib', 'cpu_total_s_per_gib'):
                a, b = st('A', c, metric), st('B', c, metric)
                row += [cell(a, 2, failed('A', c)), cell(b, 2, failed('B', c)), rat(a, b)]
                if siw:
                    s3 = st('S', c, metric)
                    row += [cell(s3, 2, failed('S', c)), rat(a, s3)]
            for slot, _ in slots:
                u = st(slot, c, 'cpu_kernel_util')
                row.append(fmt(u['median'], 2) if u else '-')
            lines.append(row)
        head = ['case']
        for m in ('kernel', 'total'):
            head += ['%s A' % m, '%s B' % m, 'A/B'] + (['%s siw' % m, 'A/siw'] if siw else [])
        head += ['kCPUs A', 'kCPUs B'] + (['kCPUs siw'] if siw else [])
        table('CPU per GiB moved, CPU-seconds/GiB: guest /proc/stat shares over the window x %d vCPUs'
              ' x the window\'s real length / GiB moved.\n'
              '  kernel = system+irq+softirq (the driver\'s work); total adds user time (mostly perftest'
              ' busy-polling its CQ); kCPUs = vCPUs busy in the kernel' % ncpu
              + ('; siw\'s kernel time includes its TCP over lo' if siw else ''),
              head, lines)

    # why cases failed, grouped by reason
    fails = {}
    for c in order:
        for slot, lab in slots:
            why = reason(slot, c)
            if why:
                n = sum(1 for x in status.get((slot, c), []) if x[1] == 'ok')
                fails.setdefault((lab, why), []).append(c + (' (%d ok)' % n if n else ''))
    if fails:
        L.append('Failures (first failure of each case; a failed case is %s in later rounds%s):'
                 % ('retried' if env.get('retry', '0') == '1' else 'not retried',
                    '; not supported: siw refused it, never retried' if siw else ''))
        for (lab, why), cs in fails.items():
            L.append('  %s: %s: %s' % (lab, why.replace('-', ' '), ', '.join(cs)))
        L.append('')

    # checks of the figures
    chk = []

    def spread(vals, pct=True):
        f = 100.0 if pct else 1.0
        return '%+.1f%% [%+.1f%% to %+.1f%%]' % (f * statistics.median(vals), f * min(vals), f * max(vals))

    for slot, lab in slots:
        mine = [r for r in runs if r['slot'] == slot and r['type'] != 'fio']
        nok = sum(1 for r in mine if r['status'] == 'ok')
        if not nok:
            continue
        bwc = [v for (sl, c), d in per.items() if sl == slot for v in d.get('bw_mibs_check', [])]
        fb = sum(len(d.get('fallback', [])) for (sl, c), d in per.items() if sl == slot)
        r2 = sum(1 for r in mine if 'r2-below' in r.get('note', ''))
        if bwc:
            chk.append('%s: bandwidth, probe estimate vs perftest: %s over %d runs' % (lab, spread(bwc), len(bwc)))
        chk.append('%s: perftest printed no usable figure in %d of %d runs (probe estimate used);'
                   ' its own TSC-rate fit reported r^2 < 0.9 in %d' % (lab, fb, nok, r2))
    if siw:
        # the ratios of the tables, over the cases: the medians' ratios,
        # A/B beside A/siw
        for title, metric, types in (('bandwidth', 'bw_mibs', ('bw',)), ('message rate', 'mpps', ('rate',)),
                                     ('latency, typical', 'lat_typical_us', ('lat',)),
                                     ('latency, p99', 'lat_p99_us', ('lat',))):
            cs = [c for c in order if meta[c]['type'] in types]
            if not cs:
                continue
            parts = []
            for other, olab in (('B', 'A/B'), ('S', 'A/siw')):
                rs = [x for x in (ratio(st('A', c, metric), st(other, c, metric)) for c in cs) if x is not None]
                parts.append('%s %s over %d of %d cases' % (
                    olab, ('%.2f [%.2f to %.2f]' % (statistics.median(rs), min(rs), max(rs))) if rs else '-',
                    len(rs), len(cs)))
            chk.append('ratios of medians, %s (median [range] over the cases): %s' % (title, '; '.join(parts)))
        na = [c for c in order if failure('S', c) == NA]
        cm = sum(1 for r in runs if r['slot'] == 'S' and r['status'] == 'ok' and r['type'] != 'fio')
        chk.append('siw: %d perftest runs with -R (rdma_cm) gave figures; %s' % (
            cm, ('not supported: ' + ', '.join(na)) if na else 'no case refused'))
    for slot, lab in slots:
        # issue 19's scaling goal: with 64 QPs at least SCALE_GOAL of the
        # aggregate with 4, for each size and the message rate
        parts, met = [], True
        for flab, cs in scale_series(meta):
            r64 = ratio(st(slot, cs[3], scale_metric(cs[3])), st(slot, cs[1], scale_metric(cs[1])))
            r16 = ratio(st(slot, cs[2], scale_metric(cs[2])), st(slot, cs[1], scale_metric(cs[1])))
            if r64 is None:
                met = False
            else:
                met = met and r64 >= SCALE_GOAL
            parts.append('%s %s/%s' % (flab, '%.2f' % r16 if r16 is not None else '-',
                                       '%.2f' % r64 if r64 is not None else '-'))
        if parts:
            chk.append('%s: scaling, 16 and 64 QPs over 4 (goal: 64 QPs >= %.2f): %s; %s'
                       % (lab, SCALE_GOAL, ', '.join(parts), 'met' if met else 'not met'))
    if A == 'rrxe' and B == 'rxe':
        chk += goals19(st, order, num(env.get('mtu')),
                       lim['memcpy_mibs']['median'] if lim.get('memcpy_mibs') else None, siw)
    fc = [v for d in per.values() for v in d.get('fio_clock_check', [])]
    if fc:
        chk.append('fio: its run time plus ramp-up (its clock) / real time between probes around the fio'
                   ' process (start-up included): median %.2f [%.2f to %.2f] over %d runs'
                   % (statistics.median(fc), min(fc), max(fc), len(fc)))
    for d in nvme:
        if d.get('status') != 'ok':
            chk.append('NVMe-oF round %s slot %s (%s): %s %s' % (d.get('round'), d.get('slot'), d.get('driver'),
                                                                d.get('status'), d.get('note', '')))
    gc = [v for d in per.values() for v in d.get('guest_clock', [])]
    if gc:
        chk.append('guest clock speed / real time over the windows: median %.2f [%.2f to %.2f]'
                   % (statistics.median(gc), min(gc), max(gc)))
    if lim.get('tsc_mhz') and env.get('host_tsc_mhz'):
        chk.append('limit tool: TSC %s MHz of guest-clock time vs %s MHz on the host; /proc/cpuinfo: %s MHz'
                   % (cell(lim['tsc_mhz'], 0), env['host_tsc_mhz'],
                      fmt(lim['cpuinfo_mhz']['median'], 1) if lim.get('cpuinfo_mhz') else '?'))
    if chk:
        L.append('Checks. probe estimate = bytes / (window x real seconds per guest second), from the TSC and'
                 ' the guest clock read by another process at the -D window\'s ends (noisy when the host is busy)')
        L += ['  ' + c for c in chk]
        L.append('')
    ph = []
    for r in runs:
        try:
            p = [float(x) for x in r.get('phases', '').split(',')]
        except ValueError:
            continue
        if len(p) == 4:
            ph.append((p[1] - p[0], p[2] - p[1], p[3] - p[2]))
    if ph:
        L.append('per run, guest clock, medians: server start %.1f s, client %.1f s, server end %.1f s'
                 % tuple(statistics.median(x[i] for x in ph) for i in range(3)))
    secs = [int(d['secs']) for d in slots_t if d.get('secs', '').isdigit()]
    if secs:
        L.append('time: %d driver slots, %s s each on average, guest total %s s (guest clock);'
                 ' bench wall clock %s s' % (len(secs), fmt(sum(secs) / len(secs), 0),
                                             end.get('secs', '?') if end else '?',
                                             settings.get('wall_seconds', '?')))
    if settings.get('vm_exit', '0') != '0':
        L.append('VM exit status %s (124: time limit, 125: kernel log report): the table covers what finished'
                 % settings['vm_exit'])
    text = '\n'.join(L).rstrip() + '\n'
    sys.stdout.write(text)
    with open(os.path.join(outdir, 'table.txt'), 'w') as f:
        f.write(text)

    # ---- CSV and JSON -------------------------------------------------------
    with open(os.path.join(outdir, 'results.csv'), 'w') as f:
        f.write('round,slot,driver,case,metric,value,unit,source\n')
        for r in rows:
            f.write('%s,%s,%s,%s,%s,%.6g,%s,%s\n' % (r['round'], r['slot'], r['driver'], r['case'],
                                                     r['metric'], r['value'], r['unit'], r['source']))
    summary = {'settings': settings, 'env': env, 'limit': lim, 'A': A, 'B': B, 'cases': {}}
    if siw:
        summary['S'] = 'siw'
    for c in order:
        summary['cases'][c] = {
            'test': meta[c]['test'], 'size': int(meta[c]['size']), 'qps': int(meta[c]['qps']),
            'type': meta[c]['type'],
            'A': {m: s for m, s in S.get(('A', c), {}).items()},
            'B': {m: s for m, s in S.get(('B', c), {}).items()},
            'status': {'A': status.get(('A', c), []), 'B': status.get(('B', c), [])},
        }
        if siw:
            summary['cases'][c]['S'] = {m: s for m, s in S.get(('S', c), {}).items()}
            summary['cases'][c]['status']['S'] = status.get(('S', c), [])
    with open(os.path.join(outdir, 'results.json'), 'w') as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    # ---- chart --------------------------------------------------------------
    chart(os.path.join(outdir, 'bench.png'), settings, env, la, lb, order, meta, st, failure, limit, siw)
    return 0


def fio_figures(r, m, add, tsc_mhz):
    """a storage run: fio's figures, and the clock checks from the probes"""
    def put(metric, v, unit, source):
        if v is None:
            return
        m.setdefault(metric, []).append(v)
        add(r, metric, v, unit, source)

    put('fio_mibs', num(r.get('mibs')), 'MiB/s', 'fio')
    put('fio_iops', num(r.get('iops')), 'IOPS', 'fio')
    for k in ('p50', 'p99', 'mean', 'max'):
        put('fio_clat_%s_us' % k, num(r.get('clat_%s_us' % k)), 'us', 'fio')
    p1, p2 = probe(r.get('probe1')), probe(r.get('probe2'))
    rt, ramp = num(r.get('runtime_ms')), num(r.get('ramp')) or 0
    if p1 and p2 and tsc_mhz:
        real = (p2[0] - p1[0]) / (tsc_mhz * 1e6)
        guest = (p2[1] - p1[1]) / 1e9
        if real > 0 and guest > 0:
            put('guest_clock', guest / real, 'ratio', 'guest clock / TSC')
        if real > 0 and rt:
            put('fio_clock_check', (rt / 1000 + ramp) / real, 'ratio', 'fio run time / TSC time')


SIZES = [('4k', 4096), ('64k', 65536), ('1m', 1048576)]
def ib_mtu(mtu):
    """The IB MTU a RoCE device takes on a net device of MTU `mtu` (the
    largest that leaves room for the headers, as rxe's
    eth_mtu_int_to_enum)."""
    fits = [m for m in (256, 512, 1024, 2048, 4096) if mtu is not None and m <= mtu - 128]
    return fits[-1] if fits else None


def goals19(st, order, mtu, memcpy, siw):
    """Issue 19's goals (point 5), each met or not in this run: ratios of
    medians, A = rrxe, B = C rxe, S = siw. A goal whose cases did not run
    reads 'not measured'; one set for another IB MTU says so."""
    ib = ib_mtu(mtu)
    out = []
    tally = [0, 0]

    def verdict(what, goal, cases, value, ok, at=None, show='%.2f'):
        """one line: the goal, each case's figure, met or not (a case
        without a figure is not met; one that was not run is left out,
        and the line says how many ran)"""
        got = [(c, value(c)) for c in cases if c in order]
        if at is not None and ib != at:
            word = 'set for IB MTU %d, this run is IB MTU %s' % (at, ib)
        elif not got:
            word = 'not measured'
        else:
            miss = [c for c, v in got if v is None or not ok(v)]
            word = 'not met (%s)' % ', '.join(miss) if miss else 'met'
            tally[0 if miss else 1] += 1
            if len(got) < len(cases):
                word += ' in the %d of its %d cases that ran' % (len(got), len(cases))
        figs = ', '.join('%s %s' % (c, show % v if v is not None else '-') for c, v in got)
        out.append('goal (issue 19) %s %s: %s; %s' % (what, goal, figs or 'no case', word))

    def r(x, y, metric='bw_mibs'):
        return lambda c: ratio(st(x, c, metric), st(y, c, metric))

    big = ['%s_bw-%s-q%d' % (t, s, q) for t in ('write', 'read', 'send') for s in ('64k', '1m') for q in (1, 4)]
    small = ['%s_bw-4k-q%d' % (t, q) for t in ('write', 'read', 'send') for q in (1, 4)]
    lat = ['write_lat-64', 'send_lat-64']
    verdict('bandwidth A/B at IB MTU %s, 64 KiB and 1 MiB, 1 and 4 QPs' % ib, '>= 2.5', big, r('A', 'B'),
            lambda v: v >= 2.5)
    if siw:
        verdict('bandwidth A/siw, 64 KiB and 1 MiB', '>= 1.0', big, r('A', 'S'), lambda v: v >= 1.0, at=4096)
        verdict('bandwidth A/siw at IB MTU %s, 4 KiB' % ib, '>= 1.2', small, r('A', 'S'), lambda v: v >= 1.2)
    verdict('latency 64 B typical A/B', '<= 0.5', lat, r('A', 'B', 'lat_typical_us'), lambda v: v <= 0.5)
    if siw:
        verdict('latency 64 B typical A/siw', '<= 1.0', lat, r('A', 'S', 'lat_typical_us'), lambda v: v <= 1.0)
    verdict('efficiency A at 1 MiB, 4 QPs, of memcpy (%s MiB/s)' % ('%.0f' % memcpy if memcpy else '?'),
            '>= 50%', ['%s_bw-1m-q4' % t for t in ('write', 'read', 'send')],
            lambda c: 100 * st('A', c, 'bw_mibs')['median'] / memcpy if memcpy and st('A', c, 'bw_mibs') else None,
            lambda v: v >= 50, show='%.0f%%')
    verdict('NVMe-oF bandwidth and IOPS A/B', '>= 1.5',
            ['nvme_seqread-128k-qd16', 'nvme_seqwrite-128k-qd16', 'nvme_randread-4k-qd32'],
            lambda c: ratio(st('A', c, nvme_metric(c)), st('B', c, nvme_metric(c))), lambda v: v >= 1.5)
    verdict('NVMe-oF QD1 median latency A/B', '<= 1/1.5', ['nvme_lat-4k-qd1'],
            lambda c: ratio(st('A', c, 'fio_clat_p50_us'), st('B', c, 'fio_clat_p50_us')),
            lambda v: v <= 1 / 1.5)
    return ['goals (issue 19, point 5) at IB MTU %s: %d met, %d not met, %d not measured or set for'
            ' another IB MTU' % (ib, tally[1], tally[0], len(out) - sum(tally))] + out


def nvme_metric(case):
    """the figure of a storage bandwidth or IOPS case (STORAGE)"""
    return next(m for c, _, m, _, _ in STORAGE if c == case)


# the scaling cases' QP counts, and the goal of issue 19: the aggregate
# with 64 QPs at least this share of the one with 4
SCALE_QPS = (1, 4, 16, 64)
SCALE_GOAL = 0.9


def scale_series(meta):
    """(label, [case per QP count]) of the scaling figures present: WRITE
    bandwidth per size and the 2 B message rate"""
    out = [('write %s' % lab, ['write_bw-%s-q%d' % (s, q) for q in SCALE_QPS])
           for s, lab in (('4k', '4 KiB'), ('64k', '64 KiB'), ('1m', '1 MiB'))]
    out.append(('rate 2 B', ['write_rate-2-q%d' % q for q in SCALE_QPS]))
    return [(lab, cs) for lab, cs in out if any(c in meta for c in cs[2:])]


def scale_metric(case):
    return 'mpps' if case.startswith('write_rate') else 'bw_mibs'
LAT_CASES = ['send_lat-2', 'send_lat-64', 'send_lat-4k', 'write_lat-2', 'write_lat-64', 'write_lat-4k']


def chart(path, settings, env, la, lb, order, meta, st, failure, limit, siw=False):
    """bench.png by matplotlib, and beside it bench-chart.json: each panel's
    title and the series drawn in it (what scripts/check.sh asserts on)"""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    drivers = [('A', 'A ' + la, '#1f77b4'), ('B', 'B ' + lb, '#ff7f0e')]
    if siw:
        drivers.append(('S', 'siw', '#2ca02c'))
    ctx = {'drivers': drivers, 'meta': meta, 'st': st, 'failure': failure, 'limit': limit,
           'order': order}
    panels = [functools.partial(bw_panel, t=t) for t in ('write', 'read', 'send')
              if any('%s_bw-%s-q%d' % (t, s, q) in meta for s, _ in SIZES for q in (1, 4))]
    if any(c in meta for c in LAT_CASES):
        panels.append(lat_panel)
    if limit and any(meta[c]['type'] == 'bw' for c in order):
        panels.append(eff_panel)
    if any(meta[c]['type'] == 'rate' and meta[c]['size'] == '64' for c in order):
        panels.append(rate_panel)
    if scale_series(meta):
        panels.append(scale_panel)
    if any(c in meta for c, _, _, _, _ in STORAGE):
        panels.append(nvme_panel)
    wire = wire_figures(os.path.dirname(path))
    for mtu in sorted({r['mtu'] for r in wire['rows']} if wire else ()):
        panels.append(functools.partial(wire_panel, wire=wire, mtu=mtu))
    ncol = min(3, max(1, len(panels)))
    nrow = max(1, -(-len(panels) // ncol))
    fig = plt.figure(figsize=(6.2 * ncol, 4.6 * nrow + 1.3), dpi=100)
    fig.suptitle('rrxe bench: A = %s, B = %s%s\nmedians of %s rounds, whiskers min-max; accelerator %s;'
                 ' %s; commit %s' % (la, lb, ', siw (perftest -R)' if siw else '', env.get('rounds', '?'),
                                     settings.get('accel', '?'),
                                     settings.get('date', '?')[:16], settings.get('commit', '?')),
                 fontsize=11)
    drawn = [draw(fig.add_subplot(nrow, ncol, i + 1), **ctx) for i, draw in enumerate(panels)]
    if not panels:
        fig.text(0.5, 0.5, 'no results', ha='center')
    fig.text(0.01, 0.005, 'perftest figures timed with the TSC at the host-measured rate; FAIL: the driver could'
             ' not run the case%s. One RDMA device on a veth (same-device loopback)%s. Documentation/bench.md.'
             % ('; n/a: siw does not support it' if siw else '',
                '\n"between two VMs": the wire part, every packet through the IP stack (wire.txt)' if wire else '')
             + (' Limit: min(memcpy, crc32_le), one thread: %.0f MiB/s.' % limit if limit else ''),
             fontsize=8, color='#444444')
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    fig.savefig(path, metadata={'Title': 'rrxe bench'})
    plt.close(fig)
    with open(os.path.splitext(path)[0] + '-chart.json', 'w') as f:
        json.dump({'png': os.path.basename(path), 'software': 'matplotlib ' + matplotlib.__version__,
                   'panels': drawn}, f, indent=1)


def wire_figures(outdir):
    """The wire part's figures (wire.py's wire.json in outdir), or None."""
    try:
        with open(os.path.join(outdir, 'wire.json')) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def wire_panel(ax, wire, mtu, **_):
    """the wire part's cases at one eth0 MTU, as wire.png draws them"""
    import wire as wire_py
    return wire_py.mtu_panel(ax, wire['rows'], wire['drivers'], mtu)


def med(s):
    return (s['median'], s['min'], s['max']) if s else None


def bw_panel(ax, drivers, meta, st, t, **_):
    """one test's bandwidth by message size, a line per driver and QP count"""
    series = []
    for slot, lab, color in drivers:
        for q, style in ((1, '-'), (4, '--')):
            names = ['%s_bw-%s-q%d' % (t, s, q) for s, _ in SIZES]
            if not any(n in meta for n in names):
                continue
            pts = [(size, med(st(slot, n, 'bw_mibs'))) for (_, size), n in zip(SIZES, names)]
            xs = [x for x, v in pts if v]
            ys = [v[0] for x, v in pts if v]
            err = [[v[0] - v[1] for x, v in pts if v], [v[2] - v[0] for x, v in pts if v]]
            name = '%s, %d QP' % (lab, q)
            ax.errorbar(xs, ys, yerr=err, fmt='o' + style, color=color, capsize=3, label=name)
            series.append({'label': name, 'x': [x for x, _ in pts],
                           'y': [v[0] if v else None for _, v in pts]})
    ax.set_xscale('log', base=2)
    ax.set_xticks([size for _, size in SIZES], ['4 KiB', '64 KiB', '1 MiB'])
    ax.set_ylim(bottom=0)
    ax.set_title('ib_%s_bw: bandwidth by message size' % t)
    ax.set_ylabel('MiB/s')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return {'title': ax.get_title(), 'kind': 'bandwidth', 'series': series}


def grouped_bars(ax, groups, drivers, values, failed, log=False):
    """bars per group, one per driver; values[slot] = [(median, min, max)|None];
    failed[slot] = [failure()]: FAIL, or n/a where siw does not support it"""
    w = 0.8 / len(drivers)
    for i, (slot, lab, color) in enumerate(drivers):
        xs = [g + (i - (len(drivers) - 1) / 2) * w for g in range(len(groups))]
        first = True
        for x, v, fl in zip(xs, values[slot], failed[slot]):
            if v:
                ax.bar(x, v[0], w, color=color, yerr=[[v[0] - v[1]], [v[2] - v[0]]], capsize=2,
                       label=lab if first else None)
                first = False
            elif fl:
                ax.text(x, 0, 'n/a' if fl == NA else 'FAIL', rotation=90, ha='center', va='bottom', fontsize=8,
                        color=color)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    if log:
        ax.set_yscale('log')
    ax.grid(axis='y', alpha=0.3)


def lat_panel(ax, drivers, meta, st, failure, **_):
    cases = [c for c in LAT_CASES if c in meta]
    vals = {s: [med(st(s, c, 'lat_typical_us')) for c in cases] for s, _, _ in drivers}
    failed = {s: [failure(s, c) for c in cases] for s, _, _ in drivers}
    grouped_bars(ax, [c.replace('_lat-', '\n').replace('4k', '4K') + ' B' for c in cases], drivers, vals,
                 failed, log=True)
    series = []
    w = 0.8 / len(drivers)
    for i, (slot, lab, color) in enumerate(drivers):
        p99 = [(st(slot, c, 'lat_p99_us') or {}).get('median') for c in cases]
        xs = [g + (i - (len(drivers) - 1) / 2) * w for g in range(len(cases))]
        ax.plot([x for x, v in zip(xs, p99) if v], [v for v in p99 if v], '_', color='black',
                markersize=12, mew=2, label='p99' if i == 0 else None)
        series.append({'label': lab + ' typical', 'x': cases, 'y': [v[0] if v else None for v in vals[slot]]})
        series.append({'label': lab + ' p99', 'x': cases, 'y': p99})
    ax.set_title('latency, one-way: bar = typical, dash = p99')
    ax.set_ylabel('us (log)')
    ax.legend(fontsize=8)
    return {'title': ax.get_title(), 'kind': 'latency', 'series': series}


def eff_panel(ax, drivers, meta, st, failure, limit, order, **_):
    cases = [c for c in order if meta[c]['type'] == 'bw']
    vals = {s: [tuple(100 * x / limit for x in v) if v else None
                for v in (med(st(s, c, 'bw_mibs')) for c in cases)] for s, _, _ in drivers}
    failed = {s: [failure(s, c) for c in cases] for s, _, _ in drivers}
    grouped_bars(ax, cases, drivers, vals, failed)
    ax.tick_params(axis='x', labelrotation=90)
    ax.axhline(100, color='black', lw=1, ls=':')
    ax.set_title('efficiency: bandwidth / limit (%.0f MiB/s)' % limit)
    ax.set_ylabel('% of the limit')
    ax.legend(fontsize=8)
    return {'title': ax.get_title(), 'kind': 'efficiency',
            'series': [{'label': lab, 'x': cases, 'y': [v[0] if v else None for v in vals[s]]}
                       for s, lab, _ in drivers]}


def scale_panel(ax, drivers, meta, st, **_):
    """each figure with 1 to 64 QPs relative to its value with 4 QPs, a line
    per driver and figure"""
    series = []
    styles = ['-', '--', ':', '-.']
    for slot, lab, color in drivers:
        for (flab, cs), style in zip(scale_series(meta), styles):
            base = st(slot, cs[1], scale_metric(cs[1]))
            ys = [None] * len(cs)
            if base and base['median'] > 0:
                ys = [(v['median'] / base['median']) if v else None
                      for v in (st(slot, c, scale_metric(c)) for c in cs)]
            pts = [(q, y) for q, y in zip(SCALE_QPS, ys) if y is not None]
            name = '%s, %s' % (lab, flab)
            ax.plot([q for q, _ in pts], [y for _, y in pts], 'o' + style, color=color, label=name)
            series.append({'label': name, 'x': list(SCALE_QPS), 'y': ys})
    ax.set_xscale('log', base=2)
    ax.set_xticks(list(SCALE_QPS), [str(q) for q in SCALE_QPS])
    ax.axhline(SCALE_GOAL, color='black', lw=1, ls=':')
    ax.set_ylim(bottom=0)
    ax.set_title('scaling: aggregate over QPs / with 4 QPs')
    ax.set_xlabel('QPs')
    ax.set_ylabel('ratio to 4 QPs')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    return {'title': ax.get_title(), 'kind': 'scaling', 'series': series}


def rate_panel(ax, drivers, meta, st, failure, order, **_):
    cases = [c for c in order if meta[c]['type'] == 'rate' and meta[c]['size'] == '64']
    vals = {s: [med(st(s, c, 'mpps')) for c in cases] for s, _, _ in drivers}
    failed = {s: [failure(s, c) for c in cases] for s, _, _ in drivers}
    grouped_bars(ax, cases, drivers, vals, failed)
    ax.set_title('message rate, 64 B writes')
    ax.set_ylabel('million messages/s')
    ax.legend(fontsize=8)
    return {'title': ax.get_title(), 'kind': 'rate',
            'series': [{'label': lab, 'x': cases, 'y': [v[0] if v else None for v in vals[s]]}
                       for s, lab, _ in drivers]}


def nvme_panel(ax, drivers, meta, st, failure, **_):
    """the storage rows: each row's bars relative to its larger one, the figure written at the bar"""
    rows = [(c, lab, metric, nd) for c, lab, metric, nd, _ in STORAGE if c in meta]
    h = 0.8 / len(drivers)
    series = []
    for i, (slot, lab, color) in enumerate(drivers):
        ys, vs = [], []
        for j, (c, _, metric, nd) in enumerate(rows):
            v = (st(slot, c, metric) or {}).get('median')
            top = max([(st(s, c, metric) or {}).get('median') or 0 for s, _, _ in drivers]) or 1
            y = j + (i - (len(drivers) - 1) / 2) * h
            if v is not None:
                ax.barh(y, v / top, h, color=color, label=lab if j == 0 else None)
                ax.text(v / top, y, ' ' + fmt(v, nd), va='center', fontsize=7)
            elif failure(slot, c):
                ax.text(0, y, ' n/a' if failure(slot, c) == NA else ' FAIL', va='center', fontsize=7, color=color)
            vs.append(v)
            ys.append(c)
        series.append({'label': lab, 'x': [r[1] for r in rows], 'y': vs})
    ax.set_yticks(range(len(rows)), [r[1] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.35)
    ax.set_xticks([])
    ax.set_title('NVMe-oF over the device (fio)')
    ax.legend(fontsize=8, loc='lower right')
    return {'title': ax.get_title(), 'kind': 'nvme', 'series': series}


if __name__ == '__main__':
    sys.exit(main())
