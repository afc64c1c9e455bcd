#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Teardown under traffic. Three devices: D0 on veth0 (here, 10.0.0.1)
# and D1 on veth1 (its peer, in the network namespace "peer", 10.0.0.2),
# and D2 on veth2 (10.0.1.1) whose peer carries nothing. Eight processes
# of tests/traffic/tdtraffic.c keep verified traffic running on them:
#   1 rc D0->D1   2 ud D0->D1   3 mw D0->D1   4 mw D1->D0
#   5 rc D2       6 ud D2       7 mw D2       8 rc D0
# (rc: RC SEND/RECV; ud: UD SEND/RECV; mw: RDMA WRITE and READ through
# type 1 and type 2 memory windows, invalidated and rebound in a loop,
# old rkeys tried; every byte checked; one device named twice is
# loopback). They run at nice 19 and pause 20 ms between batches, so
# that the script's own commands get the (emulated) CPU. Before the
# rounds, setup/mw-bind-remote-access-only checks that a window binds
# with remote access alone, as ibv_bind_mw(3) documents and C rxe does;
# if not, the windows are bound with LOCAL_WRITE added (tdtraffic -L) so
# that the rounds still run. Each round, with every process running and
# having verified traffic, does one of, in turn:
#   kill          kill -9 of one to three of them;
#   link-delete   `rdma link delete` of D2, D0, D1 in turn, in use. rrxe
#                 disassociates the device's user contexts: the delete
#                 must end within 30 s with its users still there, and
#                 they get IBV_EVENT_DEVICE_FATAL and end by themselves
#                 (exit 3). C rxe cannot: ib_core waits for its users to
#                 close the device and tells them nothing, so their
#                 traffic must keep verifying meanwhile, then they get
#                 SIGTERM and must stop cleanly;
#   netdev-delete `ip link del` of veth2, veth0, veth1 in turn (a veth pair
#                 goes as a whole: D0 and D1 go together). The processes
#                 on the device must see IBV_EVENT_PORT_ERR and exit by
#                 themselves;
#   netns-delete  `ip netns del peer`: veth1, hence the pair, D0 and D1 go
#                 when the namespace is cleaned up; likewise;
#   rmmod         `rmmod` of the driver with devices and users present.
#                 rrxe's must succeed, its users end by themselves as on a
#                 link delete; C rxe's is refused while user contexts are
#                 open ("in use"; each round records whether it was): then
#                 every process is killed with SIGKILL and rmmod retried;
# then restores what went (namespace, veth pair, devices, module) and
# restarts the processes that ended. Checks, per kind of round:
# - teardown-completed: the command finished (within 90 s of its users
#   going) and the devices and net devices are gone;
# - victims-ended-cleanly: the processes of the torn-down devices ended
#   as expected (exit 137 when killed, 0 when stopped, 3 "device went
#   away" on a port error), never with a data mismatch (exit 1), a stall
#   (4) or by themselves when they should not have; on a device being
#   deleted, traffic kept verifying until they were stopped;
# - others-kept-verifying: every other process still runs and its count
#   of verified operations grew after the teardown;
# - restrack-clean: `rdma resource show` lists no object of an ended
#   process, and the kernel's own objects per device are the fresh
#   device's (ib_core's GSI QP, PD, CQ);
# - restored: `rdma link` lists the three devices on their netdevs, a
#   re-created device's counts are the fresh device's, every restarted
#   process gets ready;
# - kernel-log-clean: no report in the round's kernel messages; the hung
#   task timeout is set to 120 s, so a task blocked that long is one.
# At the end every process is stopped (exit 0), no process ever saw a
# data mismatch, the counts are back to the baseline, everything is
# removed, the module unloaded, and a kmemleak scan must be empty.
# Per-round records go to teardown-rounds.txt, the per-kind summary to
# teardown-summary.txt and the processes' logs to teardown-procs/,
# beside results.txt. A watchdog writes the round to the serial console
# every minute, and the kernel's blocked tasks (sysrq w) if a round
# lasts 10 minutes.
#
#   teardown.sh [ROUNDS [DRIVER]]
#     ROUNDS  rounds (default $TEARDOWN_ROUNDS or 5, one of each kind);
#     DRIVER  rrxe (default) or rxe: C rxe 6.12 routes and receives only
#             in the initial namespace, so D1 carries no traffic there
#             and every process loops back on one device (5-7 on D2, the
#             others on D0).
#   TEARDOWN_SEED      seeds the choice of victims (printed);
#   TEARDOWN_PAUSE_MS  the processes' pause between batches (20);
#   TEARDOWN_TRACE     set: bash trace of the script in teardown-trace.txt.
# scripts/vm.sh passes these variables into the guest ("vm-env"):
#   TEARDOWN_ROUNDS=100 scripts/vm.sh --timeout 14400 tests/guest/teardown.sh
# vm-options: --smp 2,sockets=2,cores=1
# vm-env: TEARDOWN_ROUNDS TEARDOWN_SEED TEARDOWN_PAUSE_MS TEARDOWN_TRACE
# vm-seconds: 305 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=teardown
. tests/guest/lib.sh
. tests/traffic/lib.sh

