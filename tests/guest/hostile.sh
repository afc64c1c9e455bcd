#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A hostile process on the device (tests/traffic/hostile.c): child after
# child maps its own CQ and QP rings (RC, UC, UD), writes random bytes into
# them (headers, indices, WQE slots) while posting sends and receives,
# ringing bare doorbells, polling, cycling QP states and re-creating QPs;
# some children exit holding everything, some die of their own librxe
# reading garbage. Meanwhile other processes keep running verified traffic
# on the same device (ibv_rc_pingpong -c, rping -V), and every run of it
# must pass. Afterwards:
# - the device still carries traffic;
# - restrack lists nothing the hostile processes created;
# - the kernel log shows no report (also enforced by the VM harness);
# - a kmemleak scan is clean.
# Before those checks, a hostile network (wire/*): frames from the wire
# that the device must drop, or take exactly (tests/traffic/wire_inject.py).
#
#   hostile.sh [DRIVER [TARGETS]]
#     DRIVER   rrxe (the default) or rxe
#     TARGETS  what the hostile process corrupts: all (the default: the
#              slots for half the time, then ring headers and slots too);
#              slots, only the slots; none, nothing (it
#              still posts random work requests and exits abruptly). C rxe
#              oopses on a garbage opcode in a send WQE (see
#              Documentation/testing.md), so the harness is validated
#              against it with "none".
# vm-seconds: 260 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=hostile
. tests/guest/lib.sh
. tests/traffic/lib.sh

DRIVER=${1:-${DRIVER:-rrxe}}
TARGETS=${2:-all}
DEV=${DRIVER}0
A=10.0.0.1
FUZZ=75
case $TARGETS in
all) hopt= ;;
slots) hopt=-s ;;
none) hopt=-n ;;
*) echo "TARGETS: all, slots or none"; exit 2 ;;
esac
suite_start=$SECONDS
echo "# hostile: driver $DRIVER, device $DEV, ${FUZZ}s, corrupting $TARGETS"

rxe_provider_only
veth_pair veth0 veth1 $A/24 10.0.0.2/24
t setup/link-add link_up "$DRIVER" "$DEV" veth0
t setup/port-ready wait_for 20 port_ready "$DEV" || exit 1
G4=$(gid_index "$DEV" v4)
tt setup/build prog hostile || exit 1

# Everything restrack lists for the device, but for the users count and
# the QPs' PSNs (the live ones: ib_core's GSI QP sends meanwhile).
resources() {
	local r
	for r in pd cq qp mr srq; do
		rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | sed 's/ users [0-9]*//; s/ [sr]q-psn [0-9]*//g'
	done | sort
}
resources >$TR/res.before
# The hostile children die of their own librxe reading garbage: that is
# expected, and x86 would log each user-space segfault with a "Code:"
# dump that the kernel-log check cannot tell from an oops. Kernel reports
# are not affected by this switch.
echo 0 >/proc/sys/debug/exception-trace
dmesg >$TR/dmesg.before
kmemleak_clear

if [ "$TARGETS" = all ]; then
	# Half the time with intact ring headers: librxe keeps running, so
	# the kernel reads garbage WQEs for long; then headers too, where
	# librxe itself soon dies on a garbage index.
	timeout -k 5 $((FUZZ + 120)) bash -c "$PROGS/hostile -s $DEV $G4 $((FUZZ / 2)) && $PROGS/hostile $DEV $G4 $((FUZZ - FUZZ / 2))" >$TR/hostile.log 2>&1 &
else
	timeout -k 5 $((FUZZ + 120)) $PROGS/hostile $hopt "$DEV" "$G4" "$FUZZ" >$TR/hostile.log 2>&1 &
fi
hpid=$!

