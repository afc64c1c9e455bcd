#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's storage protocols between two hosts (scripts/vm2.sh): DRV_A
# on VM a, DRV_B on VM b (rrxe and C rdma_rxe by default), eth0 at MTU
# 1500 (path MTU 1024). tests/lib/ulp.sh sets up each ULP (NVMe-oF, SRP,
# NFS over RDMA, iSER).
#
# 1. Each ULP in both roles: the target on b and the host on a
#    ("a.rrxe-to-b.rxe": host a on rrxe, target b on C rxe), then the
#    target on a and the host on b ("b.rxe-to-a.rrxe"). The host writes
#    ULP2_MIB MiB with fio (O_DIRECT, 512 B to 1 MiB, user buffers at page
#    offsets 512, 1536 and 3584, crc32c in every block) and reads all of it
#    back verified; then host and target tear down, and neither side's
#    device keeps a QP, cm_id or MR of the ULP.
# 2. Faults under NVMe-oF I/O (a fio job writing and verifying random
#    blocks in the background), on a's device (DRV_A):
#    cut:       a is the host, b the target. Both drop every packet on eth0
#               (netem loss 100%) for 10 s, then let them through: fio must
#               end without an error or a verify failure, nvme-rdma must
#               have reconnected (kernel log), and I/O must flow again
#               after the cut (the namespace's completed I/O grows).
#    host-link-delete:   a is the host; `rdma link delete` on a under
#               I/O returns within 120 s, the controller is removed
#               and fio ends (with I/O errors: the device is gone).
#    target-link-delete: a is the target; `rdma link delete` on a under
#               b's I/O returns within 120 s; a's nvmet configuration
#               tears down; b's host notices (its controller leaves the
#               live state), `nvme disconnect` returns within 120 s and
#               its fio ends.
#    rmmod:     a is the host; the driver's rmmod under I/O is refused or
#               tears down cleanly, within 120 s; the controller is gone
#               then (or after a disconnect, if it was refused).
#    In the last three, fio's I/O may fail, but no read may return wrong
#    data as a success (no verify complaint). The hung-task detector
#    checks every 10 s for a task blocked 120 s.
# 3. iSER in both roles, last (see Documentation/ulps.md).
# Then each side deletes its link, unloads the driver and the ULP modules,
# and a kmemleak scan must be empty.
#
#   scripts/vm2.sh tests/twohost/ulp.sh tests/twohost/ulp.sh [DRV_A [DRV_B]]
#   ULP2_MIB=8 (default 4): MiB per ULP and direction
#   ULP2_ULPS="nvme srp nfs iser", ULP2_FAULTS="cut host-link-delete
#   target-link-delete rmmod": what runs (all by default; "none": none of
#   them)
# vm-env: ULP2_MIB ULP2_ULPS ULP2_FAULTS
# vm-seconds: 770 (measured in make check's debug VMs, Dec 2026)
GROUP=ulp2
. tests/guest/lib.sh
. tests/lib/twohost.sh
. tests/traffic/lib.sh
. tests/lib/ulp.sh

DRV_A=${1:-${DRV_A:-rrxe}}
DRV_B=${2:-${DRV_B:-rxe}}
if [ "$ROLE" = a ]; then MYDRV=$DRV_A PEERDRV=$DRV_B; else MYDRV=$DRV_B PEERDRV=$DRV_A; fi
DEV=${MYDRV}0
ULP_DEV=$DEV
MIB=${ULP2_MIB:-4}
ULPS=${ULP2_ULPS:-nvme srp nfs iser}
FAULTS=${ULP2_FAULTS:-cut host-link-delete target-link-delete rmmod}
[ "$ULPS" = none ] && ULPS=
[ "$FAULTS" = none ] && FAULTS=
suite_start=$SECONDS
echo "# ulp2: a runs $DRV_A, b runs $DRV_B; this is $ROLE ($DEV); ULPs: $ULPS; $MIB MiB; faults: $FAULTS"

# meet NAME [VALUE] [TIMEOUT]: swap with the peer; if the peer is gone
# (its VM stopped) or out of step, there is nothing left to do together.
meet() {
	if ! swap "$1" "${2:--}" "${3:-600}"; then
		fail "$ROLE/peer-lost-at/$1" "no answer from the peer"
		exit 1
	fi
}

chan_open || { echo "no control channel to the peer"; exit 1; }
step "$ROLE/setup/modules" ulp_modules || exit 1
# Report any task blocked for 120 s within 10 s of it.
echo 10 >/proc/sys/kernel/hung_task_check_interval_secs
kmemleak_clear
t "$ROLE/setup/link-add" link_up "$MYDRV" "$DEV" eth0
t "$ROLE/setup/port-ready" wait_for 30 port_ready "$DEV"
res_base
meet setup-done >/dev/null
echo "# $DEV holds: $(res_of)"

