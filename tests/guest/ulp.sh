#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's storage protocols over one RDMA device in loopback: the
# target and the host of each ULP both on rrxe0 (on veth0, 10.0.0.1, netdev
# MTU 9000 so path MTU 4096; the two-VM test runs at 1024), or on C rxe's
# rxe0 to validate the test:
#   nvme  nvmet-rdma + nvme-rdma        srp   LIO ib_srpt + ib_srp
#   nfs   nfsd on rdma 20049 + NFSv4.2  iser  LIO iSCSI/iSER + open-iscsi
# (tests/lib/ulp.sh sets each up; iSER runs last). For each ULP:
# - target up, host connected, the block device (or NFS file) there;
# - fio, O_DIRECT, 512 B to 1 MiB blocks from user buffers at page
#   offsets 512, 1536 and 3584, every block with a crc32c: writes ULP_MIB
#   MiB and reads all of it back verified; then a second fio process, a
#   verify-only pass of the same job, reads and checks the same blocks;
# - disconnect and target teardown, each clean, and afterwards no QP,
#   cm_id or MR of the ULP left on the device (restrack).
# Then `rdma link delete` and the driver's unload with the ULP modules
# still loaded, the ULP modules unloaded, and a kmemleak scan that must be
# empty. A ULP whose set-up fails is recorded as failed, torn down, and the
# next one runs.
#
#   ulp.sh [DRIVER [ULPS...]]   (rrxe by default; rxe for C rxe)
#   ULP_MIB=64 (default 8): MiB written and verified per ULP (passed into
#   the guest by scripts/vm.sh); ULP_NETMTU=1500 for path MTU 1024
# vm-env: ULP_MIB ULP_NETMTU
# (1.5 GiB: targets and hosts of four ULPs in one VM, as a VM of the
# two-VM pairs has for one side.)
# vm-options: --mem 1536M
# vm-seconds: 255 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=ulp
. tests/guest/lib.sh
. tests/traffic/lib.sh
. tests/lib/ulp.sh

DRIVER=${1:-${DRIVER:-rrxe}}
shift
ULPS=${*:-${ULPS:-nvme srp nfs iser}}
MIB=${ULP_MIB:-8}
NETMTU=${ULP_NETMTU:-9000}
DEV=${DRIVER}0
ULP_DEV=$DEV
A=10.0.0.1
suite_start=$SECONDS
echo "# ulp: driver $DRIVER, device $DEV, ULPs: $ULPS, $MIB MiB each"

step setup/modules ulp_modules || exit 1
kmemleak_clear
t setup/veth veth_pair veth0 veth1 $A/24 10.0.0.2/24
ip link set veth0 mtu $NETMTU && ip link set veth1 mtu $NETMTU
t setup/link-add link_up "$DRIVER" "$DEV" veth0
t setup/port-ready wait_for 30 port_ready "$DEV" || exit 1
res_base
echo "# $DEV holds: $(res_of)"
# Where the ULPs' QP work is queued, traced over all of them: on the
# workqueue kept for kernel consumers (`rrxe_kernel`), none on the user
# QPs' (`rrxe`), whose work can sleep in page faults (datapath.md,
# "Contexts and serialisation"; traffic.sh checks the user side).
wq_traced=
[ "$DRIVER" = rrxe ] && wq_trace on && wq_traced=1

for u in $ULPS; do
	echo "# --- $u"
	if step "$u/target-up" ulp_target_up "$u" $A "$MIB" "$DEV" $A &&
		info=$(ulp_target_info "$u") &&
		step "$u/host-up" ulp_host_up "$u" $A "$DEV" "$info"; then
		echo "# $u: fio on $ULP_PATH"
		ulp_fio_check "$u/fio-write-verify" "$(ulp_fio "$u/fio-write-verify" "$ULP_PATH" "$MIB" write)"
		ulp_fio_check "$u/fio-verify-only" "$(ulp_fio "$u/fio-verify-only" "$ULP_PATH" "$MIB" verify)"
		step "$u/host-down" ulp_host_down "$u" $A
	fi
	step "$u/target-down" ulp_target_down "$u"
	res_back "$u/device-resources-released"
done

echo "# before teardown $DEV holds: $(res_of)"
if [ -n "$wq_traced" ]; then
	wq_trace off
	read -r user kern < <(wq_trace count)
	echo "# QP work of the ULPs: queued $kern times on rrxe_kernel, $user on rrxe"
	t workqueues/kernel-qps-on-rrxe-kernel [ "$kern" -gt 0 ]
	t_eq workqueues/kernel-qps-not-on-rrxe "$user" 0
elif [ "$DRIVER" = rrxe ]; then
	fail workqueues/kernel-qps-on-rrxe-kernel "no tracefs (workqueue events)"
fi
t teardown/link-delete rdma link delete "$DEV"
t teardown/unload unload "$DRIVER"
mods=$(lsmod | awk '$1 ~ /^(ib_srpt|ib_srp|ib_isert|ib_iser|rpcrdma)$/ { print $1 }')
[ -z "$mods" ] || t teardown/ulp-modules-unload modprobe -r $mods
kmemleak_check teardown/kmemleak
echo "# ulp: $((SECONDS - suite_start))s"
exit 0
