#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Loopback traffic on one device: two processes on one rrxe device (or C
# rxe's, to validate the test), each tool checking its data where it can.
# - ibv_{rc,uc,srq}_pingpong at 100, 1024 (= the active MTU), 3000 and 5000
#   bytes, ibv_ud_pingpong at 100 and 1024 (UD is limited to the MTU), all
#   with -c (the buffer check) and their byte counts checked;
#   RC also with CQ events (-e) and over the global IPv6 GID;
# - rping -V -v at several sizes: the client compares what went to the
#   server and came back (RDMA READ then WRITE), every ping counted;
# - ucmatose and udaddy (rdma_cm, RC and UD);
# - perftest ib_{send,write,read,atomic}_{bw,lat}, short runs: exit status
#   and the reported row (size, iterations, a positive figure that does not
#   imply a longer run than the wall clock measured).
#
#   traffic.sh [DRIVER]   (or DRIVER=...; rrxe, the default, or rxe)
# vm-seconds: 195 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=traffic
. tests/guest/lib.sh
. tests/traffic/lib.sh

DRIVER=${1:-${DRIVER:-rrxe}}
DEV=${DRIVER}0
A=10.0.0.1
echo "# traffic: driver $DRIVER, device $DEV"
suite_start=$SECONDS

rxe_provider_only
veth_pair veth0 veth1 $A/24 10.0.0.2/24
ip -6 addr add fd00::1/64 dev veth0 nodad
t setup/link-add link_up "$DRIVER" "$DEV" veth0
if ! t setup/port-ready wait_for 20 port_ready "$DEV"; then
	exit 1
fi
G4=$(gid_index "$DEV" v4)
wait_for 10 gid_index "$DEV" v6
G6=$(gid_index "$DEV" v6) || G6=
echo "# GID index: IPv4 $G4, IPv6 ${G6:-none}"
t_eq setup/active-mtu-1024 "$(devinfo_field "$DEV" active_mtu)" '1024 (3)'

step() { echo "# $1: server ready after ${READY}s, client ${WALL}s, server done ${TAIL}s after the client started; $((SECONDS - suite_start))s into the suite"; }

# --- ibv_*_pingpong -----------------------------------------------------------
# pp KIND SIZE ITERS [EXTRA_ARGS] [NAME_SUFFIX]
pp() {
	local kind=$1 size=$2 iters=$3 extra=${4:-} name
	name=$kind-pingpong-$size${5:-}
	pair "$name" 120 tcp:18515 \
		"ibv_${kind}_pingpong -d $DEV -g $G4 -s $size -n $iters -c $extra" \
		"ibv_${kind}_pingpong -d $DEV -g $G4 -s $size -n $iters -c $extra $A"
	pair_ok "$name" "$(pingpong_check "$SLOG" "$size" "$iters")$(pingpong_check "$CLOG" "$size" "$iters")"
	step "$name"
}
for s in 100 1024 3000 5000; do pp rc $s 20; done
for s in 100 1024 3000 5000; do pp uc $s 20; done
for s in 100 1024 3000 5000; do pp srq $s 10 "-q 4"; done
for s in 100 1024; do pp ud $s 20; done
pp rc 4000 20 "-e" -events
if [ -n "$G6" ]; then
	name=rc-pingpong-3000-ipv6
	pair $name 120 tcp:18515 \
		"ibv_rc_pingpong -d $DEV -g $G6 -s 3000 -n 20 -c" \
		"ibv_rc_pingpong -d $DEV -g $G6 -s 3000 -n 20 -c $A"
	pair_ok $name "$(pingpong_check "$SLOG" 3000 20)$(pingpong_check "$CLOG" 3000 20)"
	step $name
else
	skip rc-pingpong-3000-ipv6 "no global IPv6 GID on $DEV"
fi

# --- rping -V ------------------------------------------------------------------
for s in 64 1024 3000 65000; do
	pair rping-$s 120 cm "rping -s -a $A -V -C 5 -S $s" "rping -c -a $A -V -v -C 5 -S $s"
	pair_ok rping-$s "$(rping_check "$SLOG")$(rping_check "$CLOG" 5)"
	step rping-$s
done

# --- rdma_cm: ucmatose (RC), udaddy (UD) --------------------------------------------
pair ucmatose 120 cm "ucmatose -b $A -C 10 -S 3000" "ucmatose -s $A -C 10 -S 3000"
pair_ok ucmatose "$(cm_check "$SLOG")$(cm_check "$CLOG")"
step ucmatose
pair udaddy 120 cm "udaddy -b $A -C 10 -S 500" "udaddy -s $A -C 10 -S 500"
pair_ok udaddy "$(cm_check "$SLOG")$(cm_check "$CLOG")"
step udaddy

# --- perftest ------------------------------------------------------------------
# perf TOOL KIND SIZE ITERS [EXTRA]
perf() {
	local tool=$1 kind=$2 size=$3 iters=$4 extra=${5:-} name sarg=
	name=$tool${extra:+-${extra##* }}
	[ "$size" ] && sarg="-s $size"
	pair "$name" 120 tcp:18515 \
		"$tool -d $DEV -x $G4 -F -n $iters $sarg $extra" \
		"$tool -d $DEV -x $G4 -F -n $iters $sarg $extra $A"
	pair_ok "$name" "$(perf_check "$CLOG" "$kind" "${size:-8}" "$iters" "$WALL" 1024)"
	step "$name"
}
perf ib_send_bw bw 3000 20
perf ib_write_bw bw 5000 20
perf ib_read_bw bw 5000 20
perf ib_atomic_bw bw "" 20 "-A CMP_AND_SWAP"
perf ib_atomic_bw bw "" 20 "-A FETCH_AND_ADD"
perf ib_send_lat lat 100 20
perf ib_write_lat lat 100 20
perf ib_read_lat lat 100 20
perf ib_atomic_lat lat "" 20

t teardown/link-delete rdma link delete "$DEV"
t teardown/unload unload "$DRIVER"
echo "# traffic: $((SECONDS - suite_start))s"
exit 0
