#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's pyverbs test suite (python3-pyverbs, rdma-core 44) on rrxe,
# and the same selection on C rdma_rxe in the same VM for comparison (one
# driver after the other: both bind UDP port 4791).
#
# What runs is tests/pyverbs/selection.txt; a skip must be listed in
# tests/pyverbs/allowed-skips.txt. Each test is one result
# (pyverbs/tests.test_cq.CQAPITest.test_create_cq ...); every test that
# passes on C rxe must pass on rrxe (pyverbs/regression/<id> otherwise).
# /run/results/pyverbs-counts.txt holds both devices' counts side by side
# and a table of the outcomes; pyverbs-<dev>.N.std{out,err} the raw output.
#
#   pyverbs.sh [DEV [REF]]   (or the environment variables DEV, REF)
#   DEV=rrxe0   the device under test (rrxe* is an rrxe link, else C rxe)
#   REF=rxe0    the reference device (C rxe); "none" skips the comparison
# To check the harness against C rxe alone:
#   scripts/vm.sh tests/guest/pyverbs.sh rxe0 rxe1
# vm-seconds: 230 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=pyverbs
. tests/guest/lib.sh

DUT=${1:-${DEV:-rrxe0}}
REF=${2:-${REF:-rxe0}}
[ "$REF" = "$DUT" ] || [ "$REF" = none ] && REF=
PY=/usr/bin/python3
RUN=tests/pyverbs/run.py
# The suite and its test ids, readied on the host (scripts/testprogs.sh);
# the suite runs from a copy on tmpfs (its directory is the tests' working
# directory, and the share is read-only).
PV=$PROGS/pyverbs
SUITE=/tmp/pyverbs/tests
IDS=$PV/all-ids
OUTDIR=/run/results
export PYTHONDONTWRITEBYTECODE=1

label() { case $1 in rrxe*) echo rrxe ;; *) echo "C rxe" ;; esac; }

# ingest FILE: record the PASS/FAIL/SKIP lines a helper printed.
ingest() {
	local line rest
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "${line#PASS }" ;;
		'FAIL '*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
		'SKIP '*) rest=${line#SKIP }; skip "${rest%%: *}" "${rest#*: }" ;;
		esac
	done <"$1"
}

veth_pair veth0 veth1 10.0.0.1/24 10.0.0.2/24
sleep 1

rm -rf /tmp/pyverbs
mkdir -p /tmp/pyverbs
t setup/suite-unpacked bash -c "cp -r $PV/tests /tmp/pyverbs/ &&
	test -f $SUITE/run_tests.py && test -f $SUITE/test_qp.py && test -s $IDS"
$PY $RUN selftest >/tmp/pyverbs/selftest.txt 2>&1
ingest /tmp/pyverbs/selftest.txt
$PY $RUN expand --suite $SUITE --selection tests/pyverbs/selection.txt --ids $IDS >/tmp/pyverbs/selected
echo "selection: $(grep -vc '^UNKNOWN' /tmp/pyverbs/selected) of $(wc -l <$IDS) tests"

# The device under test on veth0, then the reference on veth1, one after
# the other: rrxe and C rxe both bind UDP port 4791 (C rxe in the initial
# namespace as it loads, rrxe in its devices' namespace), so they cannot be
# loaded in one namespace at once. After each run the link is deleted and
# its driver unloaded.
netdev=veth0
for d in $DUT $REF; do
	if tt "setup/link-add-$d" link_add "$d" $netdev &&
		tt "setup/$d-ipv4-gid" wait_for 10 gid_index "$d" &&
		tt "setup/$d-port-active" wait_for 10 bash -c "ibv_devinfo -d $d | grep -q PORT_ACTIVE"; then
		g=$(gid_index "$d") || g=1
		echo "== pyverbs on $d ($(label "$d")) on $netdev, gid index $g"
		start=$SECONDS
		$PY $RUN run --suite $SUITE --selection tests/pyverbs/selection.txt --ids $IDS \
			--dev "$d" --gid "$g" --out "$OUTDIR/pyverbs-$d" --timeout 1800
		echo "   ($((SECONDS - start))s)"
	fi
	t "teardown/link-delete-$d" rdma link delete "$d"
	case $d in
	rrxe*) t teardown/rmmod-rdma_rrxe rmmod rdma_rrxe ;;
	*) t "teardown/rmmod-rdma_rxe-after-$d" rmmod rdma_rxe ;;
	esac
	netdev=veth1
done

report_args=(--dut "$OUTDIR/pyverbs-$DUT.json" --allowed-skips tests/pyverbs/allowed-skips.txt
	--counts "$OUTDIR/pyverbs-counts.txt" --list-ids $IDS
	--dut-label "$(label "$DUT")")
[ -n "$REF" ] && report_args+=(--ref "$OUTDIR/pyverbs-$REF.json" --ref-label "$(label "$REF")")
if [ -f "$OUTDIR/pyverbs-$DUT.json" ]; then
	$PY $RUN report "${report_args[@]}" >/tmp/pyverbs/report.txt
	ingest /tmp/pyverbs/report.txt
	echo "== counts"
	cat "$OUTDIR/pyverbs-counts.txt"
else
	fail run-completed "no results for $DUT (see $OUTDIR/pyverbs-$DUT.*)"
fi

exit 0
