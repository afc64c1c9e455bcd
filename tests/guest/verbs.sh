#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The control path of an rxe-ABI device through libibverbs and librxe:
# - verbs/ring/...: the queue rings librxe maps for CQs, QPs and SRQs match
#   include/uapi/rdma/rdma_user_rxe.h, and a posted receive lands in the RQ
#   (tests/verbs/ring_layout.c, built by scripts/testprogs.sh);
# - verbs/rereg/...: rereg_user_mr (IB_MR_REREG_TRANS, _ACCESS, _PD and bad
#   input) sent as the raw uverbs command, librxe having no rereg_mr, each
#   change proven with RDMA WRITEs and READs between two loopback RC QPs
#   (tests/verbs/rereg_mr.c, built by scripts/testprogs.sh);
# - verbs/sge-keys/...: multi-packet WRITEs, SENDs and READs whose memory is
#   named by several keys (SGEs in three MRs, a key coming back within one
#   message, two rkeys back to back, a range past an MR's end), checked byte
#   for byte, then every MR deregisters at once: the driver's per-message
#   key lookup is neither reused for the wrong key nor kept past its message
#   (tests/verbs/sge_keys.c, built by scripts/testprogs.sh);
# - verbs/flush/...: RDMA FLUSH written into the send ring as librxe 45
#   writes it (rdma-core 44 has no ibv_wr_flush): the flush rights of the
#   QP and the MR, the placement type and selectivity level, ranges and
#   keys, pinned and on-demand-paging MRs, and the persistent right refused
#   over memory that is not persistent memory (tests/verbs/flush_wr.c,
#   built by scripts/testprogs.sh);
# - verbs/odp/...: on-demand paging MRs while their owner changes its memory
#   under them: munmap (WRITEs and READs into the unmapped part fail with
#   REM_ACCESS_ERR and never reach the page that was there, the mapped part
#   keeps working; also racing with traffic), MADV_DONTNEED (the data
#   re-faulted, byte for byte; also racing with traffic), fork (the parent's
#   traffic in its own pages, the child's copy untouched), MRs over 2 MiB
#   huge pages (IBV_ACCESS_HUGETLB: traffic deep inside and across huge
#   pages lands exactly), plus the
#   capabilities and refused registrations (tests/verbs/odp_mr.c, built by
#   scripts/testprogs.sh); verbs/odp-current/advise/...: its prefetch checks
#   (ibv_advise_mr) with the current rdma-core's librxe, run beside the
#   system's; verbs/odp-cgroup/...: the same program in a
#   memory cgroup of 8 MiB reads and sends a 24 MiB file through an ODP MR,
#   twice over, verified against pread(2) while reclaim drops its pages;
# - verbs/sqd/...: RTS -> SQD while a 1 MiB WRITE is half sent: no
#   SQ_DRAINED and sq_draining set until the WRITE completes (in SQD), then
#   the event; a WRITE posted in SQD waits for RTS (tests/verbs/sqd_drain.c,
#   built by scripts/testprogs.sh);
# - verbs/revoke/...: a memory window deallocated while a 1 MiB WRITE runs
#   through it: once ibv_dealloc_mw has returned, at most 2 KiB more land
#   (tests/verbs/revoke_race.c, built by scripts/testprogs.sh);
# - verbs/zcopy-unmap/...: packets sent without a copy (from the sender's
#   pinned pages): a 48 MiB buffer's pages are freed once its MR is
#   deregistered and it is unmapped (no page reference leaked); WRITEs
#   whose sender is moved to the error state: no byte lands after their
#   completions, though the buffer is overwritten then; a 1 MiB SEND or
#   WRITE whose MR is deregistered and buffer unmapped at once: the
#   receiver gets only the message's bytes (tests/verbs/zcopy_unmap.c,
#   built by scripts/testprogs.sh);
# - verbs/cq-full/...: receives whose completions find their CQ full: the
#   receiver goes to the error state and the sender's SEND is not
#   acknowledged (RETRY_EXC_ERR) (tests/verbs/recv_cq_full.c, built by
#   scripts/testprogs.sh);
# - verbs/send-error/...: a SEND whose lkey names no MR (and, under
#   local-inv/, a LOCAL_INV of such a key) between two good SENDs: it fails
#   with its own status, the SEND after it is flushed and never reaches the
#   peer, and the sender is in the error state
#   (tests/verbs/send_after_error.c, built by scripts/testprogs.sh);
# - verbs/retry/...: a requester whose peer QP was destroyed or moved to the
#   error state ends in RETRY_EXC_ERR, the next WQE flushed
#   (tests/verbs/retry_exc.c, built by scripts/testprogs.sh);
# - verbs/bad-input/...: out-of-range and zero sizes, unsupported types and
#   transitions, bad access flags, AH exhaustion (ENOMEM), destroying objects
#   still in use (EBUSY) and reusing destroyed ones, each asserting its errno
#   (tests/verbs/bad_input.py);
# - verbs/killed/...: a process holding one of each object is killed with
#   SIGKILL; the kernel releases everything (rdma resource show) and a
#   kmemleak scan is clean (tests/verbs/hold_resources.py).
#
#   verbs.sh [DEV]   (or DEV=...; default rrxe0; rxe* runs on C rdma_rxe)
# vm-seconds: 315 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=verbs
. tests/guest/lib.sh

