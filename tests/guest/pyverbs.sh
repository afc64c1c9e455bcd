#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's pyverbs test suite on rrxe, and the same selection on C
# rdma_rxe in the same VM for comparison (one driver after the other: both
# bind UDP port 4791), for two rdma-core versions:
# - the system's (python3-pyverbs, rdma-core 44): what runs is
#   tests/pyverbs/selection.txt, a skip must be listed in
#   tests/pyverbs/allowed-skips.txt; results pyverbs/tests.<id>;
# - a current one (65 today), built beside it by scripts/rdmacore.sh and
#   run from its build tree (LD_LIBRARY_PATH, PYTHONPATH: its libibverbs,
#   librxe and pyverbs): tests/pyverbs/selection-current.txt and
#   allowed-skips-current.txt; results pyverbs/current/tests.<id>. Then
#   rping and ib_write_bw run against that librxe too (current/tools/).
# Each test is one result; every test that passes on C rxe must pass on
# rrxe (pyverbs/[current/]regression/<id> otherwise). C rxe runs only the
# tests rrxe did not pass, the only ones whose outcome there can make a
# regression, and the first 8 rrxe passed, which must pass there too
# (no-regression-vs-reference); PYVERBS_REF_ALL=1 runs the whole
# selection on it for a full side-by-side table.
# /run/results/pyverbs[-current]-counts.txt hold both devices' counts side
# by side and a table of the outcomes; pyverbs[-current]-<dev>.N.std{out,err}
# the raw output.
#
#   pyverbs.sh [DEV [REF]]   (or the environment variables DEV, REF)
#   DEV=rrxe0   the device under test (rrxe* is an rrxe link, else C rxe)
#   REF=rxe0    the reference device (C rxe); "none" skips the comparison
#   PYVERBS_REF_ALL=1  the reference runs the whole selection
# To check the harness against C rxe alone:
#   scripts/vm.sh tests/guest/pyverbs.sh rxe0 rxe1
# The tests run on a virtio NIC (vm.sh --lone-nic): rdma_cm's tests
# (test_rdmacm) find the device's IP address through
# /sys/class/infiniband/DEV/device/net/, which exists when the net device
# has a parent device; C rxe's device has none, so they skip there.
# vm-options: --lone-nic
# vm-env: PYVERBS_REF_ALL
# vm-seconds: 760 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=pyverbs
. tests/guest/lib.sh
. tests/traffic/lib.sh

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

# suite TAG SUITE IDS SELECTION ALLOWED [AFTER]: runs the selection on DUT,
# then on REF, and records the report (names prefixed with TAG, if not
# empty). The environment (the rdma-core to use) is the caller's. `AFTER
# DEV G`, if given, runs after the suite on the device under test, its
# link still up.
suite() {
	local tag=$1 suite=$2 ids=$3 selection=$4 allowed=$5 after=${6:-} d g start out
	out=$OUTDIR/pyverbs${tag:+-$tag}
	for d in $DUT $REF; do
		if tt "${tag:+$tag/}setup/link-add-$d" link_add "$d" "$netdev" &&
			tt "${tag:+$tag/}setup/$d-ipv4-gid" wait_for 10 gid_index "$d" &&
			tt "${tag:+$tag/}setup/$d-port-active" wait_for 10 bash -c "ibv_devinfo -d $d | grep -q PORT_ACTIVE"; then
			case $d in
			rrxe*) t_eq "${tag:+$tag/}setup/$d-device-net" "$(ls /sys/class/infiniband/$d/device/net 2>&1)" "$netdev" ;;
			esac
			g=$(gid_index "$d") || g=1
			echo "== pyverbs ${tag:-44} on $d ($(label "$d")) on $netdev, gid index $g"
			start=$SECONDS
			narrow=()
			[ "$d" = "$REF" ] && [ -f "$out-$DUT.json" ] && [ -z "${PYVERBS_REF_ALL:-}" ] &&
				narrow=(--not-passed-in "$out-$DUT.json")
			$PY $RUN run --suite "$suite" --selection "$selection" --ids "$ids" \
				--dev "$d" --gid "$g" --out "$out-$d" --timeout 1800 "${narrow[@]}"
			echo "   ($((SECONDS - start))s)"
			[ "$d" = "$DUT" ] && [ -n "$after" ] && $after "$d" "$g"
		fi
		t "${tag:+$tag/}teardown/link-delete-$d" rdma link delete "$d"
		case $d in
		rrxe*) t "${tag:+$tag/}teardown/rmmod-rdma_rrxe" rmmod rdma_rrxe ;;
		*) t "${tag:+$tag/}teardown/rmmod-rdma_rxe-after-$d" rmmod rdma_rxe ;;
		esac
	done
	local args=(--dut "$out-$DUT.json" --allowed-skips "$allowed"
		--counts "$out-counts.txt" --list-ids "$ids"
		--dut-label "$(label "$DUT")")
	[ -n "$REF" ] && args+=(--ref "$out-$REF.json" --ref-label "$(label "$REF")")
	if [ -f "$out-$DUT.json" ]; then
		$PY $RUN report "${args[@]}" >/tmp/pyverbs/report.txt
		[ -n "$tag" ] && sed -i "s#^\(PASS\|FAIL\|SKIP\) #&$tag/#" /tmp/pyverbs/report.txt
		ingest /tmp/pyverbs/report.txt
		echo "== counts (${tag:-44})"
		cat "$out-counts.txt"
	else
		fail "${tag:+$tag/}run-completed" "no results for $DUT (see $out-$DUT.*)"
	fi
}

