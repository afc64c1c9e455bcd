#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make install, make uninstall, make install-link, make uninstall-link.
#
#   scripts/install.sh install          builds rdma_rrxe.ko as `make module`
#                                       does, installs it as
#                                       DESTDIR/lib/modules/KVER/updates/rdma_rrxe.ko
#                                       and runs depmod for KVER
#   scripts/install.sh uninstall        removes it and runs depmod again
#   scripts/install.sh install-link     a udev rule that adds the link LINK
#                                       on NETDEV whenever NETDEV appears
#                                       (DESTDIR/etc/udev/rules.d/90-rrxe-LINK.rules)
#   scripts/install.sh uninstall-link   removes that rule
#
# Variables (make's): KDIR= the kernel tree to build against, as for
# `make KDIR=` (your kernel's: /lib/modules/$(uname -r)/build for the
# running one). Without KDIR, as `make module`: the cached test guest
# kernel of VARIANT, whose module goes only into a DESTDIR (it is not
# this machine's kernel). DESTDIR= a root to install under (default /).
# NETDEV=, LINK= (default rrxe0) for the link rule.
#
# After `make install`, `modprobe rdma_rrxe` loads the module with its
# dependencies (ib_core, ib_uverbs, udp_tunnel where they are modules),
# and `rdma link add NAME type rrxe netdev DEV` loads it by itself.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
cmd=${1:?usage: install.sh install|uninstall|install-link|uninstall-link}
DESTDIR=${DESTDIR:-}
VARIANT=${VARIANT:-debug}
LINK=${LINK:-rrxe0}
die() { echo "install: $*" >&2; exit 1; }

# The user's kernel tree (KDIR), if one is given.
kernel_tree() { echo "${KDIR:-}"; }

# KVER KO: the kernel release and the built module (building it first).
build() {
	local k
	k=$(kernel_tree)
	if [ -n "$k" ]; then
		"$here/kdir.sh" "$k" >&2
		ko=$top/out/kdir/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
		kver=$(<"$k/include/config/kernel.release")
	else
		[ -n "$DESTDIR" ] ||
			die "without KDIR= this is the $VARIANT test guest's module, not this machine's: give KDIR=/lib/modules/\$(uname -r)/build (your kernel's tree), or DESTDIR= for the guest's"
		"$here/module.sh" "$VARIANT" >&2
		ko=$top/out/$VARIANT/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
		kver=$(<"$(cat "$top/out/$VARIANT/kernel-dir")/include/config/kernel.release")
	fi
	[ -f "$ko" ] || die "no $ko after the build"
}

# depmod for KVER under DESTDIR (its own modules.dep and modules.alias
# there when DESTDIR is set).
run_depmod() {
	local depmod
	depmod=$(command -v depmod || echo /sbin/depmod)
	[ -x "$depmod" ] || die "depmod not found (Debian: apt-get install kmod)"
	if [ -n "$DESTDIR" ]; then
		"$depmod" -b "$DESTDIR" "$kver"
	else
		"$depmod" "$kver"
	fi
}

case "$cmd" in
install)
	build
	dir=$DESTDIR/lib/modules/$kver/updates
	install -d "$dir"
	install -m 0644 "$ko" "$dir/rdma_rrxe.ko"
	run_depmod
	echo "install: $dir/rdma_rrxe.ko (kernel $kver); depmod done"
	;;
uninstall)
	if [ -n "$(kernel_tree)" ]; then
		kver=$(<"$(kernel_tree)/include/config/kernel.release")
	else
		[ -n "$DESTDIR" ] || die "give KDIR= (or DESTDIR= for the test guest's kernel)"
		kver=$(<"$(cat "$top/out/$VARIANT/kernel-dir")/include/config/kernel.release")
	fi
	rm -f "$DESTDIR/lib/modules/$kver/updates/rdma_rrxe.ko"
	run_depmod
	echo "uninstall: removed rdma_rrxe.ko for kernel $kver"
	;;
install-link)
	[ -n "${NETDEV:-}" ] || die "give NETDEV= (the net device to add $LINK on)"
	case "$NETDEV$LINK" in *[!A-Za-z0-9_.:-]*) die "NETDEV and LINK: letters, digits, _ . : - only" ;; esac
	rdma=$(command -v rdma || true)
	[ -n "$rdma" ] || die "rdma not found (Debian: apt-get install iproute2)"
	rules=$DESTDIR/etc/udev/rules.d
	install -d "$rules"
	sed -e "s|@NETDEV@|$NETDEV|g" -e "s|@LINK@|$LINK|g" -e "s|@RDMA@|$rdma|g" \
		"$top/packaging/90-rrxe.rules.in" >"$rules/90-rrxe-$LINK.rules"
	echo "install-link: $rules/90-rrxe-$LINK.rules adds $LINK whenever $NETDEV appears"
	;;
uninstall-link)
	rm -f "$DESTDIR/etc/udev/rules.d/90-rrxe-$LINK.rules"
	echo "uninstall-link: removed the rule for $LINK"
	;;
*) die "unknown command $cmd" ;;
esac
