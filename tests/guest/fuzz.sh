#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Hostile system calls (tests/verbs/uverbs_fuzz.c, built by scripts/testprogs.sh):
# worker processes send random and mutated uverbs write() commands and
# ioctl method calls to the device, with a table of live handles so that
# most reach the driver, map and scribble on the rings they are given, and
# are killed with SIGKILL at random (see the program's header). Then:
# - fuzz/...: what the fuzzer must have reached (creates of every kind, QPs
#   in RTS, completions polled from the rings), every worker back from the
#   kernel after the stop, none dead of a signal other than SIGKILL;
# - the device still carries verified traffic (ibv_rc_pingpong -c);
# - restrack lists for the device exactly what it listed before;
# - mcast/...: a directed case the fuzzer found (tests/verbs/mcast_mlids.c):
#   one multicast GID attached under two MLIDs, detached, the QP destroyed,
#   and a process that exits attached; nothing may stay behind or WARN;
# - limits/...: resource limits, in the same VM (tests/verbs/limits.sh:
#   objects created to the maxima or ENOMEM and back, twice; queue memory
#   charged to RLIMIT_MEMLOCK);
# - a kmemleak scan is clean; the VM's kernel-log check catches splats;
# - `rdma link delete` and `rmmod` succeed.
#
#   fuzz.sh [DRIVER [SECONDS [SEED [LOG [OPTS]]]]]
#     DRIVER   rrxe (the default) or rxe (C rdma_rxe 6.12 oopses on hostile
#              rings: not for make check)
#     SECONDS  how long to fuzz (default $FUZZ_SECONDS or 60)
#     SEED     the fuzzer's seed (default $FUZZ_SEED or random; printed)
#     LOG      non-empty: each worker logs its commands; the logs, the
#              fuzzer's output and the kmemleak report are copied to the
#              results directory when a check failed
#     OPTS     more uverbs_fuzz options (e.g. "-p 8 -k 500", "-G")
#   LIMITS_CAP, LIMITS_MEMLOCK_KIB: see tests/verbs/limits.sh.
# vm-env: FUZZ_SECONDS FUZZ_SEED FUZZ_LOG FUZZ_OPTS LIMITS_CAP LIMITS_MEMLOCK_KIB
# vm-seconds: 285 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
# vm-beside: twohost/ulp (scripts/check.sh runs it beside the two-VM ulp test, after the host gates, in that pair's idle time)
GROUP=fuzz
. tests/guest/lib.sh
. tests/traffic/lib.sh
. tests/verbs/limits.sh

DRIVER=${1:-${DRIVER:-rrxe}}
FUZZ=${2:-${FUZZ_SECONDS:-60}}
SEED=${3:-${FUZZ_SEED:-}}
LOG=${4:-${FUZZ_LOG:-}}	# non-empty: a command log per worker, kept on a failure
OPTS=${5:-${FUZZ_OPTS:-}}	# more uverbs_fuzz options (-p, -k, -W, -B, -G, -U)
DEV=${DRIVER}0
A=10.0.0.1
suite_start=$SECONDS
echo "# fuzz: driver $DRIVER, device $DEV, ${FUZZ}s"

rxe_provider_only
veth_pair veth0 veth1 $A/24 10.0.0.2/24
ip -6 addr add fd00::1/64 dev veth0 nodad
ip -6 addr add fd00::2/64 dev veth1 nodad
t setup/link-add link_up "$DRIVER" "$DEV" veth0
t setup/port-ready wait_for 20 port_ready "$DEV" || exit 1
G4=$(gid_index "$DEV" v4)
tt setup/build prog uverbs_fuzz || exit 1
stamp() { echo "# $((SECONDS - suite_start)) s: $*"; }
stamp built

# Everything restrack lists for the device, but for the users count.
resources() {
	local r
	for r in pd cq qp mr srq; do
		rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | sed 's/ users [0-9]*//'
	done | sort
}
# The per-device summary line ("0: rrxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0").
summary() { rdma resource show | grep -w "$DEV:"; }
same_as_before() { diff -q $TR/res.before <(resources) >/dev/null && [ "$(summary)" = "$(cat $TR/sum.before)" ]; }
resources >$TR/res.before
summary >$TR/sum.before
kmemleak_clear