# Verified traffic on the same device while the hostile process runs.
runs=0 bad=0
while kill -0 $hpid 2>/dev/null; do
	runs=$((runs + 1))
	if [ $((runs % 2)) = 1 ]; then
		pair victim-$runs 120 tcp:18515 "ibv_rc_pingpong -d $DEV -g $G4 -s 3000 -n 50 -c" \
			"ibv_rc_pingpong -d $DEV -g $G4 -s 3000 -n 50 -c $A"
		prob=$(pingpong_check "$SLOG" 3000 50)$(pingpong_check "$CLOG" 3000 50)
	else
		pair victim-$runs 120 cm "rping -s -a $A -V -C 10 -S 5000" "rping -c -a $A -V -v -C 10 -S 5000"
		prob=$(rping_check "$SLOG")$(rping_check "$CLOG" 10)
	fi
	if [ "$RC_S" != 0 ] || [ "$RC_C" != 0 ] || [ -n "$prob" ]; then
		bad=$((bad + 1))
		fail "others-keep-working/run-$runs" "$prob; $(why)"
	fi
	echo "# victim run $runs: client ${WALL}s, $((SECONDS - suite_start))s into the suite"
done
wait $hpid
hrc=$?
cat $TR/hostile.log
want_summaries=1
[ "$TARGETS" = all ] && want_summaries=2
if [ "$hrc" = 0 ] && [ "$(grep -c '^hostile: [0-9]* runs' $TR/hostile.log)" = "$want_summaries" ]; then
	pass hostile-ran
else
	fail hostile-ran "exit $hrc: $(tail_of $TR/hostile.log)"
fi
if [ "$runs" -ge 2 ] && [ "$bad" = 0 ]; then
	pass others-kept-working
else
	fail others-kept-working "$bad of $runs verified runs beside the hostile process failed"
fi

# A hostile network: frames written on veth1 come in on veth0 as from the
# wire (tests/traffic/wire_inject.py). A UD SEND with a correct ICRC must
# complete, the same sent to veth1's address (this host's, not the
# device's), with a flipped ICRC, a stale ICRC, a wrong Q_Key or a
# foreign P_Key must not (the last two counted in the port's
# qkey_viol_cntr and bad_pkey_cntr, one per packet, and a good frame in
# neither), nor any of the good frame's truncations or 1500 random ones
# (random UDP payloads, random BTH opcodes and fields with a correct
# ICRC); then the good frame must still complete. Then RC QPs whose peer
# is 10.0.0.9: a WRITE must land exactly, bad R_Keys, ranges past either
# end, a payload longer than its RETH and a PSN ahead must leave the MR
# as it was, how the module frees a few of those frames (as used or as
# dropped, traced), and 160 QPs take mutated and random requests (see the
# script). Its source, 10.0.0.9, belongs to no interface, and
# reverse-path filtering is off for it. And a SEND and an ACK forged
# from the wire for a pair of the device's QPs connected through its own
# address (loopback only) must complete nothing, with accept_local on so
# that the stack lets them in, nor a SEND and an ACK that other QPs of
# the device send them, the forged ones over IPv6 too (wire/local-pair/*).
# The drops are traced (rrxe:rrxe_drop) with their reasons (rrxe only):
# trace/drop-reasons wants one event at least for each of icrc (the
# flipped and the stale ICRC), not_our_address, qkey, pkey and malformed
# (the truncations).
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.veth0.rp_filter=0
traced=0
[ "$DRIVER" = rrxe ] && rrxe_trace on rrxe_drop && traced=1
/usr/bin/python3 tests/traffic/wire_inject.py "$DEV" veth0 veth1 >$TR/wire.log 2>&1
wrc=$?
if [ $traced = 1 ]; then
	rrxe_trace off rrxe_drop
	rrxe_trace read >$TR/drops.trace
	missing=
	for r in icrc not_our_address qkey pkey malformed; do
		grep -q "rrxe_drop: $DEV qpn=[0-9]* psn=[0-9]* opcode=0x[0-9a-f]* reason=$r\$" $TR/drops.trace ||
			missing+=" $r"
	done
	if [ -z "$missing" ]; then
		pass trace/drop-reasons
	else
		fail trace/drop-reasons "no rrxe_drop event with reason$missing ($(grep -c rrxe_drop $TR/drops.trace) events)"
	fi
