#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything rrxe needs on a Debian 12 host, idempotently.
# Quick (a few dpkg/cargo queries) when everything is already present.
# Fails with a message naming what is missing when it cannot install it.
set -euo pipefail

# The pinned set (see Documentation/build.rst).
DEB_PKGS=(
	# kernel source and the Rust toolchain the kernel builds with
	linux-source-6.12 rustc-web rust-web-src
	# C side of the kernel build (LLVM=1)
	clang lld llvm libclang-dev bc flex bison libelf-dev libssl-dev cpio kmod
	make xz-utils python3 git rsync
	# VM
	qemu-system-x86
	# rdma-core 44 userspace, used inside the guest
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iproute2
	python3-pyverbs librdmacm-dev libibverbs-dev
	# guest tools
	iputils-ping tcpdump procps psmisc ethtool
)
BINDGEN_VERSION=0.69.5
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
BINDGEN=${BINDGEN:-$CARGO_HOME/bin/bindgen}

missing=()
for p in "${DEB_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

if ((${#missing[@]})); then
	echo "deps: installing Debian packages: ${missing[*]}"
	if [ "$(id -u)" != 0 ]; then
		echo "deps: ERROR: missing packages and not root: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q || echo "deps: warning: apt-get update failed" >&2
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
		echo "deps: ERROR: could not install: ${missing[*]}" >&2
		exit 1
	fi
	# Verify.
	for p in "${missing[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || {
			echo "deps: ERROR: package still missing after install: $p" >&2
			exit 1
		}
	done
fi

if ! { [ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -q " $BINDGEN_VERSION\$"; }; then
	command -v cargo >/dev/null || [ -x "$CARGO_HOME/bin/cargo" ] || {
		echo "deps: ERROR: cargo not found; needed to install bindgen-cli $BINDGEN_VERSION" >&2
		exit 1
	}
	CARGO=$(command -v cargo || echo "$CARGO_HOME/bin/cargo")
	echo "deps: installing bindgen-cli $BINDGEN_VERSION with cargo"
	"$CARGO" install --locked --root "$CARGO_HOME" "bindgen-cli@$BINDGEN_VERSION" || {
		echo "deps: ERROR: cargo install bindgen-cli@$BINDGEN_VERSION failed" >&2
		exit 1
	}
fi

for f in /usr/bin/rustc /usr/src/linux-source-6.12.tar.xz /usr/bin/qemu-system-x86_64 "$BINDGEN"; do
	[ -e "$f" ] || { echo "deps: ERROR: $f missing" >&2; exit 1; }
done
[ -d /usr/lib/rustlib/src/rust/library ] || { echo "deps: ERROR: rust library sources missing (rust-web-src)" >&2; exit 1; }
echo "deps: ok"
