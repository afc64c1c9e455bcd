#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) the guest kernel for rrxe.
#
#   scripts/kernel.sh build VARIANT   build if the cache has no match; print dir
#   scripts/kernel.sh path  VARIANT   print the build dir for the current key
#   scripts/kernel.sh key   VARIANT   print the cache key
#
# VARIANT is `release` (make run, make bench) or `debug` (make check: KASAN,
# lockdep, atomic-sleep, list debugging, kmemleak).
#
# The kernel is Debian's linux-source-6.12, configured as tinyconfig plus the
# fragments in scripts/kconfig/, and built with LLVM=1 and Debian's rustc.
# The output lives outside the repo, in $RRXE_CACHE (default
# ~/.cache/rrxe), under a directory named by a key that hashes the kernel
# package version, the fragments, this recipe's revision and the toolchain
# versions. A matching directory is reused as it is.
set -euo pipefail

RECIPE_REV=3 # bump when this script changes what it builds
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
RUSTC=${RUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-${CARGO_HOME:-$HOME/.cargo}/bin/bindgen}
SRC_TAR=/usr/src/linux-source-6.12.tar.xz
JOBS=${JOBS:-$(($(nproc) + 1))}

cmd=${1:-}
variant=${2:-}
case "$cmd" in build | path | key) ;; *)
	echo "usage: $0 build|path|key release|debug" >&2
	exit 2
	;;
esac
case "$variant" in release | debug) ;; *)
	echo "kernel: unknown variant '$variant' (release or debug)" >&2
	exit 2
	;;
esac

frags=("$here/kconfig/base.config" "$here/kconfig/$variant.config")

kernel_pkg_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo none
}

compute_key() {
	{
		echo "recipe $RECIPE_REV"
		echo "variant $variant"
		echo "kernel $(kernel_pkg_version)"
		cat "${frags[@]}"
		"$RUSTC" --version 2>/dev/null || echo "no rustc"
		clang --version 2>/dev/null | head -n1 || echo "no clang"
		ld.lld --version 2>/dev/null | head -n1 || echo "no lld"
		"$BINDGEN" --version 2>/dev/null || echo "no bindgen"
	} | sha256sum | cut -c1-16
}

key=$(compute_key)
out="$CACHE/kernel/$variant-$key"

case "$cmd" in
key) echo "$key"; exit 0 ;;
path) echo "$out"; exit 0 ;;
esac

if [ -f "$out/.rrxe-done" ]; then
	echo "kernel: reusing cached $variant kernel $out" >&2
	echo "$out"
	exit 0
fi

[ -f "$SRC_TAR" ] || { echo "kernel: $SRC_TAR missing (run scripts/deps.sh)" >&2; exit 1; }
mkdir -p "$CACHE/src" "$CACHE/kernel"
exec 9>"$CACHE/kernel/.lock-$variant"
flock 9
# Someone else may have finished it while we waited for the lock.
if [ -f "$out/.rrxe-done" ]; then echo "$out"; exit 0; fi

ver=$(kernel_pkg_version)
src="$CACHE/src/linux-source-6.12-${ver//[^A-Za-z0-9.+-]/_}"
if [ ! -f "$src/.rrxe-unpacked" ]; then
	echo "kernel: unpacking $SRC_TAR" >&2
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" -xf "$SRC_TAR"
	mv "$src.tmp/linux-source-6.12" "$src"
	rmdir "$src.tmp"
	touch "$src/.rrxe-unpacked"
fi

start=$(date +%s)
rm -rf "$out"
# A finished build of the same variant from an earlier key (other
# fragments, say) seeds this one: kbuild then rebuilds only what the
# configuration change touches (minutes instead of a full build). Set
# RRXE_KERNEL_SEED=0 to build from scratch.
seed=
if [ "${RRXE_KERNEL_SEED:-1}" = 1 ]; then
	seed=$(ls -td "$CACHE/kernel/$variant"-*/.rrxe-done 2>/dev/null | head -n 1 || true)
	seed=${seed%/.rrxe-done}
fi
if [ -n "$seed" ] && [ -f "$seed/.config" ]; then
	echo "kernel: seeding the $variant build from $seed" >&2
	cp -a "$seed" "$out.tmp"
	rm -rf "$out.tmp/modroot" "$out.tmp/.rrxe-done" "$out.tmp/build.log"
	mv "$out.tmp" "$out"
else
	mkdir -p "$out"
fi
log="$out/build.log"
mk=(make -C "$src" O="$out" LLVM=1 RUSTC="$RUSTC" BINDGEN="$BINDGEN")

echo "kernel: configuring $variant kernel in $out" >&2
{
	"${mk[@]}" tinyconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}"
	"${mk[@]}" olddefconfig
} >"$log" 2>&1 || { tail -n 30 "$log" >&2; echo "kernel: configure failed ($log)" >&2; exit 1; }

# merge_config silently drops what a dependency refuses: check every line.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n) opt=${line%%=*}; want="# $opt is not set" ;;
	CONFIG_*=*) opt=${line%%=*}; want=$line ;;
	"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}; want=$line ;;
	*) continue ;;
	esac
	if [ "$want" = "# $opt is not set" ]; then
		grep -q "^$opt=" "$out/.config" && { echo "kernel: $opt should be off" >&2; bad=1; }
	else
		grep -qx "$want" "$out/.config" || {
			echo "kernel: wanted '$want', got '$(grep "^$opt=\|^# $opt " "$out/.config" || echo unset)'" >&2
			bad=1
		}
	fi
done < <(cat "${frags[@]}")
[ "$bad" = 0 ] || { echo "kernel: configuration does not hold what the fragments ask" >&2; exit 1; }

echo "kernel: building $variant kernel with -j$JOBS (a full build: about 10 min release, 20 min debug on 2 cores)" >&2
"${mk[@]}" -j"$JOBS" all >>"$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
	sleep 30
	n=$(grep -cE '^  (CC|RUSTC|AS|LD|AR|BINDGEN)' "$log" || true)
	last=$(grep -E '^  [A-Z]' "$log" | tail -n1 | sed 's/^ *//')
	echo "kernel: [$variant] $(( ($(date +%s) - start) / 60 )) min, $n steps, last: $last" >&2
done
if ! wait "$pid"; then
	grep -E 'error|Error' "$log" | head -n 20 >&2
	tail -n 20 "$log" >&2
	echo "kernel: build failed; full log: $log" >&2
	exit 1
fi
[ -f "$out/arch/x86/boot/bzImage" ] || { echo "kernel: no bzImage" >&2; exit 1; }
# The loadable modules (C rdma_rxe, the storage ULPs) with their modules.dep,
# so the guest can `modprobe -d $out/modroot NAME`.
"${mk[@]}" INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 modules_install >>"$log" 2>&1 ||
	{ tail -n 20 "$log" >&2; echo "kernel: modules_install failed ($log)" >&2; exit 1; }
echo "$key" >"$out/.rrxe-done"
echo "kernel: $variant kernel built in $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s" >&2
echo "$out"
