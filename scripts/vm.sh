#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the guest kernel in QEMU and run one guest script in it.
#
#   scripts/vm.sh [options] SCRIPT [ARGS...]
#
#   --variant debug|release   kernel to boot (default debug)
#   --out DIR                 where the run's files go (default out/vm/NAME)
#   --name NAME               run name (default: script's base name)
#   --timeout SEC             kill QEMU after SEC seconds (default 1200)
#   --smp N --mem SIZE        guest CPUs and memory (default 2, 2G)
#   --net listen:PORT|connect:PORT
#                             one virtio NIC linked to another of this
#                             project's VMs over 127.0.0.1 only
#   --mac MAC                 the NIC's MAC address
#   --lone-nic                a virtio NIC linked to nothing: a real NIC (a
#                             PCI device under the net device) whose packets
#                             go nowhere (127.0.0.1 UDP to a closed port)
#   --quiet                   do not stream the script's output
#   --boot-limit SEC          boot once more if the guest is not up after
#                             SEC seconds (default 300; see below)
#
# SCRIPT is a path relative to the repository; the guest sees the host's
# root read-only over 9p, the repository at /run/rrxe (read-only) and DIR at
# /run/results (writable), and runs SCRIPT from /run/rrxe as root with
# tmpfs on /tmp and /run. Variables named in the script's "# vm-env: ..."
# line are passed into the guest when set (e.g. ULP_MIB=64 scripts/vm.sh
# tests/guest/ulp.sh). The script's output is streamed and kept in
# DIR/output.log, the serial console (kernel log) in DIR/console.log.
#
# Exit status: the script's, or 124 if the guest timed out, or 125 if the
# guest kernel log shows a BUG, WARNING, Oops, KASAN, lockdep, refcount,
# hung-task or "scheduling while atomic" report (the report is printed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
variant=debug out= name= timeout=1200 smp=2 mem=2G net= mac=52:54:00:12:34:56 lone_nic=0 quiet=0 boot_limit=300
while [ $# -gt 0 ]; do
	case "$1" in
	--variant) variant=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--net) net=$2; shift 2 ;;
	--mac) mac=$2; shift 2 ;;
	--lone-nic) lone_nic=1; shift ;;
	--quiet) quiet=1; shift ;;
	--boot-limit) boot_limit=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "vm: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[[ $boot_limit =~ ^[1-9][0-9]*$ ]] || { echo "vm: bad --boot-limit $boot_limit (seconds, at least 1)" >&2; exit 2; }
