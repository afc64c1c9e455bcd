# SPDX-License-Identifier: GPL-2.0
#
# Guest test library: sourced by the scripts under tests/guest/ that
# scripts/vm.sh runs inside the VM (from the repository root, as root).
#
# Every check appends one line to $RESULTS, which `make check` counts:
#   PASS name | FAIL name: why | SKIP name: why

RESULTS=${RESULTS:-/run/results/results.txt}
VARIANT=${RRXE_VARIANT:-debug}
OUT=out/$VARIANT
RRXE_KO=$OUT/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
RXE_KO=$OUT/rdma_rxe.ko
GROUP=${GROUP:-$(basename "$0" .sh)}

# Each result also goes to times.txt beside $RESULTS with the
# milliseconds since the previous one (the check and whatever set it up):
# `make check` lists the slowest, to show where a run's time goes.
TIMES=${RESULTS%/*}/times.txt
_t_last=${EPOCHREALTIME/./}
_t_mark() {
	local now=${EPOCHREALTIME/./}
	echo "$(( (now - _t_last) / 1000 )) $GROUP/$1" >>"$TIMES"
	_t_last=$now
}
pass() { echo "PASS $GROUP/$1" >>"$RESULTS"; echo "ok   $GROUP/$1"; _t_mark "$1"; }
fail() {
	echo "FAIL $GROUP/$1: ${2:-}" >>"$RESULTS"
	echo "FAIL $GROUP/$1: ${2:-}"
	_t_mark "$1"
}
skip() { echo "SKIP $GROUP/$1: ${2:-}" >>"$RESULTS"; echo "skip $GROUP/$1: ${2:-}"; _t_mark "$1"; }

# t NAME CMD...: passes if CMD exits 0.
t() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "'$*' exited $?: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}

# t_err NAME ERRNO_TEXT CMD...: passes if CMD fails and says ERRNO_TEXT.
t_err() {
	local name=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		fail "$name" "'$*' succeeded, expected failure ($want)"
	elif printf '%s' "$out" | grep -qi -- "$want"; then
		pass "$name"
	else
		fail "$name" "'$*' failed without '$want': $(printf '%s' "$out" | tail -n 2 | tr '\n' ' ')"
	fi
}

# t_eq NAME GOT WANT
t_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi
}

# t_match NAME TEXT REGEX
t_match() {
	if printf '%s' "$2" | grep -qE -- "$3"; then
		pass "$1"
	else
		fail "$1" "no match for /$3/ in: $(printf '%s' "$2" | head -c 300 | tr '\n' ' ')"
	fi
}

# wait_for SECONDS CMD...: retries CMD until it succeeds or time runs out.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		nap 0.2
	done
}

# nap SECS: sleep(1) without starting a program. A program start costs a
# debug guest 0.1 to 0.2 s of its CPU under TCG, which a polling loop
# would pay every round, slowing what it waits for: a read with a timeout
# on a FIFO that nobody writes (opened read-write, so it never ends).
nap() {
	if [ -z "${NAP_FD:-}" ]; then
		local f=/run/nap.$BASHPID
		mkfifo "$f" && exec {NAP_FD}<>"$f" && rm -f "$f" || { sleep "$1"; return; }
	fi
	read -r -t "$1" -u "$NAP_FD" _ || :
}

load_rrxe() { lsmod | grep -q '^rdma_rrxe ' || insmod "$RRXE_KO"; }
unload_rrxe() { ! lsmod | grep -q '^rdma_rrxe ' || rmmod rdma_rrxe; }
load_rxe() { lsmod | grep -q '^rdma_rxe ' || insmod "$RXE_KO"; }

# veth_pair A B [ADDR_A ADDR_B]: a veth pair, both ends up.
veth_pair() {
	ip link add "$1" type veth peer name "$2" || return 1
	[ -n "${3:-}" ] && ip addr add "$3" dev "$1"
	[ -n "${4:-}" ] && ip addr add "$4" dev "$2"
	ip link set "$1" up && ip link set "$2" up
}

# The value of field FIELD (e.g. "node_guid") of `ibv_devinfo -v -d DEV`.
devinfo_field() {
	info_field "$(ibv_devinfo -v -d "$1")" "$2"
}

# info_field TEXT FIELD: the value of "FIELD:" in TEXT (ibv_devinfo -v's
# output), read by the shell: one ibv_devinfo for many fields, and no awk.
info_field() {
	local k v
	while read -r k v; do
		if [ "$k" = "$2:" ]; then
			printf '%s\n' "$v"
			return 0
		fi
	done <<<"$1"
	return 1
}

# The modified EUI-64 (as ibv_devinfo prints a GUID) of a netdev's MAC.
eui64_of() {
	local m
	m=$(cat "/sys/class/net/$1/address") || return 1
	IFS=: read -r a b c d e f <<<"$m"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x$a ^ 2)) "$b" "$c" "$d" "$e" "$f"
}

# prog NAME: passes if the test program NAME (scripts/testprogs.sh, which
# scripts/vm.sh runs on the host before each boot) is built: $PROGS/NAME.
# Else prints the compiler's output and fails.
PROGS=out/tests
prog() {
	[ -x "$PROGS/$1" ] && return 0
	if [ -f "$PROGS/$1.err" ]; then
		tail -n 20 "$PROGS/$1.err"
	else
		echo "$PROGS/$1 not built (scripts/testprogs.sh)"
	fi
	return 1
}

kmemleak_clear() { echo clear >/sys/kernel/debug/kmemleak; }

# wq_trace on|off|count: tracefs's workqueue_queue_work events of the
# module's two QP workqueues (filtered to them): `on` clears the buffer
# and starts, `off` stops; `count` prints how many were queued on `rrxe`
# (user QPs') and on `rrxe_kernel` (kernel consumers'), and clears.
WQ_TRC=/sys/kernel/tracing
wq_trace() {
	local ev=$WQ_TRC/events/workqueue/workqueue_queue_work t
	case $1 in
	on)
		{ [ -e $WQ_TRC/trace ] || mount -t tracefs tracefs $WQ_TRC; } &&
			echo 'workqueue ~ "rrxe*"' >$ev/filter && echo >$WQ_TRC/trace &&
			echo 1 >$ev/enable
		;;
	off) echo 0 >$ev/enable && echo 0 >$ev/filter ;;
	count)
		t=$(cat $WQ_TRC/trace) && echo >$WQ_TRC/trace
		echo "$(grep -c ' workqueue=rrxe ' <<<"$t") $(grep -c ' workqueue=rrxe_kernel ' <<<"$t")"
		;;
	esac
}

# rrxe_trace on|off|read EVENT...: the driver's tracepoints (events/rrxe/,
# include/rrxe/rrxe_trace.h), in a tracefs instance of their own (a test
# that clears the main buffer, wire_inject.py's, does not clear these):
# `on` clears its buffer and enables EVENTs, `off` disables them, `read`
# prints the buffer and clears it.
rrxe_trace() {
	local op=$1 e i=$WQ_TRC/instances/rrxe
	shift
	case $op in
	on)
		{ [ -e $WQ_TRC/trace ] || mount -t tracefs tracefs $WQ_TRC; } &&
			{ [ -d $i ] || mkdir $i; } && echo >$i/trace || return 1
		for e in "$@"; do echo 1 >$i/events/rrxe/$e/enable || return 1; done
		;;
	off) for e in "$@"; do echo 0 >$i/events/rrxe/$e/enable; done ;;
	read) cat $i/trace && echo >$i/trace ;;
	esac
}

# Passes if a kmemleak scan finds nothing new since kmemleak_clear.
kmemleak_check() {
	local name=$1 leaks
	: >/run/kmemleak-checked # (tests/guest/init need not look again)
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(cat /sys/kernel/debug/kmemleak)
	if [ -z "$leaks" ]; then
		pass "$name"
	else
		fail "$name" "kmemleak: $(printf '%s' "$leaks" | head -n 20 | tr '\n' ' ')"
	fi
}

# tt NAME CMD...: t, but returns CMD's status (lib.sh's t always returns 0).
tt() {
	local name=$1 out rc
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		rc=$?
		fail "$name" "'$*' exited $rc: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
		return 1
	fi
}

link_add() { # NAME NETDEV
	case $1 in
	rrxe*) load_rrxe && rdma link add "$1" type rrxe netdev "$2" ;;
	*) load_rxe && rdma link add "$1" type rxe netdev "$2" ;;
	esac
}

# gid_index DEV [KIND]: the index of DEV's first RoCE v2 GID of KIND:
# v4 (an IPv4-mapped address, the default), v6 (a global IPv6 address), ll (fe80::) or
# =GID (exactly GID, as sysfs spells it).
gid_index() {
	local i g p=/sys/class/infiniband/$1/ports/1
	for i in $(seq 0 15); do
		g=$(cat "$p/gids/$i" 2>/dev/null) || continue
		[ "$(cat "$p/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
		case ${2:-v4} in
		v4) [[ $g == 0000:0000:0000:0000:0000:ffff:* ]] ;;
		v6) [[ $g != 0000:* && $g != fe80:* ]] ;;
		ll) [[ $g == fe80:* ]] ;;
		=*) [ "$g" = "${2#=}" ] ;;
		*) false ;;
		esac && { echo "$i"; return 0; }
	done
	return 1
}

# run_helper PREFIX TIMEOUT CMD...: runs a test helper and records the
# PASS/FAIL/SKIP lines it printed under PREFIX/; a helper that dies before
# printing DONE is a failure of PREFIX/completed.
run_helper() {
	local prefix=$1 limit=$2 out=/tmp/helper.out err=/tmp/helper.err rc line rest
	shift 2
	timeout "$limit" "$@" >"$out" 2>"$err"
	rc=$?
	grep '^#' "$out"
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "$prefix/${line#PASS }" ;;
		'FAIL '*) rest=${line#FAIL }; fail "$prefix/${rest%%: *}" "${rest#*: }" ;;
		'SKIP '*) rest=${line#SKIP }; skip "$prefix/${rest%%: *}" "${rest#*: }" ;;
		esac
	done <"$out"
	if grep -qx DONE "$out"; then
		pass "$prefix/completed"
	else
		fail "$prefix/completed" "'$*' exited $rc before DONE: $(tail -n 5 "$err" | tr '\n' ' ')"
	fi
}
