#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Two guests linked by one virtio NIC each, over a QEMU socket on
# 127.0.0.1 (nothing else is reachable from either guest).
#
#   scripts/vm2.sh [--variant V] [--timeout SEC] [--name NAME] [--quiet]
#                  SCRIPT_A SCRIPT_B [ARGS...]
#
# Guest A runs SCRIPT_A a ARGS..., guest B runs SCRIPT_B b ARGS...; both
# with 1 CPU. Their eth0 addresses are set up by tests/lib/twohost.sh.
# Output directories: out/vm/NAME-a and out/vm/NAME-b (or --out DIR-a/-b).
# Exit status: 0 if both runs succeeded, else the first failure's status.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
variant=debug timeout=1500 name= quiet= out= mem=1536M
while [ $# -gt 0 ]; do
	case "$1" in
	--variant) variant=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--quiet) quiet=--quiet; shift ;;
	*) break ;;
	esac
done
sa=${1:?usage: vm2.sh [options] SCRIPT_A SCRIPT_B [ARGS...]}
sb=${2:?usage: vm2.sh [options] SCRIPT_A SCRIPT_B [ARGS...]}
shift 2
name=${name:-$(basename "$sa" .sh)}
out=${out:-$top/out/vm/$name}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
common=(--variant "$variant" --timeout "$timeout" --smp 1 --mem "$mem")
"$here/vm.sh" "${common[@]}" --quiet --name "$name-a" --out "$out-a" \
	--net "listen:$port" --mac 52:54:00:00:00:0a "$sa" a "$@" &
pa=$!
# B may only connect once A's QEMU listens: QEMU 7.2 does not fail a
# refused connect, it boots B without a link (both guests then wait for
# each other until the link-up barrier gives up). A's start can take
# seconds (the accelerator probe, a loaded host), so wait for the
# listening socket itself; a probe connection would be A's one peer.
a_listens() { [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; }
for _ in $(seq 600); do
	a_listens || ! kill -0 $pa 2>/dev/null && break
	sleep 0.2
done
a_listens || echo "vm2: guest a's QEMU never listened on $port" >&2
set +e
"$here/vm.sh" "${common[@]}" $quiet --name "$name-b" --out "$out-b" \
	--net "connect:$port" --mac 52:54:00:00:00:0b "$sb" b "$@"
rb=$?
wait $pa
ra=$?
set -e
[ "$ra" = 0 ] || exit "$ra"
exit "$rb"
