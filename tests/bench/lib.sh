# SPDX-License-Identifier: GPL-2.0
#
# Guest library of the bench tools (ab.sh, profile.sh): one device on a
# veth pair, as the bench's topology (bench.md), built from the guest
# tests' helpers.
. tests/guest/lib.sh
. tests/traffic/lib.sh

# bench_setup: the in-tree rxe provider only, veth0 10.0.0.1/24 and veth1 up,
# both with MTU ${MTU:-1500} (9000 gives IB MTU 4096, as make bench's
# BENCH_MTU).
bench_setup() {
	rxe_provider_only && veth_pair veth0 veth1 10.0.0.1/24 &&
		ip link set veth0 mtu "${MTU:-1500}" && ip link set veth1 mtu "${MTU:-1500}"
}

# dev_up KO: loads the module KO (rdma_rrxe.ko or rdma_rxe.ko), adds its
# device on veth0 and waits for its IPv4 RoCE v2 GID; sets DEV, GIDX and MOD.
dev_up() {
	local t
	case $1 in
	*rdma_rxe.ko) t=rxe DEV=rxe0 MOD=rdma_rxe ;;
	*rdma_rrxe.ko) t=rrxe DEV=rrxe0 MOD=rdma_rrxe ;;
	*) echo "not a module of either driver: $1" >&2; return 2 ;;
	esac
	insmod "$1" && rdma link add $DEV type $t netdev veth0 &&
		wait_for 15 gid_index $DEV v4 && GIDX=$(gid_index $DEV v4)
}

# dev_down: deletes the device and unloads its module.
dev_down() {
	rdma link delete $DEV && rmmod $MOD
}
