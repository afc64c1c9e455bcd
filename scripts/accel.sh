#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the QEMU accelerator to use for the VARIANT kernel: `kvm` only if a
# probe boot under KVM reached user space on this machine, else `tcg`.
# The probe result is cached per kernel and QEMU version; RRXE_ACCEL=tcg|kvm
# overrides it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
variant=${1:-debug}
if [ -n "${RRXE_ACCEL:-}" ]; then echo "$RRXE_ACCEL"; exit 0; fi
CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
kdir=$("$here/kernel.sh" path "$variant")
stamp="$CACHE/accel-$(basename "$kdir")-$(qemu-system-x86_64 --version | head -n1 | tr -cd '[:alnum:].')"
if [ -f "$stamp" ]; then cat "$stamp"; exit 0; fi
result=tcg
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	tmp=$(mktemp -d)
	# The probe needs no user space: KVM counts as working if the kernel
	# reaches the point of looking for init within the time limit.
	timeout 30 qemu-system-x86_64 -accel kvm -cpu host -smp 1 -m 512M \
		-nodefaults -no-user-config -display none -no-reboot \
		-kernel "$kdir/arch/x86/boot/bzImage" \
		-append "console=ttyS0 panic=-1 root=/dev/nonexistent" \
		-serial "file:$tmp/console" >/dev/null 2>&1 || true
	if grep -q 'VFS: Cannot open root device\|Kernel panic - not syncing: VFS' "$tmp/console" 2>/dev/null; then
		result=kvm
	fi
	rm -rf "$tmp"
fi
mkdir -p "$CACHE"
echo "$result" >"$stamp"
echo "$result"
