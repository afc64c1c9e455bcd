#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The rrxe device and its link ops: load/unload, `rdma link add/delete`,
# what ibv_devinfo and sysfs show (checked against C rdma_rxe on the same
# kernel), port state (and link_downed) and MTU following the net device,
# coexistence with C rxe, bad input, and repeated load/link/unlink/unload
# cycles under kmemleak; a real NIC's namespace deleted while a context on
# its device is open (vm.sh --lone-nic).
# vm-options: --lone-nic
# vm-seconds: 290 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
. tests/guest/lib.sh

# asyncwatch DEV LOG: ibv_asyncwatch on DEV into LOG in the background (its
# pid in wpid), returning once its context is open (the line it prints
# then: events from here on reach it).
asyncwatch() {
	ibv_asyncwatch -d "$1" >"$2" 2>&1 &
	wpid=$!
	wait_for 10 grep -q 'async event FD' "$2"
}

veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
veth_pair veth2 veth3 10.0.1.1/24 10.0.1.2/24
ip -6 addr add fd00::1/64 dev veth0 nodad
sleep 1

# --- module load ------------------------------------------------------------
t load insmod "$RRXE_KO"
t_match modinfo-alias "$(modinfo "$RRXE_KO")" 'alias: +rdma-link-rrxe'

# --- link add and what the device reports -------------------------------------
t link-add rdma link add rrxe0 type rrxe netdev veth0
t_match rdma-link-show "$(rdma link show rrxe0/1)" 'rrxe0/1 state ACTIVE physical_state LINK_UP netdev veth0'
t_match rdma-dev-show "$(rdma dev show)" 'rrxe0: node_type ca'
# libibverbs lists a device only when a provider binds to it: librxe does
# by driver id (RDMA_DRIVER_RXE). A name without "rxe" proves it is not a
# name match.
t_match ibv-devices "$(ibv_devices)" 'rrxe0'
t link-add-noname rdma link add fab7 type rrxe netdev veth2
t_match librxe-binds-by-driver-id "$(ibv_devices)" 'fab7'
t link-delete-noname rdma link delete fab7

info=$(ibv_devinfo -v -d rrxe0)
t_match devinfo-runs "$info" 'hca_id:	rrxe0'
want_guid=$(eui64_of veth0)
t_eq node-guid-from-mac "$(info_field "$info" node_guid)" "$want_guid"
t_eq sys-image-guid "$(info_field "$info" sys_image_guid)" "$want_guid"
t_eq vendor-id "$(info_field "$info" vendor_id)" 0xffffff
t_eq max-qp "$(info_field "$info" max_qp)" 1048560
t_eq max-qp-wr "$(info_field "$info" max_qp_wr)" 1048576
t_eq max-sge "$(info_field "$info" max_sge)" 32
t_eq max-cqe "$(info_field "$info" max_cqe)" 32767
t_eq max-mr "$(info_field "$info" max_mr)" 524287
t_eq max-srq-sge "$(info_field "$info" max_srq_sge)" 27
t_eq max-qp-rd-atom "$(info_field "$info" max_qp_rd_atom)" 128
t_eq atomic-cap "$(info_field "$info" atomic_cap)" 'ATOMIC_HCA (1)'
t_eq port-state "$(info_field "$info" state)" 'PORT_ACTIVE (4)'
t_eq phys-state "$(info_field "$info" phys_state)" 'LINK_UP (5)'
t_eq link-layer "$(info_field "$info" link_layer)" Ethernet
t_eq max-mtu "$(info_field "$info" max_mtu)" '4096 (5)'
t_eq active-mtu-1500 "$(info_field "$info" active_mtu)" '1024 (3)'
t_eq gid-tbl-len "$(info_field "$info" gid_tbl_len)" 1024
t_eq pkey-tbl-len "$(info_field "$info" pkey_tbl_len)" 1
t_eq port-cap-flags "$(info_field "$info" port_cap_flags)" 0x00010000
t_eq sysfs-link-layer "$(cat /sys/class/infiniband/rrxe0/ports/1/link_layer)" Ethernet
t_eq sysfs-node-type "$(cat /sys/class/infiniband/rrxe0/node_type)" '1: CA'
# The net device behind the RDMA device, as C rxe shows it: `parent`, and
# the GID entries' net device (what ibdev2netdev reads). A veth has no
# parent device, so the RDMA device has none either (no `device` link), as
# C rxe's; on a NIC with one, `device` leads to it (pyverbs.sh).
t_eq sysfs-parent "$(cat /sys/class/infiniband/rrxe0/parent 2>&1)" veth0
t_eq gid-attr-ndev "$(cat /sys/class/infiniband/rrxe0/ports/1/gid_attrs/ndevs/0 2>&1)" veth0
t no-device-link-on-veth test ! -e /sys/class/infiniband/rrxe0/device
# Speed and width from the Ethernet link (veth says 10 Gb/s); the same as
# C rxe's on a veth (devinfo-equals-c-rxe below).
t_eq active-width "$(info_field "$info" active_width)" '1X (1)'
t_eq active-speed "$(info_field "$info" active_speed)" '10.0 Gbps (8)'

