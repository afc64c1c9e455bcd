#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One NVMe-oF round trip over one RDMA device, in the guest: an nvmet-rdma
# target on ADDR (a 4 MiB memory-backed namespace), an nvme-rdma host
# connected to it on the same device, 1 MiB written with O_DIRECT and
# read back identical, the host disconnected and the target torn down.
# Exits 0 only if all of it worked. A kernel consumer's whole path: its
# QPs and MRs (ib_alloc_mr) and ib_cm's AHs for the connection messages.
#
#   tests/lib/nvme_once.sh ADDR   (from the repository, as root)
GROUP=nvme-once
. tests/guest/lib.sh
. tests/traffic/lib.sh
. tests/lib/ulp.sh
addr=${1:?usage: nvme_once.sh ADDR}
rc=1
if ulp_modules && nvme_target_up "$addr" 4 && nvme_host_up "$addr"; then
	head -c 1M /dev/urandom >"$ULP_DIR/once.in"
	dd if="$ULP_DIR/once.in" of="$ULP_PATH" bs=1M oflag=direct status=none &&
		dd if="$ULP_PATH" of="$ULP_DIR/once.out" bs=1M count=1 iflag=direct status=none &&
		cmp "$ULP_DIR/once.in" "$ULP_DIR/once.out" && rc=0
fi
nvme_host_down >/dev/null || rc=1
nvme_target_down || rc=1
exit $rc
