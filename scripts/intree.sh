#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Apply rrxe into a kernel source tree, as one more driver of
# drivers/infiniband/sw: after this, `make menuconfig` offers
# CONFIG_RDMA_RRXE (Device Drivers > InfiniBand support) and the kernel's
# own build compiles it, as a module or built in.
#
#   scripts/intree.sh KERNEL-SOURCE-DIR
#
# It copies:
#   drivers/infiniband/sw/rrxe/   the driver (its Kbuild and Kconfig too;
#                                 not proto/'s cargo outputs, fuzz corpus
#                                 or host tests)
#   include/rrxe/                 the bindgen input header
# and adds, once each (running it again only refreshes the copies):
#   drivers/infiniband/Kconfig      source "drivers/infiniband/sw/rrxe/Kconfig"
#                                   after rxe's line
#   drivers/infiniband/sw/Makefile  obj-$(CONFIG_RDMA_RRXE) += rrxe/
#
# Files are replaced (written beside, then renamed), never written in
# place, so a tree whose files are hard links of another's (cp -al) is
# safe to apply into.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
die() { echo "intree: $*" >&2; exit 1; }

ksrc=$(cd "${1:?usage: intree.sh KERNEL-SOURCE-DIR}" 2>/dev/null && pwd) ||
	die "$1: no such directory"
kconfig=$ksrc/drivers/infiniband/Kconfig
makefile=$ksrc/drivers/infiniband/sw/Makefile
[ -f "$kconfig" ] && [ -f "$makefile" ] && [ -f "$ksrc/rust/bindgen_parameters" ] ||
	die "$ksrc is not a kernel source tree with Rust support (no drivers/infiniband/Kconfig, drivers/infiniband/sw/Makefile or rust/bindgen_parameters)"
grep -q 'sw/rxe/Kconfig' "$kconfig" ||
	die "$kconfig has no rxe line to add rrxe's after"

# --delete: a file removed from the driver goes from the tree too.
# rsync writes each file beside and renames it (no in-place writes).
mkdir -p "$ksrc/drivers/infiniband/sw/rrxe" "$ksrc/include/rrxe"
rsync -a --delete --exclude target/ --exclude fuzz/ --exclude 'proto/tests/' \
	--exclude 'proto/examples/' --exclude '*.o' --exclude '*.ko' \
	--exclude '.*.cmd' --exclude 'bindings_generated.rs' \
	"$top/drivers/infiniband/sw/rrxe/" "$ksrc/drivers/infiniband/sw/rrxe/"
rsync -a --delete "$top/include/rrxe/" "$ksrc/include/rrxe/"

# FILE: replace it with the output of the command that follows.
replace() {
	local f=$1 tmp
	shift
	tmp=$(mktemp "$f.XXXXXX")
	"$@" <"$f" >"$tmp" || { rm -f "$tmp"; die "editing $f failed"; }
	chmod --reference="$f" "$tmp"
	mv "$tmp" "$f"
}

if ! grep -q '^source "drivers/infiniband/sw/rrxe/Kconfig"' "$kconfig"; then
	replace "$kconfig" sed '/^source "drivers\/infiniband\/sw\/rxe\/Kconfig"/a source "drivers/infiniband/sw/rrxe/Kconfig"'
fi
if ! grep -q 'CONFIG_RDMA_RRXE' "$makefile"; then
	replace "$makefile" sed '$a obj-$(CONFIG_RDMA_RRXE)\t\t+= rrxe/'
fi
grep -q '^source "drivers/infiniband/sw/rrxe/Kconfig"' "$kconfig" &&
	grep -q 'CONFIG_RDMA_RRXE' "$makefile" || die "the Kconfig or Makefile line did not go in"
echo "intree: rrxe applied to $ksrc (CONFIG_RDMA_RRXE)"