elif [ "$DRIVER" = rrxe ]; then
	fail trace/drop-reasons "no tracefs, or no events/rrxe"
fi
grep '^#' $TR/wire.log
while read -r st name why; do
	case $st in
	ok) pass "wire/$name" ;;
	FAIL) fail "wire/${name%:}" "$why" ;;
	esac
done <$TR/wire.log
if [ "$wrc" != 0 ] && [ "$wrc" != 3 ]; then
	fail wire/ran "exit $wrc: $(tail_of $TR/wire.log)"
fi
# More datagrams too long for a MAD buffer than QP1 has receives (512):
# dropped, so rdma_cm still connects (completed in error, each would use
# up one of ib_mad's receives for good).
/usr/bin/python3 tests/traffic/wire_inject.py --gsi-flood "$DEV" veth0 veth1 600
sleep 1
pair gsi-flood 120 cm "rping -s -a $A -V -C 3 -S 100" "rping -c -a $A -V -v -C 3 -S 100"
pair_ok wire/rdma-cm-after-gsi-flood "$(rping_check "$SLOG")$(rping_check "$CLOG" 3)"

# The device still works, the hostile processes left nothing behind.
# Its packets are traced while rrxe:rrxe_send and rrxe:rrxe_recv are on
# (rrxe only): trace/send-recv wants 20 SENDs of 5000 bytes each way in
# both (each a first packet, opcode 0x00, on the device), and events of
# the looped-back packets in both.
[ "$DRIVER" = rrxe ] && rrxe_trace on rrxe_send rrxe_recv
pair after 120 tcp:18515 "ibv_rc_pingpong -d $DEV -g $G4 -s 5000 -n 20 -c" \
	"ibv_rc_pingpong -d $DEV -g $G4 -s 5000 -n 20 -c $A"
pair_ok traffic-after "$(pingpong_check "$SLOG" 5000 20)$(pingpong_check "$CLOG" 5000 20)"
if [ "$DRIVER" = rrxe ]; then
	rrxe_trace off rrxe_send rrxe_recv
	rrxe_trace read >$TR/pkts.trace
	sends=$(grep -c "rrxe_send: $DEV qpn=[0-9]* psn=[0-9]* opcode=0x00 pkts=1 " $TR/pkts.trace)
	recvs=$(grep -c "rrxe_recv: $DEV qpn=[0-9]* psn=[0-9]* opcode=0x00 pkts=1 " $TR/pkts.trace)
	if [ "$sends" -ge 40 ] && [ "$recvs" -ge 40 ]; then
		pass trace/send-recv
	else
		fail trace/send-recv "$sends SEND-first packets sent and $recvs received traced, want 40 each"
	fi
fi
same_as_before() { diff -q $TR/res.before <(resources) >/dev/null; }
if wait_for 30 same_as_before; then
	pass resources-released
else
	fail resources-released "restrack still lists: $(diff $TR/res.before <(resources) | grep '^>' | head -n 5 | tr '\n' ' ')"
fi
dmesg | tail -n +$(($(wc -l <$TR/dmesg.before) + 1)) >$TR/dmesg.new
if scripts/splat.sh $TR/dmesg.new 2>$TR/splat; then
	pass kernel-log-clean
else
	fail kernel-log-clean "$(head -n 8 $TR/splat | tr '\n' ' ')"
fi
echo "# kernel messages during the run: $(wc -l <$TR/dmesg.new)"; head -n 20 $TR/dmesg.new
# kmemleak reports objects unreferenced for 5 s or more.
sleep 6
kmemleak_check no-leak

t teardown/link-delete rdma link delete "$DEV"
t teardown/unload unload "$DRIVER"
echo "# hostile: $((SECONDS - suite_start))s"
exit 0
