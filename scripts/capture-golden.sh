#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Capture golden RoCEv2 frames from the kernel's C rdma_rxe: two VMs
# (release kernel) run tests/capture/golden.sh; B's tcpdump capture is
# turned into drivers/infiniband/sw/rrxe/proto/tests/golden/c-rxe.txt.
# Not part of `make check` (the vectors are committed as test data).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
"$here/kernel.sh" build release >/dev/null
"$here/module.sh" release >/dev/null
"$here/vm2.sh" --variant release --timeout 1200 --name golden \
	tests/capture/golden.sh tests/capture/golden.sh
pcap=$top/out/vm/golden-b/golden.pcap
dst=$top/drivers/infiniband/sw/rrxe/proto/tests/golden/c-rxe.txt
{
	echo "# SPDX-License-Identifier: GPL-2.0"
	echo "# RoCEv2 frames sent by the kernel's C rdma_rxe (Linux 6.12.117), captured"
	echo "# with tcpdump on the link between two QEMU guests by scripts/capture-golden.sh"
	echo "# (rping over IPv4 and IPv6, ib_write_bw, ib_read_bw, ib_atomic_bw, ib_send_bw,"
	echo "# ibv_ud_pingpong, and ib_write_bw under 25% loss for NAKs). Path MTU 1024."
	"$here/pcap2golden.py" "$pcap" 1024 "C-rdma_rxe-6.12"
} >"$dst"
echo "wrote $(grep -vc '^#' "$dst") frames to $dst"