DEV=${1:-${DEV:-rrxe0}}
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1

veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
sleep 1
t "setup/link-add-$DEV" link_add "$DEV" veth0
t setup/ipv4-gid wait_for 10 gid_index "$DEV"
t setup/port-active wait_for 10 bash -c "ibv_devinfo -d $DEV | grep -q PORT_ACTIVE"
GID=$(gid_index "$DEV") || GID=1

# verbs_prog PREFIX PROG LIMIT: builds tests/verbs/PROG.c (PREFIX/build)
# and runs it on the device, its checks under PREFIX/, within LIMIT s.
verbs_prog() {
	if tt "$1/build" prog "$2"; then
		run_helper "$1" "$3" "$PROGS/$2" "$DEV" "$GID"
	fi
}

# --- ring layout ----------------------------------------------------------------
verbs_prog ring ring_layout 300

# --- rereg_user_mr through the raw uverbs command ----------------------------------
verbs_prog rereg rereg_mr 600

# --- keys of multi-packet messages --------------------------------------------------
verbs_prog sge-keys sge_keys 300

# --- the live PSNs that ibv_query_qp reports ----------------------------------------
verbs_prog qp-query qp_query 120

# --- SQ drain (SQD) with a message half sent ---------------------------------------
verbs_prog sqd sqd_drain 120

# --- a window deallocated under a WRITE through it ---------------------------------
verbs_prog revoke revoke_race 300

# --- a sender's memory unmapped under its own message sent without a copy ------------
verbs_prog zcopy-unmap zcopy_unmap 300

# --- a receive completion that finds its CQ full -----------------------------------
verbs_prog cq-full recv_cq_full 120

# --- a send WQE that fails locally stops what is posted after it -------------------
verbs_prog send-error send_after_error 120

# --- RDMA FLUSH as librxe 45 posts it ----------------------------------------------
verbs_prog flush flush_wr 300

# --- a requester whose peer QP fails ends in RETRY_EXC_ERR ------------------------
verbs_prog retry retry_exc 120

# --- on-demand paging MRs -----------------------------------------------------------
# odp_reclaim: odp_mr's reclaim/ checks in a memory cgroup that holds a third
# of the file the MR maps (out/tests/odp_file, 24 MiB, page cache of the
# repository share: reclaim drops it without swap). The cgroup shows that
# reclaim ran, and that nothing was OOM-killed.
odp_reclaim() {
	local cg=/sys/fs/cgroup/odp-reclaim steal
	if ! { mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup; } ||
		! echo +memory >/sys/fs/cgroup/cgroup.subtree_control || ! mkdir -p $cg ||
		! echo 8M >$cg/memory.max; then
		fail odp-cgroup/setup "no cgroup v2 memory controller"
		return
	fi
	pass odp-cgroup/setup
	run_helper odp-cgroup 900 bash -c "echo \$\$ >$cg/cgroup.procs && exec $PROGS/odp_mr $DEV $GID reclaim $PROGS/odp_file"
	steal=$(grep '^pgsteal ' $cg/memory.stat | cut -d' ' -f2)
	echo "# odp-cgroup: memory.stat pgsteal ${steal:-?}, workingset_refault_file $(grep '^workingset_refault_file ' $cg/memory.stat | cut -d' ' -f2), memory.peak $(cat $cg/memory.peak 2>/dev/null)"
	case $DEV in
	rrxe*) t odp-cgroup/pages-were-reclaimed test "${steal:-0}" -gt 0 ;;
	esac
	t_match odp-cgroup/no-oom-kill "$(cat $cg/memory.events)" '^oom_kill 0$'
	rmdir $cg
}
# Two 2 MiB huge pages for odp_mr's huge/ checks (and two to spare).
echo 4 >/proc/sys/vm/nr_hugepages
if tt odp/build prog odp_mr; then
	run_helper odp 900 $PROGS/odp_mr "$DEV" "$GID"
	odp_reclaim
	# advise/ again with the current rdma-core's libibverbs and librxe,
	# which has advise_mr (librxe 44 has none: odp/advise is a SKIP).
	cur=$(sed -n 's/^LD_LIBRARY_PATH=//p' "$PROGS/pyverbs/current.env" 2>/dev/null)
	if [ -n "$cur" ]; then
		run_helper odp-current 300 env LD_LIBRARY_PATH="$cur" $PROGS/odp_mr "$DEV" "$GID" advise
	else
		skip odp-current "no current rdma-core (scripts/rdmacore.sh)"
	fi
