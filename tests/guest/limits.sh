#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resource limits (tests/verbs/res_limits.c, built here with gcc):
# - limits/objects/T/...: PDs, CQs, QPs, MRs, MWs, SRQs and AHs are created
#   until the device's advertised maximum (ibv_devinfo -v: max_pd, max_cq,
#   max_qp, max_mr, max_mw, max_srq, max_ah), a failure (only ENOMEM is
#   fine), the cap or the memory guard, then all destroyed, twice, by user
#   nobody under a small RLIMIT_MEMLOCK: CQs, QPs, MRs and SRQs are charged
#   to it, so ENOMEM must stop them within the limit and their charge must
#   come back (VmPin) after the destroys; the second round must create as
#   many as the first, one beyond a maximum is refused, and afterwards
#   restrack lists for the device exactly what it listed before;
# - limits/memlock/...: the queue memory of one unprivileged process is
#   charged to its RLIMIT_MEMLOCK: QPs, CQs and SRQs at the advertised
#   maxima and a CQ resized to them are refused with nothing allocated;
#   with the limit raised the max_qp_wr QP works, its charge covers what
#   the kernel vmalloc'ed and goes back on destroy; under 64 MiB many QPs
#   stop with ENOMEM and the kernel allocated no more than that;
# - a kmemleak scan is clean; the module unloads.
#
#   limits.sh [DRIVER [CAP [MEMLOCK_KIB]]]
#     DRIVER       rrxe (the default) or rxe
#     CAP          objects of an uncharged type (pd, mw, ah) per round
#                  (default $LIMITS_CAP or 2000; 0: up to the device maxima,
#                  which the memory guard stops for the kinds whose maxima
#                  do not fit in the VM's memory)
#     MEMLOCK_KIB  RLIMIT_MEMLOCK of the object rounds (default
#                  $LIMITS_MEMLOCK_KIB or 1024; 0: run them as root, the
#                  charged kinds capped by CAP as the others)
# vm-env: LIMITS_CAP LIMITS_MEMLOCK_KIB
# vm-seconds: 210 (about, in make check's debug VM: scripts/check.sh starts the longest first)
GROUP=limits
. tests/guest/lib.sh
. tests/traffic/lib.sh

DRIVER=${1:-${DRIVER:-rrxe}}
CAP=${2:-${LIMITS_CAP:-2000}}
MEMLOCK=${3:-${LIMITS_MEMLOCK_KIB:-1024}}
DEV=${DRIVER}0
suite_start=$SECONDS
stamp() { echo "# $((SECONDS - suite_start)) s: $*"; }
echo "# limits: driver $DRIVER, device $DEV, cap $CAP, memlock ${MEMLOCK} KiB"

rxe_provider_only
veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
t setup/link-add link_up "$DRIVER" "$DEV" veth0
t setup/port-ready wait_for 20 port_ready "$DEV" || exit 1
G4=$(gid_index "$DEV" v4)
t setup/build gcc -O1 -Wall -Werror -o /tmp/res_limits tests/verbs/res_limits.c -libverbs || exit 1
# librxe maps each CQ, SRQ and queue of a QP: 2^20 QPs need more than the
# default 65530 mappings.
[ "$CAP" = 0 ] && sysctl -qw vm.max_map_count=4194304
stamp built

resources() {
	local r
	for r in pd cq qp mr srq; do
		rdma resource show "$r" 2>/dev/null | grep -w "$DEV" | sed 's/ users [0-9]*//'
	done | sort
}
summary() { rdma resource show | grep -w "$DEV:"; }
same_as_before() { diff -q $TR/res.before <(resources) >/dev/null && [ "$(summary)" = "$(cat $TR/sum.before)" ]; }
resources >$TR/res.before
summary >$TR/sum.before
kmemleak_clear

if [ "$MEMLOCK" != 0 ]; then
	uid=$(id -u nobody)
	run_helper objects 1800 bash -c "ulimit -l $MEMLOCK && exec setpriv --reuid=$uid --regid=$uid --clear-groups \
		/tmp/res_limits -n $CAP $DEV $G4 limits"
else
	run_helper objects 1800 /tmp/res_limits -n "$CAP" "$DEV" "$G4" limits
fi
stamp objects
run_helper memlock 600 /tmp/res_limits "$DEV" "$G4" memlock
stamp memlock

if wait_for 30 same_as_before; then
	pass resources-released
else
	fail resources-released "restrack: $(diff $TR/res.before <(resources) | grep '^[<>]' | head -n 5 | tr '\n' ' '); summary now '$(summary)', before '$(cat $TR/sum.before)'"
fi
sleep 6
kmemleak_check no-leak
stamp kmemleak

t teardown/link-delete rdma link delete "$DEV"
t teardown/unload unload "$DRIVER"
echo "# limits: $((SECONDS - suite_start))s"
exit 0
