#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Golden RoCEv2 traffic from the kernel's C rdma_rxe, between two VMs
# (scripts/capture-golden.sh runs this on both). B captures eth0 with
# tcpdump while A drives rping, perftest and ibv_ud_pingpong against it;
# the capture lands in B's results directory as golden.pcap.
. tests/guest/lib.sh
. tests/lib/twohost.sh

insmod "$RXE_KO" || exit 1
rdma link add rxe0 type rxe netdev eth0 || exit 1
sleep 1
GIDX=1 # GID index of the IPv4 address (0 is the IPv6 link-local)

if [ "$ROLE" = b ]; then
	tcpdump -i eth0 -U -s 0 -w /run/results/golden.pcap 'udp port 4791' >/run/results/tcpdump.log 2>&1 &
	tpid=$!
	sleep 2
fi

# step NAME SERVER_CMD CLIENT_CMD: B runs the server, A the client.
step() {
	local name=$1 server=$2 client=$3
	if [ "$ROLE" = b ]; then
		timeout 120 bash -c "$server" >"/tmp/$name.log" 2>&1 &
		local spid=$!
		sleep 2
		barrier "$name-ready"
		wait $spid
		echo "$name: server exit $?"
		barrier "$name-done"
	else
		barrier "$name-ready"
		timeout 120 bash -c "$client" >"/tmp/$name.log" 2>&1
		echo "$name: client exit $?"
		barrier "$name-done"
	fi
}

step rping4 "rping -s -a $ME -C 3 -S 64 -V" "rping -c -a $PEER -C 3 -S 64 -V"
step rping6 "rping -s -a $ME6 -C 2 -S 100 -V" "rping -c -a $PEER6 -C 2 -S 100 -V"
step write "ib_write_bw -F -x $GIDX -s 3000 -n 5" "ib_write_bw -F -x $GIDX -s 3000 -n 5 $PEER"
step write-imm "ib_write_bw -F -x $GIDX -s 200 -n 5 --write_with_imm" "ib_write_bw -F -x $GIDX -s 200 -n 5 --write_with_imm $PEER"
step read "ib_read_bw -F -x $GIDX -s 3000 -n 5" "ib_read_bw -F -x $GIDX -s 3000 -n 5 $PEER"
step cas "ib_atomic_bw -F -x $GIDX -A CMP_AND_SWAP -n 5" "ib_atomic_bw -F -x $GIDX -A CMP_AND_SWAP -n 5 $PEER"
step faa "ib_atomic_bw -F -x $GIDX -A FETCH_AND_ADD -n 5" "ib_atomic_bw -F -x $GIDX -A FETCH_AND_ADD -n 5 $PEER"
step send "ib_send_bw -F -x $GIDX -s 2500 -n 5" "ib_send_bw -F -x $GIDX -s 2500 -n 5 $PEER"
step ud "ibv_ud_pingpong -d rxe0 -g $GIDX -n 3 -s 64" "ibv_ud_pingpong -d rxe0 -g $GIDX -n 3 -s 64 $PEER"
# Loss on A's egress makes B see PSN gaps and answer with NAKs.
[ "$ROLE" = a ] && tc qdisc add dev eth0 root netem loss 25%
step nak "ib_write_bw -F -x $GIDX -s 3000 -n 40" "ib_write_bw -F -x $GIDX -s 3000 -n 40 $PEER"
[ "$ROLE" = a ] && tc qdisc del dev eth0 root

if [ "$ROLE" = b ]; then
	sleep 1
	kill -INT $tpid
	wait $tpid
	cat /run/results/tcpdump.log
fi
for f in /tmp/*.log; do echo "== $f"; tail -n 4 "$f"; done
exit 0
