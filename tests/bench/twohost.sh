#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest script: rrxe against C rxe (and siw) between two hosts. Two VMs
# linked by their eth0 over QEMU's socket on 127.0.0.1 (scripts/vm2.sh,
# one vCPU each); both run the same driver, the drivers taking turns.
# Unlike the loopback part of `make bench` (one device, same-device
# loopback), every packet crosses the IP stack, the virtio NIC and the
# link, and carries and checks its ICRC: the wire path. `make bench` runs
# it as its wire part (scripts/bench.sh, BENCH_WIRE).
#
#   scripts/vm2.sh --variant release --name thb \
#       tests/bench/twohost.sh tests/bench/twohost.sh [ROUNDS=2] [DUR=4] \
#       [CASES="ib_write_bw:65536 ib_send_bw:65536 ib_write_bw:4096"]
#
# A case is TEST:SIZE or TEST:SIZE:QPS (perftest -q). A bandwidth test
# runs for -D DUR; a latency test (ib_*_lat) LAT_ITERS (1000) iterations.
# B serves, A is the client. A prints one line per run:
#   TH DRIVER CASE round N: ITERATIONS iterations in DUR s
# (perftest's row: its iteration count over the -D window is the figure to
# compare, as in ab.sh; the window is timed by the guest clock), and each
# VM one line for tests/bench/wire.py:
#   WIRE role=a mtu=M driver=D case=TEST-SIZE-qQ round=N status=ok|fail
#     iters=I size=S dur=DUR t_typical=US sys=TICKS user=TICKS idle=TICKS
# (t_typical for a latency test, perftest's median in microseconds; the
# ticks are the VM's over the run: on B from its server's start to the
# client's end). Reports, does not pass or fail. DRIVERS may name siw
# (SoftiWARP, built into the guest kernel): it connects through rdma_cm
# (perftest -R), as iWARP has no RoCE GID. MTUS="1500 9000" runs every
# round at each eth0 MTU in turn (IB MTU 1024 and 4096); MTU=N is one.
# SHIM=PATH TSC_MHZ=R: perftest runs with tests/bench/tscshim.c preloaded
# and the TSC rate measured on the host (as make bench's loopback part):
# under TCG perftest's own estimate is often 0 and its latencies infinite. PERF=1: each VM also records a perf profile
# (software cpu-clock, 999 Hz) over the middle DUR - 2 s of each run and
# prints its top entries (by object, kernel and module functions) as
# profile.sh does. ANN=FN (with PERF=1): rrxe's samples in functions
# matching FN are also listed by offset, as profile.sh's ANN. NICE=N:
# rrxe's workers run at nice N (its workqueue's sysfs knob; C rxe's has
# none), and its rows say rrxe/niceN. NIC=1: A also prints, per run, the
# virtio NIC's transmit kicks and the packets sent (needs ethtool).
# DRIVERS="rrxe@icrc_fused=0 rrxe@icrc_fused=1 rxe" (default "rrxe rxe"):
# the drivers taking turns in each round; rrxe@KNOB=V,KNOB=V sets rrxe's
# writable module parameters on both VMs after loading it (an A/B of a
# data path knob on the wire path), and its rows say so. Each run also
# prints, on both VMs, the system, user and idle ticks over the run (the
# receiving VM's CPU per iteration is where a receive-side change shows:
# it is mostly idle). MTU=N sets both eth0s' MTU first (9000: IB MTU
# 4096). After each rrxe device's runs each VM prints how many packets it
# sent and received, dropped for a bad ICRC, retried, sent with the
# payload folded into the ICRC as copied and took in page fragments.
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
DRIVERS=${DRIVERS:-rrxe rxe}
MTU=${MTU:-}
MTUS=${MTUS:-$MTU}
LAT_ITERS=${LAT_ITERS:-1000}
SHIM=${SHIM:-} TSC_MHZ=${TSC_MHZ:-}
PT=
[ -n "$SHIM" ] && [ -f "$SHIM" ] && [ -n "$TSC_MHZ" ] && PT="env RRXE_TSC_MHZ=$TSC_MHZ LD_PRELOAD=$PWD/$SHIM "
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
# ticks_start / ticks_end WHAT: this VM's system, user and idle ticks
# over a run (B: from its server's start to the client's end).
ticks_start() { read -r _ TK_U _ TK_S TK_I _ </proc/stat; }
ticks_end() {
	local u s i
	read -r _ u _ s i _ </proc/stat
	echo "CPU $ROLE $1: sys $((s - TK_S)) user $((u - TK_U)) idle $((i - TK_I))"
	TICKS="sys=$((s - TK_S)) user=$((u - TK_U)) idle=$((i - TK_I))"
}
# up DRIVER DEV: the device on eth0, its port active (and for RoCE an
# IPv4 GID); siw is built into the kernel.
up() {
	case $1 in
	siw) rdma link add "$2" type siw netdev eth0 &&
		wait_for 30 bash -c "ibv_devinfo -d $2 | grep -q PORT_ACTIVE" ;;
	*) link_up "$1" "$2" eth0 && wait_for 30 port_ready "$2" ;;
	esac
}
rxe_provider_only
# librxe serves rrxe and C rxe; siw's provider only if it runs
[[ " $DRIVERS " != *" siw"* ]] || echo "driver siw" >/etc/libibverbs.d/siw.driver
chan_open || { echo "no control channel to the peer"; exit 1; }
echo "# twohost bench: $ROLE, $ROUNDS rounds, -D $DUR, MTUs: ${MTUS:-as booted}, drivers: $DRIVERS, cases: $CASES${PT:+, TSC $TSC_MHZ MHz}"
for mtu in ${MTUS:-""}; do
[ -z "$mtu" ] || ip link set dev eth0 mtu "$mtu" || { echo "cannot set MTU $mtu"; exit 1; }
mtu_now=$(cat /sys/class/net/eth0/mtu)
swap "mtu-$mtu_now" ready >/dev/null || exit 1
for r in $(seq "$ROUNDS"); do
	for variant in $DRIVERS; do
		drv=${variant%%@*} knobs= vid=${variant//[@=,]/_}
		[ "$drv" != "$variant" ] && knobs=${variant#*@}
		DEV=${drv}0
		st=up
		up "$drv" "$DEV" || st=down
		label=$variant
		for k in ${knobs//,/ }; do
			echo "${k#*=}" >"/sys/module/rdma_$drv/parameters/${k%%=*}" || st=down
		done
		if [ -n "$NICE" ] && [ "$drv" = rrxe ]; then
			echo "$NICE" >/sys/devices/virtual/workqueue/rrxe/nice || st=down
			label=$label/nice$NICE
		fi
		addr="-x $(gid_index "$DEV" v4)"
		[ "$drv" = siw ] && addr=-R
		peer=$(swap "$mtu_now-$r-$vid-up" "$st") || exit 1
		dev_st=$st
		if [ "$st" != up ] || [ "$peer" != up ]; then
			echo "TH $drv round $r: device not up here ($st) or there ($peer)"
		else
			for c in $CASES; do
				IFS=: read -r test size qps <<<"$c"
				qps=${qps:-1}
				name=${test#ib_}-$size-q$qps id="$mtu_now-$r-$vid-$name"
				case $test in
				*_lat) cmd="$PT$test -d $DEV -i 1 $addr -F -s $size -n $LAT_ITERS" ;;
				*) cmd="$PT$test -d $DEV -i 1 $addr -F -s $size -q $qps -D $DUR" ;;
				esac
				if [ "$ROLE" = b ]; then
					serve "$id" $((DUR + 60)) tcp:18515 "$cmd" && st=ready || st=never
					prof_start "$id"
					swap "$id-ready" "$st" >/dev/null || exit 1
					ticks_start
					swap "$id-done" done >/dev/null || exit 1
					ticks_end "$label $test-$size round $r"
					echo "WIRE role=b mtu=$mtu_now driver=$label case=$name round=$r $TICKS"
					reap 10
					prof_end "$id" "$drv"
				else
					peer=$(swap "$id-ready" ready) || exit 1
					if [ "$peer" = ready ]; then
						prof_start "$id"
						nic_start
						ticks_start
						client "$id" $((DUR + 60)) "$cmd $PEER"
						ticks_end "$label $test-$size round $r"
						nic_end "$label $test-$size round $r"
						prof_end "$id" "$drv"
						row=$(perf_row "$CLOG")
						# (a latency row: bytes, iterations, t_min, t_max, t_typical)
						read -r _ it _ _ t5 _ <<<"$row"
						echo "TH $label $test-$size round $r: ${it:-0} iterations in $DUR s (exit $RC_C) | $row"
						ok=ok
						[ "$RC_C" = 0 ] && [ "${it:-0}" -gt 0 ] 2>/dev/null || ok=fail
						typ=-
						[[ $test == *_lat ]] && typ=${t5:--}
						echo "WIRE role=a mtu=$mtu_now driver=$label case=$name round=$r status=$ok iters=${it:-0} size=$size dur=$DUR t_typical=$typ $TICKS"
					else
						echo "TH $label $test-$size round $r: the server never got ready"
						echo "WIRE role=a mtu=$mtu_now driver=$label case=$name round=$r status=fail iters=0 size=$size dur=$DUR t_typical=- sys=- user=- idle=-"
					fi
					swap "$id-done" done >/dev/null || exit 1
				fi
			done
		fi
		if [ "$drv" = rrxe ] && [ "$dev_st" = up ]; then
			echo "COUNTERS $ROLE $label: $(for c in sent_pkts rcvd_pkts rcvd_icrc_err completer_retry_err sent_pkts_icrc_fused rcvd_pkts_frags; do printf '%s %s ' $c "$(counter "$DEV" $c)"; done)"
		fi
		rdma link delete "$DEV" 2>/dev/null
		unload "$drv"
		swap "$mtu_now-$r-$vid-down" down >/dev/null || exit 1
	done
done
done
exit 0
