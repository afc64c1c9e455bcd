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

for what in "${@:-fmt clippy size graph}"; do
	for w in $what; do
		case "$w" in
		fmt | clippy | graph | size) "$w" ;;
		*) echo "usage: lint.sh [fmt|clippy|graph|size]..." >&2; exit 2 ;;
		esac
	done
done
