#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest script: a perf profile of one perftest run on one device, for each
# driver given, with the module's own functions and, optionally, where
# inside one function the samples fall.
#
#   scripts/vm.sh --variant release --smp 2,sockets=2,cores=1 --name prof \
#       tests/bench/profile.sh KO=out/bench/ko [DRIVERS="rrxe rxe"] \
#       [TEST=ib_write_bw] [SIZE=65536] [EXTRA="-q 4"] [ANN=run_locked] [MTU=1500]
#
# KO is a directory holding rdma_rrxe.ko and rdma_rxe.ko (make bench leaves
# both in out/bench/ko). perf samples the software cpu-clock at 999 Hz on
# both vCPUs for 5 s in the middle of a 6 s run (there is no PMU under
# TCG). Module symbols come from /proc/kallsyms. ANN names a function of
# rdma_rrxe: its samples are listed by offset, to be matched against
# `objdump -dr` of the same .ko. Under TCG, samples taken while interrupts
# were off are delivered where they come back on: the instruction after a
# spin_unlock_irqrestore collects the time of the whole locked section.
set -u
for a in "$@"; do declare -x "$a"; done
KO=${KO:-out/bench/ko}
DRIVERS=${DRIVERS:-rrxe rxe}
TEST=${TEST:-ib_write_bw}
SIZE=${SIZE:-65536}
EXTRA=${EXTRA:-}
ANN=${ANN:-}
. tests/bench/lib.sh
bench_setup || exit 1
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
report() { perf report -i "$1" --stdio "${@:2}" 2>/dev/null | grep -v '^#' | grep -v '^$'; }
for d in $DRIVERS; do
	case $d in
	rxe) mod=rdma_rxe ;;
	rrxe) mod=rdma_rrxe ;;
	*) echo "unknown driver $d"; exit 2 ;;
	esac
	dev_up "$KO/$mod.ko" || exit 1
	echo "== $d ($DEV, GID index $GIDX): $TEST -s $SIZE $EXTRA"
	$TEST -d $DEV -i 1 -x "$GIDX" -F -s "$SIZE" -D 6 $EXTRA >/tmp/server.log 2>&1 &
	sleep 2
	perf record -a -e cpu-clock -F 999 -o /tmp/perf.$d -- sleep 5 >/tmp/perf.log 2>&1 &
	$TEST -d $DEV -i 1 -x "$GIDX" -F -s "$SIZE" -D 6 $EXTRA 127.0.0.1 >/tmp/client.log 2>&1
	wait
	tail -n 3 /tmp/client.log
	echo "-- by object"
	report /tmp/perf.$d --sort dso | head -8
	echo "-- by process"
	report /tmp/perf.$d --sort comm | head -8
	echo "-- kernel functions"
	report /tmp/perf.$d --sort sym -d '[kernel.kallsyms]' | head -30
	echo "-- module functions"
	report /tmp/perf.$d --sort sym -d "[$mod]" | head -40
	if [ -n "$ANN" ] && [ $d = rrxe ]; then
		echo "-- samples in $ANN by offset"
		perf script -i /tmp/perf.$d -F ip,sym,symoff 2>/dev/null | grep "$ANN" | sort | uniq -c | sort -rn | head -40
	fi
	dev_down
done
