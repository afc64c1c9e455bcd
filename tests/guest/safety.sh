#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Object safety, tested as an attacker would (tests/verbs/object_safety.c,
# built by scripts/testprogs.sh; each subcommand's checks are described there):
# - safety/mw/...: memory windows hold their MR: an unprivileged user
#   cannot move an MR (dereg, rereg of its pages or PD) from under a bound
#   window, nor reach a root-owned read-only file through a window; a
#   window cannot grant what its MR no longer allows;
# - safety/qp-reuse/...: a type 2 window bound by a QP that was destroyed
#   serves no later QP with the same number, in another PD or in the same
#   one (rdma_rrxe's debugfs qpn_max at 64, so numbers come back soon);
#   and a QP given a dead loopback peer's number cannot feed the peer's
#   surviving QP (qp-reuse/peer-reuse/...);
# - safety/memlock/...: the rings and send queue copy of an unprivileged
#   user's QP count against its RLIMIT_MEMLOCK, as pinned MR pages do;
# - safety/uc-access/...: a UC responder without remote write takes no
#   WRITE;
# - safety/cq-events/...: a CQ that overflows raises one event per
#   overflow, not one per lost completion;
# - safety/resize-fault/...: a resize_cq that fails writing the new ring's
#   mmap info leaves the CQ on its old ring (completions still seen);
# - safety/big-mr/...: an MR over more than 2 GiB registers (its page
#   array is vmalloc'd) and works at its end;
# - safety/mcast-icrc/...: a multicast frame's ICRC is checked once, not
#   once per member (rcvd_icrc_err counts the packet once);
# - safety/read-mtu/...: an RDMA READ keeps the MTU it began with when the
#   net device's MTU changes under it, and the responder goes on to the
#   next request;
# - safety/stale-ack/...: ACKs and NAKs for a PSN already acknowledged, or
#   for one never sent, from the wire every 2 ms, neither keep a requester
#   whose packets are lost from running out of retries (RETRY_EXC_ERR) nor
#   complete or fail its WQE; an ACK past a READ whose response comes
#   after it leaves the READ to complete with that response;
# - safety/destroy/...: destroying QPs that stream to themselves, or to
#   each other while both are destroyed, always returns within 10 s;
# - safety/wire/stalled/...: frames from the wire for a QP whose work is
#   stalled are kept up to the queues' bounds, the rest dropped and
#   counted (rcvd_queue_full), and the kept ones are taken in order once
#   the work runs again;
# - safety/user-bounds/...: a user of another uid takes all the AHs it
#   may: it stops at its share, another user still creates one, root
#   still does, and rping and an NVMe-oF host still connect
#   (tests/lib/nvme_once.sh); with debugfs's qpn_max at 64, four users
#   take all the QPs they may and stop short of the kernel's reserve; an
#   implicit ODP MR is charged to RLIMIT_MEMLOCK (tests/verbs/user_bounds.c);
# then restrack lists nothing left, kmemleak is empty and the module
# unloads. The kernel log check of the VM run covers all of it.
#
#   safety.sh [DEV]   (default rrxe0; DESTROY_ROUNDS=N, OBJECT_SAFETY_CYCLES=N)
# vm-seconds: 220 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
# vm-options: --smp 2,sockets=2,cores=1
# vm-env: DESTROY_ROUNDS OBJECT_SAFETY_CYCLES
# vm-beside: twohost/ulp (scripts/check.sh runs it beside the two-VM ulp test, after fuzz, in that pair's idle time)
GROUP=safety
. tests/guest/lib.sh

DEV=${1:-${DEV:-rrxe0}}
BIN=/tmp/object_safety
ROUNDS=${DESTROY_ROUNDS:-30}

veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
sleep 1
t setup/link-add link_add "$DEV" veth0
t setup/ipv4-gid wait_for 10 gid_index "$DEV"
GID=$(gid_index "$DEV") || GID=1
# (A copy in /tmp: the unprivileged runs below need not reach the share.)
tt setup/build prog object_safety || exit 1
cp $PROGS/object_safety $BIN && chmod 0755 $BIN

# The baseline restrack listing of the device (ib_core's own objects),
# less what changes by itself: use counts and PSNs (QP1 sends rdma_cm's
# MADs), and the CQs of ib_core's shared pool, which keeps those the
# NVMe-oF check used until the device goes.
resources() {
	local r
	for r in pd cq qp mr srq; do
		rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | sed 's/ users [0-9]*//; s/ [sr]q-psn [0-9]*//g'
	done | grep -v ' cqn [1-9][0-9]* .*comm \[ib_core\]' | sort
}
same_as_before() { diff -q /tmp/res.before <(resources) >/dev/null; }
resources >/tmp/res.before
kmemleak_clear

# --- memory windows, as an unprivileged user against a root-owned file ---------------
RO=/tmp/root-owned-read-only
head -c 4096 /dev/urandom >$RO
chown root:root $RO
chmod 0444 $RO
sum_before=$(sha256sum <$RO)
uid=$(id -u nobody)
t mw/unprivileged-user-can-open-device setpriv --reuid="$uid" --regid="$uid" --clear-groups \
	ibv_devinfo -d "$DEV"