ROUNDS=${1:-${TEARDOWN_ROUNDS:-5}}
DRIVER=${2:-${DRIVER:-rrxe}}
SEED=${TEARDOWN_SEED:-$((RANDOM * 32768 + RANDOM))}
PAUSE=${TEARDOWN_PAUSE_MS:-20}
RANDOM=$SEED
NS=peer
D0=${DRIVER}0 D1=${DRIVER}1 D2=${DRIVER}2
MOD=rdma_$DRIVER
OUTDIR=$(dirname "$RESULTS")
ROUNDLOG=$OUTDIR/teardown-rounds.txt
KINDS=(kill link-delete netdev-delete netns-delete rmmod)
# Whether the driver disassociates user contexts when a device goes.
DISASSOC=0
[ "$DRIVER" = rrxe ] && DISASSOC=1
CHECKS=(teardown-completed victims-ended-cleanly others-kept-verifying restrack-clean restored kernel-log-clean)
NPROC=8
suite_start=$SECONDS
: >"$ROUNDLOG"
# Each process's log (a line every 2 s), copied to the results at the end.
PLOGS=$TR/procs
mkdir -p "$PLOGS"
if [ -n "${TEARDOWN_TRACE:-}" ]; then
	exec 9>"$TR/trace.txt"
	BASH_XTRACEFD=9
	PS4='+ $SECONDS ${LINENO}: '
	set -x
fi
echo "# teardown: $ROUNDS rounds on $DRIVER, seed $SEED"

inpeer() { ip netns exec $NS "$@"; }

# A watchdog on the serial console (not the results share): every 60 s
# the script's state and round; if the round has not changed for 600 s,
# the kernel's list of blocked tasks (sysrq w), once.
echo 0 >$TR/round
(
	last= same=0 me=$$
	while kill -0 $me 2>/dev/null; do
		sleep 60
		r=$(cat $TR/round)
		echo "teardown-watch: $(cut -d' ' -f1 /proc/uptime)s round $r, script $(cut -d' ' -f3 /proc/$me/stat) in $(cat /proc/$me/wchan 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg)" >/dev/console
		if [ "$r" = "$last" ]; then same=$((same + 60)); else same=0 last=$r; fi
		if [ $same -ge 600 ]; then
			echo w >/proc/sysrq-trigger
			same=-100000
		fi
	done
) </dev/null >/dev/null 2>&1 &

# Under TCG every command started costs up to seconds when the machine is
# busy: the loops below sleep, time and read sysfs with bash builtins.
NAPFIFO=$TR/nap
rm -f $NAPFIFO
mkfifo $NAPFIFO
nap() { read -rt "$1" <>$NAPFIFO || :; }
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		nap 0.2
	done
}
usec() { echo "${EPOCHREALTIME/./}"; }
# since T0: seconds since T0 (from usec), one decimal, in REPLY.
since() {
	local d=$(((${EPOCHREALTIME/./} - $1) / 100000))
	printf -v REPLY '%d.%d' $((d / 10)) $((d % 10))
}
# gid4 DEV: the index of DEV's RoCE v2 IPv4 GID (gid_index DEV v4).
gid4() {
	local i g t p=/sys/class/infiniband/$1/ports/1
	for ((i = 0; i < 16; i++)); do
		{ read -r g <"$p/gids/$i" && read -r t <"$p/gid_attrs/types/$i"; } 2>/dev/null || continue
		if [[ $g == 0000:0000:0000:0000:0000:ffff:* && $t == "RoCE v2" ]]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}
