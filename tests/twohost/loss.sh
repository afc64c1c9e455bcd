#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Loss and reordering between two hosts (scripts/vm2.sh): netem on a's
# eth0 drops 5% of the packets a sends and reorders some (10% go out at
# once, the others 1 ms later). Through that, a's rdma_verify
# (tests/traffic/rdma_verify.c) RDMA-WRITEs a pattern into b's memory, b
# checks every byte, refills the buffer, and a RDMA-READs it back and
# checks every byte: 16 MiB verified, in 1 MiB (+123 bytes) messages.
# Then:
# - the transfer completed, both sides exit 0, the byte count as asked;
# - netem really dropped packets (tc -s qdisc);
# - the requester retransmitted: a's completer_retry_err increased;
# - the responder received retransmitted packets: b's duplicate_request
#   increased (out_of_seq_request and rcvd_seq_err are printed);
# - no QP gave up: retry_exceeded_err stayed 0;
# - losses were resent when the responder's NAK showed them, not after
#   the retransmit timer: with rrxe on a, its retry_timeouts (retries the
#   timer started) are under half its completer_retry_err, also during a
#   recovery (a loss among the resent packets; about 1 in 6 when NAKs
#   resend, nearly all when a recovery waits for the timer)
#   (counters of `rdma statistic show link DEV/1`).
# (Loss on the READ responses too, b's egress, makes C rxe re-send whole
# 1 MiB READ responses from the first gap for every lost packet: hours.)
# Then a route change under a running connection (route/*, see there): a
# QP's next packets follow the new route, and the QP resumes once the old
# one is back.
# Drivers: DRV_A on a, DRV_B on b (both rrxe by default).
#
#   scripts/vm2.sh tests/twohost/loss.sh tests/twohost/loss.sh [DRV_A [DRV_B]]
#   LOSS_ROUNDS=8: rounds of SIZE written and read back (16 MiB verified)
# vm-env: LOSS_ROUNDS
# (1 GiB instead of vm2.sh's 1.5: a kmemleak scan costs more with more
# memory, and this test needs little.)
# vm-options: --mem 1G
# vm-seconds: 160 (measured in make check's debug VMs, Dec 2026)
GROUP=loss
. tests/guest/lib.sh
. tests/lib/twohost.sh
. tests/traffic/lib.sh

DRV_A=${1:-${DRV_A:-rrxe}}
DRV_B=${2:-${DRV_B:-rrxe}}
if [ "$ROLE" = a ]; then MYDRV=$DRV_A; else MYDRV=$DRV_B; fi
DEV=${MYDRV}0
SIZE=$((1048576 + 123))   # not a multiple of the MTU
ROUNDS=${LOSS_ROUNDS:-8} # 2 * SIZE * ROUNDS > 16 MiB verified
suite_start=$SECONDS
echo "# loss: a runs $DRV_A, b runs $DRV_B; this is $ROLE ($DEV)"

rxe_provider_only
chan_open || { echo "no control channel to the peer"; exit 1; }
t "$ROLE/setup/link-add" link_up "$MYDRV" "$DEV" eth0
t "$ROLE/setup/port-ready" wait_for 30 port_ready "$DEV"
G4=$(gid_index "$DEV" v4)
t "$ROLE/setup/build-rdma_verify" prog rdma_verify

if [ "$ROLE" = a ]; then
	t a/setup/netem tc qdisc add dev eth0 root netem loss 5% delay 1ms reorder 10% 50%
fi
COUNTERS="sent_pkts rcvd_pkts completer_retry_err rcvd_seq_err duplicate_request out_of_seq_request retry_exceeded_err retry_timeouts"
declare -A before after
for c in $COUNTERS; do before[$c]=$(counter "$DEV" "$c"); done
swap netem-on - >/dev/null

t0=$(now)
if [ "$ROLE" = b ]; then
	timeout -k 5 400 $PROGS/rdma_verify -d "$DEV" -g "$G4" -s $SIZE -n "$ROUNDS" -t 13 -T 390 >$TR/verify.log 2>&1
else
	timeout -k 5 400 $PROGS/rdma_verify -d "$DEV" -g "$G4" -s $SIZE -n "$ROUNDS" -t 13 -T 390 "$PEER" >$TR/verify.log 2>&1
fi
rc=$?
secs=$(elapsed "$t0")
cat $TR/verify.log
for c in $COUNTERS; do after[$c]=$(counter "$DEV" "$c"); done
delta() { echo $(( ${after[$1]:-0} - ${before[$1]:-0} )); }
dropped=$(tc -s qdisc show dev eth0 | awk '/dropped/ { sub(",", "", $7); print $7; exit }')
dropped=${dropped:-0}
mine="rc=$rc secs=$secs dropped=$dropped"
for c in $COUNTERS; do mine="$mine $c=$(delta $c)"; done
echo "# $ROLE: $mine"
peer=$(swap done "$mine")
echo "# peer: $peer"
[ "$ROLE" = a ] && tc qdisc del dev eth0 root