fi

# --- bad input -----------------------------------------------------------------------
# On rrxe, with the QPs' dynamic-debug call site alone on meanwhile: the
# kernel log says why QP verbs failed ("rrxe0: qp#17 modify_qp: -EINVAL"),
# and nothing of the call sites left off (the device's, the CQs', the
# MRs', the PDs'), though bad input fails those verbs too.
ctl=/sys/kernel/debug/dynamic_debug/control
dyndbg=0
case $DEV in
rrxe*)
	if [ -w $ctl ] && grep -q 'rrxe_helper_dbg_qp ' $ctl; then
		dyndbg=1 mark=$(dmesg | wc -l)
		echo 'func rrxe_helper_dbg_qp +p' >$ctl
	else
		fail dyndbg/call-sites "no rrxe_helper_dbg_qp in $ctl (CONFIG_DYNAMIC_DEBUG)"
	fi
	;;
esac
run_helper bad-input 900 $PY tests/verbs/bad_input.py "$DEV" "$GID"
if [ $dyndbg = 1 ]; then
	echo 'func rrxe_helper_dbg_qp -p' >$ctl
	dlog=$(dmesg | tail -n +$((mark + 1)))
	t_match dyndbg/qp-verbs-say-why "$dlog" "$DEV: qp#[0-9]+ (modify|create)_qp: -E[A-Z]+"
	t_eq dyndbg/other-call-sites-silent \
		"$(grep -E "$DEV: ([a-z]+#[0-9]+ )?[a-z_]+: -E[A-Z]+\$" <<<"$dlog" | grep -v "$DEV: qp#" | head -n 3)" ""
fi

# --- a killed process leaves nothing behind -------------------------------------------
# The device's objects as restrack lists them (kernel-owned ones included:
# ib_core's GSI QP, its PD and CQ), with counts and PSNs (the live ones)
# left out: they change.
resources() {
	local r
	for r in pd cq qp mr srq; do
		rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | sed 's/ users [0-9]*//; s/ [sr]q-psn [0-9]*//g'
	done | sort
}
same_as_before() { diff -q /tmp/res.before <(resources) >/dev/null; }
# How many objects of process PID restrack lists, on any device.
of_pid() {
	local r
	for r in pd cq qp mr srq; do rdma resource show "$r" 2>/dev/null; done | grep -c "pid $1 "
}
# The per-device summary line ("0: rrxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0").
summary() { rdma resource show | grep -w "$DEV:"; }

resources >/tmp/res.before
summary >/tmp/sum.before
kmemleak_clear
$PY tests/verbs/hold_resources.py "$DEV" "$GID" >/tmp/hold.out 2>/tmp/hold.err &
hpid=$!
if wait_for 120 grep -q '^READY' /tmp/hold.out; then
	pass killed/holder-ready
	cat /tmp/hold.out
	for r in pd cq qp mr srq; do
		n=$(rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | grep -c "pid $hpid ")
		case $r in qp) want=3 ;; *) want=1 ;; esac
		t_eq "killed/listed-while-alive-$r" "$n" "$want"
	done
	t_match killed/summary-counts-ctx "$(summary)" ' ctx 1 '
	kill -KILL $hpid
	wait $hpid 2>/dev/null
	t killed/resources-released wait_for 20 same_as_before
	if ! same_as_before; then
		echo "restrack after the kill, against before the process:"
		diff /tmp/res.before <(resources)
	fi
	t_eq killed/summary-as-before "$(summary)" "$(cat /tmp/sum.before)"
	t_eq killed/no-object-of-the-pid "$(of_pid $hpid)" 0
	# kmemleak reports objects unreferenced for 5 s or more.
	sleep 6
	kmemleak_check killed/no-leak
else
	fail killed/holder-ready "hold_resources.py did not get ready: $(tail -n 5 /tmp/hold.err | tr '\n' ' ')"
	kill -KILL $hpid 2>/dev/null
	wait $hpid 2>/dev/null
fi

# --- teardown: nothing still holds the device -------------------------------------------
t teardown/link-delete rdma link delete "$DEV"
case $DEV in
rrxe*) t teardown/rmmod rmmod rdma_rrxe ;;
*) t teardown/rmmod rmmod rdma_rxe ;;
esac
exit 0