# up DEV: its port is ACTIVE and has an IPv4 GID (port_ready DEV).
up() {
	local st
	{ read -r st <"/sys/class/infiniband/$1/ports/1/state"; } 2>/dev/null && [[ $st == *ACTIVE* ]] && gid4 "$1" >/dev/null
}
log() { echo "$*" | tee -a "$ROUNDLOG"; }

# --- devices -------------------------------------------------------------------
# has_link DEV: DEV is registered (in sysfs until it is fully gone).
has_link() { [ -e "/sys/class/infiniband/$1" ]; }
case $DRIVER in
rrxe) load() { load_rrxe; } ;;
rxe) load() { load_rxe; } ;;
*) echo "DRIVER: rrxe or rxe"; exit 2 ;;
esac

# Pair X: the namespace, veth0/veth1, D0 and D1. Pair Y: veth2/veth3, D2.
# Both make only what is missing.
make_x() {
	[ -e /run/netns/$NS ] || ip netns add $NS || return 1
	ip -n $NS link set lo up
	if ! ip link show veth0 >/dev/null 2>&1; then
		ip link add veth0 type veth peer name veth1 netns $NS &&
			ip addr add 10.0.0.1/24 dev veth0 && ip link set veth0 up &&
			ip -n $NS addr add 10.0.0.2/24 dev veth1 && ip -n $NS link set veth1 up || return 1
	fi
	has_link $D0 || rdma link add $D0 type $DRIVER netdev veth0 || return 1
	has_link $D1 || inpeer rdma link add $D1 type $DRIVER netdev veth1 || return 1
	wait_for 30 up $D0 && wait_for 30 up $D1
}
make_y() {
	if ! ip link show veth2 >/dev/null 2>&1; then
		ip link add veth2 type veth peer name veth3 && ip addr add 10.0.1.1/24 dev veth2 &&
			ip link set veth2 up && ip link set veth3 up || return 1
	fi
	has_link $D2 || rdma link add $D2 type $DRIVER netdev veth2 || return 1
	wait_for 30 up $D2
}