# one_ulp ULP TARGET_ROLE: the ULP with its target on TARGET_ROLE.
one_ulp() {
	local u=$1 tr=$2 ph st info peer hr
	if [ "$tr" = a ]; then hr=b; else hr=a; fi
	if [ "$hr" = a ]; then ph=a.$DRV_A-to-b.$DRV_B; else ph=b.$DRV_B-to-a.$DRV_A; fi
	echo "# --- $u, target on $tr ($ph)"
	if [ "$ROLE" = "$tr" ]; then
		st=fail info=-
		step "$ph/$u/target-up" ulp_target_up "$u" "$ME" "$MIB" "$DEV" "$PEER" "$ME" &&
			st=ok info=$(ulp_target_info "$u")
		meet "$ph/$u/up" "$st $info" >/dev/null
		meet "$ph/$u/done" - 900 >/dev/null
		if [ "$u" = nvme ]; then
			step "$ph/$u/target-down" nvme_target_down_quiet
		else
			step "$ph/$u/target-down" ulp_target_down "$u"
		fi
		res_back "$ph/$u/target-resources-released"
	else
		read -r st info <<<"$(meet "$ph/$u/up" -)"
		if [ "$st" != ok ]; then
			skip "$ph/$u/host-up" "the target did not come up"
		elif step "$ph/$u/host-up" ulp_host_up "$u" "$PEER" "$DEV" "$info"; then
			echo "# $u: fio on $ULP_PATH"
			ulp_fio_check "$ph/$u/fio-write-verify" "$(ulp_fio "$ph/$u/fio-write-verify" "$ULP_PATH" "$MIB" write)"
			step "$ph/$u/host-down" ulp_host_down "$u" "$PEER"
		fi
		meet "$ph/$u/done" - >/dev/null
		res_back "$ph/$u/host-resources-released"
	fi
}

# --- faults -------------------------------------------------------------------
NSDEV=

# The namespace's completed reads + writes (sectors), from its stat.
io_sectors() { awk '{ print $3 + $7 }' "/sys/block/$(basename "$NSDEV")/stat" 2>/dev/null; }
written_sectors() { awk '{ print $7 }' "/sys/block/$(basename "$NSDEV")/stat" 2>/dev/null; }

# io_started: waits (at most 120 s) until fio has written 256 KiB.
io_started() {
	local end=$((SECONDS + 120))
	until [ "$(written_sectors)" -ge 512 ]; do
		kill -0 "$FIO_PID" 2>/dev/null || { echo "fio ended: $(tail -n 3 "$ULP_DIR"/*.stderr)"; return 1; }
		[ $SECONDS -ge $end ] && { echo "$(written_sectors) sectors written after 120 s"; return 1; }
		nap 0.5
	done
}

# fio_ended NAME: one result, fio ended by itself (ulp_fio_timed_wait did
# not have to kill it).
fio_ended() {
	if [ "$FIO_RC" != 124 ]; then pass "$1"; else fail "$1" "fio still running when the wait ended"; fi
	echo "# $1: fio saw: ${FIO_WHY:-no error}"
}

# ctrl_not_live: our controller is not (or no longer) live.
ctrl_not_live() { local c; c=$(nvme_ctrl) || return 0; [ "$(cat "/sys/class/nvme-fabrics/ctl/$c/state")" != live ]; }

# no_wrong_data NAME: one result. When the device or the controller goes
# away, fio's I/O may fail (EIO ends the job), but a read that completes
# must return what was written: fio's verify complaints ("verify: bad
# header ...", "bad magic", a crc mismatch) mean wrong data came back as
# a success.
no_wrong_data() {
	local bad
	bad=$(grep -m2 -E 'verify: |bad magic|crc32c.*fail' "$ULP_DIR/${1%%/*}.stderr" 2>/dev/null | tr '\n' ' ' | cut -c1-300)
	if [ -z "$bad" ]; then pass "$1"; else fail "$1" "$bad"; fi
}

