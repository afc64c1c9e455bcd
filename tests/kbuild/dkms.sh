#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check's DKMS test: the repository's dkms.conf through dkms itself
# (add, build, install, status, remove) against the cached release kernel
# tree as if it were an installed kernel's /lib/modules/KVER/build (the
# debug one if no release kernel is built). DKMS's trees are pointed into
# OUT (--sourcetree, --dkmstree, --installtree), so nothing outside it is
# written. Also: the module's version is dkms.conf's, and kernels the
# source cannot build for (no Rust, not 6.12) are skipped (exit 77).
#
#   tests/kbuild/dkms.sh OUT
#
# Prints "PASS name" and "FAIL name: why" lines.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:?usage: dkms.sh OUT}" && cd "$1" && pwd)
pass() { echo "PASS dkms/$1"; }
fail() { echo "FAIL dkms/$1: $2"; }
command -v dkms >/dev/null || { fail build "dkms is not installed (scripts/deps.sh installs it)"; exit 1; }

k=$("$top/scripts/kernel.sh" path release)
[ -f "$k/Module.symvers" ] || k=$("$top/scripts/kernel.sh" path debug)
krel=$(cat "$k/include/config/kernel.release")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"/\1/p' "$top/dkms.conf")
[ -n "$ver" ] && [ -n "$name" ] || { fail build "dkms.conf has no PACKAGE_NAME or PACKAGE_VERSION"; exit 1; }

rm -rf "$out"/{source,tree,install}
src=$out/source/$name-$ver
# The install tree stands for /lib/modules: DKMS installs only for a
# kernel that has its directory there.
mkdir -p "$src" "$out/tree" "$out/install/$krel"
# What a user's clone holds: the files git tracks or would (not out/, no
# cargo output).
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top" ls-files -z --cached --others --exclude-standard | rsync -a --from0 --files-from=- "$top/" "$src/"
else
	rsync -a --exclude out/ --exclude target/ "$top/" "$src/"
fi
trees=(--sourcetree "$out/source" --dkmstree "$out/tree" --installtree "$out/install")
log=$out/dkms.log

if dkms add -m "$name" -v "$ver" "${trees[@]}" >"$log" 2>&1; then
	pass add
else
	fail add "see $log"
	exit 1
fi
built=$out/tree/$name/$ver/$krel/$(uname -m)/module
if dkms build -m "$name" -v "$ver" -k "$krel" --kernelsourcedir "$k" "${trees[@]}" >>"$log" 2>&1 &&
	ko=$(ls "$built"/rdma_rrxe.ko* 2>/dev/null | head -n 1) && [ -n "$ko" ]; then
	vm=$(modinfo -F vermagic "$ko" 2>/dev/null)
	if [ "${vm%% *}" = "$krel" ]; then
		pass build-by-make-kdir
	else
		fail build-by-make-kdir "vermagic '$vm', the kernel is $krel"
	fi
	mv=$(modinfo -F version "$ko" 2>/dev/null)
	if [ "$mv" = "$ver" ]; then
		pass module-version
	else
		fail module-version "modinfo version '$mv', dkms.conf's PACKAGE_VERSION '$ver'"
	fi
else
	fail build-by-make-kdir "no rdma_rrxe.ko in $built; see $log and $out/tree/$name/$ver/build/make.log"
fi
if dkms install -m "$name" -v "$ver" -k "$krel" --kernelsourcedir "$k" --no-depmod "${trees[@]}" >>"$log" 2>&1 &&
	ls "$out/install/$krel/updates/dkms/"rdma_rrxe.ko* >/dev/null 2>&1 &&
	dkms status -m "$name" -v "$ver" -k "$krel" "${trees[@]}" 2>>"$log" | grep -q ': installed'; then
	pass install
else
	fail install "not in $out/install/$krel/updates/dkms/ or dkms status not 'installed'; see $log"
fi
# Kernels the source does not build for are skipped, not failed: one
# without Rust (a 6.12 whose .config lacks CONFIG_RUST) and one that is not
# 6.12 (its Rust abstractions differ). Each stands as a build tree with a
# .config and a release only: dkms must decide before it runs make (exit
# 77, "BUILD_EXCLUSIVE", and no build directory). (Debian 12's dkms 3.0.10
# still counts such a skip as a failed autoinstall, exit 11; dkms 3.0.11
# and later exit 0.)
skipped() { # NAME RELEASE CONFIG-LINES
	local kd=$out/fake-$1 rc
	rm -rf "$kd" "$out/tree/$name/$ver/$2"
	mkdir -p "$kd/include/config" "$out/install/$2"
	echo "$2" >"$kd/include/config/kernel.release"
	printf '%s\n' $3 >"$kd/.config"
	dkms build -m "$name" -v "$ver" -k "$2" --kernelsourcedir "$kd" "${trees[@]}" >"$out/skip-$1.log" 2>&1
	rc=$?
	if [ $rc = 77 ] && grep -q BUILD_EXCLUSIVE "$out/skip-$1.log" && [ ! -e "$out/tree/$name/$ver/build/make.log" ]; then
		pass "skip-$1"
	else
		fail "skip-$1" "dkms build for $2 exited $rc (want 77, BUILD_EXCLUSIVE, no make); see $out/skip-$1.log"
	fi
	rm -rf "$out/install/$2"
}
rm -f "$out/tree/$name/$ver/build/make.log"
rust_config="CONFIG_MODULES=y CONFIG_RUST=y CONFIG_INFINIBAND=m CONFIG_INFINIBAND_USER_ACCESS=m CONFIG_NET_UDP_TUNNEL=m"
skipped no-rust 6.12.99-norust "${rust_config/CONFIG_RUST=y /}"
skipped not-6.12 6.13.1-rust "$rust_config"
if dkms remove -m "$name" -v "$ver" --all --no-depmod "${trees[@]}" >>"$log" 2>&1 &&
	! ls "$out/install/$krel/updates/dkms/"rdma_rrxe.ko* >/dev/null 2>&1; then
	pass remove
else
	fail remove "the module is still installed; see $log"
fi
