#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The driver's source gates, run by `make check` (each is one check there):
#
#   scripts/lint.sh fmt      rustfmt --check over the driver and proto/
#                            (rustfmt.toml: the kernel's settings), and no
#                            line of driver source over 100 columns
#   scripts/lint.sh clippy   the module built by clippy-driver with the
#                            kernel's lint set (`make CLIPPY=1`) and
#                            .clippy.toml; fails on any warning
#   scripts/lint.sh graph    no cycle in the driver's module graph
#                            (scripts/modgraph.py --check)
#   scripts/lint.sh size     no function of the driver or proto/src over
#                            80 lines (scripts/fnlen.py --check)
#   scripts/lint.sh words    rdma/ hands up no opcode, flag set or mask as
#                            a bare integer (scripts/cwords.py)
#   scripts/lint.sh checkpatch
#                            the kernel-side C (the driver's helpers and
#                            CRC, include/rrxe/, the kverbs test module)
#                            passes the kernel's own checkpatch.pl --strict
#                            (from the source of the cached debug kernel)
#
# rustfmt and clippy are Debian's rustfmt-web and rust-web-clippy, the same
# release as the rustc-web the kernel is built with (scripts/deps.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
drv="$top/drivers/infiniband/sw/rrxe"
RUSTFMT=${RUSTFMT:-/usr/bin/rustfmt}
CLIPPY_DRIVER=${CLIPPY_DRIVER:-/usr/bin/clippy-driver}

# The driver's Rust files (the module and proto/, with proto's host tests,
# examples and fuzz harness).
sources() {
	find "$drv" -name '*.rs' -not -path '*/target/*' -not -name 'bindings_generated.rs' | sort
}

fmt() {
	local bad=0 f
	# The crate roots: rustfmt follows their `mod` lines.
	if ! "$RUSTFMT" --check --config-path "$top/rustfmt.toml" "$drv/rrxe.rs"; then
		bad=1
	fi
	while read -r f; do
		case "$f" in
		"$drv"/proto/tests/* | "$drv"/proto/examples/* | "$drv"/proto/fuzz/*)
			"$RUSTFMT" --check --config-path "$top/rustfmt.toml" "$f" || bad=1 ;;
		esac
	done < <(sources)
	# rustfmt leaves long comments and some macro bodies alone. Tables in
	# proto's tests may be wider (they say `#[rustfmt::skip]`).
	local long
	long=$(sources | grep -v '/proto/tests/' | xargs awk 'length > 100 { print FILENAME ":" FNR ": " length " columns" }')
	if [ -n "$long" ]; then
		echo "lines over 100 columns:"
		echo "${long//$top\//}"
		bad=1
	fi
	return "$bad"
}

clippy() {
	[ -x "$CLIPPY_DRIVER" ] || { echo "lint: no $CLIPPY_DRIVER (scripts/deps.sh installs rust-web-clippy)"; return 1; }
	# Its own build tree, so the debug module's objects are not rebuilt by
	# clippy-driver (kbuild would see another command line).
	RRXE_MODULE_OUT="$top/out/clippy" RRXE_MODULE_KVERBS=0 \
		"$here/module.sh" debug CLIPPY=1 CLIPPY_DRIVER="$CLIPPY_DRIVER" CLIPPY_CONF_DIR="$top"
}

graph() {
	"$here/modgraph.py" --check
}

size() {
	"$here/fnlen.py" --check
}

words() {
	"$here/cwords.py"
}

# The kernel-side C files, each with the checkpatch types it may ignore and
# why (none but the vector type of the CRC fold).
checkpatch_files=(
	"drivers/infiniband/sw/rrxe/rrxe_helpers.c"
	"drivers/infiniband/sw/rrxe/rrxe_crc.c"
	"include/rrxe/rrxe_bindings.h"
	"include/rrxe/rrxe_helpers.h"
	"include/rrxe/rrxe_crc_copy.h"
	# The TRACE_EVENT macros' own layout, as in include/trace/events/.
	"include/rrxe/rrxe_trace.h PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE"
	# GCC's vector extension names its 128-bit type only through a typedef.
	"include/rrxe/rrxe_crc_clmul.h NEW_TYPEDEFS"
	"tests/kverbs/rrxe_kverbs.c"
)

checkpatch() {
	local src cp bad=0 entry f ignore out
	src=$("$here/kernel.sh" path debug)/source
	cp="$src/scripts/checkpatch.pl"
	[ -f "$cp" ] || { echo "lint: no $cp (scripts/kernel.sh build debug unpacks it)"; return 1; }
	for entry in "${checkpatch_files[@]}"; do
		read -r f ignore <<<"$entry"
		if ! out=$(cd "$top" && perl "$cp" --strict --no-tree --quiet --terse --show-types \
			${ignore:+--ignore "$ignore"} -f "$f" 2>&1); then
			bad=1
		fi
		# --quiet still prints the total when anything was found.
		if grep -q -E '^[^ ]+:[0-9]+: (ERROR|WARNING|CHECK)' <<<"$out"; then
			bad=1
			grep -E '^[^ ]+:[0-9]+: ' <<<"$out"
		fi
	done
	# Every kernel-side C file is in the list.
	local all
	all=$(cd "$top" && ls drivers/infiniband/sw/rrxe/*.c include/rrxe/*.h tests/kverbs/*.c)
	for f in $all; do
		if ! printf '%s\n' "${checkpatch_files[@]}" | grep -q -E "^$f( |\$)"; then
			echo "$f: not in lint.sh's checkpatch list"
			bad=1
		fi
	done
	return "$bad"
}

for what in "${@:-fmt clippy size graph}"; do
	for w in $what; do
		case "$w" in
		fmt | clippy | graph | size | words | checkpatch) "$w" ;;
		*) echo "usage: lint.sh [fmt|clippy|graph|size|words|checkpatch]..." >&2; exit 2 ;;
		esac
	done
done