suite "" "$SUITE" "$IDS" tests/pyverbs/selection.txt tests/pyverbs/allowed-skips.txt

# The current rdma-core (scripts/rdmacore.sh, made ready on the host by
# scripts/testprogs.sh: its environment in $PV/current.env, its suite and
# test ids in $PV/current/).
# tools DEV G: rping (the build's, -V: the client checks the data) and
# ib_write_bw (the system's perftest, which uses only libibverbs' public
# symbols) over the current librxe, each a server and a client under
# timeouts, the server's listener awaited (`pair`, tests/traffic/lib.sh);
# each must load that librxe (the loader's own account, LD_DEBUG=files).
tools() {
	local d=$1 g=$2 ip=10.0.9.1 c=current/tools lib=$RDMA_CORE/src/build/lib/librxe-rdmav
	mkdir -p "$TR"
	rm -f "$TR"/*.ld.*
	pair rping 120 cm "rping -s -a $ip -C 3 -S 4096 -V" \
		"env LD_DEBUG=files LD_DEBUG_OUTPUT=$TR/rping.ld rping -c -a $ip -C 3 -S 4096 -V -v"
	pair_ok "$c/rping-verified" "$(rping_check "$SLOG")$(rping_check "$CLOG" 3)"
	t "$c/rping-loaded-current-librxe" grep -qs "$lib" "$TR"/rping.ld.*
	# (Iterations, not -D: perftest's clock is off under emulation.)
	pair ib_write_bw 120 tcp:18515 "/usr/bin/ib_write_bw -d $d -x $g -F -n 200 -s 65536" \
		"env LD_DEBUG=files LD_DEBUG_OUTPUT=$TR/bw.ld /usr/bin/ib_write_bw -d $d -x $g -F -n 200 -s 65536 $ip"
	pair_ok "$c/ib_write_bw" "$(perf_check "$CLOG" bw 65536 200 "$WALL")"
	t "$c/ib_write_bw-loaded-current-librxe" grep -qs "$lib" "$TR"/bw.ld.*
}

if tt current/setup/ready test -s "$PV/current.env" -a -s "$PV/current/all-ids"; then
	RDMA_CORE=$(sed -n 's/^RRXE_RDMA_CORE=//p' "$PV/current.env")
	echo "rdma-core $(sed -n 's/^RRXE_RDMA_CORE_VERSION=//p' "$PV/current.env") from $RDMA_CORE"
	rm -rf /tmp/pyverbs/current
	mkdir -p /tmp/pyverbs/current
	tt current/setup/suite-copied cp -r "$PV/current/tests" /tmp/pyverbs/current/
	(
		export LD_LIBRARY_PATH=$RDMA_CORE/src/build/lib PYTHONPATH=$RDMA_CORE/src/build/python
		# Its own ibv_devinfo (the system's uses libibverbs 44's private
		# symbols, which 65's does not have).
		export PATH=$RDMA_CORE/src/build/bin:$PATH
		suite current /tmp/pyverbs/current/tests "$PV/current/all-ids" \
			tests/pyverbs/selection-current.txt tests/pyverbs/allowed-skips-current.txt tools
	)
fi

exit 0
