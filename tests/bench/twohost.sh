#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest script: rrxe against C rxe between two hosts. Two VMs linked by
# their eth0 over QEMU's socket on 127.0.0.1 (scripts/vm2.sh, one vCPU
# each); both run the same driver, rrxe and C rxe taking turns. Unlike
# `make bench` (one device, same-device loopback), every packet crosses
# the IP stack, the virtio NIC and the link, and carries and checks its
# ICRC: the wire path.
#
#   scripts/vm2.sh --variant release --name thb \
#       tests/bench/twohost.sh tests/bench/twohost.sh [ROUNDS=2] [DUR=4] \
#       [CASES="ib_write_bw:65536 ib_send_bw:65536 ib_write_bw:4096"]
#
# B serves, A is the client. A prints one line per run:
#   TH DRIVER CASE round N: ITERATIONS iterations in DUR s
# (perftest's row: its iteration count over the -D window is the figure to
# compare, as in ab.sh; the window is timed by the guest clock). Reports,
# does not pass or fail.
set -u
for a in "${@:2}"; do declare -x "$a"; done
GROUP=twohost-bench
. tests/guest/lib.sh
. tests/lib/twohost.sh
. tests/traffic/lib.sh
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-4}
CASES=${CASES:-ib_write_bw:65536 ib_send_bw:65536 ib_write_bw:4096}

mkdir -p "$TR"
rxe_provider_only
chan_open || { echo "no control channel to the peer"; exit 1; }
echo "# twohost bench: $ROLE, $ROUNDS rounds, -D $DUR, cases: $CASES"
for r in $(seq "$ROUNDS"); do
	for drv in rrxe rxe; do
		DEV=${drv}0
		st=up
		{ link_up "$drv" "$DEV" eth0 && wait_for 30 port_ready "$DEV"; } || st=down
		G=$(gid_index "$DEV" v4)
		peer=$(swap "$r-$drv-up" "$st") || exit 1
		if [ "$st" != up ] || [ "$peer" != up ]; then
			echo "TH $drv round $r: device not up here ($st) or there ($peer)"
		else
			for c in $CASES; do
				test=${c%%:*} size=${c#*:} id="$r-$drv-$test-$size"
				cmd="$test -d $DEV -i 1 -x $G -F -s $size -D $DUR"
				if [ "$ROLE" = b ]; then
					serve "$id" $((DUR + 60)) tcp:18515 "$cmd" && st=ready || st=never
					swap "$id-ready" "$st" >/dev/null || exit 1
					swap "$id-done" done >/dev/null || exit 1
					reap 10
				else
					peer=$(swap "$id-ready" ready) || exit 1
					if [ "$peer" = ready ]; then
						client "$id" $((DUR + 60)) "$cmd $PEER"
						row=$(perf_row "$CLOG")
						echo "TH $drv $test-$size round $r: $(echo "$row" | awk '{print $2}') iterations in $DUR s (exit $RC_C) | $row"
					else
						echo "TH $drv $test-$size round $r: the server never got ready"
					fi
					swap "$id-done" done >/dev/null || exit 1
				fi
			done
		fi
		rdma link delete "$DEV" 2>/dev/null
		unload "$drv"
		swap "$r-$drv-down" down >/dev/null || exit 1
	done
done
exit 0