# The GID table comes from the netdev's addresses through ib_core.
# (The first 16 entries: the table has 1024, and reading them all through
# sysfs took 13 s of a debug guest; the addresses here take the first few.)
gids=$(cd /sys/class/infiniband/rrxe0/ports/1/gids && cat {0..15} 2>/dev/null | sort -u)
t_match gid-ipv4 "$gids" '0000:0000:0000:0000:0000:ffff:0a00:0001'
t_match gid-ipv6 "$gids" 'fd00:0000:0000:0000:0000:0000:0000:0001'
t_match gid-link-local "$gids" "fe80:0000:0000:0000:$(echo "$want_guid" | tr -d :  | sed 's/..../&:/g; s/:$//')"
t_match gid-type-rocev2 "$(cat /sys/class/infiniband/rrxe0/ports/1/gid_attrs/types/1)" 'RoCE v2'
ip addr add 10.0.0.9/24 dev veth0
t gid-follows-new-address wait_for 10 grep -q 'ffff:0a00:0009' -r /sys/class/infiniband/rrxe0/ports/1/gids/
ip addr del 10.0.0.9/24 dev veth0
t gid-follows-removed-address wait_for 10 bash -c '! grep -q "ffff:0a00:0009" -r /sys/class/infiniband/rrxe0/ports/1/gids/'

# modify_device: the node description.
t node-desc-write bash -c 'echo rrxe-test > /sys/class/infiniband/rrxe0/node_desc'
t_eq node-desc-read "$(cat /sys/class/infiniband/rrxe0/node_desc)" rrxe-test

