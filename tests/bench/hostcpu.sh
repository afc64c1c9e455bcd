#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host side: where the host's CPUs go while this project's VMs run, by
# QEMU thread (scripts/vm.sh names them: "CPU 0/TCG" is a vCPU,
# "qemu-system-x86" the main loop, which runs the virtio devices' backends
# and the socket link). Run it beside a guest benchmark, e.g.
#
#   tests/bench/hostcpu.sh > hostcpu.log &
#   scripts/vm2.sh --variant release --name thb tests/bench/twohost.sh ...
#
# Once a second it prints the host's idle share and, per VM and thread,
# the CPU share of the last second (in % of one CPU; threads under 4%
# left out). It ends when no QEMU is left, with the mean over the seconds
# in which some vCPU was busier than BUSY% (default 80: a benchmark flow,
# not boot or setup). Reports; does not pass or fail.
set -u
BUSY=${BUSY:-80}
hz=$(getconf CLK_TCK)
declare -A last sum
n=0 idle_sum=0 seen=0
read -r _ u ni s i w irq sirq _ </proc/stat
ltot=$((u + ni + s + i + w + irq + sirq)) lidle=$((i + w))
while :; do
	sleep 1
	read -r _ u ni s i w irq sirq _ </proc/stat
	tot=$((u + ni + s + i + w + irq + sirq)) idle=$((i + w))
	pidle=$(((idle - lidle) * 100 / (tot - ltot > 0 ? tot - ltot : 1)))
	ltot=$tot lidle=$idle
	line="$(date +%T) idle=$pidle%" busy=0
	declare -A now=()
	pids=$(pgrep -x qemu-system-x86 || pgrep -f '^qemu-system-x86_64 ')
	[ -n "$pids" ] && seen=1
	[ -z "$pids" ] && [ "$seen" = 1 ] && break
	for p in $pids; do
		vm=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | awk 'f { sub(/,.*/, ""); print; exit } $0 == "-name" { f = 1 }')
		for t in /proc/"$p"/task/*; do
			st=$(cat "$t/stat" 2>/dev/null) || continue
			comm=$(tr ' ' '_' <"$t/comm")
			set -- ${st##*) }
			v=$((${12} + ${13})) key=${t##*/}
			if [ -n "${last[$key]:-}" ]; then
				pct=$(((v - ${last[$key]}) * 100 / hz))
				k="${vm:-$p}:$comm"
				now[$k]=$((${now[$k]:-0} + pct))
			fi
			last[$key]=$v
		done
	done
	for k in "${!now[@]}"; do
		[ "${now[$k]}" -ge 4 ] && line="$line $k=${now[$k]}%"
		[[ $k == *CPU* ]] && [ "${now[$k]}" -gt "$BUSY" ] && busy=1
	done
	echo "$line"
	if [ "$busy" = 1 ]; then
		n=$((n + 1)) idle_sum=$((idle_sum + pidle))
		for k in "${!now[@]}"; do sum[$k]=$((${sum[$k]:-0} + ${now[$k]})); done
	fi
	unset now
done
[ "$n" -gt 0 ] || { echo "hostcpu: no second with a vCPU over $BUSY%"; exit 0; }
echo "hostcpu: mean over $n busy seconds: host idle $((idle_sum / n))%"
for k in "${!sum[@]}"; do echo "  $k $((${sum[$k]} / n))%"; done | sort