# no_ctrl: no NVMe-oF controller left.
no_ctrl() { ! ls /sys/class/nvme-fabrics/ctl/*/subsysnqn >/dev/null 2>&1; }

# The driver's module.
module_of() { case $1 in rrxe) echo rdma_rrxe ;; rxe) echo rdma_rxe ;; esac; }

# nvme_target_down_quiet: nvme_target_down with the device removed first.
# Disabling an nvmet-rdma port destroys its listening cm_id under
# nvmet_config_sem; when a host's I/O-queue Connect had arrived before the
# target's ESTABLISHED event (nvmet_rdma_queue_established then runs it
# under the connection's handler_mutex, and it takes nvmet_config_sem),
# lockdep reports a possible circular dependency between the two (one
# lock class for both cm_ids' handler_mutex). Across two VMs that happens
# on the first connect, with C rxe as with rrxe (Documentation/ulps.md).
# With the device gone first, rdma_cm destroys the listener itself and the
# port's teardown has nothing left to destroy. The link is then added again.
nvme_target_down_quiet() {
	rdma link delete "$DEV" || return 1
	nvme_target_down || return 1
	link_up "$MYDRV" "$DEV" eth0 && wait_for 30 port_ready "$DEV"
}

# fault_host_up NAME: connects to the peer's nvmet and starts the timed
# fio; records NAME/host-up and NAME/io-started.
fault_host_up() {
	local f=$1 secs=$2
	step "$f/host-up" nvme_host_up "$PEER" || return 1
	NSDEV=$ULP_PATH
	ulp_fio_timed "$f" "$NSDEV" 4 "$secs"
	t "$f/io-started" io_started
}

# reconnected_since N: the kernel log counts more than N reconnections.
reconnected_since() { [ "$(dmesg | grep -c 'Successfully reconnected')" -gt "$1" ]; }
# written_beyond SECTORS: fio still runs and the namespace has completed
# writes beyond SECTORS.
written_beyond() { kill -0 "$FIO_PID" 2>/dev/null && [ "$(written_sectors)" -ge "$1" ]; }

# dmesg_since MARK: the kernel log lines after the line count MARK.
dmesg_since() { dmesg | tail -n +"$(($1 + 1))"; }

# timed NAME LIMIT CMD...: runs CMD under `timeout LIMIT`, one result
# (passes if CMD exits 0 within LIMIT), TOOK its seconds, TRC its status.
timed() {
	local name=$1 limit=$2 t0 out
	shift 2
	t0=$(now)
	out=$(timeout -k 10 "$limit" "$@" 2>&1)
	TRC=$?
	TOOK=$(elapsed "$t0")
	echo "# $name: '$*' exit $TRC after ${TOOK}s${out:+: $out}"
	if [ $TRC = 0 ]; then pass "$name"; else fail "$name" "'$*' exit $TRC after ${TOOK}s: $out"; fi
}

fault_cut() {
	local f=cut mark s0 s1 n0 n1 restored
	if [ "$ROLE" = b ]; then
		step $f/target-up nvme_target_up "$ME" 4
		meet $f/target >/dev/null
		meet $f/go >/dev/null
		tc qdisc add dev eth0 root netem loss 100%
		sleep 10
		tc qdisc del dev eth0 root
		meet $f/done - 900 >/dev/null
		step $f/target-down nvme_target_down_quiet
		return
	fi
	meet $f/target >/dev/null
	NVME_OPTS="--reconnect-delay=2"
	mark=$(dmesg | wc -l)
	n0=$(dmesg | grep -c 'Successfully reconnected')
	if fault_host_up $f 900; then
		meet $f/go >/dev/null
		echo "# cut: link down at $(now)"
		tc qdisc add dev eth0 root netem loss 100%
		sleep 10
		tc qdisc del dev eth0 root
		restored=$(now)
		echo "# cut: link back at $restored, fio still running: $(kill -0 $FIO_PID 2>/dev/null && echo yes || echo no)"
		t_eq $f/fio-running-when-link-back "$(kill -0 $FIO_PID 2>/dev/null && echo yes || echo no)" yes
		t $f/nvme-reconnected ulp_wait 180 reconnected_since "$n0"
		s0=$(written_sectors)
		t $f/io-resumed ulp_wait 120 written_beyond "$((s0 + 2048))"
		ulp_fio_timed_wait $f 120 stop
		t_eq $f/fio-no-error-no-verify-failure "${FIO_WHY:-none}" none
		echo "# cut: what nvme-rdma said:"
		dmesg_since "$mark" | grep -E 'nvme|nvmet' | sed 's/^/#   /'
		step $f/host-down nvme_host_down
	else
		meet $f/go >/dev/null
	fi
	NVME_OPTS=
	meet $f/done >/dev/null
}

fault_host_link_delete() {
	local f=host-link-delete
	if [ "$ROLE" = b ]; then
		step $f/target-up nvme_target_up "$ME" 4
		meet $f/target >/dev/null
		meet $f/done - 900 >/dev/null
		step $f/target-down nvme_target_down_quiet
		return
	fi
	meet $f/target >/dev/null
	if fault_host_up $f 120; then
		timed $f/link-delete-returns 120 rdma link delete "$DEV"
		t $f/controller-removed ulp_wait 60 no_ctrl
		ulp_fio_timed_wait $f 60
		fio_ended $f/fio-ended
		no_wrong_data $f/no-wrong-data-returned
	fi
	nvme_ctrl >/dev/null && nvme disconnect -n "$NVME_NQN"
	meet $f/done >/dev/null
	[ -e "/sys/class/infiniband/$DEV" ] || t $f/link-add-again link_up "$MYDRV" "$DEV" eth0
	wait_for 30 port_ready "$DEV"
}

fault_target_link_delete() {
	local f=target-link-delete
	if [ "$ROLE" = a ]; then
		step $f/target-up nvme_target_up "$ME" 4
		meet $f/target >/dev/null
		meet $f/io-running >/dev/null
		timed $f/link-delete-returns 120 rdma link delete "$DEV"
		timed $f/target-teardown 120 bash -c '. tests/guest/lib.sh; . tests/lib/ulp.sh; nvme_target_down'
		# The device comes back at once, without the target: the
		# host's QP still sends into the old connection (dropped: no
		# such QP here now), and its reconnects are refused (nothing
		# listens) instead of each lasting rdma_cm's connect retries
		# against an address with no RDMA device (80 s in make check).
		t $f/link-add-again link_up "$MYDRV" "$DEV" eth0
		wait_for 30 port_ready "$DEV"
		meet $f/done - 900 >/dev/null
		return
	fi
	meet $f/target >/dev/null
	NVME_OPTS="--reconnect-delay=2"
	if fault_host_up $f 600; then
		meet $f/io-running >/dev/null
		# The host notices (a keep-alive or I/O timeout, or the QP's
		# retries running out) and reconnects, in vain: a's device is
		# back but the target is gone, so each attempt is refused and
		# the next comes after the reconnect delay, until
		# ctrl_loss_tmo. The host lets go by disconnecting.
		t $f/host-notices ulp_wait 90 ctrl_not_live
		timed $f/host-disconnect-returns 120 nvme disconnect -n "$NVME_NQN"
		t $f/controller-removed ulp_wait 30 no_ctrl
		ulp_fio_timed_wait $f 60
		fio_ended $f/fio-ended
		no_wrong_data $f/no-wrong-data-returned
	else
		meet $f/io-running >/dev/null
	fi
	NVME_OPTS=
	nvme_ctrl >/dev/null && nvme disconnect -n "$NVME_NQN"
	meet $f/done >/dev/null
}

fault_rmmod() {
	local f=rmmod
	if [ "$ROLE" = b ]; then
		step $f/target-up nvme_target_up "$ME" 4
		meet $f/target >/dev/null
		meet $f/done - 900 >/dev/null
		step $f/target-down nvme_target_down_quiet
		return
	fi
	meet $f/target >/dev/null
	if fault_host_up $f 120; then
		timed $f/rmmod-returns 120 rmmod "$(module_of "$MYDRV")"
		if [ $TRC = 0 ]; then
			echo "# $f: rmmod removed the driver under I/O"
			t $f/controller-removed ulp_wait 60 no_ctrl
			ulp_fio_timed_wait $f 60
			fio_ended $f/fio-ended
			no_wrong_data $f/no-wrong-data-returned
		elif [ $TRC != 124 ] && [ $TRC != 137 ]; then
			echo "# $f: rmmod refused while busy"
			kill "$FIO_PID"
			ulp_fio_timed_wait $f 60
			step $f/host-down nvme_host_down
			t $f/rmmod-after-disconnect rmmod "$(module_of "$MYDRV")"
		fi
	fi
	nvme_ctrl >/dev/null && nvme disconnect -n "$NVME_NQN"
	meet $f/done >/dev/null
}

early=
for u in $ULPS; do
	# iSER last: see Documentation/ulps.md.
	[ "$u" = iser ] && { early=iser; continue; }
	one_ulp "$u" b
	one_ulp "$u" a
done
for f in $FAULTS; do
	echo "# --- fault $f ($((SECONDS - suite_start))s)"
	"fault_${f//-/_}"
	meet "fault-$f-end" >/dev/null
done
[ "$ROLE" = a ] && ! [ -e "/sys/class/infiniband/$DEV" ] && link_up "$MYDRV" "$DEV" eth0 && wait_for 30 port_ready "$DEV"
for u in $early; do
	one_ulp "$u" b
	one_ulp "$u" a
done

meet end >/dev/null
exec 7>&- 8<&-
[ -e "/sys/class/infiniband/$DEV" ] && t "$ROLE/teardown/link-delete" rdma link delete "$DEV"
t "$ROLE/teardown/unload" unload "$MYDRV"
mods=$(lsmod | awk '$1 ~ /^(ib_srpt|ib_srp|ib_isert|ib_iser|rpcrdma)$/ { print $1 }')
[ -z "$mods" ] || t "$ROLE/teardown/ulp-modules-unload" modprobe -r $mods
kmemleak_check "$ROLE/teardown/kmemleak"
echo "# ulp2: $((SECONDS - suite_start))s"
exit 0
