#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: rrxe against C rdma_rxe, A/B/A/B in one VM (release kernel),
# and siw (SoftiWARP, built into the guest kernel) as a third column; then
# the wire part: the same drivers between two VMs (tests/bench/twohost.sh,
# tests/bench/wire.py), where every packet crosses the IP stack and the
# link. Reports; does not pass or fail (exit 0 unless the harness itself
# broke). See Documentation/bench.md.
#
# Settings (environment):
#   BENCH_ROUNDS=5          rounds; each runs every case on A, then on B
#   BENCH_CASES='*'         comma-separated globs over case names, e.g.
#                           'write_bw-*,*_lat-64' (names: Documentation/bench.md)
#   BENCH_A=rrxe BENCH_B=rxe  the drivers in the two slots; BENCH_A=rxe
#                           runs C rxe against itself (the sanity baseline);
#                           BENCH_B=base with BENCH_BASE_KO=PATH runs another
#                           rrxe build (for this release kernel) in slot B:
#                           a change against its baseline in one run
#   BENCH_SIW=1             0: no siw slot (the third column, S: siw on
#                           veth0, perftest -R); A and B as without it
#   BENCH_DURATION=2        perftest -D seconds per bandwidth and rate run (latency: -n)
#   BENCH_MARGIN=0          perftest -f: warm-up/cool-down seconds inside -D
#   BENCH_LAT_ITERS=1000    perftest -n for the latency percentiles
#   BENCH_MTU=1500          veth MTU (IB MTU 1024; 9000 gives 4096)
#   BENCH_NVME_MIB=256      size of the storage cases' RAM-backed namespace
#   BENCH_FIO_SECONDS       fio run time per storage case (default
#                           max(BENCH_DURATION, 5)), after 1 s of ramp-up
#   BENCH_RETRY_FAILED=0    1: retry a case in later rounds after it failed
#   BENCH_CLOCK=host        perftest's TSC rate: host = measured on the host and
#                           given to perftest by tests/bench/tscshim.c; native =
#                           perftest's own estimate (often 0 under TCG)
#   BENCH_SMP=2,sockets=2,cores=1  guest CPUs (the guest kernel has no ACPI and
#                           counts CPUs from SeaBIOS's MP table, which lists
#                           one per socket: plain "2" boots with one CPU)
#   BENCH_OUT=out/bench     where everything goes
#   BENCH_TIMEOUT           VM time limit in seconds (default from the cases)
#   BENCH_WIRE=1            0: no wire part
#   BENCH_WIRE_ROUNDS=2     its rounds; each runs every case on every driver
#   BENCH_WIRE_DURATION=4   its perftest -D seconds (latency: 1000 iterations)
#   BENCH_WIRE_MTUS='1500 9000'  the eth0 MTUs it runs at, in turn
#   BENCH_WIRE_CASES        perftest TEST:SIZE[:QPS], space-separated (default
#                           below: WRITE at 4 KiB, 64 KiB over 1 and 4 QPs
#                           and 1 MiB, READ and SEND at 64 KiB, WRITE latency)
#   RRXE_ACCEL=tcg|kvm      force the accelerator (scripts/accel.sh)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
cd "$top"
out=${BENCH_OUT:-$top/out/bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rounds=${BENCH_ROUNDS:-5}
cases=${BENCH_CASES:-*}
a=${BENCH_A:-rrxe} b=${BENCH_B:-rxe}
siw=${BENCH_SIW:-1}
case "$siw" in 0 | 1) ;; *) echo "bench: BENCH_SIW must be 0 or 1, not '$siw'" >&2; exit 2 ;; esac
nslots=$((2 + siw))
dur=${BENCH_DURATION:-2} margin=${BENCH_MARGIN:-0}
lat_iters=${BENCH_LAT_ITERS:-1000} mtu=${BENCH_MTU:-1500}
retry=${BENCH_RETRY_FAILED:-0}
clock=${BENCH_CLOCK:-host}
wire=${BENCH_WIRE:-1}
wire_rounds=${BENCH_WIRE_ROUNDS:-2} wire_dur=${BENCH_WIRE_DURATION:-4}
wire_mtus=${BENCH_WIRE_MTUS:-1500 9000}
wire_cases=${BENCH_WIRE_CASES:-ib_write_bw:4096 ib_write_bw:65536 ib_write_bw:65536:4 ib_write_bw:1048576 ib_read_bw:65536 ib_send_bw:65536 ib_write_lat:64}
smp=${BENCH_SMP:-2,sockets=2,cores=1}
for d in "$a" "$b"; do
	case "$d" in rxe | rrxe) ;;
	base)
		[ -f "${BENCH_BASE_KO:-}" ] || { echo "bench: slot 'base' needs BENCH_BASE_KO=PATH of an rdma_rrxe.ko" >&2; exit 2; }
		;;
	*) echo "bench: BENCH_A/BENCH_B must be rxe, rrxe or base, not '$d'" >&2; exit 2 ;;
	esac
