#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the QEMU accelerator to use for the VARIANT kernel: `kvm` only if a
# probe boot under KVM got as far as looking for its root file system on
# this machine (it needs no user space), else `tcg`.
# It prints that one word on stdout and nothing else, on stdout or stderr:
# the probe's own output, and the shell's report if QEMU crashes (where
# KVM is half there, QEMU can abort), go to the cache's accel-*.log.
# The probe result is cached per kernel and QEMU version; RRXE_ACCEL=tcg|kvm
# overrides it. For scripts/check.sh's test of that quiet: RRXE_ACCEL_CACHE=0
# neither reads nor writes the cache, RRXE_ACCEL_QEMU and RRXE_ACCEL_KVM name
# another QEMU binary and KVM device.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
variant=${1:-debug}
if [ -n "${RRXE_ACCEL:-}" ]; then echo "$RRXE_ACCEL"; exit 0; fi
CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
qemu=${RRXE_ACCEL_QEMU:-qemu-system-x86_64}
kvm=${RRXE_ACCEL_KVM:-/dev/kvm}
use_cache=${RRXE_ACCEL_CACHE:-1}
kdir=$("$here/kernel.sh" path "$variant")
stamp="$CACHE/accel-$(basename "$kdir")-$("$qemu" --version 2>/dev/null | head -n1 | tr -cd '[:alnum:].')"
if [ "$use_cache" = 1 ] && [ -f "$stamp" ]; then cat "$stamp"; exit 0; fi
result=tcg
if [ -r "$kvm" ] && [ -w "$kvm" ]; then
	tmp=$(mktemp -d)
	# The probe needs no user space: KVM counts as working if the kernel
	# reaches the point of looking for init within the time limit. It runs
	# in a subshell whose stderr is the log, so that a crash's "Aborted"
	# from the shell lands there too.
	(
		timeout 30 "$qemu" -accel kvm -cpu host -smp 1 -m 512M \
			-nodefaults -no-user-config -display none -no-reboot \
			-kernel "$kdir/arch/x86/boot/bzImage" \
			-append "console=ttyS0 panic=-1 root=/dev/nonexistent" \
			-serial "file:$tmp/console" || echo "accel: probe exited $?"
	) >"$tmp/probe.log" 2>&1 </dev/null
	if grep -q 'VFS: Cannot open root device\|Kernel panic - not syncing: VFS' "$tmp/console" 2>/dev/null; then
		result=kvm
	fi
	if [ "$use_cache" = 1 ]; then
		mkdir -p "$CACHE"
		cp "$tmp/probe.log" "$stamp.log" 2>/dev/null || true
	fi
	rm -rf "$tmp"
fi
if [ "$use_cache" = 1 ]; then
	mkdir -p "$CACHE"
	echo "$result" >"$stamp"
fi
echo "$result"