# The links as `rdma link` shows them, "NAME NETDEV" (NETDEV as seen from
# the namespace the command runs in; "-" when in another one), sorted.
links() {
	local l w n out=()
	while read -r -a w; do
		[ "${w[0]}" = link ] || continue
		n=-
		for ((l = 2; l < ${#w[@]} - 1; l++)); do [ "${w[l]}" = netdev ] && n=${w[l + 1]}; done
		out+=("${w[1]%/1} $n")
	done < <(rdma link show 2>/dev/null)
	printf '%s\n' "${out[@]}" | sort
}
links_want=$(printf '%s\n' "$D0 veth0" "$D1 -" "$D2 veth2" | sort)
links_ok() {
	[ "$(links)" = "$links_want" ] &&
		inpeer rdma link show "$D1/1" 2>/dev/null | grep -q 'netdev veth1'
}

# summary DEV: its counts in `rdma resource show` (without the index).
summary() {
	local l re="^[0-9]+: $1: (.*[^ ])"
	while read -r l; do
		[[ $l =~ $re ]] && echo "${BASH_REMATCH[1]}"
	done < <(rdma resource show 2>/dev/null)
}
# snap: every object restrack lists, into $TR/res (one command per type).
snap() { for t in pd cq qp mr ctx; do rdma resource show $t; done >$TR/res 2>/dev/null; }
# The kernel's own objects of DEV in the last snap: the lines without a
# pid, less the fields that differ between devices.
kernel_objs() {
	local l f re="^(dev|link) $1(/1)? " fre
	while read -r l; do
		[[ $l =~ $re && $l != *" pid "* ]] || continue
		for f in users sq-psn rq-psn local_dma_lkey cqn pdn lqpn mrn; do
			fre="(.*) $f [^ ]*(.*)"
			[[ $l =~ $fre ]] && l=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
		done
		echo "$l"
	done <$TR/res
}
# --- processes --------------------------------------------------------------------
if [ "$DRIVER" = rrxe ]; then
	SPEC=("" "rc $D0 $D1" "ud $D0 $D1" "mw $D0 $D1" "mw $D1 $D0" "rc $D2 $D2" "ud $D2 $D2" "mw $D2 $D2" "rc $D0 $D0")
else
	SPEC=("" "rc $D0 $D0" "ud $D0 $D0" "mw $D0 $D0" "mw $D0 $D0" "rc $D2 $D2" "ud $D2 $D2" "mw $D2 $D2" "rc $D0 $D0")
fi
declare -a PID LOG GEN
MWOPT=

start_proc() {
	local i=$1 mode da db opt=()
	read -r mode da db <<<"${SPEC[$i]}"
	GEN[$i]=$((${GEN[$i]:-0} + 1))
	LOG[$i]=$PLOGS/p$i.${GEN[$i]}.log
	PID[$i]=
	if [ -z "${G[$da]}" ] || [ -z "${G[$db]}" ]; then
		echo "no IPv4 GID on $da or $db" >"${LOG[$i]}"
		return 1
	fi
	if [ "$mode" = ud ]; then
		[ "$da" = "$D1" ] && opt+=(-n /run/netns/$NS)
		[ "$db" = "$D1" ] && opt+=(-N /run/netns/$NS)
	fi
	[ "$mode" = mw ] && [ -n "$MWOPT" ] && opt+=($MWOPT)
	$PROGS/tdtraffic -y 19 -d $PAUSE "${opt[@]}" "$mode" "$da" "${G[$da]}" "$db" "${G[$db]}" >"${LOG[$i]}" 2>&1 </dev/null &
	PID[$i]=$!
}
alive() {
	local st
	[ -n "$1" ] && { read -r _ _ st _ <"/proc/$1/stat"; } 2>/dev/null && [ "$st" != Z ]
}
ready() { local l; { read -r l <"${LOG[$1]}"; } 2>/dev/null && [[ $l == *": ready" ]]; }
# count I FIELD: process I's last count of verified operations (FIELD
# ops) or bytes (bytes), in REPLY.
count() {
	local j re=" $2 ([0-9]+)" lines
	REPLY=0
	mapfile -t lines <"${LOG[$1]}"
	for ((j = ${#lines[@]} - 1; j >= 0; j--)); do
		if [[ ${lines[j]} =~ $re ]]; then
			REPLY=${BASH_REMATCH[1]}
			return
		fi
	done
}
progressed() { count $1 ops; [ "$REPLY" -gt "$2" ]; }
last_of() { tail -n 1 "${LOG[$1]}" | cut -c1-200; }
uses() { local mode da db; read -r mode da db <<<"${SPEC[$1]}"; [[ " $2 " == *" $da "* || " $2 " == *" $db "* ]]; }

# wait_ready I...: each started process printed "ready" (up to 90 s);
# prints the ones that did not.
wait_ready() {
	local i end=$((SECONDS + 90)) bad=
	for i in "$@"; do
		until ready $i; do
			if ! alive "${PID[$i]}" || [ $SECONDS -ge $end ]; then
				bad="$bad $i($(last_of $i))"
				break
			fi
			nap 0.2
		done
	done
	echo "$bad"
}

# reap_proc I LIMIT: waits up to LIMIT s for process I to end by itself
# (then stops it: RC 124), sets RC to its exit status and adds its
# verified bytes to the totals.
reap_proc() {
	local i=$1 end=$((SECONDS + $2))
	[ -n "${PID[$i]}" ] || { RC=-1; return; }
	while alive ${PID[$i]} && [ $SECONDS -lt $end ]; do nap 0.2; done
	if alive ${PID[$i]}; then
		kill -TERM ${PID[$i]} 2>/dev/null
		nap 5
		kill -KILL ${PID[$i]} 2>/dev/null
		wait ${PID[$i]} 2>/dev/null
		RC=124
	else
		wait ${PID[$i]} 2>/dev/null
		RC=$?
	fi
	count $i bytes
	TOTAL_BYTES=$((TOTAL_BYTES + REPLY))
	KIND_BYTES[$kind]=$((${KIND_BYTES[$kind]:-0} + REPLY))
	count $i ops
	TOTAL_OPS=$((TOTAL_OPS + REPLY))
	KIND_OPS[$kind]=$((${KIND_OPS[$kind]:-0} + REPLY))
	PID[$i]=
}

# Objects of processes that are not running any more, from restrack (a
# fresh snap).
leftovers() {
	local l
	snap
	while read -r l; do
		[[ $l =~ \ pid\ ([0-9]+) ]] && ! alive ${BASH_REMATCH[1]} && printf '%s; ' "${l:0:120}"
	done <$TR/res
}
no_leftovers() { [ -z "$(leftovers)" ]; }
# The IPv4 GID index of each device.
declare -A G
gids() { local d; for d in $D0 $D1 $D2; do G[$d]=$(gid4 $d); done; }

# --- failures, per kind and check ----------------------------------------------------
declare -A FAILS
round_fail() { # CHECK MSG
	FAILS[$kind/$1]="${FAILS[$kind/$1]:-}round $round: $2; "
	log "  FAIL $1: $2"
}

# ===================================================================================
rxe_provider_only
echo 120 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo "# hung task timeout $(cat /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null) s"
t setup/load load
if make_x && make_y; then pass setup/devices; else fail setup/devices "$(links | tr '\n' ' ')"; exit 1; fi
links_ok && pass setup/links || fail setup/links "$(links | tr '\n' ' ')"
declare -A BASE KBASE
gids
snap
for d in $D0 $D1 $D2; do
	BASE[$d]=$(summary $d)
	KBASE[$d]=$(kernel_objs $d)
done
echo "# fresh device: ${BASE[$D0]}"
echo "# its own objects: $(echo "${KBASE[$D0]}" | tr '\n' ';')"
if [ -n "${BASE[$D0]}" ] && [ "${BASE[$D0]}" = "${BASE[$D1]}" ] && [ "${BASE[$D0]}" = "${BASE[$D2]}" ]; then
	pass setup/baseline
else
	fail setup/baseline "D0 '${BASE[$D0]}' D1 '${BASE[$D1]}' D2 '${BASE[$D2]}'"
fi
dmesg >$TR/dmesg.before
kmemleak_clear
tt setup/build prog tdtraffic || exit 1

TOTAL_BYTES=0 TOTAL_OPS=0
declare -A KIND_ROUNDS KIND_TIME KIND_MAX KIND_ENDED KIND_BYTES KIND_OPS KIND_NOTES N
for i in $(seq 1 $NPROC); do start_proc $i; done
bad=$(wait_ready $(seq 1 $NPROC))
# The windows are bound with remote access only, as ibv_bind_mw(3)
# documents (C rxe takes that). If their processes fail on the first
# bind, that fails, and they start again binding with LOCAL_WRITE added
# (tdtraffic -L), so that the rounds still test teardown.
mwfail=
for i in $(seq 1 $NPROC); do
	[[ ${SPEC[$i]} == mw* ]] || continue
	wait_for 60 eval "progressed $i 0 || ! alive \${PID[$i]}"
	if ! alive ${PID[$i]}; then
		mwfail="$mwfail $i: $(last_of $i);"
		wait ${PID[$i]}
		MWOPT=-L
	fi
done
if [ -z "$mwfail" ]; then
	pass setup/mw-bind-remote-access-only
else
	fail setup/mw-bind-remote-access-only "$mwfail"
	for i in $(seq 1 $NPROC); do
		[[ ${SPEC[$i]} == mw* ]] && ! alive ${PID[$i]} && start_proc $i
	done
	bad=$(wait_ready $(seq 1 $NPROC))
fi
if [ -z "$bad" ]; then pass setup/traffic-ready; else fail setup/traffic-ready "not ready:$bad"; fi

# ===================================================================================
for round in $(seq 1 "$ROUNDS"); do
	kind=${KINDS[$(((round - 1) % ${#KINDS[@]}))]}
	echo "$round $kind" >$TR/round
	n=${N[$kind]:-0}
	N[$kind]=$((n + 1))
	t0=$(usec)
	mark=$(dmesg | wc -l)
	# Every process must be running before the round.
	for i in $(seq 1 $NPROC); do
		if [ -z "${PID[$i]}" ] || ! alive ${PID[$i]}; then
			round_fail others-kept-verifying "process $i (${SPEC[$i]}) ended before the round: $(last_of $i)"
			[ -n "${PID[$i]}" ] && reap_proc $i 0
			start_proc $i
			wait_ready $i >/dev/null
		fi
	done
	# ... and carrying traffic: each has verified something.
	for i in $(seq 1 $NPROC); do
		wait_for 60 progressed $i 0 ||
			round_fail others-kept-verifying "process $i (${SPEC[$i]}) verified nothing in 60 s: $(last_of $i)"
	done
	victims=() gone_devs= cmd_pid= cmd= want_rc=
	case $kind in
	kill)
		nv=$((1 + RANDOM % 3))
		while [ ${#victims[@]} -lt $nv ]; do
			v=$((1 + RANDOM % NPROC))
			[[ " ${victims[*]} " == *" $v "* ]] || victims+=($v)
		done
		what="kill -9 of ${victims[*]}"
		for v in "${victims[@]}"; do kill -KILL ${PID[$v]}; done
		want_rc=137
		;;
	link-delete)
		devs=($D2 $D0 $D1)
		gone_devs=${devs[$((n % 3))]}
		what="rdma link delete $gone_devs"
		rdma link delete $gone_devs >$TR/cmd.log 2>&1 &
		cmd_pid=$!
		want_rc="0 3"
		[ $DISASSOC = 1 ] && want_rc=3
		;;
	netdev-delete)
		nds=(veth2 veth0 veth1)
		nd=${nds[$((n % 3))]}
		case $nd in
		veth2) gone_devs=$D2 ;;
		*) gone_devs="$D0 $D1" ;;
		esac
		what="ip link del $nd"
		if [ $nd = veth1 ]; then
			ip -n $NS link del $nd >$TR/cmd.log 2>&1 &
		else
			ip link del $nd >$TR/cmd.log 2>&1 &
		fi
		cmd_pid=$!
		want_rc=3
		;;
	netns-delete)
		gone_devs="$D0 $D1"
		what="ip netns del $NS"
		ip netns del $NS >$TR/cmd.log 2>&1 &
		cmd_pid=$!
		want_rc=3
		;;
	rmmod)
		gone_devs="$D0 $D1 $D2"
		what="rmmod $MOD"
		;;
	esac
	if [ -n "$gone_devs" ]; then
		for i in $(seq 1 $NPROC); do uses $i "$gone_devs" && victims+=($i); done
	fi
	echo "# round $round ($kind): $what; victims ${victims[*]}; $((SECONDS - suite_start))s in"
	others=()
	for i in $(seq 1 $NPROC); do [[ " ${victims[*]} " == *" $i "* ]] || others+=($i); done
	note=
	case $kind in
	link-delete)
		if [ $DISASSOC = 1 ]; then
			# The delete ends with its users still there.
			if wait_for 30 eval "! alive $cmd_pid"; then
				note="delete did not wait;"
			else
				note="delete waited for its users;"
				round_fail teardown-completed "'$what' still running after 30 s with its users present"
				for v in "${victims[@]}"; do kill -TERM ${PID[$v]} 2>/dev/null; done
			fi
		else
			# ib_core waits for the users; their traffic must go on.
			declare -A o0
			for v in "${victims[@]}"; do count $v ops; o0[$v]=$REPLY; done
			nap 3
			alive $cmd_pid && note="delete waited for its users;" || note="delete did not wait;"
			for v in "${victims[@]}"; do
				if alive ${PID[$v]} && ! wait_for 20 progressed $v ${o0[$v]}; then
					round_fail victims-ended-cleanly "process $v verified nothing more on $gone_devs while it was being deleted: $(last_of $v)"
				fi
				kill -TERM ${PID[$v]} 2>/dev/null
			done
		fi
		;;
	rmmod)
		if out=$(rmmod $MOD 2>&1); then
			note="rmmod succeeded with users;"
			want_rc="0 3"
			[ $DISASSOC = 1 ] && want_rc=3
		else
			note="rmmod refused ($(echo "$out" | sed 's/.*: //' | head -n 1));"
			[ $DISASSOC = 1 ] && round_fail teardown-completed "rmmod with users present: $out"
			for v in "${victims[@]}"; do kill -KILL ${PID[$v]} 2>/dev/null; done
			want_rc=137
		fi
		;;
	esac
	# The victims end (by themselves after a port error).
	rcs=
	for v in "${victims[@]}"; do
		reap_proc $v 60
		rcs="$rcs $v:$RC"
		KIND_ENDED[$kind]=$((${KIND_ENDED[$kind]:-0} + 1))
		if [[ " $want_rc " != *" $RC "* ]]; then
			round_fail victims-ended-cleanly "process $v (${SPEC[$v]}) exit $RC, want ${want_rc// / or }: $(last_of $v)"
		fi
	done
	# The command finished, the devices went.
	case $kind in
	rmmod)
		if [[ $note == *refused* ]]; then
			wait_for 30 rmmod $MOD || round_fail teardown-completed "rmmod still refused after the users were killed: $(rmmod $MOD 2>&1)"
		fi
		;;
	kill) ;;
	*)
		end=$((SECONDS + 90))
		while alive $cmd_pid && [ $SECONDS -lt $end ]; do nap 0.2; done
		if alive $cmd_pid; then
			round_fail teardown-completed "'$what' still running 90 s after its users ended"
			kill -KILL $cmd_pid 2>/dev/null
		fi
		wait $cmd_pid
		crc=$?
		[ "$crc" = 0 ] || round_fail teardown-completed "'$what' exited $crc: $(tail_of $TR/cmd.log)"
		;;
	esac
	since $t0
	tdone=$REPLY
	echo "#   ended:$rcs; teardown ${tdone}s"
	for d in $gone_devs; do
		wait_for 60 eval "! has_link $d" || round_fail teardown-completed "$d still listed: $(rdma link show $d/1 2>&1)"
	done
	# The net devices that went with them are gone before they are made
	# again.
	case $kind in
	netdev-delete | netns-delete)
		for nd in veth0 veth2; do
			[ $nd = veth0 ] && [[ " $gone_devs " != *" $D0 "* ]] && continue
			[ $nd = veth2 ] && [[ " $gone_devs " != *" $D2 "* ]] && continue
			wait_for 60 eval "! ip link show $nd >/dev/null 2>&1" || round_fail teardown-completed "$nd still there"
		done
		;;
	esac
	# The others kept verifying.
	for i in "${others[@]}"; do
		count $i ops
		o=$REPLY
		if ! alive ${PID[$i]}; then
			reap_proc $i 0
			round_fail others-kept-verifying "process $i (${SPEC[$i]}) ended with $RC: $(last_of $i)"
			victims+=($i)
		elif ! wait_for 30 progressed $i $o; then
			round_fail others-kept-verifying "process $i (${SPEC[$i]}) made no progress in 30 s: $(last_of $i)"
		fi
	done
	# Nothing left of the ended processes; the kernel's own objects as on
	# a fresh device.
	if ! wait_for 10 no_leftovers; then
		round_fail restrack-clean "$(leftovers)"
	fi
	for d in $D0 $D1 $D2; do
		has_link $d || continue
		k=$(kernel_objs $d)
		[ "$k" = "${KBASE[$d]}" ] || round_fail restrack-clean "$d's own objects: $(echo "$k" | tr '\n' ';')"
	done
	# Restore.
	echo "#   checked; restoring"
	restored=1
	case $kind in
	rmmod) load && make_x && make_y || restored=0 ;;
	kill) ;;
	*) make_x && make_y || restored=0 ;;
	esac
	[ $restored = 1 ] || round_fail restored "re-creating after '$what' failed"
	[ -z "$gone_devs" ] || gids
	links_ok || { round_fail restored "rdma link: $(links | tr '\n' ' ')"; restored=0; }
	for d in $gone_devs; do
		s=$(summary $d)
		[ "$s" = "${BASE[$d]}" ] || round_fail restored "re-created $d: '$s', want '${BASE[$d]}'"
	done
	[ $restored = 1 ] || { log "round $round: cannot restore; stopping"; break; }
	for v in "${victims[@]}"; do start_proc $v; done
	bad=$(wait_ready "${victims[@]}")
	[ -z "$bad" ] || round_fail restored "not ready after restart:$bad"
	# The kernel log of the round.
	dmesg | tail -n +$((mark + 1)) >$TR/dmesg.round
	if ! scripts/splat.sh $TR/dmesg.round 2>$TR/splat; then
		round_fail kernel-log-clean "$(head -n 8 $TR/splat | tr '\n' ' ' | cut -c1-400)"
	fi
	since $t0
	dt=$REPLY
	ds=${dt/./}
	KIND_ROUNDS[$kind]=$((${KIND_ROUNDS[$kind]:-0} + 1))
	KIND_TIME[$kind]=$((${KIND_TIME[$kind]:-0} + ds))
	[ "$ds" -gt "${KIND_MAX[$kind]:-0}" ] && KIND_MAX[$kind]=$ds
	[[ $note == *refused* ]] && KIND_NOTES[$kind]=$((${KIND_NOTES[$kind]:-0} + 1))
	log "round $round $kind: $what; ended$rcs; $note teardown ${tdone}s, round ${dt}s, $((SECONDS - suite_start))s in"
