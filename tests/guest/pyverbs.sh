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
# The tests run on a virtio NIC (vm.sh --lone-nic): rdma_cm's tests
# (test_rdmacm) find the device's IP address through
# /sys/class/infiniband/DEV/device/net/, which exists when the net device
# has a parent device; C rxe's device has none, so they skip there.
# vm-options: --lone-nic
# vm-seconds: 280 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
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

# The lone NIC: the one virtio_net device of this VM.
nic=
for n in /sys/class/net/*; do
	[ "$(basename "$(readlink -f "$n/device/driver" 2>/dev/null)")" = virtio_net ] && nic=${n##*/}
done
if tt setup/lone-nic test -n "$nic"; then
	ip link set "$nic" up
	ip addr add 10.0.9.1/24 dev "$nic"
	sleep 1
else
	echo "no virtio NIC: run with scripts/vm.sh --lone-nic" >&2
fi

rm -rf /tmp/pyverbs
mkdir -p /tmp/pyverbs
t setup/suite-unpacked bash -c "cp -r $PV/tests /tmp/pyverbs/ &&
	test -f $SUITE/run_tests.py && test -f $SUITE/test_qp.py && test -s $IDS"
$PY $RUN selftest >/tmp/pyverbs/selftest.txt 2>&1
ingest /tmp/pyverbs/selftest.txt
$PY $RUN expand --suite $SUITE --selection tests/pyverbs/selection.txt --ids $IDS >/tmp/pyverbs/selected
echo "selection: $(grep -vc '^UNKNOWN' /tmp/pyverbs/selected) of $(wc -l <$IDS) tests"

# 2 MiB huge pages for test_odp's huge-page tests (each side of a pair
# maps one).
echo 8 >/proc/sys/vm/nr_hugepages
t_eq setup/huge-pages-reserved "$(cat /proc/sys/vm/nr_hugepages)" 8

# The device under test on the NIC, then the reference, one after the
# other: rrxe and C rxe both bind UDP port 4791 (C rxe in the initial
# namespace as it loads, rrxe in its devices' namespace), so they cannot be
# loaded in one namespace at once. After each run the link is deleted and
# its driver unloaded.
netdev=$nic
for d in $DUT $REF; do
	if tt "setup/link-add-$d" link_add "$d" "$netdev" &&
		tt "setup/$d-ipv4-gid" wait_for 10 gid_index "$d" &&
		tt "setup/$d-port-active" wait_for 10 bash -c "ibv_devinfo -d $d | grep -q PORT_ACTIVE"; then
		case $d in
		rrxe*) t_eq "setup/$d-device-net" "$(ls /sys/class/infiniband/$d/device/net 2>&1)" "$netdev" ;;
		esac
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
