#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything rrxe needs on a Debian 12 host, idempotently.
# Quick (a few dpkg/cargo queries) when everything is already present.
# Fails with a message naming what is missing when it cannot install it.
set -euo pipefail

# The pinned set (see Documentation/building.md).
DEB_PKGS=(
	# kernel source and the Rust toolchain the kernel builds with
	linux-source-6.12 rustc-web rust-web-src
	# its rustfmt and clippy, for the source gates (scripts/lint.sh), and
	# its cargo: the protocol crate's host tests (make check) and the
	# install of bindgen-cli below, on a machine without rustup
	rustfmt-web rust-web-clippy cargo-web
	# C side of the kernel build (LLVM=1)
	clang lld llvm libclang-dev bc flex bison libelf-dev libssl-dev cpio kmod
	make xz-utils python3 git rsync
	# make bench's chart (tests/bench/report.py)
	python3-matplotlib
	# the DKMS path (dkms.conf), tested by make check (tests/kbuild/dkms.sh)
	dkms
	# VM
	qemu-system-x86
	# rdma-core 44 userspace, used inside the guest
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iproute2
	python3-pyverbs librdmacm-dev libibverbs-dev
	# the build of a current rdma-core beside it (scripts/rdmacore.sh),
	# whose librxe and pyverbs suite make check runs too
	cmake ninja-build cython3 python3-dev libnl-3-dev libnl-route-3-dev
	libudev-dev pkg-config
	# guest tools
	iputils-ping tcpdump procps psmisc ethtool
	# kernel storage over RDMA in the guest (tests/guest/ulp.sh,
	# tests/twohost/ulp.sh): NVMe-oF, iSER initiator, NFS client and server
	# tools, fio with crc32c verify
	nvme-cli open-iscsi nfs-common nfs-kernel-server fio
)
# The services of those packages that Debian enables when it installs
# them, for the next boot. The test guests run their daemons themselves;
# the host needs none of them, so deps.sh disables each one that its
# install enabled. What was enabled before its first install is recorded
# (HOST_UNITS_BEFORE) and left alone; make check fails if any other of
# them is enabled (scripts/check.sh, host/guest-services-not-enabled-on-host).
GUEST_UNITS=(
	nfs-server.service nfs-blkmap.service nfs-client.target rpcbind.service rpcbind.socket
	open-iscsi.service iscsid.service iscsid.socket
	nvmf-autoconnect.service nvmefc-boot-connections.service
)
HOST_UNITS_BEFORE=${RRXE_CACHE:-$HOME/.cache/rrxe}/host-units-before
BINDGEN_VERSION=0.69.5
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
BINDGEN=${BINDGEN:-$CARGO_HOME/bin/bindgen}

# The guest-only units enabled on this host now.
enabled_units() {
	local u
	command -v systemctl >/dev/null || return 0
	for u in "${GUEST_UNITS[@]}"; do
		[ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ] && echo "$u"
	done
	return 0
}
if [ "${1:-}" = --enabled-units ]; then
	enabled_units
	exit 0
fi

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
	# Some packages (open-iscsi, nfs-kernel-server, rpcbind, udev) start a
	# daemon from their postinst. Those daemons are used inside the test
	# guests only, never on the host: while installing, a policy-rc.d that
	# answers 101 (action forbidden) keeps invoke-rc.d from starting them.
	# An existing policy-rc.d is left as it is.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\n# rrxe deps.sh: no daemons started while installing\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	if [ ! -e "$HOST_UNITS_BEFORE" ]; then
		mkdir -p "$(dirname "$HOST_UNITS_BEFORE")"
		enabled_units >"$HOST_UNITS_BEFORE"
	fi
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
		echo "deps: ERROR: could not install: ${missing[*]}" >&2
		exit 1
	fi
	for u in $(enabled_units); do
		grep -qxF "$u" "$HOST_UNITS_BEFORE" && continue
		echo "deps: disabling $u on this host (the test guests run it themselves)"
		systemctl disable -q "$u" 2>/dev/null || echo "deps: warning: could not disable $u" >&2
	done
	[ -z "$policy" ] || { rm -f "$policy"; trap - EXIT; }
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

for f in /usr/bin/rustc /usr/bin/cargo /usr/src/linux-source-6.12.tar.xz /usr/bin/qemu-system-x86_64 "$BINDGEN"; do
	[ -e "$f" ] || { echo "deps: ERROR: $f missing" >&2; exit 1; }
done
[ -d /usr/lib/rustlib/src/rust/library ] || { echo "deps: ERROR: rust library sources missing (rust-web-src)" >&2; exit 1; }
echo "deps: ok"