run_helper mw 300 setpriv --reuid="$uid" --regid="$uid" --clear-groups $BIN mw "$DEV" "$GID" $RO
t_eq mw/read-only-file-intact "$(sha256sum <$RO)" "$sum_before"
# (The guest's RLIMIT_MEMLOCK is the kernel's default, 8 MiB.)
run_helper memlock 300 setpriv --reuid="$uid" --regid="$uid" --clear-groups $BIN memlock "$DEV" "$GID"

# --- the rest, as root ----------------------------------------------------------------
run_helper uc-access 120 $BIN uc-access "$DEV" "$GID"
run_helper cq-events 120 $BIN cq-events "$DEV" "$GID"
run_helper resize-fault 60 $BIN resize-fault "$DEV" "$GID"
run_helper big-mr 600 $BIN big-mr "$DEV" "$GID"
run_helper destroy 900 $BIN destroy "$DEV" "$GID" "$ROUNDS"

# --- per-user bounds (rrxe only: C rxe has none) -----------------------------------------
UB=/tmp/user_bounds
case $DEV in
rrxe*)
	tt setup/build-user-bounds prog user_bounds && cp $PROGS/user_bounds $UB && chmod 0755 $UB
	# (rping between two fresh processes of root, and an NVMe-oF host and
	# target, while the users hold every AH they may: ib_cm's AHs, and
	# the ULPs' QPs and MRs, are a kernel consumer's.)
	rping_pair="timeout 60 rping -s -a 10.0.0.1 -V -C 3 -S 100 & s=\$!; sleep 1;
		timeout 60 rping -c -a 10.0.0.1 -V -v -C 3 -S 100 >/dev/null; c=\$?; wait \$s && exit \$c"
	run_helper user-bounds/ah 600 $UB "$DEV" "$GID" ah 32767 1 "rping=$rping_pair" \
		"nvme=timeout 180 tests/lib/nvme_once.sh 10.0.0.1"
	run_helper user-bounds/odp 120 $UB "$DEV" "$GID" odp
	;;
esac

# Frames from the wire: written on veth1, they come in on veth0 from
# 10.0.0.9, which no interface has (reverse-path filtering off for it); the
# device answers 10.0.0.9 through a permanent neighbour entry.
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.veth0.rp_filter=0
ip neigh replace 10.0.0.9 lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent
run_helper mcast-icrc 120 $BIN mcast-icrc "$DEV" "$GID" veth0 veth1
run_helper read-mtu 300 $BIN read-mtu "$DEV" "$GID" veth0 veth1
run_helper stale-ack 60 $BIN stale-ack "$DEV" "$GID" veth0 veth1
ip link set veth0 mtu 1500
# (rrxe) Frames from the wire for a QP whose work is stalled: its queues
# keep at most 1024 requests and 8192 responses, the rest is dropped and
# counted (tests/traffic/wire_inject.py --stalled-flood; 1664 WRITEs and
# 8832 READ responses).
case $DEV in
rrxe*)
	/usr/bin/python3 tests/traffic/wire_inject.py --stalled-flood "$DEV" veth0 veth1 8832 >/tmp/stalled.log 2>&1
	src=$?
	grep '^#' /tmp/stalled.log
	while read -r st name why; do
		case $st in
		ok) pass "wire/$name" ;;
		FAIL) fail "wire/${name%:}" "$why" ;;
		esac
	done </tmp/stalled.log
	[ "$src" = 0 ] || [ "$src" = 3 ] || fail wire/stalled/ran "exit $src: $(tail -n 5 /tmp/stalled.log | tr '\n' ' ')"
	;;
esac

t teardown/resources-as-before wait_for 20 same_as_before
t teardown/link-delete rdma link delete "$DEV"

# --- QP numbers that come back ----------------------------------------------------------
case $DEV in
rrxe*)
	t qp-reuse/reload rmmod rdma_rrxe
	t qp-reuse/load insmod "$RRXE_KO"
	t qp-reuse/qpn-max-64 sh -c 'echo 64 >/sys/kernel/debug/rdma_rrxe/qpn_max'
	t qp-reuse/link-add link_add "$DEV" veth0
	t qp-reuse/ipv4-gid wait_for 10 gid_index "$DEV"
	# (QP indices 16..64: 49.)
	run_helper user-bounds/qp 300 $UB "$DEV" "$(gid_index "$DEV")" qp 49 4
	run_helper qp-reuse 300 $BIN qp-reuse "$DEV" "$(gid_index "$DEV")" 200
	t qp-reuse/link-delete rdma link delete "$DEV"
	;;
esac

# kmemleak reports objects unreferenced for 5 s or more.
sleep 6
kmemleak_check no-leak
case $DEV in
rrxe*) t teardown/rmmod rmmod rdma_rrxe ;;
*) t teardown/rmmod rmmod rdma_rxe ;;
esac
exit 0