done
t0=$(date +%s)
say() { echo "bench: $*"; }

rm -rf "$out/ko" "$out/bin" "$out/vm"
mkdir -p "$out/ko" "$out/bin"
notes=()

say "release kernel (built if the cache has none)"
kdir=$(scripts/kernel.sh build release)
say "modules"
rrxe_ko=out/release/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
stamp=$(mktemp)
if scripts/module.sh release >"$out/module-build.log" 2>&1; then
	cp "$rrxe_ko" "$out/ko/"
elif [ "$rrxe_ko" -nt "$stamp" ]; then
	# module.sh fails on any warning; the module itself was built
	say "rrxe module built with warnings (see ${out#"$top"/}/module-build.log); measuring it anyway"
	cp "$rrxe_ko" "$out/ko/"
	notes+=("rrxe module built with warnings")
else
	say "rrxe module build FAILED (see ${out#"$top"/}/module-build.log): rrxe runs will fail"
	notes+=("rrxe module build failed")
fi
rm -f "$stamp"
cp "$kdir/drivers/infiniband/sw/rxe/rdma_rxe.ko" "$out/ko/"
# A baseline rrxe build for slot "base": it must be for this kernel.
if [ "$a" = base ] || [ "$b" = base ]; then
	vm=$(modinfo -F vermagic "$BENCH_BASE_KO")
	[ "${vm%% *}" = "$(cat "$kdir/include/config/kernel.release")" ] ||
		{ echo "bench: BENCH_BASE_KO is for '${vm%% *}', not the release kernel" >&2; exit 2; }
	cp "$BENCH_BASE_KO" "$out/ko/rdma_rrxe-base.ko"
