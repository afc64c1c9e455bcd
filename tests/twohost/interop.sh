#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Interoperability between two hosts: two VMs linked by their eth0
# (scripts/vm2.sh), driver DRV_A on VM a and DRV_B on VM b (rrxe and C
# rdma_rxe by default). Each tool runs in both directions at once (a
# server and a client on each VM, see cell), at path MTU 1024 (netdev MTU
# 1500) and 4096 (netdev MTU 9000), over the IPv4 and the global IPv6 GID:
#   rping -V -v (data verified by the client), ib_write_bw, ib_read_bw,
#   ib_send_bw, ib_atomic_bw (perftest: exit status, report row, the path
#   MTU it used) and ibv_ud_pingpong -c at the path MTU;
# and over the IPv4 GID of a VLAN device (eth0.100) at path MTU 1024:
# rping, ib_write_bw and ibv_ud_pingpong, the VLAN device's counters
# showing the traffic went tagged both ways.
# VM a records one result per cell, named
#   interop/GID-mtuMTU/TOOL/CLIENT-to-SERVER   (e.g. a.rrxe-to-b.rxe)
# and prints the matrix (also in its results directory, matrix.txt).
#
#   scripts/vm2.sh tests/twohost/interop.sh tests/twohost/interop.sh [DRV_A [DRV_B]]
# (1 GiB instead of vm2.sh's 1.5: a kmemleak scan costs more with more
# memory, and this test needs little.)
# vm-options: --mem 1G
# vm-seconds: 285 (measured in make check's debug VMs, Dec 2026)
GROUP=interop
. tests/guest/lib.sh
. tests/lib/twohost.sh
. tests/traffic/lib.sh

DRV_A=${1:-${DRV_A:-rrxe}}
DRV_B=${2:-${DRV_B:-rxe}}
if [ "$ROLE" = a ]; then MYDRV=$DRV_A PEERDRV=$DRV_B; else MYDRV=$DRV_B PEERDRV=$DRV_A; fi
DEV=${MYDRV}0
suite_start=$SECONDS
echo "# interop: a runs $DRV_A, b runs $DRV_B; this is $ROLE ($DEV)"

rxe_provider_only
chan_open || { echo "no control channel to the peer"; exit 1; }
t "$ROLE/setup/link-add" link_up "$MYDRV" "$DEV" eth0
t "$ROLE/setup/port-ready" wait_for 30 port_ready "$DEV"
t "$ROLE/setup/ipv6-gid" wait_for 30 gid_index "$DEV" v6
G4=$(gid_index "$DEV" v4) G6=$(gid_index "$DEV" v6)
echo "# GID index: IPv4 $G4, IPv6 $G6"

