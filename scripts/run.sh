#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`: build (or reuse) the release kernel and rdma_rrxe.ko, boot a
# VM and run tests/demo/demo.sh in it, printing what it shows.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/kernel.sh" build release >/dev/null
"$here/module.sh" release >/dev/null
echo "== booting the release kernel; the demo's output follows"
exec "$here/vm.sh" --variant release --timeout 900 tests/demo/demo.sh
