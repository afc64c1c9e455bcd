#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make KDIR=DIR`: build rdma_rrxe.ko against a configured and built 6.12
# kernel tree of the user's (the object tree: where its .config and
# Module.symvers are), into out/kdir/.
#
#   scripts/kdir.sh DIR [make args...]
#
# Before any compiler runs it checks, in this order, and names everything
# that is wrong in each step:
#   1. DIR/.config has every option the module needs (REQUIRED below);
#   2. DIR holds the outputs of a kernel build with Rust: the generated
#      config, kernel.release (6.12), Module.symvers, the Rust crates'
#      metadata and the macros library, the Rust target file, and the
#      source tree's bindgen parameters;
#   3. the rustc and bindgen found here are the versions the kernel was
#      built with (its .config records them): Rust crate metadata is only
#      readable by the exact compiler that wrote it.
# Then scripts/module.sh builds it (incrementally, failing on any warning)
# with RUSTC and BINDGEN (default /usr/bin/rustc and ~/.cargo/bin/bindgen,
# else the ones on PATH). The kernel-verbs test module is not built.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
arg=${1:?usage: kdir.sh KERNEL-BUILD-DIR [make args...]}
shift

die() { echo "kdir: $*" >&2; exit 1; }

kdir=$(cd "$arg" 2>/dev/null && pwd) || die "KDIR=$arg: no such directory"

# option, the values that do, and what the module uses it for
REQUIRED=(
	"MODULES y loadable modules"
	"RUST y the module is Rust (Rust-for-Linux)"
	"NET y net devices and sockets"
	"INET y IPv4: RoCEv2 runs over UDP/IP"
	"IPV6 y|m RoCEv2 over IPv6 GIDs (route lookup, ip6_local_out)"
	"NET_UDP_TUNNEL y|m the UDP 4791 socket (selected by e.g. CONFIG_RDMA_RXE, CONFIG_NET_FOU, CONFIG_VXLAN)"
	"INFINIBAND y|m the RDMA core (ib_core) the device registers with"
	"INFINIBAND_USER_ACCESS y|m user verbs (ib_uverbs), what librxe talks to"
	"INFINIBAND_USER_MEM y user memory regions (ib_umem); follows INFINIBAND_USER_ACCESS"
	"CRC32 y|m the ICRC (crc32_le)"
)

config_value() { # NAME: the option's value in the .config, or nothing
	sed -n "s/^CONFIG_$1=//p" "$kdir/.config" | tail -n 1
}

check_config() {
	[ -f "$kdir/.config" ] ||
		die "KDIR=$kdir has no .config: configure the kernel there (e.g. make olddefconfig) and build it"
	local line name want why v missing=()
	for line in "${REQUIRED[@]}"; do
		read -r name want why <<<"$line"
		v=$(config_value "$name")
		if [ -z "$v" ] || [[ "|$want|" != *"|$v|"* ]]; then
			missing+=("  CONFIG_$name=$want (now ${v:-not set}): $why")
		fi
	done
	if ((${#missing[@]})); then
		{
			echo "kdir: $kdir/.config lacks what rdma_rrxe needs:"
			printf '%s\n' "${missing[@]}"
			echo "kdir: set these (make menuconfig or scripts/config), rebuild the kernel, then run make KDIR=... again"
		} >&2
		exit 1
	fi
}

# The source tree: the object tree itself, or its `source` link (O= builds).
srctree() {
	if [ -f "$kdir/rust/bindgen_parameters" ]; then echo "$kdir"
	elif [ -f "$kdir/source/rust/bindgen_parameters" ]; then echo "$kdir/source"
	fi
}

check_build() {
	local f missing=()
	for f in include/config/auto.conf include/generated/autoconf.h include/config/kernel.release \
		Module.symvers scripts/target.json rust/libcore.rmeta rust/libcompiler_builtins.rmeta \
		rust/libkernel.rmeta rust/libmacros.so rust/libbindings.rmeta rust/libuapi.rmeta; do
		[ -e "$kdir/$f" ] || missing+=("  $f")
	done
	[ -n "$(srctree)" ] || missing+=("  rust/bindgen_parameters (in the tree or its source/ link)")
	if ((${#missing[@]})); then
		{
			echo "kdir: $kdir is not a built kernel with Rust; missing:"
			printf '%s\n' "${missing[@]}"
			echo "kdir: build the kernel there first (make LLVM=1, with CONFIG_RUST=y), or point KDIR at its object tree (O=)"
		} >&2
		exit 1
	fi
	local rel
	rel=$(<"$kdir/include/config/kernel.release")
	[[ "$rel" == 6.12.* || "$rel" == 6.12 ]] ||
		die "KDIR=$kdir is kernel $rel; rdma_rrxe is written against 6.12"
}

# The tool the kernel was built with (its .config's *_VERSION_TEXT) must be
# the one used here.
check_tool() { # NAME PATH CONFIG-OPTION
	local name=$1 tool=$2 want have
	want=$(config_value "$3" | sed 's/^"//; s/"$//')
	[ -x "$tool" ] || die "$name: $tool not found (set ${name^^}=/path/to/$name)"
	[ -n "$want" ] || return 0
	have=$("$tool" --version 2>/dev/null | head -n 1)
	[ "$have" = "$want" ] ||
		die "$name: the kernel in $kdir was built with \"$want\", $tool is \"$have\"; set ${name^^}= to the same $name"
}

pick() { # DEFAULT-PATH NAME: the default if present, else NAME on PATH
	if [ -x "$1" ]; then echo "$1"; else command -v "$2" || echo "$1"; fi
}

check_config
check_build
RUSTC=${RUSTC:-$(pick /usr/bin/rustc rustc)}
BINDGEN=${BINDGEN:-$(pick "${CARGO_HOME:-$HOME/.cargo}/bin/bindgen" bindgen)}
check_tool rustc "$RUSTC" RUSTC_VERSION_TEXT
check_tool bindgen "$BINDGEN" BINDGEN_VERSION_TEXT

export BINDGEN RRXE_MODULE_RUSTC=$RUSTC
RRXE_MODULE_KDIR=$kdir RRXE_MODULE_OUT="$top/out/kdir" RRXE_MODULE_KVERBS=0 \
	exec "$here/module.sh" kdir "$@"
