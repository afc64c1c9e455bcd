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
#       [TEST=ib_write_bw] [SIZE=65536] [EXTRA="-q 4"] [REPS=2] [DUR=3]
#
# A variant is a directory holding rdma_rrxe.ko, or a path to a C
# rdma_rxe.ko. Each run prints one line: perftest's result row (its
# iteration count over the -D window is the figure to compare; its rates
# need its clock, see bench.md) and the guest's system, user and idle
# ticks over the run (how many vCPUs were busy, and where).
set -u
for a in "$@"; do declare -x "$a"; done
VARIANTS=${VARIANTS:?VARIANTS=\"dir ... path/rdma_rxe.ko\"}
TEST=${TEST:-ib_write_bw}
SIZE=${SIZE:-65536}
EXTRA=${EXTRA:-}
REPS=${REPS:-2}
DUR=${DUR:-3}
mkdir -p /tmp/ibv.d && echo "driver rxe" >/tmp/ibv.d/rxe.driver && mount --bind /tmp/ibv.d /etc/libibverbs.d
ip link add veth0 type veth peer name veth1
ip addr add 10.0.0.1/24 dev veth0
ip link set veth0 up
ip link set veth1 up
GID=0000:0000:0000:0000:0000:ffff:0a00:0001
echo "# $TEST -s $SIZE $EXTRA -D $DUR, $REPS rounds, $(nproc) CPUs"
for r in $(seq "$REPS"); do
	for v in $VARIANTS; do
		case $v in
		*rdma_rxe.ko) ko=$v mod=rdma_rxe dev=rxe0 t=rxe ;;
		*) ko=$v/rdma_rrxe.ko mod=rdma_rrxe dev=rrxe0 t=rrxe ;;
		esac
		insmod "$ko" || exit 1
		rdma link add $dev type $t netdev veth0
		sleep 1
		gidx=$(grep -lsx "$GID" /sys/class/infiniband/$dev/ports/1/gids/* | head -n 1)
		gidx=${gidx##*/}
		$TEST -d $dev -i 1 -x "$gidx" -F -s "$SIZE" -D "$DUR" $EXTRA >/tmp/server.log 2>&1 &
		sleep 1.5
		read -r _ u1 _ s1 i1 _ </proc/stat
		$TEST -d $dev -i 1 -x "$gidx" -F -s "$SIZE" -D "$DUR" $EXTRA 127.0.0.1 >/tmp/client.log 2>&1
		read -r _ u2 _ s2 i2 _ </proc/stat
		wait
		row=$(awk '/^ *[0-9]+ +[0-9]+/ { print; exit }' /tmp/client.log)
		echo "AB $v round $r: ${row:-no result} | sys $((s2 - s1)) user $((u2 - u1)) idle $((i2 - i1))"
		rdma link delete $dev
		rmmod $mod
	done
done
