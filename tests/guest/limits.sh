#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Resource limits (tests/verbs/res_limits.c, built here with gcc):
# - limits/T/...: PDs, CQs, QPs, MRs, MWs, SRQs and AHs are created until
#   the device's advertised maximum (ibv_devinfo -v: max_pd, max_cq, max_qp,
#   max_mr, max_mw, max_srq, max_ah), a failure (only ENOMEM is fine), the
#   cap or the memory guard, then all destroyed, twice: the second round
#   must create as many as the first, one beyond the maximum is refused, and
#   afterwards restrack lists for the device exactly what it listed before
#   and a kmemleak scan is clean;
# - qp-memory/...: how much kernel memory one unprivileged process can make
#   the driver allocate through QPs (one at the advertised maxima, one of
#   max_qp_wr WRs, many of 65536 WRs): a SKIP that states the figures until
#   the driver bounds it; QP_MEM_BOUND_MIB below makes it the assertion.
#
#   limits.sh [DRIVER [CAP]]
#     DRIVER   rrxe (the default) or rxe
#     CAP      objects of one type per round (default $LIMITS_CAP or 500;
#              0: up to the device maxima, which the memory guard stops
#              for the kinds whose maxima do not fit in the VM's memory)
# vm-seconds: 210 (about, in make check's debug VM: scripts/check.sh starts the longest first)
GROUP=limits
. tests/guest/lib.sh
. tests/traffic/lib.sh

DRIVER=${1:-${DRIVER:-rrxe}}
CAP=${2:-${LIMITS_CAP:-500}}
# ---- THE BOUND (issue 15, resource limits) ----
# The most kernel memory, in MiB, that one unprivileged process may make
# the driver hold through QPs. Empty: qp-memory/bounded is a SKIP that
# states the figures (the driver does not bound it yet). Set it here once
# the driver bounds or charges queue memory, and the check asserts it.
BOUND=${QP_MEM_BOUND_MIB:-}
DEV=${DRIVER}0
suite_start=$SECONDS
stamp() { echo "# $((SECONDS - suite_start)) s: $*"; }
echo "# limits: driver $DRIVER, device $DEV, cap $CAP"

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

# run NAME TIMEOUT CMD...: records the PASS/FAIL/SKIP lines CMD printed;
# CMD must print DONE (NAME/completed).
run() {
	local name=$1 limit=$2 out=$TR/run.out err=$TR/run.err rc line rest
	shift 2
	timeout -k 10 "$limit" "$@" >$out 2>$err
	rc=$?
	grep '^#' $out
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "${line#PASS }" ;;
		'FAIL '*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
		'SKIP '*) rest=${line#SKIP }; skip "${rest%%: *}" "${rest#*: }" ;;
		esac
	done <$out
	if grep -qx DONE $out; then
		pass "$name/completed"
	else
		fail "$name/completed" "exit $rc before DONE: $(tail_of $err)"
	fi
}

run limits 1800 /tmp/res_limits -n "$CAP" "$DEV" "$G4" limits
stamp limits
# The QP creator runs in a memory cgroup limited to 512 MiB: a step whose
# queue memory is charged to it fails instead of taking 1 GiB.
CG=/sys/fs/cgroup/qpmem
if { mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup; } &&
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control && mkdir -p $CG && echo 512M >$CG/memory.max; then
	cgopt="-c $CG"
else
	echo "# no memory cgroup: the QP creator runs unconfined"
	cgopt=
fi
# shellcheck disable=SC2086 # cgopt is two words or none
run qp-memory 600 /tmp/res_limits ${BOUND:+-b "$BOUND"} $cgopt "$DEV" "$G4" qpmem
stamp qpmem

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
