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
# does not pass or fail. PERF=1: each VM also records a perf profile
# (software cpu-clock, 999 Hz) over the middle DUR - 2 s of each run and
# prints its top entries (by object, kernel and module functions) as
# profile.sh does. ANN=FN (with PERF=1): rrxe's samples in functions
# matching FN are also listed by offset, as profile.sh's ANN. NICE=N:
# rrxe's workers run at nice N (its workqueue's sysfs knob; C rxe's has
# none), and its rows say rrxe/niceN. NIC=1: A also prints, per run, the
# virtio NIC's transmit kicks and the packets sent (needs ethtool).
set -u
for a in "${@:2}"; do declare -x "$a"; done
GROUP=twohost-bench
. tests/guest/lib.sh
. tests/lib/twohost.sh
. tests/traffic/lib.sh
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-4}
CASES=${CASES:-ib_write_bw:65536 ib_send_bw:65536 ib_write_bw:4096}

PERF=${PERF:-}
ANN=${ANN:-}
NICE=${NICE:-}
NIC=${NIC:-}
mkdir -p "$TR"
if [ -n "$PERF" ]; then
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
fi
# prof_start ID / prof_end ID DRIVER: a profile of this VM during a run.
prof_start() {
	[ -n "$PERF" ] || return 0
	(sleep 1; perf record -a -e cpu-clock -F 999 -o "/tmp/perf.$1" -- sleep $((DUR - 2)) >/tmp/perf.log 2>&1) &
	PERFPID=$!
}
prof_end() {
	[ -n "$PERF" ] || return 0
	local mod=rdma_$2 r="perf report -i /tmp/perf.$1 --stdio"
	wait "$PERFPID"
	echo "-- $ROLE $1: by object"
	$r --sort dso 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
	echo "-- $ROLE $1: by command"
	$r --sort comm 2>/dev/null | grep -v '^#' | grep -v '^$' | head -6
	echo "-- $ROLE $1: kernel functions"
	$r --sort sym -d '[kernel.kallsyms]' 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20
	echo "-- $ROLE $1: module functions"
	$r --sort sym -d "[$mod]" 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20
	if [ -n "$ANN" ] && [ "$2" = rrxe ]; then
		echo "-- $ROLE $1: samples in $ANN by offset"
		perf script -i "/tmp/perf.$1" -F ip,sym,symoff 2>/dev/null | grep "$ANN" | sort | uniq -c | sort -rn | head -40
	fi
}
# nic_start / nic_end WHAT: with NIC=1, the virtio NIC's transmit kicks
# (ethtool -S, tx_kicks: notifications of the device) and the packets the
# qdisc sent during a run, on A.
nic_count() { ethtool -S eth0 2>/dev/null | awk '$1 == "tx_kicks:" { print $2 }'; }
nic_pkts() { tc -s qdisc show dev eth0 | awk '/Sent/ { print $4; exit }'; }
nic_start() {
	[ -n "$NIC" ] || return 0
	NIC_K=$(nic_count) NIC_P=$(nic_pkts)
}
nic_end() {
	[ -n "$NIC" ] || return 0
	local k p
	k=$(( $(nic_count) - NIC_K )) p=$(( $(nic_pkts) - NIC_P ))
	echo "NIC $1: $k kicks for $p packets"
}
rxe_provider_only
chan_open || { echo "no control channel to the peer"; exit 1; }
echo "# twohost bench: $ROLE, $ROUNDS rounds, -D $DUR, cases: $CASES"
for r in $(seq "$ROUNDS"); do
	for drv in rrxe rxe; do
		DEV=${drv}0
		st=up
		{ link_up "$drv" "$DEV" eth0 && wait_for 30 port_ready "$DEV"; } || st=down
		label=$drv
		if [ -n "$NICE" ] && [ "$drv" = rrxe ]; then
			echo "$NICE" >/sys/devices/virtual/workqueue/rrxe/nice || st=down
			label=rrxe/nice$NICE
		fi
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
					prof_start "$id"
					swap "$id-ready" "$st" >/dev/null || exit 1
					swap "$id-done" done >/dev/null || exit 1
					reap 10
					prof_end "$id" "$drv"
				else
					peer=$(swap "$id-ready" ready) || exit 1
					if [ "$peer" = ready ]; then
						prof_start "$id"
						nic_start
						client "$id" $((DUR + 60)) "$cmd $PEER"
						nic_end "$label $test-$size round $r"
						prof_end "$id" "$drv"
						row=$(perf_row "$CLOG")
						echo "TH $label $test-$size round $r: $(echo "$row" | awk '{print $2}') iterations in $DUR s (exit $RC_C) | $row"
					else
						echo "TH $label $test-$size round $r: the server never got ready"
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
