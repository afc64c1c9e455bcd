#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two rrxe devices in one VM, one per end of a veth pair, the far end in its
# own network namespace as a second host would be. Unlike the one-device
# suite (loopback), every packet here takes the real transmit path: route
# lookup, ip_local_out, the veth, and the other namespace's UDP tunnel
# socket. The net devices' counters must show it.
# - rping -V and ibv_{rc,ud}_pingpong -c between the devices;
# - perftest ib_{write,read,send}_bw between them, and ib_{read,atomic}_lat
#   (one request at a time, completions from the QP's work item);
# - UD multicast through rdma_cm (mckey): two receivers on the far device
#   and a third on the sender's own device (a multicast packet reaches the
#   sending device's members too, as on a hardware port), every message
#   delivered to all three;
# - an address handle on a VLAN device's GID, after that device is replaced
#   by another VLAN's with the same interface index, sends nothing out of
#   the new one;
# - a WRITE whose packets a qdisc holds in the host while the device moves
#   others still ends in RETRY_EXC_ERR: timeouts are put off only so often;
# - packet trains (datapath.md, "Packet trains"): 64 KiB SENDs (RC over
#   IPv4 and UC, data verified) and WRITEs over IPv6 go as trains, none
#   with `train=0`; through
#   a middlebox (tests/traffic/train_cut.py) that cuts one packet out of a
#   train and spoils another, only those are refused and the data arrive
#   whole;
# - both namespaces' sockets are closed with their last device: C rxe can
#   load afterwards;
# - the ICRC's CRC forced to the table and to the carry-less multiply
#   (`icrc=`), each exchanging verified data with C rxe: rping -V and
#   ibv_rc_pingpong -c, both ways; C rxe takes rrxe's trains, and their
#   segments captured on the veth (trains.pcap) are checked by make
#   check's host side with the proto crate's parser.
#
# Two vCPUs (the default topology gives the guest one, see bench.md), so
# that the QPs' work items run while the processes poll: the latency tests
# above show a completion-ordering race only with two.
# vm-options: --smp 2,sockets=2,cores=1
# vm-seconds: 295 (measured in make check's debug VM, Dec 2026; scripts/check.sh starts the longest first)
GROUP=twodev
. tests/guest/lib.sh
. tests/traffic/lib.sh

A=10.0.0.1
B=10.0.0.2
rxe_provider_only
ip netns add peer
ip link add veth0 type veth peer name veth1 netns peer
ip addr add $A/24 dev veth0
ip link set veth0 up
ip -n peer addr add $B/24 dev veth1
ip -n peer link set veth1 up
ip -n peer link set lo up
# (IPv6 GIDs too, for the trains over IPv6 below.)
ip addr add fd00::1/64 dev veth0 nodad
ip -n peer addr add fd00::2/64 dev veth1 nodad
inpeer() { ip netns exec peer "$@"; }

t setup/link-here link_up rrxe rrxe0 veth0
t setup/link-peer inpeer rdma link add rrxe1 type rrxe netdev veth1
t setup/port-ready-here wait_for 20 port_ready rrxe0
t setup/port-ready-peer wait_for 20 port_ready rrxe1
G0=$(gid_index rrxe0 v4)
G1=$(gid_index rrxe1 v4)

# A listener in the peer namespace: TCP sockets there are only visible from
# inside it.
listening() {
	case $1 in
	peer-tcp:*) inpeer grep -qi "^ *[0-9]*: [0-9a-f]*:$(printf '%04X' "${1#peer-tcp:}") [0-9a-f]*:0000 0A " /proc/net/tcp ;;
	cm) rdma resource show cm_id 2>/dev/null | grep -q LISTEN ;;
	esac
}

txpkts() { cat /sys/class/net/veth0/statistics/tx_packets; }
tx0=$(txpkts)
sent0=$(counter rrxe0 sent_pkts)
# (A train is one buffer on the veth however many packets it holds.)
trainsaved() { echo $(($(counter rrxe0 sent_train_pkts) - $(counter rrxe0 sent_trains))); }
saved0=$(trainsaved)
rcvd1=$(counter rrxe1 rcvd_pkts)

