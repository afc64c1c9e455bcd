#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel-verbs conformance: the paths kernel consumers (nvme-rdma/nvmet,
# iSER, SRP, NFS over RDMA) take and user space never does. The C module
# tests/kverbs/rrxe_kverbs.c (built by scripts/module.sh into
# out/VARIANT/kverbs/) is loaded with dev=DEVICE and runs every check on
# that one device in loopback, two RC QPs connected through its own IPv4
# GID: FRWR (ib_alloc_mr, ib_map_mr_sg with first-entry page offsets 0, 1,
# 512 and 4095, multi-entry lists up to max_fast_reg_page_list_len,
# zero-based and tagged IOVAs, REG_MR, IB_MR_TYPE_SG_GAPS over entries at
# odd offsets and lengths) with RDMA WRITE and READ through the rkey and
# the lkey checked byte for byte with guards, across page and entry
# boundaries; any max_num_sg C rxe takes, and REG_MR of no more than was
# allocated; LOCAL_INV,
# SEND_WITH_INV and access through an invalidated key refused;
# re-registration with ib_update_fast_reg_key; the PD's local_dma_lkey (the
# device's, IBK_LOCAL_DMA_LKEY; refused as an rkey) and the unsafe global
# rkey; multi-SGE SEND, immediates, inline; UD through the GID of a VLAN
# device on the net device (veth0.100: IB_WC_WITH_VLAN and the VLAN ID on
# the receive) and through the plain one (no VLAN); rdma_rw
# contexts; ib_drain_qp (also on an SRQ); the four CQ polling contexts and
# the CQ pool; SRQ receives from two QPs; address handles created and
# destroyed without sleeping with interrupts off (they stay off: ib_cm
# does so under a spinlock); bad input (an error, never a
# splat); PMA Gets (ClassPortInfo, PortCounters, PortCountersExtended, an
# attribute it lacks) sent through ib_mad to the port's own GSI QP and
# answered by the driver's process_mad, the extended counters moving by
# exactly the packets and bytes sent between two Gets. It reports one
# line per check in
# /sys/kernel/debug/rrxe_kverbs/results, recorded here as
# kverbs/rrxe/CHECK.
#
# Then the FRWR checks (only=frwr/: the paths nvme-rdma's connect and I/O
# take) run on the module the kernel's own build compiled in-tree
# (tests/kbuild/intree.sh, run by make check before this VM: out/intree/),
# recorded as kverbs/intree/CHECK; it must carry the in-tree mark and load
# without the out-of-tree taint (O).
#
# Then the same module runs on C rdma_rxe (rxe0) in the same VM, after
# rrxe's link is deleted and rdma_rrxe unloaded (both drivers bind UDP
# 4791 in the initial namespace), recorded as kverbs/rxe/CHECK. Where C
# rxe fails a check that is right (the list below, see
# Documentation/testing.md), its result is a SKIP saying "C rxe: ...".
#
#   kverbs.sh [DRIVERS [MODULE_ARGS...]]
#   DRIVERS       "rrxe intree rxe" (default), or some of them
#   MODULE_ARGS   for insmod: sweep=N (N more FRWR rounds at random
#                 offsets and lengths), seed=S, only=GROUP/ (e.g. frwr/),
#                 qp_timeout=T (the QPs' ACK timeout, default 17)
# e.g. scripts/vm.sh tests/guest/kverbs.sh rrxe sweep=2000
# vm-seconds: 140 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=kverbs
. tests/guest/lib.sh

KO=$OUT/kverbs/rrxe_kverbs.ko
RESF=/sys/kernel/debug/rrxe_kverbs/results
INTREE_KO=out/intree/rdma_rrxe.ko
DRIVERS=${1:-rrxe intree rxe}
[ $# -gt 0 ] && shift
MODARGS=("$@")

# Checks C rxe (6.12) fails although they are right: NAME-GLOB|why.
# Each was seen failing on C rxe for the reason given after the |.
zbva='takes the first byte'"'"'s page offset from the iova, which is 0 for a zero-based MR: the data lands at the start of the page'
flush='completes the WR that failed with IB_WC_WR_FLUSH_ERR instead of its own error status'
RXE_KNOWN=(
	"frwr/zbva-off1/*|$zbva"
	"frwr/zbva-off512/*|$zbva"
	"frwr/zbva-off4095/*|$zbva"
	"inv/local-inv-lkey/loc-prot-err|$flush"
	"bad/reg-mr-foreign-pd|$flush"
	"bad/local-inv-unknown-key|$flush"
	'send/too-long|completes a receive too short for the SEND with IB_WC_LOC_QP_OP_ERR, not IB_WC_LOC_LEN_ERR'
	'frwr/sg-gaps*|does not advertise IBK_SG_GAPS_REG: no IB_MR_TYPE_SG_GAPS'
	'dma/local-dma-lkey-device|does not advertise IBK_LOCAL_DMA_LKEY: every kernel PD gets a DMA MR of its own'
	'pma/*|has no process_mad (upstream since Linux 7.2): nothing answers a PMA Get'
)

rxe_known() { # NAME: prints the reason if C rxe is known to fail NAME
	local e
	for e in "${RXE_KNOWN[@]}"; do
		# shellcheck disable=SC2254
		case $1 in ${e%%|*}) echo "${e#*|}"; return 0 ;; esac
	done
	return 1
}