done

# ===================================================================================
# Stop everything: every process exits 0, the counts go back to the baseline.
kind=end
bad=
for i in $(seq 1 $NPROC); do [ -n "${PID[$i]}" ] && kill -TERM ${PID[$i]} 2>/dev/null; done
for i in $(seq 1 $NPROC); do
	[ -n "${PID[$i]}" ] || continue
	reap_proc $i 30
	[ "$RC" = 0 ] || bad="$bad $i:$RC($(last_of $i))"
done
[ -z "$bad" ] && pass end/all-stopped-cleanly || fail end/all-stopped-cleanly "$bad"
if grep -l 'exit 1 (' $PLOGS/p*.log >/dev/null 2>&1; then
	fail end/no-data-mismatch "$(grep -h 'exit 1 (' $PLOGS/p*.log | head -n 3 | tr '\n' ' ')"
else
	pass end/no-data-mismatch
fi
same=1
for d in $D0 $D1 $D2; do
	wait_for 10 eval "[ \"\$(summary $d)\" = '${BASE[$d]}' ]" ||
		{ same=0; fail end/baseline-$d "'$(summary $d)', want '${BASE[$d]}'"; }
done
[ $same = 1 ] && pass end/baseline

# Per kind: one result per check.
for k in "${KINDS[@]}"; do
	[ -n "${KIND_ROUNDS[$k]:-}" ] || { skip "$k/rounds" "no round of this kind ran"; continue; }
	for c in "${CHECKS[@]}"; do
		if [ -n "${FAILS[$k/$c]:-}" ]; then
			fail "$k/$c" "$(echo "${FAILS[$k/$c]}" | cut -c1-600)"
		else
			pass "$k/$c"
		fi
	done
