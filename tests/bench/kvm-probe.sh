#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Can QEMU boot our guest kernel under KVM on this machine? (Findings:
# Documentation/bench.md, "KVM".)
#
#   tests/bench/kvm-probe.sh [release|debug] [SECONDS] [VARIANT...]
#   tests/bench/kvm-probe.sh progress [release|debug] [SECONDS]
#
# The first form boots the kernel with each VARIANT of extra QEMU arguments
# for SECONDS (default 20), with no root file system: a variant "boots" if
# the kernel gets as far as looking for its root device. A VARIANT is one
# word, '+' standing for spaces: "-cpu+qemu64", "-machine+q35+-cpu+qemu64".
# Without VARIANTs it tries a built-in list of CPU models and machine
# options.
#
# "progress" boots once (-cpu qemu64) with a monitor socket and prints, every
# few seconds, where the vCPU is (RIP, RSI, RDI, long mode or not) and how
# much host CPU the vCPU thread used: a guest that is slow rather than hung
# shows RIP and the decompressor's pointers moving.
#
# Console logs go to out/bench/kvm-probe/. It never changes the answer
# scripts/accel.sh has cached. Run it while no other VM of yours runs.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
mode=list
[ "${1:-}" = progress ] && { mode=progress; shift; }
variant=${1:-release}
secs=${2:-20}
shift 2 2>/dev/null || shift $#
kdir=$("$top/scripts/kernel.sh" path "$variant")
img=$kdir/arch/x86/boot/bzImage
[ -f "$img" ] || { echo "kvm-probe: no $variant kernel ($img)" >&2; exit 2; }
[ -w /dev/kvm ] || { echo "kvm-probe: /dev/kvm is not usable" >&2; exit 2; }
out=$top/out/bench/kvm-probe
mkdir -p "$out"
append="console=ttyS0 earlyprintk=serial,ttyS0,115200 ignore_loglevel panic=-1 root=/dev/nonexistent"

echo "kvm-probe: $(qemu-system-x86_64 --version | head -n1); host kernel $(uname -r)"
echo "kvm-probe: kvm modules: $(ls /sys/module | grep -i kvm | tr '\n' ' ')" \
	"CPU virtualisation flags: $(grep -o -w -m1 'vmx\|svm' /proc/cpuinfo || echo none)"

if [ "$mode" = progress ]; then
	mon=$out/monitor.sock
	rm -f "$mon"
	qemu-system-x86_64 -accel kvm -cpu qemu64 -smp 1 -m 512M \
		-nodefaults -no-user-config -display none -no-reboot \
		-kernel "$img" -append "$append" -serial "file:$out/progress.console" \
		-monitor "unix:$mon,server,nowait" >"$out/progress.qemu" 2>&1 &
	qpid=$!
	python3 - "$mon" "$qpid" "$secs" <<'PY'
import re, socket, sys, time, os
mon, pid, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for _ in range(50):
    if os.path.exists(mon):
        break
    time.sleep(0.1)
s = socket.socket(socket.AF_UNIX)
s.connect(mon)
s.settimeout(5)
time.sleep(0.3)
s.recv(65536)
hz = os.sysconf('SC_CLK_TCK')
t0 = time.time()
while time.time() - t0 < secs:
    time.sleep(3)
    s.sendall(b"info registers\n")
    time.sleep(0.5)
    d = s.recv(65536).decode(errors='replace')
    g = lambda k: (re.search(k + r"=(\w+)", d) or [None, '?'])[1]
    sys_ticks = 0
    for t in os.listdir('/proc/%d/task' % pid):
        with open('/proc/%d/task/%s/stat' % (pid, t)) as f:
            sys_ticks += int(f.read().rsplit(')', 1)[1].split()[12])
    print("t=%5.1fs RIP=%s RSI=%s RDI=%s EFER=%s  qemu system time %.1fs"
          % (time.time() - t0, g('RIP'), g('RSI'), g('RDI'), g('EFER'), sys_ticks / hz), flush=True)
PY
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	echo "kvm-probe: console: $(wc -c <"$out/progress.console") bytes"
	exit 0
fi

if [ $# -eq 0 ]; then
	set -- \
		"-cpu+host" \
		"-cpu+host,-arch-capabilities" \
		"-cpu+max" \
		"-cpu+max,la57=off,-arch-capabilities" \
		"-cpu+qemu64" \
		"-cpu+kvm64" \
		"-cpu+EPYC" \
		"-cpu+qemu64,-kvmclock,-kvm-pv-eoi,-kvm-asyncpf,-kvm-steal-time,-kvm-pv-unhalt" \
		"-cpu+qemu64,kvm=off" \
		"-machine+q35+-cpu+qemu64" \
		"-machine+pc,kernel-irqchip=off+-cpu+qemu64" \
		"-machine+pc,kernel-irqchip=split+-cpu+qemu64" \
		"-machine+microvm+-cpu+qemu64"
fi

i=0
for v in "$@"; do
	i=$((i + 1))
	extra=(${v//+/ })
	log=$out/$i.console qlog=$out/$i.qemu
	start=$(date +%s.%N)
	timeout -k 5 "$secs" qemu-system-x86_64 -accel kvm "${extra[@]}" -smp 1 -m 512M \
		-nodefaults -no-user-config -display none -no-reboot \
		-kernel "$img" -append "$append" -serial "file:$log" >"$qlog" 2>&1
	rc=$?
	t=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if grep -q 'VFS: Cannot open root device\|Kernel panic - not syncing: VFS\|Unable to mount root' "$log" 2>/dev/null; then
		res=BOOTS
	elif [ -s "$log" ]; then
		res="stuck after $(wc -l <"$log") console lines: $(grep -v '^\s*$' "$log" | tail -n 1 | cut -c1-90)"
	else
		res="no console output"
	fi
	q=$(grep -v '^\s*$' "$qlog" | grep -v 'terminating on signal' | head -n 1 | cut -c1-100)
	printf '%2d %-70s rc=%-3s %5ss %s%s\n' "$i" "${extra[*]}" "$rc" "$t" "$res" "${q:+ [qemu: $q]}"
done