# The in-tree build (never beside another rdma_rrxe).
load_intree() { ! lsmod | grep -q '^rdma_rrxe ' && insmod "$INTREE_KO"; }

gid_v4() { # DEV: an IPv4-mapped GID is in the table
	grep -qs '^0000:0000:0000:0000:0000:ffff:' /sys/class/infiniband/"$1"/ports/1/gids/*
}

# ingest DRV FILE: the module's lines as kverbs/DRV/NAME.
ingest() {
	local drv=$1 line rest name why known
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "$drv/${line#PASS }" ;;
		'SKIP '*) rest=${line#SKIP }; skip "$drv/${rest%%: *}" "${rest#*: }" ;;
		'FAIL '*)
			rest=${line#FAIL }
			name=${rest%%: *}
			why=${rest#*: }
			if [ "$drv" = rxe ] && known=$(rxe_known "$name"); then
				skip "$drv/$name" "C rxe: $known (it says: $why)"
			else
				fail "$drv/$name" "$why"
			fi
			;;
		esac
	done <"$2"
}

# peer_checks: a user QP writes into a kernel consumer's fast-registration
# MR (the module with peer=1: a kernel QP, and an MR mapped in softirq
# context, as a consumer may map one in its completion handler;
# tests/verbs/kpeer_write.c). The WRITE's packets go without a copy, and
# the responder copies them into the MR under the MR's lock, taking the
# sender's zero-copy gate there: lockdep must not report that order (an
# irq-unsafe lock under one taken in softirq). Recorded as
# kverbs/rrxe/peer/*.
peer_checks() {
	local out g
	if ! out=$(insmod "$KO" dev=rrxe0 peer=1 2>&1); then
		fail rrxe/peer/module-load "insmod: $out"
		return
	fi
	g=$(gid_index rrxe0 v4)
	if prog kpeer_write >/dev/null; then
		run_helper rrxe/peer 120 "$PROGS/kpeer_write" rrxe0 "$g"
	else
		fail rrxe/peer/completed "kpeer_write not built"
	fi
	# A QP whose ODP memory faults slowly (the module's slowfault file)
	# must not stall a QP that sends to it (tests/verbs/slow_fault.c):
	# kverbs/rrxe/slow-fault/*.
	if prog slow_fault >/dev/null; then
		run_helper rrxe/slow-fault 120 "$PROGS/slow_fault" rrxe0 "$g"
		# Two unprivileged users: 24 of the attacker's QPs wait for faults,
		# the victim's QPs and the attacker's other QPs still run, and the
		# attacker's modify and destroy of its faulting QPs do not wait
		# (kverbs/rrxe/slow-fault-users/*).
		run_helper rrxe/slow-fault-users 120 "$PROGS/slow_fault" rrxe0 "$g" users 24
		# The same between two root processes (privileged contexts: no
		# workqueues of a user's own; their faults go to the module's
		# rrxe_faults, not to rrxe where all their QPs' work runs):
		# kverbs/rrxe/slow-fault-root/*.
		run_helper rrxe/slow-fault-root 120 "$PROGS/slow_fault" rrxe0 "$g" root 24
		# Hot unplug: a second device (the module holds rrxe0) is deleted
		# while a user holds it and 24 of its QPs wait for faults; the
		# delete does not wait, the user's rings are zapped and its verbs
		# fail (kverbs/rrxe/unplug/*).
		if t rrxe/unplug/link-add rdma link add rrxe1 type rrxe netdev veth1 &&
			t rrxe/unplug/ipv4-gid wait_for 10 gid_v4 rrxe1; then
			run_helper rrxe/unplug 120 "$PROGS/slow_fault" rrxe1 "$(gid_index rrxe1 v4)" unplug 24
			t_eq rrxe/unplug/device-gone "$(rdma link show | grep -c 'rrxe1/')" 0
		fi
	else
		fail rrxe/slow-fault/completed "slow_fault not built"
	fi
	echo 1 >/sys/kernel/debug/rrxe_kverbs/check
	grep ' peer/' "$RESF" >/tmp/kverbs-peer.txt
	ingest rrxe /tmp/kverbs-peer.txt
	out=$(dmesg | grep -E -A4 'lock order detected|inconsistent lock state|circular locking|lock inversion' |
		head -n 8)
	t_eq rrxe/peer/no-lockdep-report "$out" ""
	# (Lockdep turns itself off after its first report of the boot, or
	# when its tables fill: then the check above proves nothing.)
	t_match rrxe/peer/lockdep-still-on "$(grep debug_locks /proc/lockdep_stats)" 'debug_locks: +1$'
	t rrxe/peer/module-unload rmmod rrxe_kverbs
}

veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
# A VLAN device on the RDMA device's net device: its address becomes a GID
# of the device, for the module's vlan/ checks (UD through it, to the
# device itself). It has a MAC of its own (a VLAN device may), so a
# packet to that MAC is one for the device (C rxe compares with the MAC of
# the GID's net device; rrxe compared with the port's and sent it into the
# stack, whose route to a local address it refused).
ip link add link veth0 name veth0.100 address 02:00:00:00:01:00 type vlan id 100
ip addr add 10.0.100.1/24 dev veth0.100
ip link set veth0.100 up
sleep 1
t setup/module-built test -f "$KO"

for drv in $DRIVERS; do
	case $drv in
	rrxe) dev=rrxe0; load=load_rrxe; mod=rdma_rrxe type=rrxe args=("${MODARGS[@]}") ;;
	intree) dev=rrxe0; load=load_intree; mod=rdma_rrxe type=rrxe args=(only=frwr/ "${MODARGS[@]}") ;;
	rxe) dev=rxe0; load=load_rxe; mod=rdma_rxe type=rxe args=("${MODARGS[@]}") ;;
	*) fail "setup/driver-$drv" "unknown driver (rrxe, intree or rxe)"; continue ;;
	esac
	if [ $drv = intree ] && [ ! -f "$INTREE_KO" ]; then
		skip "intree/setup/driver-load" "no $INTREE_KO: run tests/kbuild/intree.sh out/intree first (make check does)"
		continue
	fi
	t "$drv/setup/driver-load" $load
	if [ $drv = intree ]; then
		t_eq "intree/setup/modinfo-intree" "$(modinfo -F intree "$INTREE_KO")" Y
		t_match "intree/setup/no-out-of-tree-taint" "taint '$(cat /sys/module/rdma_rrxe/taint)'" "^taint '[^O]*'$"
	fi
	t "$drv/setup/link-add" rdma link add $dev type $type netdev veth0
	t "$drv/setup/ipv4-gid" wait_for 10 gid_v4 $dev
	t "$drv/setup/vlan-gid" wait_for 10 grep -qs '^0000:0000:0000:0000:0000:ffff:0a00:6401$' \
		/sys/class/infiniband/$dev/ports/1/gids/*
	t "$drv/setup/port-active" wait_for 10 bash -c "ibv_devinfo -d $dev | grep -q PORT_ACTIVE"
	if [ $drv = rrxe ]; then kmemleak_clear; fi
	cnt=/sys/class/infiniband/$dev/ports/1/hw_counters
	grep -s . $cnt/* >/tmp/kverbs-counters-before
	start=$SECONDS
	echo "== rrxe_kverbs on $dev ($drv) ${args[*]}"
	if out=$(insmod "$KO" dev=$dev "${args[@]}" 2>&1); then
		secs=$((SECONDS - start))
		cp "$RESF" "/run/results/kverbs-$drv.txt"
		ingest "$drv" "$RESF"
		end=$(grep '^END ' "$RESF")
		t_match "$drv/module-completed" "$end" '^END [0-9]+ [0-9]+ [0-9]+$'
		echo "   $end (passed failed skipped) in ${secs}s"
		# The largest transfers' times (a 2 MiB WRITE and READ), for reading.
		dmesg | grep -o 'rrxe_kverbs: [a-z0-9-]*: \(WRITE\|READ\) of [0-9]* bytes: [0-9]* ms' |
			tail -n 2 | sed 's/^rrxe_kverbs: /   /'
		t "$drv/module-unload" rmmod rrxe_kverbs
	else
		fail "$drv/module-completed" "insmod: $out"
	fi
	if [ $drv = rrxe ]; then
		peer_checks
		# ib_core's counters/ group, which it reads through process_mad
		# (PortCounters, and the extended data and packet counters), says
		# what the driver's own counters say (nothing moves between the
		# reads); no unicast or multicast files (not counted).
		pc=/sys/class/infiniband/$dev/ports/1/counters
		t_eq rrxe/pma/sysfs-port-xmit-packets "$(cat $pc/port_xmit_packets 2>&1)" "$(cat $cnt/sent_pkts)"
		t_eq rrxe/pma/sysfs-port-rcv-data "$(cat $pc/port_rcv_data 2>&1)" "$(($(cat $cnt/rcvd_bytes) / 4))"
		t_eq rrxe/pma/sysfs-no-unicast-counters "$(ls $pc 2>&1 | grep -c cast_)" 0
	fi
	# The counters of the device (new for this run) that changed: loopback
	# loses nothing, so retries mean a transport timer fired while the
	# peer was slow. For reading, not judged.
	grep -s . $cnt/* >/tmp/kverbs-counters-after
	diff /tmp/kverbs-counters-before /tmp/kverbs-counters-after |
		sed -n "s|^> $cnt/||p" | tee "/run/results/kverbs-$drv-counters.txt" |
		grep -E '^(sent_pkts|completer_retry_err|duplicate_request|rcvd_seq_err|retry_exceeded_err):' |
		tr '\n' ' ' | sed 's/^/   counters: /;s/$/\n/'
	t "$drv/teardown/link-delete" rdma link delete $dev
	t "$drv/teardown/rmmod" rmmod $mod
	# A kmemleak scan takes about 40 s here: rrxe's only.
	if [ $drv = rrxe ]; then kmemleak_check "$drv/kmemleak"; fi
done