if [ "$ROLE" = a ]; then
	pv() { sed -n "s/.* $1=\([-0-9.]*\).*/\1/p" <<<" $peer"; }
	want=$((2 * SIZE * ROUNDS))
	if [ "$rc" = 0 ] && grep -q "^verified $want bytes" $TR/verify.log; then
		pass "transfer-verified-$((want >> 20))MiB"
	else
		fail "transfer-verified-$((want >> 20))MiB" "client exit $rc after ${secs}s: $(tail_of $TR/verify.log)"
	fi
	t_eq server-checked-all "$(pv rc)" 0
	if [ "$dropped" -gt 0 ]; then
		pass netem-dropped
	else
		fail netem-dropped "netem on a dropped $dropped packets"
	fi
	if [ "$(delta completer_retry_err)" -gt 0 ]; then
		pass requester-retransmitted
	else
		fail requester-retransmitted "a's completer_retry_err did not increase ($(delta completer_retry_err))"
	fi
	if [ "$(pv duplicate_request)" -gt 0 ]; then
		pass responder-saw-retransmission
	else
		fail responder-saw-retransmission "b's duplicate_request did not increase"
	fi
	t_eq no-retry-exceeded "$(delta retry_exceeded_err)" 0
	# C rxe has no retry_timeouts: the check is rrxe's.
	if [ "$DRV_A" = rrxe ]; then
		r=$(delta completer_retry_err) to=$(delta retry_timeouts)
		if [ "$r" -gt 0 ] && [ $((2 * to)) -lt "$r" ]; then
			pass losses-resent-on-nak
		else
			fail losses-resent-on-nak "$to of a's $r retries waited for the retransmit timer"
		fi
	fi
	# More packets went out than the data needs: the retransmissions.
	echo "# a sent $(delta sent_pkts) packets, b received $(pv rcvd_pkts); ${secs}s for $want bytes"
fi

# A route change under a running connection. Whatever a QP keeps of its
# route between packets (a cached dst, as C rxe keeps in the QP's socket),
# its next packets must follow a routing change. The flow runs between second
# addresses (10.0.1.x; the control channel stays on 10.0.0.x): a
# RDMA-WRITEs to b with ib_write_bw. Once it flows, a routes b's address
# through a gateway that does not exist (10.0.1.200). a's next packet,
# new or resent, must take that route, which shows as a neighbour entry
# for the gateway (a's ARP for it; a route kept past the change would go
# on straight to b and never ask). Then the route goes away and the same
# QP resumes: its retransmissions get through (2 s ACK timeout, 7 retries) and perftest
# ends cleanly on both sides.
if [ "$ROLE" = a ]; then ME2=10.0.1.1 PEER2=10.0.1.2; else ME2=10.0.1.2 PEER2=10.0.1.1; fi
GW=10.0.1.200
ip addr add "$ME2/24" dev eth0
G2=
wait_for 20 gid_of "$DEV" "$ME2" && G2=$(gid_of "$DEV" "$ME2")
# a's one vCPU is shared by the busy-polling perftest, the driver's worker
# and this script: at the same priority each of the script's commands took
# seconds (several samples 0.5 s apart came 6-10 s apart), and a -D 20
# flow once ended before `ip route add` ran, so nothing asked for the
# gateway. So a's perftest runs at nice 19 (it only polls), and -D 40
# leaves room to spare.
rcmd="ib_write_bw -d $DEV -x ${G2:-0} -F -s 65536 -D 40 -u 19"
hwc() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1"; }
# sending: a's sent_pkts grows within half a second.
sending() { local s; s=$(hwc sent_pkts); sleep 0.5; [ "$(hwc sent_pkts)" -gt "$s" ]; }
gw_asked() { [ -n "$(ip neigh show "$GW" dev eth0)" ]; }
if [ "$ROLE" = b ]; then
	st=never
	[ -n "$G2" ] && serve route 100 tcp:18515 "$rcmd" && st=ready
	swap route-ready "$st" >/dev/null
	[ "$st" = ready ] && reap 100
	swap route-done "${RC_S:-125}" >/dev/null
else
	peer=$(swap route-ready "${G2:+ready}")
	rc=125
	if [ "$peer" = ready ] && [ -n "$G2" ]; then
		up() { cut -d' ' -f1 /proc/uptime; }
		timeout -k 5 100 nice -n 19 $rcmd 10.0.0.2 >$TR/route.client 2>&1 </dev/null 7>&- 8<&- &
		cpid=$! ustart=$(up)
		t route/flowing-before wait_for 20 sending
		t route/no-gateway-yet eval '! gw_asked'
		counts() { echo "sent_pkts $(hwc sent_pkts) send_err $(hwc send_err) completer_retry_err $(hwc completer_retry_err)"; }
		c0=$(counts) u0=$(up)
		t route/change ip route add "$PEER2/32" via $GW dev eth0
		# The flow still runs once the route has changed (else nothing
		# would be sent that could ask for the gateway).
		t route/flow-running-after-change kill -0 $cpid
		# The next packet the QP sends, new or resent (a resend comes
		# within one 2 s timeout, 4 s after a second), goes the new way.
		t route/changed-route-followed wait_for 30 gw_asked
		echo "# route: client started at ${ustart}s; changed at ${u0}s ($c0); now $(up)s ($(counts));" \
			"route: $(ip route get "$PEER2" 2>&1 | head -1); neighbour: $(ip neigh show "$GW" dev eth0)"
		ip route del "$PEER2/32" via $GW dev eth0
		wait $cpid
		rc=$?
		echo "# route: client ended at $(up)s: $(perf_row $TR/route.client)"
	fi
	rc_b=$(swap route-done -)
	if [ "$rc" = 0 ] && [ "$rc_b" = 0 ] && [ -n "$(perf_row $TR/route.client)" ]; then
		pass route/resumed-after-change
	else
		fail route/resumed-after-change "client exit $rc, server exit $rc_b: $(tail_of $TR/route.client)"
	fi
fi
ip addr del "$ME2/24" dev eth0

swap end - >/dev/null
exec 7>&- 8<&-
t "$ROLE/teardown/link-delete" rdma link delete "$DEV"
t "$ROLE/teardown/unload" unload "$MYDRV"
echo "# loss: $((SECONDS - suite_start))s"
exit 0