# The engines' workqueue has sysfs knobs (WQ_SYSFS): its workers' nice
# value can be tuned while devices exist (bench.md, "The workers'
# priority"); the default is 0.
wq=/sys/devices/virtual/workqueue/rrxe
t_eq wq-nice-default "$(cat $wq/nice 2>&1)" 0
t wq-nice-set bash -c "echo -20 >$wq/nice"
t_eq wq-nice-now "$(cat $wq/nice 2>&1)" -20
t wq-nice-restore bash -c "echo 0 >$wq/nice"
# At most 8 QP work items per possible CPU run at once, 16 at least (not
# WQ_MAX_ACTIVE, 512: 64 streaming QPs then had a worker each; bench.md,
# "The workqueue's max_active").
possible=$(</sys/devices/system/cpu/possible) ncpu=0
for r in ${possible//,/ }; do
	[[ $r == *-* ]] && ncpu=$((ncpu + ${r#*-} - ${r%-*} + 1)) || ncpu=$((ncpu + 1))
done
want_active=$((8 * ncpu < 16 ? 16 : 8 * ncpu > 512 ? 512 : 8 * ncpu))
t_eq wq-max-active-per-cpu "$(cat $wq/max_active 2>&1)" "$want_active"
# Kernel consumers' QPs have a workqueue of their own, bounded the same way
# (datapath.md, "Contexts and serialisation").
t_eq wq-kernel-max-active-per-cpu \
	"$(cat /sys/devices/virtual/workqueue/rrxe_kernel/max_active 2>&1)" "$want_active"

# --- port state follows carrier; active MTU follows the netdev MTU -----------
# link_downed counts each fall of the port from active: the carrier loss
# (reported by the link watcher, a little later) once, the admin down of a
# port already down not again, nor the way back up or an MTU change.
downed() { cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/link_downed; }
downed_is() { [ "$(downed)" = "$1" ]; }
downed0=$(downed)
watch=/tmp/asyncwatch.log
asyncwatch rrxe0 "$watch"
ip link set veth1 down
t_eq port-down-without-carrier "$(devinfo_field rrxe0 state)" 'PORT_DOWN (1)'
t_eq phys-polling-when-admin-up "$(devinfo_field rrxe0 phys_state)" 'POLLING (2)'
t link-downed-on-carrier-loss wait_for 10 downed_is $((downed0 + 1))
ip link set veth0 down
t_eq phys-disabled-when-admin-down "$(devinfo_field rrxe0 phys_state)" 'DISABLED (3)'
ip link set veth0 up
ip link set veth1 up
t port-active-again wait_for 10 bash -c "ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE"
wait_for 5 grep -q 'PORT_ACTIVE' "$watch"
kill $wpid 2>/dev/null
wait $wpid 2>/dev/null
t_match event-port-err "$(cat $watch)" 'PORT_ERR'
t_match event-port-active "$(cat $watch)" 'PORT_ACTIVE'
t_match link-show-down-up "$(rdma link show rrxe0/1)" 'state ACTIVE'
t_eq link-downed-once-per-fall "$(downed)" $((downed0 + 1))

for m in 9000:'4096 (5)' 4000:'2048 (4)' 1100:'512 (2)' 500:'256 (1)' 1500:'1024 (3)'; do
	ip link set veth0 mtu "${m%%:*}"
	t_eq "active-mtu-${m%%:*}" "$(devinfo_field rrxe0 active_mtu)" "${m#*:}"
done
t_eq link-downed-not-by-mtu "$(downed)" $((downed0 + 1))

# --- the device moved into another network namespace --------------------------
# In exclusive mode (`rdma system set netns exclusive`, which ib_core
# allows only while no namespace but the initial one exists) an RDMA
# device lives in one namespace, and `rdma dev set DEV netns NS` moves it:
# the way a container gets an RDMA device. ib_core moves only a device
# whose driver disassociates user contexts (rrxe does, C rxe 6.12 does
# not): a context open on it is told (IBV_EVENT_DEVICE_FATAL), and the
# move does not wait for it. There the device is listed and carries a
# pingpong between two processes of the namespace (loopback through its
# net device, which stays where it is); here it is not listed. It comes
# back with `rdma dev set`, and by itself when its namespace is deleted.
t netns-exclusive rdma system set netns exclusive
ip netns add rx
ip -n rx link set lo up
ip netns attach init 1
# (The GID table stays: it is the net device's addresses.)
ns_gid=$(gid_index rrxe0) || ns_gid=1
asyncwatch rrxe0 /tmp/asyncwatch-ns.log
t netns-move timeout 30 rdma dev set rrxe0 netns rx
t netns-move-told wait_for 10 grep -q IBV_EVENT_DEVICE_FATAL /tmp/asyncwatch-ns.log
kill $wpid 2>/dev/null
wait $wpid 2>/dev/null
t netns-gone-here bash -c '! rdma dev show rrxe0 >/dev/null 2>&1 && ! ibv_devices | grep -q rrxe0'
t netns-listed-there ip netns exec rx rdma dev show rrxe0
t netns-active-there wait_for 10 ip netns exec rx bash -c "ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE"
ip netns exec rx ibv_rc_pingpong -d rrxe0 -g "$ns_gid" -n 10 >/tmp/ns-pp.server 2>&1 &
ppid=$!
sleep 1
ip netns exec rx timeout 60 ibv_rc_pingpong -d rrxe0 -g "$ns_gid" -n 10 127.0.0.1 >/tmp/ns-pp.client 2>&1
crc=$?
wait $ppid
src=$?
if [ $crc = 0 ] && [ $src = 0 ] && grep -q '10 iters' /tmp/ns-pp.client; then
	pass netns-traffic-there
else
	fail netns-traffic-there "client $crc, server $src: $(tail -n 2 /tmp/ns-pp.client | tr '\n' ' ')"
fi
t netns-move-back ip netns exec rx rdma dev set rrxe0 netns init
t netns-back-here rdma dev show rrxe0
t netns-move-again rdma dev set rrxe0 netns rx
ip netns del rx
t netns-returns-when-deleted wait_for 20 rdma dev show rrxe0
t netns-active-again wait_for 10 bash -c "ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE"
ip netns del init
t netns-shared-again wait_for 20 rdma system set netns shared

# --- C rdma_rxe in the same kernel, each on its own netdev --------------------
# C rxe binds UDP port 4791 of the initial namespace when it loads; rrxe
# binds the port of each namespace that has rrxe devices, and lets it go
# with the last one. Side by side they live in different namespaces.
t link-delete-frees-port rdma link delete rrxe0
ip netns add rr
ip link add vr0 type veth peer name vr1
ip link set vr0 netns rr
ip -n rr addr add 10.0.3.1/24 dev vr0
ip -n rr link set vr0 up
ip link set vr1 up
t link-add-in-netns ip netns exec rr rdma link add rrxe0 type rrxe netdev vr0
t load-c-rxe insmod "$RXE_KO"
t c-rxe-link-add rdma link add rxe0 type rxe netdev veth1
# Now the initial namespace's port is C rxe's: a clean refusal.
t_err port-taken-by-c-rxe 'Address already in use' rdma link add rrxe8 type rrxe netdev veth0
t_match both-listed "$(ibv_devices)" 'rxe0.*' 
t_match both-listed-rrxe "$(ibv_devices)" 'rrxe0'
# The same device attributes and port attributes as C rxe, but for what
# names the device or derives from its MAC, and the on-demand paging caps
# (C rxe 6.12 has no ODP; rrxe's are checked on their own below and in
# verbs.sh's odp/caps/).
norm() {
	ibv_devinfo -v -d "$1" | grep -vE 'hca_id|node_guid|sys_image_guid|GID\[' |
		awk '/_odp_caps:$/ { odp = 1; print; next } odp && /^\t\t/ { next } { odp = 0; print }' |
		sed 's/[[:space:]]\+/ /g'
}
norm rrxe0 >/tmp/devinfo-rrxe
norm rxe0 >/tmp/devinfo-rxe
if [ "$(wc -l </tmp/devinfo-rxe)" -lt 60 ]; then
	fail devinfo-equals-c-rxe "C rxe's ibv_devinfo output is too short"
elif d=$(diff /tmp/devinfo-rrxe /tmp/devinfo-rxe); then
	pass devinfo-equals-c-rxe
else
	fail devinfo-equals-c-rxe "$(echo "$d" | tr '\n' ' ')"
fi
t_match devinfo-odp-caps "$(ibv_devinfo -v -d rrxe0 | tr -s '\t\n' '  ')" \
	'general_odp_caps: ODP_SUPPORT ODP_SUPPORT_IMPLICIT rc_odp_caps: SUPPORT_SEND'
t_eq c-rxe-parent "$(cat /sys/class/infiniband/rxe0/parent 2>&1)" veth1
t_err rrxe-on-c-rxe-netdev 'exists' rdma link add rrxe9 type rrxe netdev veth1
# C rxe looks devices up by (netdev, RDMA_DRIVER_RXE); rrxe must stay
# invisible to that lookup or C rxe would treat it as its own. Flap the
# netdev under both drivers: KASAN would catch C rxe writing into ours.
ip -n rr link set vr0 down; ip -n rr link set vr0 up; ip -n rr link set vr0 mtu 1400; ip -n rr link set vr0 mtu 1500
t rrxe-survives-c-rxe-events wait_for 10 bash -c "ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE"
t c-rxe-link-delete rdma link delete rxe0
# C rxe's module exit calls ib_unregister_driver(RDMA_DRIVER_RXE), which
# removes every device of that driver id, rrxe's too (both must report it
# for librxe to bind): rrxe lets them go cleanly.
t unload-c-rxe rmmod rdma_rxe
t c-rxe-unload-removes-rrxe-device wait_for 10 bash -c '! rdma dev show | grep -q rrxe0'
ip netns del rr
t link-add-after-c-rxe rdma link add rrxe0 type rrxe netdev veth0

# --- bad input ----------------------------------------------------------------
t_err unknown-netdev 'No such device' rdma link add rrxe5 type rrxe netdev nosuch0
t_err duplicate-name 'exists' rdma link add rrxe0 type rrxe netdev veth2
t_err second-link-same-netdev 'exists' rdma link add rrxe5 type rrxe netdev veth0
t_err loopback-netdev 'Invalid argument' rdma link add rrxe5 type rrxe netdev lo
t_err non-ethernet-netdev 'Invalid argument' rdma link add rrxe5 type rrxe netdev sit0
t link-delete rdma link delete rrxe0
t_err link-delete-twice 'rrxe0' rdma link delete rrxe0
if rdma dev show | grep -q rrxe0; then fail gone-from-rdma-dev "still listed"; else pass gone-from-rdma-dev; fi
if ibv_devices | grep -q rrxe0; then fail gone-from-ibv-devices "still listed"; else pass gone-from-ibv-devices; fi

# --- deleting the netdev removes the device -----------------------------------
t link-on-veth2 rdma link add rrxe1 type rrxe netdev veth2
ip link del veth2
t netdev-delete-removes-device wait_for 15 bash -c '! rdma dev show | grep -q rrxe1'

# --- concurrent link adds on one net device -----------------------------------
# ib_core runs `rdma link add`s side by side (newlink under a read lock):
# of 16 at once on one net device exactly one may succeed, the others
# get EEXIST (a second device on it would miss the net device's events
# and keep it from going: `ip link del` would wait for it for ever).
veth_pair vx0 vx1 10.0.5.1/24 10.0.5.2/24
sleep 1
apids=()
for i in $(seq 10 25); do
	rdma link add rrxe$i type rrxe netdev vx0 >/dev/null 2>&1 &
	apids+=($!)
done
wait "${apids[@]}"
t_eq concurrent-add/one-device "$(rdma link show | grep -c 'netdev vx0 *$')" 1
t_eq concurrent-add/one-in-sysfs "$(grep -l '^vx0$' /sys/class/infiniband/*/ports/1/gid_attrs/ndevs/0 2>/dev/null | wc -l)" 1
ip link del vx0 &
dpid=$!
t concurrent-add/netdev-delete-returns wait_for 30 bash -c "! kill -0 $dpid"
t concurrent-add/devices-gone wait_for 15 bash -c "! rdma link show | grep -q 'netdev vx0'"

# --- a net device deleted while a link is added on it --------------------------
# The net device's events find the device once it is in rrxe's registry;
# an UNREGISTER before that would leave a device that nobody unregisters,
# and `ip link del` (which waits for every reference to the net device)
# would never return. Each round starts `ip link del` at another time,
# from 0.4 s before to 0.45 s after `rdma link add` (a program takes 0.2
# to 0.5 s to start in this guest, the add's registration about 0.5 s).
# (In this kernel the deletion has always come after the add's end.)
hung=0 left=0 rounds=8
for i in $(seq 1 $rounds); do
	veth_pair vy0 vy1
	off=$((i * 120 - 520))
	if [ $off -lt 0 ]; then
		ip link del vy0 &
		dpid=$!
		nap "$(printf '0.%03d' $((-off)))"
		rdma link add rrxe30 type rrxe netdev vy0 >/dev/null 2>&1 &
		apid=$!
	else
		rdma link add rrxe30 type rrxe netdev vy0 >/dev/null 2>&1 &
		apid=$!
		nap "$(printf '0.%03d' $off)"
		ip link del vy0 &
		dpid=$!
	fi
	wait $apid
	if ! wait_for 20 bash -c "! kill -0 $dpid"; then
		hung=$((hung + 1))
		rdma link delete rrxe30 >/dev/null 2>&1
	fi
	wait $dpid
	if ! wait_for 10 bash -c '! rdma dev show | grep -q rrxe30'; then
		left=$((left + 1))
		rdma link delete rrxe30 >/dev/null 2>&1
	fi
done
t_eq add-vs-delete/netdev-delete-returns "$hung of $rounds" "0 of $rounds"
t_eq add-vs-delete/no-device-left "$left of $rounds" "0 of $rounds"

# --- a real NIC's namespace deleted under an open context --------------------
# A namespace's physical NICs go back to the initial namespace when it is
# cleaned up (veths are deleted, and the cleanup waits for their users; a
# moved NIC's users are not waited for), while ib_core keeps the rrxe
# device on it for a user context held from the initial namespace (shared
# mode). rrxe's port 4791 sockets in the namespace close with that device,
# and must not close in freed memory: the namespace is freed by the next
# namespace cleanup (net_complete_free), and ib_core makes every cleanup
# wait for a device whose unregistration waits for its contexts
# (rdma_dev_exit_net takes its unregistration_lock), so the next cleanup
# ends only after the context closed. KASAN watches the whole sequence.
nic=
for n in /sys/class/net/*; do
	[ "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")" = virtio_net ] && nic=${n##*/}
done
if tt netns-nic/setup test -n "$nic"; then
	dmesg >/tmp/dmesg.netns
	ip netns add rn
	ip link set "$nic" netns rn
	ip -n rn addr add 10.0.9.1/24 dev "$nic"
	ip -n rn link set "$nic" up
	t netns-nic/link-add ip netns exec rn rdma link add rrxe6 type rrxe netdev "$nic"
	t_match netns-nic/port-bound "$(ip netns exec rn ss -Hlun 'sport = 4791')" '4791'
	# (Not asyncwatch: ending the wait as the context opens, rather than
	# a second later, was followed once in three runs by the later
	# cleanup of rn2 waiting for ever on vc, whose count had gone to 0:
	# under investigation.)
	ibv_asyncwatch -d rrxe6 >/tmp/netns-asyncwatch.log 2>&1 &
	wpid=$!
	sleep 1
	ip netns del rn
	t netns-nic/nic-back wait_for 60 ip link show "$nic"
	# A new namespace gets a port of its own while the old device lives.
	ip netns add rn2
	ip link add vc type veth peer name vd netns rn2
	ip -n rn2 link set vd up
	ip link set vc up
	t netns-nic/new-netns-link-add ip netns exec rn2 rdma link add rrxe7 type rrxe netdev vd
	t_match netns-nic/new-netns-port-bound "$(ip netns exec rn2 ss -Hlun 'sport = 4791')" '4791'
	t netns-nic/new-netns-link-delete rdma link delete rrxe7
	# The next cleanup (which frees rn): its veth's peer here goes with
	# it, once the old device is gone.
	ip netns del rn2
	sleep 2
	t netns-nic/context-still-open kill -0 $wpid
	kill $wpid; wait $wpid 2>/dev/null
	t netns-nic/device-gone wait_for 30 bash -c '! rdma dev show | grep -q rrxe6'
	t netns-nic/next-cleanup-ran wait_for 60 bash -c "! ip link show vc"
	sleep 2
	dmesg | tail -n +$(($(wc -l </tmp/dmesg.netns) + 1)) >/tmp/dmesg.netns.new
	if scripts/splat.sh /tmp/dmesg.netns.new 2>/tmp/splat.netns; then
		pass netns-nic/kernel-log-clean
	else
		fail netns-nic/kernel-log-clean "$(head -c 300 /tmp/splat.netns | tr '\n' ' ')"
	fi
fi

# --- rmmod with devices present and a context open ---------------------------
veth_pair veth4 veth5 10.0.2.1/24 10.0.2.2/24
t link-a rdma link add rrxe2 type rrxe netdev veth0
t link-b rdma link add rrxe3 type rrxe netdev veth4
asyncwatch rrxe2 /tmp/asyncwatch2.log
# A process holds rrxe2 open: rrxe disassociates its context (ib_uverbs
# pins no module for a driver that can), so rmmod goes on, and the
# process is told the device is gone.
t rmmod-while-open rmmod rdma_rrxe
t open-context-told wait_for 10 grep -q IBV_EVENT_DEVICE_FATAL /tmp/asyncwatch2.log
kill $wpid; wait $wpid 2>/dev/null
t_eq no-devices-after-rmmod "$(ls /sys/class/infiniband/ | grep -c rrxe)" 0

# --- 20 load/link/unlink/unload cycles, no leak --------------------------------
kmemleak_clear
ok=1
for i in $(seq 1 20); do
	insmod "$RRXE_KO" &&
		rdma link add rrxe0 type rrxe netdev veth0 &&
		ibv_devinfo -d rrxe0 >/dev/null &&
		rdma link delete rrxe0 &&
		rdma link add rrxe0 type rrxe netdev veth0 &&
		rmmod rdma_rrxe || { ok=0; fail cycles "cycle $i failed"; break; }
done
[ $ok = 1 ] && pass cycles-20
kmemleak_check cycles-no-leak

# --- make install: modprobe, the link's alias, the boot-time udev rule -------
# make check runs `make install DESTDIR=out/install` over a copy of the
# kernel's own modules, and `make install-link NETDEV=vinst0 LINK=rrxe9`
# (scripts/check.sh). The kernel's request_module() and udev's `rdma` find
# that tree through a modprobe wrapper named in /proc/sys/kernel/modprobe
# (the guest's /lib is the host's). Each way of loading starts with the
# module out.
inst=$PWD/out/install
unloaded() { unload_rrxe && ! lsmod | grep -q '^rdma_rrxe '; }
if [ ! -f "$inst/lib/modules/$(uname -r)/updates/rdma_rrxe.ko" ]; then
	skip install/modprobe "no make install DESTDIR=out/install for $(uname -r) (make check makes it)"
else
	t install/modprobe-starts-unloaded unloaded
	t install/modprobe modprobe -d "$inst" rdma_rrxe
	t install/modprobe-remove modprobe -d "$inst" -r rdma_rrxe
	old_modprobe=$(cat /proc/sys/kernel/modprobe)
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$inst" >/run/modprobe.inst
	chmod 755 /run/modprobe.inst && echo /run/modprobe.inst >/proc/sys/kernel/modprobe
	# rdma link add loads the module by its alias (rdma-link-rrxe).
	t install/link-add-starts-unloaded unloaded
	t install/link-add-loads-module rdma link add rrxe0 type rrxe netdev veth0
	t install/link-add-module-loaded bash -c "lsmod | grep -q '^rdma_rrxe '"
	t install/link-add-delete rdma link delete rrxe0
	# The rule of make install-link, run by udev as at boot: on a hotplug
	# of a device that udev renames to its net device's name (as with
	# predictable names), and on the coldplug's replay (udevadm trigger,
	# what systemd-udev-trigger does at boot) after the link was removed.
	# udevd reads only these rules: the system's rule directories are
	# covered in its own mount namespace (they would cost this debug guest
	# seconds per event, and change the test's veth).
	t install/udev-starts-unloaded unloaded
	mkdir -p /run/udev/rules.d /run/udev-none
	cp "$inst"/etc/udev/rules.d/90-rrxe-rrxe9.rules /run/udev/rules.d/
	echo 'ACTION=="add", SUBSYSTEM=="net", KERNEL=="vtmp9", NAME="vinst0"' >/run/udev/rules.d/80-rename-test.rules
	if unshare -m --propagation private sh -c 'for d in /usr/lib/udev/rules.d /etc/udev/rules.d; do
		mount --bind /run/udev-none $d || exit 1; done; exec /lib/systemd/systemd-udevd --daemon' \
		>/tmp/udevd.log 2>&1; then
		ip link add vtmp9 type veth peer name vinst1
		udevadm settle -t 30
		t install/udev-renamed-netdev-gets-link wait_for 30 bash -c "rdma link show | grep -q 'rrxe9/1 .* netdev vinst0'"
		t install/udev-rule-loaded-module bash -c "lsmod | grep -q '^rdma_rrxe '"
		t install/udev-link-delete rdma link delete rrxe9
		udevadm trigger --action=add --subsystem-match=net --sysname-match=vinst0
		udevadm settle -t 30
		t install/udev-coldplug-adds-link wait_for 30 bash -c "rdma link show | grep -q 'rrxe9/1 .* netdev vinst0'"
		udevadm control --exit
		ip link del vinst0
		t install/udev-link-gone-with-netdev wait_for 10 bash -c "! rdma link show | grep -q rrxe9"
	else
		fail install/udev-renamed-netdev-gets-link "systemd-udevd did not start: $(head -c 200 /tmp/udevd.log)"
	fi
	rm -f /run/udev/rules.d/90-rrxe-rrxe9.rules /run/udev/rules.d/80-rename-test.rules
	echo "$old_modprobe" >/proc/sys/kernel/modprobe
	unload_rrxe
fi
exit 0