done
{
	printf '%-14s %7s %10s %10s %14s %10s %10s %s\n' kind rounds processes ops-verified bytes-verified mean-s max-s notes
	for k in "${KINDS[@]}"; do
		r=${KIND_ROUNDS[$k]:-0}
		[ "$r" = 0 ] && continue
		notes=
		[ $k = rmmod ] && notes="rmmod refused with users in ${KIND_NOTES[$k]:-0} of $r"
		m=$((KIND_TIME[$k] / r))
		printf '%-14s %7s %10s %10s %14s %8d.%d %8d.%d %s\n' "$k" "$r" "${KIND_ENDED[$k]:-0}" "${KIND_OPS[$k]:-0}" "${KIND_BYTES[$k]:-0}" \
			$((m / 10)) $((m % 10)) $((KIND_MAX[$k] / 10)) $((KIND_MAX[$k] % 10)) "$notes"
	done
	echo "verified in all: $TOTAL_OPS operations, $TOTAL_BYTES bytes (the processes stopped at the end: ${KIND_OPS[end]:-0}, ${KIND_BYTES[end]:-0}); seed $SEED; $MWOPT"
} | tee "$OUTDIR/teardown-summary.txt"

cp -r $PLOGS "$OUTDIR/teardown-procs" 2>/dev/null
[ -f $TR/trace.txt ] && cp $TR/trace.txt "$OUTDIR/teardown-trace.txt"

# Remove everything; the module goes; nothing leaked.
kind=end
rdma link delete $D2 && rdma link delete $D0 && rdma link delete $D1 && ip netns del $NS &&
	ip link del veth2 && ip link del veth0 2>/dev/null
t end/unload wait_for 30 rmmod $MOD
dmesg | tail -n +$(($(wc -l <$TR/dmesg.before) + 1)) >$TR/dmesg.new
if scripts/splat.sh $TR/dmesg.new 2>$TR/splat; then
	pass end/kernel-log-clean
else
	fail end/kernel-log-clean "$(head -n 8 $TR/splat | tr '\n' ' ')"
fi
nap 6
kmemleak_check end/no-leak
echo "# teardown: $((SECONDS - suite_start))s"
exit 0