# --- rping, pingpong -------------------------------------------------------------
pair rping 120 cm "ip netns exec peer rping -s -a $B -V -C 10 -S 3000" "rping -c -a $B -V -v -C 10 -S 3000"
pair_ok rping "$(rping_check "$SLOG")$(rping_check "$CLOG" 10)"

# (The 64 KiB SENDs go as packet trains: see "packet trains" below.)
trains() { echo "$(counter rrxe0 sent_trains) $(counter rrxe0 sent_train_pkts)"; }
v6_gids() { gid_index rrxe0 v6 && gid_index rrxe1 v6; }
read -r n0 k0 <<<"$(trains)"
pair rc-pingpong-64k 120 peer-tcp:18515 \
	"ip netns exec peer ibv_rc_pingpong -d rrxe1 -g $G1 -s 65536 -n 20 -c" \
	"ibv_rc_pingpong -d rrxe0 -g $G0 -s 65536 -n 20 -c $B"
pair_ok rc-pingpong-64k "$(pingpong_check "$SLOG" 65536 20)$(pingpong_check "$CLOG" 65536 20)"
read -r n1 k1 <<<"$(trains)"

pair ud-pingpong 120 peer-tcp:18515 \
	"ip netns exec peer ibv_ud_pingpong -d rrxe1 -g $G1 -s 1000 -n 20 -c" \
	"ibv_ud_pingpong -d rrxe0 -g $G0 -s 1000 -n 20 -c $B"
pair_ok ud-pingpong "$(pingpong_check "$SLOG" 1000 20)$(pingpong_check "$CLOG" 1000 20)"

# The packets went through the veth, not the loopback shortcut: the veth
# carried a buffer for each packet sent alone and each train.
sent=$(($(counter rrxe0 sent_pkts) - sent0 - ($(trainsaved) - saved0)))
tx=$(($(txpkts) - tx0))
rcvd=$(($(counter rrxe1 rcvd_pkts) - rcvd1))
if [ "$sent" -gt 0 ] && [ "$tx" -ge "$sent" ] && [ "$rcvd" -gt 0 ]; then
	pass through-the-stack
else
	fail through-the-stack "rrxe0 sent $sent packets and trains, veth0 sent $tx, rrxe1 received $rcvd"
fi

# --- perftest -------------------------------------------------------------------
# (Packet trains: ib_write_bw runs over the IPv6 GIDs, each message's
# packets after its first in trains; ib_send_bw runs with the `train`
# parameter at 0 and sends none. See "packet trains" below.)
read -r pn0 pk0 <<<"$(trains)"
for tool in ib_write_bw ib_read_bw ib_send_bw; do
	opts="-x $G1" optc="-x $G0"
	case $tool in
	ib_write_bw)
		t trains/ipv6/gids wait_for 20 v6_gids &&
			opts="-x $(gid_index rrxe1 v6)" optc="-x $(gid_index rrxe0 v6)"
		;;
	ib_send_bw)
		read -r pn1 pk1 <<<"$(trains)"
		echo 0 >/sys/module/rdma_rrxe/parameters/train
		;;
	esac
	pair $tool 120 peer-tcp:18515 \
		"ip netns exec peer $tool -d rrxe1 $opts -F -n 200 -s 65536" \
		"$tool -d rrxe0 $optc -F -n 200 -s 65536 $B"
	pair_ok $tool "$(perf_check "$CLOG" bw 65536 200 "$WALL")"
done
read -r pn2 pk2 <<<"$(trains)"
echo 64 >/sys/module/rdma_rrxe/parameters/train

