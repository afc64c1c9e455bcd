#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest script: A/B of module builds in one guest, taking turns. For a
# change to the data path, build the module before and after (each
# rdma_rrxe.ko in its own directory), and compare with C rxe in the same
# VM run:
#
#   scripts/vm.sh --variant release --smp 2,sockets=2,cores=1 --name ab \
#       tests/bench/ab.sh VARIANTS="dir-a dir-b out/bench/ko/rdma_rxe.ko" \
#       [TEST=ib_write_bw] [SIZE=65536] [EXTRA="-q 4"] [REPS=2] [DUR=3] [MTU=1500]
#
# A variant is a directory holding rdma_rrxe.ko, or a path to a C
# rdma_rxe.ko. DIR@KNOB=V,KNOB=V also sets, after loading it, rrxe's
# writable module parameters (/sys/module/rdma_rrxe/parameters/: zcopy)
# or its workqueue's knobs (/sys/devices/virtual/workqueue/rrxe/: nice,
# affinity_scope, ...), e.g. out/prof/v41@nice=-20,affinity_scope=system
# or out/release@zcopy=0. Each run
# prints one line: perftest's result row (its iteration count over the -D window is the figure to compare; its rates
# need its clock, see bench.md) and the guest's system, user and idle
# ticks over the run (how many vCPUs were busy, and where). COUNTERS=1
# also prints the device's non-zero port counters after each run.
set -u
for a in "$@"; do declare -x "$a"; done
VARIANTS=${VARIANTS:?VARIANTS=\"dir ... path/rdma_rxe.ko\"}
TEST=${TEST:-ib_write_bw}
SIZE=${SIZE:-65536}
EXTRA=${EXTRA:-}
REPS=${REPS:-2}
DUR=${DUR:-3}
COUNTERS=${COUNTERS:-}
. tests/bench/lib.sh
bench_setup || exit 1
echo "# $TEST -s $SIZE $EXTRA -D $DUR, $REPS rounds, $(nproc) CPUs"
for r in $(seq "$REPS"); do
	for v in $VARIANTS; do
		dir=${v%%@*} knobs=
		[ "$dir" != "$v" ] && knobs=${v#*@}
		case $dir in
		*.ko) ko=$dir ;;
		*) ko=$dir/rdma_rrxe.ko ;;
		esac
		dev_up "$ko" || exit 1
		for k in ${knobs//,/ }; do
			f=/sys/module/rdma_rrxe/parameters/${k%%=*}
			[ -e "$f" ] || f=/sys/devices/virtual/workqueue/rrxe/${k%%=*}
			echo "${k#*=}" >"$f" || echo "# $v: cannot set $k"
		done
		$TEST -d $DEV -i 1 -x "$GIDX" -F -s "$SIZE" -D "$DUR" $EXTRA >/tmp/server.log 2>&1 &
		sleep 1.5
		read -r _ u1 _ s1 i1 _ </proc/stat
		$TEST -d $DEV -i 1 -x "$GIDX" -F -s "$SIZE" -D "$DUR" $EXTRA 127.0.0.1 >/tmp/client.log 2>&1
		read -r _ u2 _ s2 i2 _ </proc/stat
		wait
		row=$(awk '/^ *[0-9]+ +[0-9]+/ { print; exit }' /tmp/client.log)
		echo "AB $v round $r: ${row:-no result} | sys $((s2 - s1)) user $((u2 - u1)) idle $((i2 - i1))"
		if [ -n "$COUNTERS" ]; then
			echo "   counters: $(cd /sys/class/infiniband/$DEV/ports/1/hw_counters && grep -v '^0$' * 2>/dev/null | tr '\n' ' ')"
		fi
		dev_down
	done
done
