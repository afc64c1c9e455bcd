#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build rdma_rrxe.ko against the cached guest kernel of VARIANT.
#
#   scripts/module.sh VARIANT [make args...]
#
# RRXE_MODULE_KDIR=DIR builds against that kernel tree instead of the
# cached one (scripts/kdir.sh, `make KDIR=DIR`, checks it first); VARIANT
# then only names the build.
#
# Each variant builds in its own copy of the sources under out/VARIANT/
# (kbuild writes objects beside the sources), so the debug and release
# modules never mix. Only changed files are copied, so kbuild rebuilds only
# what changed. The build fails on any compiler warning.
# The C rdma_rxe.ko of the same kernel is copied beside the result, so the
# guest finds both under the repository share. The kernel-verbs test module
# (tests/kverbs/) is built into out/VARIANT/kverbs/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
variant=${1:?usage: module.sh release|debug}
shift
kdir=${RRXE_MODULE_KDIR:-$("$here/kernel.sh" build "$variant")}
# RRXE_MODULE_OUT puts the build elsewhere (scripts/lint.sh's clippy build);
# RRXE_MODULE_KVERBS=0 skips the kernel-verbs test module.
out=${RRXE_MODULE_OUT:-$top/out/$variant}
BINDGEN=${BINDGEN:-${CARGO_HOME:-$HOME/.cargo}/bin/bindgen}
RUSTC=${RRXE_MODULE_RUSTC:-/usr/bin/rustc}
# A kernel built with clang (all the cached ones) takes LLVM=1 here too.
llvm=()
grep -q '^CONFIG_CC_IS_CLANG=y' "$kdir/.config" && llvm=(LLVM=1)

mkdir -p "$out"
rsync -a --exclude target/ --exclude fuzz/ --exclude '*.o' \
	"$top/Kbuild" "$top/include" "$out/"
mkdir -p "$out/drivers/infiniband/sw"
rsync -a --exclude target/ --exclude fuzz/ --exclude 'proto/tests/' \
	--exclude '*.o' --exclude '*.ko' --exclude '.*.cmd' \
	--exclude 'bindings_generated.rs' \
	"$top/drivers/infiniband/sw/rrxe" "$out/drivers/infiniband/sw/"

# Called from make (make module, make KDIR=, DKMS's make -jN CC=... LD=...):
# kbuild gets only what this script passes, not the caller's flags and
# variables (a -j of the caller's would make a jobserver warning of make's,
# which this script takes for a compiler warning).
unset MAKEFLAGS MFLAGS
log="$out/build.log"
set +e
make -C "$kdir" M="$out" "${llvm[@]}" RUSTC="$RUSTC" BINDGEN="$BINDGEN" \
	-j"$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { echo "module: build failed ($variant)" >&2; exit "$rc"; }
if grep -qiE '(^|[^a-z_])warning[:\[]' "$log"; then
	echo "module: build has warnings ($variant):" >&2
	grep -iE -A5 '(^|[^a-z_])warning[:\[]' "$log" >&2
	# kbuild would not run rustc again for unchanged sources: make the
	# next build compile (and warn) again.
	rm -f "$out/drivers/infiniband/sw/rrxe/rrxe.o"
	exit 1
fi
cp "$kdir/drivers/infiniband/sw/rxe/rdma_rxe.ko" "$out/" 2>/dev/null || true
echo "$kdir" >"$out/kernel-dir"

[ "${RRXE_MODULE_KVERBS:-1}" = 1 ] || exit 0

# The kernel-verbs conformance module (tests/kverbs/, a C module the
# guest loads as a kernel consumer would: tests/guest/kverbs.sh), built the
# same way into out/VARIANT/kverbs/, also failing on any warning.
kv="$out/kverbs"
mkdir -p "$kv"
rsync -a "$top/tests/kverbs/Kbuild" "$top/tests/kverbs/rrxe_kverbs.c" "$kv/"
klog="$kv/build.log"
set +e
make -C "$kdir" M="$kv" "${llvm[@]}" RUSTC="$RUSTC" -j"$(nproc)" "$@" 2>&1 | tee "$klog"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { echo "module: kverbs build failed ($variant)" >&2; exit "$rc"; }
if grep -qiE '(^|[^a-z_])warning[:\[]' "$klog"; then
	echo "module: kverbs build has warnings ($variant):" >&2
	grep -iE -A5 '(^|[^a-z_])warning[:\[]' "$klog" >&2
	rm -f "$kv/rrxe_kverbs.o"
	exit 1
fi