# One request outstanding at a time (perftest's latency tests have a send
# queue of one WQE): each completion comes from the QP's work item (the
# response arrived from the network) while the process polls for it, and
# the process posts the next request as soon as it sees it: by then the
# completed WQE's slot must be free, or the post fails with ENOMEM.
for spec in ib_read_lat:64 ib_atomic_lat:8; do
	tool=${spec%:*} size=${spec#*:}
	sarg=
	[ $tool = ib_read_lat ] && sarg="-s $size"
	pair $tool 120 peer-tcp:18515 \
		"ip netns exec peer $tool -d rrxe1 -x $G1 -F -n 2000 $sarg" \
		"$tool -d rrxe0 -x $G0 -F -n 2000 $sarg $B"
	pair_ok $tool "$(perf_check "$CLOG" lat "$size" 2000 "$WALL")"
done

# --- UD multicast through rdma_cm ----------------------------------------------------
# Two receivers join 239.1.2.3 on rrxe1 and a third on rrxe0, then the
# sender (on rrxe0) sends 10 messages to the group; each receiver waits
# for all 10.
M=239.1.2.3
for r in 1 2 3; do
	if [ $r = 3 ]; then
		timeout -k 5 90 stdbuf -oL mckey -m $M -b $A -C 10 -S 500 >"$TR/mckey.recv$r" 2>&1 &
	else
		timeout -k 5 90 ip netns exec peer stdbuf -oL mckey -m $M -b $B -C 10 -S 500 >"$TR/mckey.recv$r" 2>&1 &
	fi
	eval "rpid$r=$!"
done
t mcast/receivers-joined wait_for 30 bash -c "[ \$(grep -l 'receiving data transfers' $TR/mckey.recv[123] 2>/dev/null | wc -l) = 3 ]"
client mcast-send 60 "mckey -m $M -b $A -s -C 10 -S 500"
[ "$RC_C" = 0 ] && pass mcast/sender || fail mcast/sender "$(why)"
for r in 1 2 3; do
	eval "wait \$rpid$r"
	rc=$?
	f=$TR/mckey.recv$r
	if [ $rc = 0 ] && grep -q 'data transfers complete' "$f"; then
		pass mcast/receiver-$r-got-all
	else
		fail mcast/receiver-$r-got-all "exit $rc: $(tail_of "$f")"
	fi
done

# --- an address handle that outlives its VLAN device ------------------------------
# An AH on the GID of rrxe0's VLAN device veth0.100 (interface index 50,
# fd00:100::1); the VLAN device is then deleted and veth0.200 (VLAN 200)
# made with the same interface index and an address in the same prefix,
# and the peer answers fd00:100::2 on its VLAN 200 device. A UD SEND
# through the old AH must not go out of veth0.200 (IPv6 routing takes any
# source address, so only the driver can stop it): rrxe1 receives nothing.
stale_vlan() {
	local gi st rc0 rc1 out
	ip link add link veth0 name veth0.100 index 50 type vlan id 100 || return 1
	ip addr add fd00:100::1/64 dev veth0.100 nodad && ip link set veth0.100 up
	inpeer ip link add link veth1 name veth1.100 type vlan id 100
	inpeer ip addr add fd00:100::2/64 dev veth1.100 nodad
	inpeer ip link set veth1.100 up
	wait_for 20 gid_index rrxe0 =fd00:0100:0000:0000:0000:0000:0000:0001 || { echo "no GID of veth0.100"; return 1; }
	gi=$(gid_index rrxe0 =fd00:0100:0000:0000:0000:0000:0000:0001)
	coproc SV { exec "$PROGS/stale_vlan_av" rrxe0 "$gi" fd00:100::2 2>&1; }
	read -r -t 30 st <&"${SV[0]}"
	[ "$st" = ready ] || { echo "stale_vlan_av: '$st'"; return 1; }
	ip link del veth0.100
	inpeer ip link del veth1.100
	ip link add link veth0 name veth0.200 index 50 type vlan id 200 || return 1
	ip addr add fd00:100::3/64 dev veth0.200 nodad && ip link set veth0.200 up
	inpeer ip link add link veth1 name veth1.200 type vlan id 200
	inpeer ip addr add fd00:100::2/64 dev veth1.200 nodad
	inpeer ip link set veth1.200 up
	sleep 1
	rc0=$(counter rrxe1 rcvd_pkts)
	echo go >&"${SV[1]}"
	out=$(timeout 20 cat <&"${SV[0]}")
	sleep 2
	rc1=$(counter rrxe1 rcvd_pkts)
	echo "# stale AH: the send says '$(echo $out)'; rrxe1 received $((rc1 - rc0)) packets"
	ip link del veth0.200
	inpeer ip link del veth1.200
	[ "$rc1" = "$rc0" ] || { echo "rrxe1 received $((rc1 - rc0)) packets through VLAN 200"; return 1; }
}
t vlan/stale-ah-not-out-of-another-vlan stale_vlan

# --- requests held in the host while the device moves others ------------------------
# A netem qdisc on veth0 that lets one packet out every 5 s holds rrxe0's
# packets to rrxe1 in the host (netem with a delay would not: it orphans
# the packets, as a link does once they are sent) while retry_exc streams
# loopback RDMA WRITEs on rrxe0 (tests/verbs/retry_exc.c, "held"). rrxe
# puts a retransmit timeout off while requests of the QP are still in the
# host and the device moves packets, but at most 8 in a row (datapath.md,
# "Completer"): the held WRITE (ACK timeout 4 ms, retry_cnt 2) must end in
# RETRY_EXC_ERR within 5 s (about 0.35 s; with no bound it waits out the
# trickle). The counters show the put-offs (retry_deferred), then the
# retries (completer_retry_err) and the budget run out (retry_exceeded_err).
if tt retry/build prog retry_exc; then
	d0=$(counter rrxe0 retry_deferred) r0=$(counter rrxe0 completer_retry_err) x0=$(counter rrxe0 retry_exceeded_err)
	run_helper retry 120 $PROGS/retry_exc held rrxe0 "$G0" rrxe1 "$G1" \
		"tc qdisc add dev veth0 root netem slot 5s 5s packets 1" "tc qdisc del dev veth0 root"
	tc qdisc del dev veth0 root 2>/dev/null
	d1=$(counter rrxe0 retry_deferred) r1=$(counter rrxe0 completer_retry_err) x1=$(counter rrxe0 retry_exceeded_err)
	echo "# held: $((d1 - d0)) timeouts put off, $((r1 - r0)) retries, $((x1 - x0)) retry budgets run out"
	t retry/held/timeouts-put-off test $((d1 - d0)) -ge 1
	t retry/held/retried test $((r1 - r0)) -ge 2
	t retry/held/retry-exceeded-counted test $((x1 - x0)) -ge 1
fi

# --- packet trains ------------------------------------------------------------------
# A message's packets of one size go to the stack as one UDP GSO train
# (datapath.md, "Packet trains"), which the veth carries whole to the
# peer's socket, where the stack segments it. The 20 SENDs of 64 KiB each
# way of rc-pingpong-64k above (RC over IPv4 at IB MTU 1024: 64 packets
# of one size) went as trains of many packets, their data verified; the
# WRITEs of ib_write_bw over IPv6 too (each message's first packet,
# larger by its RETH, goes alone); ib_send_bw with `train=0` sent none.
# UC as well, past the 128 PSNs of RC's window, which UC has none of: 4
# SENDs of 64 packets each way, all in trains (with RC's window applied
# to UC, only the first 128 would be).
echo "# trains: rc-pingpong $((n1 - n0)) of $((k1 - k0)) packets, ib_write_bw over IPv6 $((pn1 - pn0)) of $((pk1 - pk0))"
t trains/on/sent test $((n1 - n0)) -ge 20
t trains/on/many-packets-each test $((k1 - k0)) -ge $((20 * 32))
t trains/ipv6/sent test $((pn1 - pn0)) -ge 200
t trains/ipv6/many-packets-each test $((pk1 - pk0)) -ge $((200 * 32))
t_eq trains/off/none-sent "$pn2 $pk2" "$pn1 $pk1"
read -r pn3 pk3 <<<"$(trains)"
pair trains-uc 120 peer-tcp:18515 \
	"ip netns exec peer ibv_uc_pingpong -d rrxe1 -g $G1 -s 65536 -n 4 -c" \
	"ibv_uc_pingpong -d rrxe0 -g $G0 -s 65536 -n 4 -c $B"
pair_ok trains/uc/uc-pingpong-64k "$(pingpong_check "$SLOG" 65536 4)$(pingpong_check "$CLOG" 65536 4)"
read -r pn4 pk4 <<<"$(trains)"
echo "# trains: uc-pingpong $((pn4 - pn3)) of $((pk4 - pk3)) packets"
t trains/uc/sent test $((pk4 - pk3)) -ge $((4 * 60))

# A packet cut out of a train, and one spoiled. rrxe2 (here, on cuts) and
# rrxe3 (namespace peer, on cutf) talk through a middlebox
# (tests/traffic/train_cut.py bridging cutm0 and cutm1, the far ends of
# their veths, which have no address), which drops the 20th middle packet
# rrxe2 sends and flips a payload byte of the 50th: both inside trains
# (the veths' UDP segmentation offload is off, so the stack cuts the
# trains before them and the middlebox sees the packets one by one). The
# receiver must refuse only those (the spoiled one for its ICRC, the ones
# after the cut as out of sequence until the sender goes back to it) and
# the data still arrive whole.
cut_setup() {
	ip link add cuts type veth peer name cutm0 && ip link add cutf type veth peer name cutm1 || return 1
	ip link set cutf netns peer
	ip addr add 10.9.0.1/24 dev cuts && ip link set cuts up && ethtool -K cuts tx-udp-segmentation off >/dev/null
	inpeer ip addr add 10.9.0.2/24 dev cutf && inpeer ip link set cutf up
	inpeer ethtool -K cutf tx-udp-segmentation off >/dev/null
	ip link set cutm0 up && ip link set cutm1 up
	link_up rrxe rrxe2 cuts && inpeer rdma link add rrxe3 type rrxe netdev cutf &&
		wait_for 20 port_ready rrxe2 && wait_for 20 port_ready rrxe3
}
if t trains/cut/setup cut_setup; then
	G2=$(gid_index rrxe2 v4) G3=$(gid_index rrxe3 v4)
	python3 tests/traffic/train_cut.py cutm0 cutm1 20 50 >"$TR/train_cut.log" 2>&1 &
	cutpid=$!
	wait_for 10 grep -q bridging "$TR/train_cut.log"
	n0=$(counter rrxe2 sent_trains) e0=$(counter rrxe3 rcvd_icrc_err) o0=$(counter rrxe3 out_of_seq_request)
	pair trains-cut 120 peer-tcp:18515 \
		"ip netns exec peer ibv_rc_pingpong -d rrxe3 -g $G3 -s 65536 -n 2 -c" \
		"ibv_rc_pingpong -d rrxe2 -g $G2 -s 65536 -n 2 -c 10.9.0.2"
	pair_ok trains/cut/rc-pingpong-64k "$(pingpong_check "$SLOG" 65536 2)$(pingpong_check "$CLOG" 65536 2)"
	kill -INT $cutpid
	wait $cutpid
	cat "$TR/train_cut.log"
	t_match trains/cut/middlebox-dropped-one "$(cat "$TR/train_cut.log")" '^dropped PSN'
	t_match trains/cut/middlebox-spoiled-one "$(cat "$TR/train_cut.log")" '^spoiled PSN'
	t trains/cut/sent-as-trains test "$(counter rrxe2 sent_trains)" -gt "$n0"
	t_eq trains/cut/spoiled-refused-for-icrc "$(($(counter rrxe3 rcvd_icrc_err) - e0))" 1
	t trains/cut/rest-refused-out-of-sequence test "$(($(counter rrxe3 out_of_seq_request) - o0))" -ge 1
	inpeer rdma link delete rrxe3
	rdma link delete rrxe2
	ip link del cuts
	ip link del cutm1
fi

# --- the sockets go with the last device of each namespace -------------------------
t teardown/link-delete-peer inpeer rdma link delete rrxe1
t teardown/link-delete-here rdma link delete rrxe0
t teardown/c-rxe-loads-after load_rxe
t teardown/c-rxe-unload rmmod rdma_rxe
t teardown/unload unload_rrxe

# --- the ICRC's CRC, forced each way, against C rxe on the wire --------------------
# The `icrc` module parameter picks the table CRC or the carry-less multiply
# (datapath.md, "The ICRC"). With each forced, rrxe1 (peer namespace) and C
# rxe (rxe0, this one: C rxe 6.12 has sockets in the initial namespace only)
# exchange verified data both ways: a packet with a wrong ICRC is dropped by
# either side, and the transfers would fail. Default (auto) loads are what
# every other test ran on. With each, the payload's copy and CRC in one
# pass (icrc_fused, off by default, set on at load here) and apart: rrxe1's
# sent_pkts_icrc_fused counts the packets folded in one pass, and none
# with the knob off.
fused_count() { counter rrxe1 sent_pkts_icrc_fused; }
t_match icrc/bad-value-refused "$(insmod "$RRXE_KO" icrc=fast 2>&1; lsmod | grep -c '^rdma_rrxe ')" 'Invalid (argument|parameters)'$'\n''0$'
for mode in table clmul; do
	if ! grep -qw pclmulqdq /proc/cpuinfo && [ $mode = clmul ]; then
		skip icrc/clmul "this CPU has no PCLMULQDQ"
		continue
	fi
	t icrc/$mode/load insmod "$RRXE_KO" icrc=$mode icrc_fused=1
	t_match icrc/$mode/in-use "$(cat /sys/module/rdma_rrxe/parameters/icrc)" "^$mode\$"
	t icrc/$mode/link-peer inpeer rdma link add rrxe1 type rrxe netdev veth1
	t icrc/$mode/link-c-rxe link_up rxe rxe0 veth0
	wait_for 20 port_ready rxe0
	wait_for 20 port_ready rrxe1
	GR=$(gid_index rxe0 v4)
	GP=$(gid_index rrxe1 v4)
	pair icrc-$mode-rping 120 cm "rping -s -a $A -V -C 4 -S 30000" "ip netns exec peer rping -c -a $A -V -v -C 4 -S 30000"
	pair_ok icrc/$mode/rping-verified "$(rping_check "$SLOG")$(rping_check "$CLOG" 4)"
	f0=$(fused_count)
	pair icrc-$mode-rc-pingpong 120 peer-tcp:18515 \
		"ip netns exec peer ibv_rc_pingpong -d rrxe1 -g $GP -s 65536 -n 20 -c" \
		"ibv_rc_pingpong -d rxe0 -g $GR -s 65536 -n 20 -c $B"
	pair_ok icrc/$mode/rc-pingpong-64k "$(pingpong_check "$SLOG" 65536 20)$(pingpong_check "$CLOG" 65536 20)"
	# 20 SENDs of 64 KiB from rrxe1: at least 16 packets each.
	f1=$(fused_count)
	t icrc/$mode/fused-on-counted test $((f1 - f0)) -ge 320
	echo 0 >/sys/module/rdma_rrxe/parameters/icrc_fused
	# With `table`, rrxe1's trains as C rxe gets them, cut by the stack
	# before veth1 (its UDP segmentation offload off), are captured on
	# veth0 meanwhile: make check's host side reads every frame with the
	# proto crate's parser, ICRC included (examples/pcap_check.rs;
	# host/train-segments-parse).
	if [ $mode = table ]; then
		n0=$(counter rrxe1 sent_trains)
		inpeer ethtool -K veth1 tx-udp-segmentation off >/dev/null
		tcpdump -i veth0 -U -s 0 -w /run/results/trains.pcap "udp port 4791" >"$TR/tcpdump.log" 2>&1 &
		tpid=$!
		wait_for 10 grep -q "listening on" "$TR/tcpdump.log"
	fi
	pair icrc-$mode-rc-pingpong-apart 120 peer-tcp:18515 \
		"ip netns exec peer ibv_rc_pingpong -d rrxe1 -g $GP -s 65536 -n 5 -c" \
		"ibv_rc_pingpong -d rxe0 -g $GR -s 65536 -n 5 -c $B"
	pair_ok icrc/$mode/fused-off-rc-pingpong-64k "$(pingpong_check "$SLOG" 65536 5)$(pingpong_check "$CLOG" 65536 5)"
	t icrc/$mode/fused-off-not-counted test "$(fused_count)" = "$f1"
	if [ $mode = table ]; then
		sleep 1
		kill -INT $tpid
		wait $tpid
		t icrc/table/trains-to-c-rxe test "$(counter rrxe1 sent_trains)" -ge $((n0 + 5))
		inpeer ethtool -K veth1 tx-udp-segmentation on >/dev/null
	fi
	# The fold ran (and only when forced on): spans of traffic it folded
	# since load (debugfs; the measurement at load is not counted).
	folds=$(cat /sys/kernel/debug/rdma_rrxe/icrc_folds)
	echo "# icrc=$mode: $folds spans folded by the carry-less multiply"
	if [ $mode = clmul ]; then t icrc/$mode/fold-ran test "$folds" -gt 100; else t icrc/$mode/no-fold test "$folds" = 0; fi
	inpeer rdma link delete rrxe1
	rdma link delete rxe0
	rmmod rdma_rxe
	t icrc/$mode/unload unload_rrxe
done
exit 0