# --- the fuzzer ------------------------------------------------------------------------
t0=$SECONDS
[ -n "$LOG" ] && mkdir -p $TR/cmdlog && chmod 777 $TR/cmdlog
# shellcheck disable=SC2086 # OPTS are words
timeout -k 10 $((FUZZ + 300)) $PROGS/uverbs_fuzz -t "$FUZZ" ${SEED:+-s "$SEED"} ${LOG:+-v $TR/cmdlog} $OPTS \
	"$DEV" "$G4" >$TR/fuzz.log 2>$TR/fuzz.err
frc=$?
cat $TR/fuzz.log
echo "# fuzzer exit $frc after $((SECONDS - t0)) s; stderr: $(head -c 600 $TR/fuzz.err | tr '\n' ' ')"
while IFS= read -r line; do
	case $line in
	'PASS '*) pass "${line#PASS fuzz/}" ;;
	'FAIL '*) rest=${line#FAIL fuzz/}; fail "${rest%%: *}" "${rest#*: }" ;;
	esac
done <$TR/fuzz.log
if grep -qx DONE $TR/fuzz.log; then
	pass completed
else
	fail completed "uverbs_fuzz exited $frc before DONE: $(tail_of $TR/fuzz.err)"
fi

stamp fuzzed
# --- afterwards ----------------------------------------------------------------------------
pair after 120 tcp:18515 "ibv_rc_pingpong -d $DEV -g $G4 -s 5000 -n 20 -c" \
	"ibv_rc_pingpong -d $DEV -g $G4 -s 5000 -n 20 -c $A"
pair_ok traffic-after "$(pingpong_check "$SLOG" 5000 20)$(pingpong_check "$CLOG" 5000 20)"
if wait_for 30 same_as_before; then
	pass resources-released
else
	fail resources-released "restrack: $(diff $TR/res.before <(resources) | grep '^[<>]' | head -n 5 | tr '\n' ' '); summary now '$(summary)', before '$(cat $TR/sum.before)'"
fi
stamp checked traffic and restrack
# --- directed: one MGID attached under two MLIDs (found by the fuzzer) --------
# See tests/verbs/mcast_mlids.c: a QP whose attachment count ib_core can
# never bring back to 0 cannot be destroyed, and closing its context
# WARNs and frees the ucontext under it (use-after-free in restrack).
qps() { rdma resource show qp 2>/dev/null | grep -cw "$DEV"; }
if out=$(prog mcast_mlids); then
	pass mcast/build
	qps_before=$(qps)
	dmesg >$TR/dmesg.before
	timeout -k 5 120 $PROGS/mcast_mlids "$DEV" >$TR/mcast.out 2>&1
	mrc=$?
	grep '^#' $TR/mcast.out
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "mcast/${line#PASS }" ;;
		'FAIL '*) rest=${line#FAIL }; fail "mcast/${rest%%: *}" "${rest#*: }" ;;
		esac
	done <$TR/mcast.out
	grep -qx DONE $TR/mcast.out || fail mcast/completed "exit $mrc before DONE: $(tail_of $TR/mcast.out)"
	# Both processes have exited: their contexts are closed.
	if wait_for 10 test "$(qps)" = "$qps_before"; then
		pass mcast/closed-contexts-released-qps
	else
		fail mcast/closed-contexts-released-qps "restrack lists $(qps) QPs on $DEV, $qps_before before: $(rdma resource show qp | grep -w "$DEV" | grep -v GSI | head -n 3 | tr '\n' ' ')"
	fi
	t_eq mcast/no-kernel-warning "$(dmesg | tail -n +$(($(wc -l <$TR/dmesg.before) + 1)) | grep -c 'WARNING:')" 0
else
	fail mcast/build "$out"
fi

# --- resource limits, on the same device --------------------------------------
limits_run "$DEV" "$G4"
stamp limits

# kmemleak reports objects unreferenced for 5 s or more.
sleep 6
kmemleak_check no-leak
# The whole report, and the command logs, for the one who reads a failure.
cat /sys/kernel/debug/kmemleak >$TR/kmemleak.txt
if [ -s $TR/kmemleak.txt ] || grep -q '^FAIL' "$RESULTS"; then
	cp $TR/kmemleak.txt $TR/fuzz.log $TR/fuzz.err /run/results/ 2>/dev/null
	[ -n "$LOG" ] && tar -C $TR -czf /run/results/cmdlog.tar.gz cmdlog
fi
stamp kmemleak

t teardown/link-delete timeout 120 rdma link delete "$DEV"
t teardown/unload unload "$DRIVER"
echo "# fuzz: $((SECONDS - suite_start))s"
exit 0
