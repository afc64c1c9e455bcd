#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's in-tree build: rrxe applied into the cached kernel source
# (scripts/intree.sh) and compiled by the kernel's own build, as a module
# and built in, against the cached debug kernel build (the guest's kernel,
# so that a guest can load the module: tests/guest/kverbs.sh does).
#
#   tests/kbuild/intree.sh OUT
#
# The cache is never written: in a private mount namespace, overlays put
# OUT/src.upper over the kernel source and OUT/build.upper over the build
# directory, at their own paths, so the kernel's saved command lines still
# match and kbuild compiles only what the new option touches (a copy
# elsewhere would change every command line and rebuild the kernel).
# The module is left in OUT/rdma_rrxe.ko. Prints "PASS name" and
# "FAIL name: why" lines.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:?usage: intree.sh OUT}" && cd "$1" && pwd)
kdir=$("$top/scripts/kernel.sh" path debug)
[ -f "$kdir/.rrxe-done" ] || { echo "FAIL intree/build: no cached debug kernel at $kdir"; exit 1; }
src=$(readlink -f "$kdir/source")

if [ "${RRXE_INTREE_NS:-}" != 1 ]; then
	rm -rf "$out"/{src,build}.{upper,work} "$out/rdma_rrxe.ko"
	mkdir -p "$out"/{src,build}.{upper,work}
	# Mounting needs CAP_SYS_ADMIN (root on this machine and in CI).
	exec unshare --mount --propagation private env RRXE_INTREE_NS=1 "$0" "$out"
fi

pass() { echo "PASS intree/$1"; }
fail() { echo "FAIL intree/$1: $2"; }
mount -t overlay overlay -o "lowerdir=$src,upperdir=$out/src.upper,workdir=$out/src.work" "$src" &&
	mount -t overlay overlay -o "lowerdir=$kdir,upperdir=$out/build.upper,workdir=$out/build.work" "$kdir" ||
	{ fail build "could not mount the overlays (needs root with CAP_SYS_ADMIN)"; exit 1; }

BINDGEN=${BINDGEN:-${CARGO_HOME:-$HOME/.cargo}/bin/bindgen}
mk=(make -C "$src" O="$kdir" LLVM=1 RUSTC=/usr/bin/rustc BINDGEN="$BINDGEN" -j"$(nproc)")
log=$out/build.log
: >"$log"

# Applied twice: the second run must add nothing.
if "$top/scripts/intree.sh" "$src" >>"$log" 2>&1 && "$top/scripts/intree.sh" "$src" >>"$log" 2>&1 &&
	[ "$(grep -c 'sw/rrxe/Kconfig' "$src/drivers/infiniband/Kconfig")" = 1 ] &&
	[ "$(grep -c 'CONFIG_RDMA_RRXE' "$src/drivers/infiniband/sw/Makefile")" = 1 ]; then
	pass apply-script-idempotent
else
	fail apply-script-idempotent "see $log"
	exit 1
fi

# menuconfig offers it: a new option of this configuration, whose
# dependencies the kernel meets (olddefconfig keeps it).
new=$("${mk[@]}" -s listnewconfig 2>>"$log")
"$src/scripts/config" --file "$kdir/.config" -m RDMA_RRXE
if grep -q '^CONFIG_RDMA_RRXE=' <<<"$new" && "${mk[@]}" olddefconfig >>"$log" 2>&1 &&
	grep -qx 'CONFIG_RDMA_RRXE=m' "$kdir/.config"; then
	pass kconfig-offers-rdma-rrxe
else
	fail kconfig-offers-rdma-rrxe "listnewconfig: '$new'; .config: $(grep RDMA_RRXE "$kdir/.config")"
	exit 1
fi

ko=$kdir/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
if "${mk[@]}" drivers/infiniband/sw/rrxe/rdma_rrxe.ko >>"$log" 2>&1 && [ -f "$ko" ] &&
	! grep -qiE '(^|[^a-z_])warning[:\[]' "$log"; then
	cp "$ko" "$out/rdma_rrxe.ko"
	if [ "$(modinfo -F intree "$out/rdma_rrxe.ko")" = Y ]; then
		pass module-build
	else
		fail module-build "the module is not marked in-tree (modinfo intree)"
	fi
else
	fail module-build "see $log"
fi

# Built in: the same sources compiled without MODULE into the directory's
# built-in archive, with an initcall instead of init_module.
"$src/scripts/config" --file "$kdir/.config" -e RDMA_RRXE
a=$kdir/drivers/infiniband/sw/rrxe/built-in.a
if "${mk[@]}" olddefconfig >>"$log" 2>&1 && grep -qx 'CONFIG_RDMA_RRXE=y' "$kdir/.config" &&
	"${mk[@]}" drivers/infiniband/sw/rrxe/ >>"$log" 2>&1 && [ -f "$a" ] &&
	! grep -qiE '(^|[^a-z_])warning[:\[]' "$log"; then
	syms=$(llvm-nm "$kdir/drivers/infiniband/sw/rrxe/rrxe.o" 2>/dev/null)
	if grep -q 'rdma_rrxe_initcall' <<<"$syms" && ! grep -qw 'init_module' <<<"$syms" &&
		llvm-ar t "$a" | grep -q 'rrxe.o'; then
		pass builtin-build
	else
		fail builtin-build "rrxe.o has no initcall or still has init_module, or built-in.a lacks it"
	fi
else
	fail builtin-build "see $log"
fi
