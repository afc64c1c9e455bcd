#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make install, make uninstall, make install-link, make uninstall-link.
#
#   scripts/install.sh install          installs the rdma_rrxe.ko that `make`
#                                       built (with the same KDIR) as
#                                       DESTDIR/lib/modules/KVER/updates/rdma_rrxe.ko
#                                       and runs depmod for KVER; it builds
#                                       nothing (as root, after `make` as you)
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

# kver, ko: the kernel release and the module `make` built for it.
built() {
	local k out make
	k=$(kernel_tree)
	if [ -n "$k" ]; then
		out=$top/out/kdir make="make KDIR=$k"
		[ -f "$k/include/config/kernel.release" ] || die "KDIR=$k: no include/config/kernel.release (not a built kernel tree)"
		kver=$(<"$k/include/config/kernel.release")
	else
		[ -n "$DESTDIR" ] ||
			die "without KDIR= this is the $VARIANT test guest's module, not this machine's: give KDIR=/lib/modules/\$(uname -r)/build (your kernel's tree), or DESTDIR= for the guest's"
		out=$top/out/$VARIANT make="make VARIANT=$VARIANT"
		[ -f "$out/kernel-dir" ] || die "nothing built for the $VARIANT guest: run $make first"
		kver=$(<"$(cat "$out/kernel-dir")/include/config/kernel.release")
	fi
	ko=$out/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
	[ -f "$ko" ] || die "no $ko: run $make first (as yourself; then make install as root)"
	# The module must be the one built for that kernel (out/kdir holds the
	# last KDIR's).
	local vm
	vm=$("$(command -v modinfo || echo /sbin/modinfo)" -F vermagic "$ko" 2>/dev/null || true)
	[ "${vm%% *}" = "$kver" ] || die "$ko is for kernel '${vm%% *}', not $kver: run $make first"
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
	built
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
