#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest script: a perf profile of one perftest run on one device, for each
# driver given, with the module's own functions and, optionally, where
# inside one function the samples fall.
#
#   scripts/vm.sh --variant release --smp 2,sockets=2,cores=1 --name prof \
#       tests/bench/profile.sh KO=out/bench/ko [DRIVERS="rrxe rxe"] \
#       [TEST=ib_write_bw] [SIZE=65536] [EXTRA="-q 4"] [ANN=run_locked]
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
# The in-tree rxe provider only (see tests/guest/lib.sh).
mkdir -p /tmp/ibv.d && echo "driver rxe" >/tmp/ibv.d/rxe.driver && mount --bind /tmp/ibv.d /etc/libibverbs.d
ip link add veth0 type veth peer name veth1
ip addr add 10.0.0.1/24 dev veth0
ip link set veth0 up
ip link set veth1 up
GID=0000:0000:0000:0000:0000:ffff:0a00:0001
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
report() { perf report -i "$1" --stdio "${@:2}" 2>/dev/null | grep -v '^#' | grep -v '^$'; }
for d in $DRIVERS; do
	case $d in
	rxe) ko=$KO/rdma_rxe.ko mod=rdma_rxe dev=rxe0 ;;
	rrxe) ko=$KO/rdma_rrxe.ko mod=rdma_rrxe dev=rrxe0 ;;
	*) echo "unknown driver $d"; exit 2 ;;
	esac
	insmod "$ko" || exit 1
	rdma link add $dev type $d netdev veth0
	sleep 2
	gidx=$(grep -lsx "$GID" /sys/class/infiniband/$dev/ports/1/gids/* | head -n 1)
	gidx=${gidx##*/}
	echo "== $d ($dev, GID index $gidx): $TEST -s $SIZE $EXTRA"
	$TEST -d $dev -i 1 -x "$gidx" -F -s "$SIZE" -D 6 $EXTRA >/tmp/server.log 2>&1 &
	sleep 2
	perf record -a -e cpu-clock -F 999 -o /tmp/perf.$d -- sleep 5 >/tmp/perf.log 2>&1 &
	$TEST -d $dev -i 1 -x "$gidx" -F -s "$SIZE" -D 6 $EXTRA 127.0.0.1 >/tmp/client.log 2>&1
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
	rdma link delete $dev
	rmmod $mod
done