fi
# the storage cases load the kernel's ULP modules from its modroot/
echo "$kdir" >"$out/kernel-dir"
(cd "$out/ko" && sha256sum ./*.ko >SHA256SUMS)

say "limit tool and perftest clock shim"
gcc -O2 -Wall -o "$out/bin/limit" tests/bench/limit.c -lz 2>"$out/tools-build.log" ||
	gcc -O2 -Wall -o "$out/bin/limit" tests/bench/limit.c >>"$out/tools-build.log" 2>&1
gcc -O2 -Wall -shared -fPIC -o "$out/bin/tscshim.so" tests/bench/tscshim.c -ldl >>"$out/tools-build.log" 2>&1

# The TSC rate, measured here where the clock is sound: under TCG the
# guest's rdtsc reads this TSC, and the guest's own clock may run slow.
read -r c0 n0 < <("$out/bin/limit" now)
sleep 1
read -r c1 n1 < <("$out/bin/limit" now)
tsc_mhz=$(awk -v c="$((c1 - c0))" -v n="$((n1 - n0))" 'BEGIN { printf "%.2f", c / n * 1000 }')
say "host TSC: $tsc_mhz MHz"

accel=$(scripts/accel.sh release)
others=$(pgrep -c -f '^qemu-system' || true)
say "accelerator: $accel; other QEMU processes running now: $others; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$others" -gt 0 ] && notes+=("$others other QEMU process(es) were running when the bench started: expect wider spread")

# The guest runs from the repository share and reads the modules and the
# limit tool from BENCH_OUT, so BENCH_OUT must be inside the repository.
case "$out/" in "$top/"*) ;; *) echo "bench: BENCH_OUT must be inside the repository" >&2; exit 2 ;; esac
rel=${out#"$top"/}

ncases=$(BENCH_CASES=$cases /usr/bin/python3 tests/bench/report.py --count-cases)
nnvme=$(BENCH_CASES=$cases /usr/bin/python3 tests/bench/report.py --count-cases 'nvme_*')
nvme_mib=${BENCH_NVME_MIB:-256}
fio_secs=${BENCH_FIO_SECONDS:-$((dur > 5 ? dur : 5))}
# per case and slot: a few seconds of set-up plus the run(s); latency runs
# twice; a storage case is one fio run; the NVMe-oF set-up once per slot
budget=${BENCH_TIMEOUT:-$((300 + rounds * nslots * ((ncases - nnvme) * (2 * dur + 12 + lat_iters / 100) +
	nnvme * (fio_secs + 20) + (nnvme > 0 ? 90 : 0))))}
say "$rounds rounds x $nslots slots ($a, $b$([ "$siw" = 1 ] && echo ", siw")) x $ncases cases; VM time limit ${budget}s"

cat >"$out/settings.txt" <<EOF
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- drivers include 2>/dev/null || echo +dirty)
accel=$accel
host_cpus=$(nproc)
host_cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/ /_/g')
other_qemu_at_start=$others
loadavg_at_start=$(cut -d' ' -f1 /proc/loadavg)
perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo unknown)
fio=$(fio --version 2>/dev/null || echo unknown)
nvme_cli=$(dpkg-query -W -f='${Version}' nvme-cli 2>/dev/null || echo unknown)
host_tsc_mhz=$tsc_mhz
smp=$smp
siw=$siw
notes=$(IFS=';'; echo "${notes[*]:-}" | tr ' ' '_')
EOF

set +e
scripts/vm.sh --variant release --smp "$smp" --mem 2G --timeout "$budget" --name bench --out "$out/vm" \
	tests/bench/guest.sh ROUNDS="$rounds" CASES="$cases" A="$a" B="$b" SIW="$siw" DURATION="$dur" \
	MARGIN="$margin" LAT_ITERS="$lat_iters" MTU="$mtu" RETRY_FAILED="$retry" OUT="$rel" \
	HOST_TSC_MHZ="$tsc_mhz" CLOCK="$clock" NVME_MIB="$nvme_mib" FIO_SECONDS="$fio_secs"
vmrc=$?
set -e
{
	echo "vm_exit=$vmrc"
	echo "other_qemu_at_end=$(pgrep -c -f '^qemu-system' || true)"
	echo "loadavg_at_end=$(cut -d' ' -f1 /proc/loadavg)"
	echo "wall_seconds=$(($(date +%s) - t0))"
} >>"$out/settings.txt"
case $vmrc in
0) ;;
124) say "the VM hit its time limit: the report covers the runs that finished" ;;
125) say "the guest kernel log shows a report (BUG/WARNING/...): $out/vm/console.log" ;;
*) say "the guest script ended with status $vmrc" ;;
esac
[ -s "$out/vm/raw.txt" ] || { echo "bench: no results from the guest ($out/vm/output.log)" >&2; exit 1; }

/usr/bin/python3 tests/bench/report.py "$out"

# The wire part: rrxe, C rxe and siw taking turns between two VMs.
files="table.txt results.csv results.json bench.png vm/"
if [ "$wire" = 1 ] && [ "$a" = rrxe ] && [ "$b" = rxe ]; then
	drivers="rrxe rxe$([ "$siw" = 1 ] && echo " siw")"
	nwire=$(($(wc -w <<<"$wire_cases") * $(wc -w <<<"$drivers") * $(wc -w <<<"$wire_mtus") * wire_rounds))
	wbudget=$((300 + nwire * (wire_dur + 25)))
	say "wire: $wire_rounds rounds x ($drivers) x MTU $wire_mtus x $(wc -w <<<"$wire_cases") cases between two VMs; time limit ${wbudget}s"
	rm -rf "$out/wire-a" "$out/wire-b"
	set +e
	scripts/vm2.sh --variant release --quiet --timeout "$wbudget" --out "$out/wire" \
		tests/bench/twohost.sh tests/bench/twohost.sh ROUNDS="$wire_rounds" DUR="$wire_dur" \
		MTUS="$wire_mtus" DRIVERS="$drivers" CASES="$wire_cases" \
		SHIM="$([ "$clock" = host ] && echo "$rel/bin/tscshim.so")" TSC_MHZ="$tsc_mhz" >"$out/wire.log" 2>&1
	wrc=$?
	set -e
	echo "wire_vm_exit=$wrc" >>"$out/settings.txt"
	[ "$wrc" = 0 ] || say "the wire pair ended with status $wrc (see ${out#"$top"/}/wire.log): the table covers the runs that finished"
	# (report.py again: bench.png gets the wire part's panels.)
	/usr/bin/python3 tests/bench/wire.py "$out" && /usr/bin/python3 tests/bench/report.py "$out" >/dev/null ||
		say "no wire figures"
	files+=" wire.txt wire.csv wire.json wire-a/ wire-b/"
elif [ "$wire" = 1 ]; then
	say "wire part skipped: it compares rrxe with C rxe (BENCH_A=rrxe BENCH_B=rxe)"
fi
say "total $(($(date +%s) - t0)) s; files in ${out#"$top"/}/: $files"