# cell ID READY SERVER_CMD CLIENT_CMD SERVER_CHECK CLIENT_CHECK
# One tool between the VMs in both directions at once: each VM runs a
# server and, once both servers are ready, a client against the peer's.
# In the commands, @ME@ is this VM's address of the cell's family (for the
# server to bind), @PEER@ the peer's, @PEER4@ the peer's IPv4 address (the
# tools' TCP exchange). The checks are evaluated on their side (they see
# SLOG, CLOG and WALL). The VMs meet three times on the channel: servers
# ready; clients done (a server then has 10 s more to finish); servers
# done. VM a records one result per direction.
cell() {
	local id=$1 ready=$2 scmd=$3 ccmd=$4 schk=$5 cchk=$6 log=${1//\//_} r peer sprob cprob
	local t0=$SECONDS
	scmd=${scmd//@ME@/$MYADDR}
	ccmd=${ccmd//@PEER4@/$PEER}
	ccmd=${ccmd//@PEER@/$PEERADDR}
	if serve "$log" 150 "$ready" "$scmd"; then r=ready; else r=never; fi
	peer=$(swap "$id-ready" "$r")
	if [ "$peer" = ready ]; then
		client "$log" 120 "$ccmd"
		cprob=$(eval "$cchk")
		# (A failed client's log is on its VM: b's reaches a's verdict here.)
		[ "$RC_C" = 0 ] || [ -n "$cprob" ] || cprob="its log: $(tail_of "$CLOG")"
	else
		RC_C=125 WALL=0 cprob="the peer's server never got ready"
	fi
	local peer_c peer_s
	peer_c=$(swap "$id-client" "$RC_C|$cprob")
	[ "$r" = ready ] && reap 10
	sprob=$(eval "$schk")
	peer_s=$(swap "$id-server" "$RC_S|$sprob")
	echo "# $id: server ready after ${READY}s, client ${WALL}s, cell $((SECONDS - t0))s; $((SECONDS - suite_start))s into the suite"
	[ "$ROLE" = a ] || return 0
	# a's client against b's server, then b's client against a's server.
	verdict "$id/a.$DRV_A-to-b.$DRV_B" "$RC_C|$cprob" "$peer_s" "$CLOG" b
	verdict "$id/b.$DRV_B-to-a.$DRV_A" "$peer_c" "$RC_S|$sprob" "$SLOG" a
}

# verdict NAME CLIENT_RESULT SERVER_RESULT LOCAL_LOG WHERE_THE_SERVER_RAN
verdict() {
	local crc cprob src sprob
	IFS='|' read -r crc cprob <<<"$2"
	IFS='|' read -r src sprob <<<"$3"
	if [ "$crc" = 0 ] && [ "$src" = 0 ] && [ -z "$cprob$sprob" ]; then
		pass "$1"
		echo "$1 ok" >>"$TR/matrix"
	else
		fail "$1" "client exit $crc${cprob:+ ($cprob)}, server exit $src${sprob:+ ($sprob)}; log on a: $(tail_of "$4")"
		echo "$1 FAIL" >>"$TR/matrix"
	fi
}

for fam in ipv4 ipv6; do
	for mtu in 1024 4096; do
		where=$fam-mtu$mtu
		netmtu=1500
		[ "$mtu" = 4096 ] && netmtu=9000
		ip link set eth0 mtu $netmtu
		swap "$where-mtu" - >/dev/null
		want=$(case $mtu in 1024) echo '1024 (3)' ;; 4096) echo '4096 (5)' ;; esac)
		if ! wait_for 20 bash -c "ibv_devinfo -d $DEV | grep -q 'active_mtu:.*$want'"; then
			fail "$ROLE/$where/active-mtu" "got '$(devinfo_field "$DEV" active_mtu)', want '$want'"
		fi
		if [ "$fam" = ipv4 ]; then
			G=$G4 MYADDR=$ME PEERADDR=$PEER atomic=CMP_AND_SWAP
		else
			G=$G6 MYADDR=$ME6 PEERADDR=$PEER6 atomic=FETCH_AND_ADD
		fi
		# Path-level check: a full-size frame crosses the link unfragmented.
		if [ "$ROLE" = a ]; then
			t "$where/link-carries-$netmtu" ping -c 1 -W 5 -M do -s $((netmtu - 28)) "$PEER"
		fi
		swap "$where-start" - >/dev/null

		cell $where/rping cm "rping -s -a @ME@ -V -C 3 -S 20000" \
			"rping -c -a @PEER@ -V -v -C 3 -S 20000" \
			'rping_check "$SLOG"' 'rping_check "$CLOG" 3'
		for tool in ib_write_bw ib_read_bw ib_send_bw; do
			cell $where/$tool tcp:18515 "$tool -d $DEV -x $G -F -n 5 -s 10000" \
				"$tool -d $DEV -x $G -F -n 5 -s 10000 @PEER4@" \
				: "perf_check \"\$CLOG\" bw 10000 5 \"\$WALL\" $mtu"
		done
		cell $where/ib_atomic_bw tcp:18515 "ib_atomic_bw -d $DEV -x $G -F -n 5 -A $atomic" \
			"ib_atomic_bw -d $DEV -x $G -F -n 5 -A $atomic @PEER4@" \
			: "perf_check \"\$CLOG\" bw 8 5 \"\$WALL\" $mtu"
		cell $where/ud_pingpong tcp:18515 "ibv_ud_pingpong -d $DEV -g $G -s $mtu -n 5 -c" \
			"ibv_ud_pingpong -d $DEV -g $G -s $mtu -n 5 -c @PEER4@" \
			"pingpong_check \"\$SLOG\" $mtu 5" "pingpong_check \"\$CLOG\" $mtu 5"
	done
done

# VLAN: RoCE over eth0.100 (VLAN 100, 10.0.100.0/24), a VLAN device of
# the port's net device. ib_core adds its address to the RDMA device's GID
# table (with the VLAN device as the entry's net device); a QP on that GID
# sends through the VLAN device (tagged), and a tagged packet received on
# it reaches the RDMA device of its real device. Neither driver takes the
# VLAN device itself as its net device (`rdma link add` refuses it).
ip link set eth0 mtu 1500
ip link add link eth0 name eth0.100 type vlan id 100
VME=10.0.100.${ME##*.} VPEER=10.0.100.${PEER##*.}
ip addr add "$VME/24" dev eth0.100 && ip link set eth0.100 up
VGID=0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${VME//./ })
t "$ROLE/vlan/gid-of-vlan-device" wait_for 30 gid_index "$DEV" "=$VGID"
GV=$(gid_index "$DEV" "=$VGID")
ndev_of=$(cat "/sys/class/infiniband/$DEV/ports/1/gid_attrs/ndevs/$GV" 2>/dev/null)
[ "$ndev_of" = eth0.100 ] && pass "$ROLE/vlan/gid-entry-on-eth0.100" ||
	fail "$ROLE/vlan/gid-entry-on-eth0.100" "GID $GV's net device is '$ndev_of'"
vstat() { cat "/sys/class/net/eth0.100/statistics/$1"; }
vtx0=$(vstat tx_packets) vrx0=$(vstat rx_packets)
swap vlan-start - >/dev/null
G=$GV MYADDR=$VME PEERADDR=$VPEER
cell vlan4-mtu1024/rping cm "rping -s -a @ME@ -V -C 3 -S 20000" \
	"rping -c -a @PEER@ -V -v -C 3 -S 20000" \
	'rping_check "$SLOG"' 'rping_check "$CLOG" 3'
cell vlan4-mtu1024/ib_write_bw tcp:18515 "ib_write_bw -d $DEV -x $G -F -n 5 -s 10000" \
	"ib_write_bw -d $DEV -x $G -F -n 5 -s 10000 @PEER4@" \
	: "perf_check \"\$CLOG\" bw 10000 5 \"\$WALL\" 1024"
cell vlan4-mtu1024/ud_pingpong tcp:18515 "ibv_ud_pingpong -d $DEV -g $G -s 1024 -n 5 -c" \
	"ibv_ud_pingpong -d $DEV -g $G -s 1024 -n 5 -c @PEER4@" \
	"pingpong_check \"\$SLOG\" 1024 5" "pingpong_check \"\$CLOG\" 1024 5"
# The traffic was tagged both ways: this VM's VLAN device sent and received
# it (at least the ib_write_bw data: 2 x 5 x 10 packets of 1 KiB).
vtx=$(($(vstat tx_packets) - vtx0)) vrx=$(($(vstat rx_packets) - vrx0))
if [ "$vtx" -ge 100 ] && [ "$vrx" -ge 100 ]; then
	pass "$ROLE/vlan/traffic-tagged-both-ways"
else
	fail "$ROLE/vlan/traffic-tagged-both-ways" "eth0.100 sent $vtx and received $vrx packets during the VLAN cells"
fi
echo "# vlan: eth0.100 sent $vtx, received $vrx packets"

# The matrix: one row per tool, one column per GID family, path MTU and
# direction (CLIENT>SERVER).
if [ "$ROLE" = a ]; then
	{
		echo "interop matrix: a = $DRV_A, b = $DRV_B; a>b = client on a, server on b"
		awk '{
			split($1, p, "/"); col = p[1] " " substr(p[3], 1, 1) ">" substr(p[3], index(p[3], "-to-") + 4, 1)
			if (!(p[2] in seen)) { seen[p[2]] = 1; rows[++nr] = p[2] }
			if (!(col in cseen)) { cseen[col] = 1; cols[++nc] = col }
			v[p[2], col] = $2
		} END {
			printf "%-28s", ""; for (j = 1; j <= nc; j++) { split(cols[j], c, " "); printf " %-12s", c[1] } print ""
			printf "%-28s", "tool"; for (j = 1; j <= nc; j++) { split(cols[j], c, " "); printf " %-12s", c[2] } print ""
			for (i = 1; i <= nr; i++) {
				printf "%-28s", rows[i]
				for (j = 1; j <= nc; j++) printf " %-12s", ((rows[i], cols[j]) in v ? v[rows[i], cols[j]] : "-")
				print ""
			}
		}' "$TR/matrix"
	} >/run/results/matrix.txt
	cat /run/results/matrix.txt
fi
swap end - >/dev/null
exec 7>&- 8<&-
t "$ROLE/teardown/link-delete" rdma link delete "$DEV"
t "$ROLE/teardown/unload" unload "$MYDRV"
echo "# interop: $((SECONDS - suite_start))s"
exit 0
