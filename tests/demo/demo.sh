#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What `make run` shows: two rrxe devices, one per end of a veth pair (the
# far end in its own network namespace, as on a second host), and traffic
# between them with rping and ib_write_bw.
. tests/guest/lib.sh

failed=0
step() { printf '\n### %s\n' "$*"; }

step "load rdma_rrxe"
insmod "$RRXE_KO" && lsmod | grep rdma_rrxe

step "a veth pair: veth0 (10.0.0.1) here, veth1 (10.0.0.2) in namespace 'peer'"
ip netns add peer
ip link add veth0 type veth peer name veth1 netns peer
ip addr add 10.0.0.1/24 dev veth0 && ip link set veth0 up
ip -n peer addr add 10.0.0.2/24 dev veth1 && ip -n peer link set veth1 up && ip -n peer link set lo up
sleep 1

step "rdma link add"
rdma link add rrxe0 type rrxe netdev veth0
ip netns exec peer rdma link add rrxe1 type rrxe netdev veth1
rdma link show
echo
ibv_devices
echo
ibv_devinfo -d rrxe0

step "rping rrxe0 -> rrxe1 (10 verified messages)"
ip netns exec peer timeout 60 rping -s -a 10.0.0.2 -C 10 -V >/tmp/rping-server.log 2>&1 &
sleep 2
if timeout 60 rping -c -a 10.0.0.2 -C 10 -V -v >/tmp/rping-client.log 2>&1; then
	tail -n 3 /tmp/rping-client.log
	echo "rping: OK"
else
	tail -n 5 /tmp/rping-client.log
	echo "rping: FAILED"
	failed=1
fi
wait

step "ib_write_bw rrxe0 -> rrxe1 (64 KiB messages)"
ip netns exec peer timeout 90 ib_write_bw -d rrxe1 -x 1 -s 65536 -n 2000 -F >/tmp/bw-server.log 2>&1 &
sleep 2
t0=$(date +%s.%N)
if timeout 90 ib_write_bw -d rrxe0 -x 1 -s 65536 -n 2000 -F 10.0.0.2 >/tmp/bw-client.log 2>&1; then
	t1=$(date +%s.%N)
	grep -A1 '#bytes' /tmp/bw-client.log
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall clock: %.1f MB/s (2000 x 64 KiB in %.2f s)\n", 2000*65536/(b-a)/1e6, b-a }'
	echo "ib_write_bw: OK"
else
	tail -n 5 /tmp/bw-client.log
	echo "ib_write_bw: FAILED"
	failed=1
fi
wait

step "counters"
rdma statistic show link rrxe0/1
ip netns exec peer rdma statistic show link rrxe1/1

step "result"
if [ "$failed" = 0 ]; then echo "demo: rping and ib_write_bw passed between rrxe0 and rrxe1"; else echo "demo: FAILED"; fi
exit "$failed"