script=${1:?usage: vm.sh [options] SCRIPT [ARGS...]}
shift
[ -f "$top/$script" ] || { echo "vm: no such script: $script" >&2; exit 2; }
name=${name:-$(basename "$script" .sh)}
out=${out:-$top/out/vm/$name}
kdir=$("$here/kernel.sh" path "$variant")
[ -f "$kdir/.rrxe-done" ] || { echo "vm: no $variant kernel built (scripts/kernel.sh build $variant)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
{
	printf 'RRXE_SCRIPT=%q\n' "$script"
	printf 'RRXE_VARIANT=%q\n' "$variant"
	printf 'RRXE_ARGS=('
	for a in "$@"; do printf '%q ' "$a"; done
	printf ')\n'
	# The variables a script names in its "# vm-env: NAME..." line reach
	# it in the guest when they are set here (e.g. ULP_MIB=64).
	for v in $(sed -n 's/^# vm-env: //p' "$top/$script"); do
		[[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] && [ -n "${!v+set}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
} >"$out/job"
: >"$out/output.log"

netargs=()
case "$net" in
"") ;;
listen:* | connect:*)
	netargs=(-netdev "socket,id=n0,${net%%:*}=127.0.0.1:${net#*:}"
		-device "virtio-net-pci,netdev=n0,mac=$mac")
	;;
*) echo "vm: bad --net $net" >&2; exit 2 ;;
esac
# The lone NIC sends UDP datagrams from one free port of 127.0.0.1 to
# another that nobody listens on: the host drops them, and nothing ever
# arrives. (Not a QEMU hub with no other port: such a hub takes nothing,
# so the NIC's transmits never complete and the guest's skbs stay in its
# ring for good.)
if [ "$lone_nic" = 1 ]; then
	read -r lsrc ldst < <(python3 -c 'import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
	netargs+=(-netdev "socket,id=n1,udp=127.0.0.1:$ldst,localaddr=127.0.0.1:$lsrc"
		-device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:99)
fi

# The guest tests' C programs, built here (the guest would take 8-35 s per gcc run).
"$here/testprogs.sh" || exit 2

accel=$("$here/accel.sh" "$variant")

# (debug-threads: the host sees QEMU's threads by role, "CPU 0/TCG" and
# the main loop, for tests/bench/hostcpu.sh.)
# tsc=unstable: under TCG the guest usually fails to calibrate its TSC
# (no HPET, the PIT too irregular), marks it unstable and keeps time with
# jiffies. On a loaded host the calibration has once "succeeded" at 52
# MHz instead of the host's rate: the guest clock then ran many times too
# fast and RCU reported stalls from boot on. The guest keeps time the
# usual way, always.
# pty.legacy_count=0: no BSD ptys (nothing here uses them; /dev/pts
# serves); creating the 256 pairs' devices took 3.4 s of every boot of a
# debug guest (initcall_debug: pty_init).
# RRXE_QEMU: another QEMU binary (tests/harness/vm-boot-hang.sh gives a fake).
qemu=("${RRXE_QEMU:-qemu-system-x86_64}" -name "$name,debug-threads=on" -accel "$accel" -cpu max,la57=off -smp "$smp" -m "$mem"
	-nodefaults -no-user-config -display none -no-reboot
	-kernel "$kdir/arch/x86/boot/bzImage"
	-append "console=ttyS0 root=hostroot rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=mmap ro init=$top/tests/guest/init panic=-1 kmemleak=on pty.legacy_count=0 no_timer_check tsc=unstable"
	-serial "file:$out/console.log"
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
	-fsdev local,id=usr,path=/usr,security_model=none,readonly=on
	-device virtio-9p-pci,fsdev=usr,mount_tag=usr
	-fsdev local,id=etc,path=/etc,security_model=none,readonly=on
	-device virtio-9p-pci,fsdev=etc,mount_tag=etc
	-fsdev "local,id=rrxe,path=$top,security_model=none,readonly=on"
	-device virtio-9p-pci,fsdev=rrxe,mount_tag=rrxe
	-fsdev "local,id=results,path=$out,security_model=none"
	-device virtio-9p-pci,fsdev=results,mount_tag=results
	"${netargs[@]}")

# set_aside WHY: keeps a boot's console and QEMU logs as console.WHY.log
# and qemu.WHY.log before the boot is done once more (either may be
# missing if QEMU stopped before it opened them).
set_aside() {
	mv -f "$out/console.log" "$out/console.$1.log" 2>/dev/null || true
	mv -f "$out/qemu.log" "$out/qemu.$1.log" 2>/dev/null || true
}

start=$(date +%s)
for attempt in 1 2; do
	timeout --kill-after=10 "$timeout" "${qemu[@]}" >"$out/qemu.log" 2>&1 &
	qpid=$!
	if [ "$quiet" = 0 ]; then
		tail -n +1 -F "$out/output.log" 2>/dev/null --pid=$qpid &
		tpid=$!
	fi
	# A debug guest booting beside other VMs (more vCPUs than host cores)
	# has hung early in its boot, once in a few dozen boots: its console
	# stopped at 2.58 s, its clock stood still, and it held its check
	# until the VM timeout. The init script prints "rrxe-guest: up" when
	# the guest can run anything (about 10 s of guest time): without it
	# after --boot-limit seconds the boot is stopped and done once more.
	rm -f "$out/boot-hung"
	hung=0
	# The watcher stays (asleep) until vm.sh kills it after QEMU ended,
	# so that its PID is never reused under the kill. (A pair's VM, vm2.sh, gains
	# nothing from the retry: its peer's link-up barrier gives up first.)
	(
		set +e
		waited=0
		while kill -0 $qpid 2>/dev/null; do
			grep -qs "rrxe-guest: up" "$out/console.log" && break
			if [ "$waited" -ge "$boot_limit" ]; then
				: >"$out/boot-hung"
				kill $qpid
				break
			fi
			sleep 1
			waited=$((waited + 1))
		done
		exec sleep infinity
	) </dev/null >/dev/null 2>&1 &
	wpid=$!
	set +e
	wait $qpid
	qrc=$?
	kill $wpid 2>/dev/null
	wait $wpid 2>/dev/null
	set -e
	[ "$quiet" = 0 ] && { sleep 0.2; kill $tpid 2>/dev/null || true; wait $tpid 2>/dev/null || true; }
	if [ -f "$out/boot-hung" ]; then
		rm -f "$out/boot-hung"
		hung=1
		if [ "$attempt" = 1 ]; then
			echo "vm: guest not up after ${boot_limit}s (console.hung.log); booting once more" >&2
			set_aside hung
			: >"$out/output.log"
			continue
		fi
		break
	fi
	# QEMU 7.2's TCG has crashed (SIGSEGV) while booting a two-vCPU debug
	# guest, before the guest ran anything (once in several dozen boots).
	# That says nothing about the driver: boot once more, and keep the
	# crashed boot's logs next to the new ones.
	if [ "$qrc" = 139 ] && [ "$attempt" = 1 ] && [ ! -s "$out/output.log" ] && [ ! -f "$out/rc" ]; then
		echo "vm: qemu crashed (SIGSEGV) before the guest ran its script; booting once more" >&2
		set_aside crashed
		continue
	fi
	break
done
echo "$(( $(date +%s) - start ))" >"$out/seconds"
# The CPU time QEMU used (this shell's children, reaped: QEMU and the
# few small helpers before it), for scheduling: a VM that waits much
# (timers, a peer) leaves CPU to the VMs beside it.
# (`times` in this shell: in a pipeline it would run in a subshell, whose
# children are none.)
times >"$out/times"
awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$out/times" >"$out/cpu-seconds"

rc=
if [ "$hung" = 1 ]; then
	echo "vm: guest not up after ${boot_limit}s, twice ($out/console.log)" >&2
	rc=124
elif [ -f "$out/rc" ]; then
	rc=$(cat "$out/rc")
elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm: guest timed out after ${timeout}s ($out/console.log)" >&2
	rc=124
else
	echo "vm: guest ended without a result (qemu exit $qrc; $out/console.log)" >&2
	cat "$out/qemu.log" >&2 || true
	rc=1
fi

if ! "$here/splat.sh" "$out/console.log"; then
	echo "vm: kernel log shows a report ($out/console.log)" >&2
	[ "$rc" = 0 ] && rc=125
fi
exit "$rc"
