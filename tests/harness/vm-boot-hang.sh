#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host check of scripts/vm.sh's hung-boot retry, with a fake QEMU
# (RRXE_QEMU) that plays the guest: it writes the console and the results
# share as the real guest would. A boot that is not up within the limit is
# stopped and done once more (and only once); a guest that came up is never
# stopped by that limit, however long its script runs. Prints one line per
# wrong outcome; exits 1 if there was one.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

# The fake QEMU. FAKE_PLAN is a list of boots, one word each: "hang" (the
# console stops early, the process waits to be killed), "up:N" (comes up,
# then its script runs N seconds and exits 0). The count of boots so far
# is kept beside the plan.
cat >"$tmp/qemu" <<'EOF'
#!/bin/bash
console= results=
while [ $# -gt 0 ]; do
	case "$1" in
	-serial) console=${2#file:}; shift ;;
	-fsdev) case "$2" in *id=results,*) results=${2#*path=}; results=${results%%,*} ;; esac; shift ;;
	esac
	shift
done
n=$(($(cat "$FAKE_DIR/boots" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_DIR/boots"
read -ra plan <<<"$FAKE_PLAN"
step=${plan[n - 1]:-hang}
case "$step" in
dark) exec sleep 600 ;;
esac
echo "[    2.580000] boot $n" >"$console"
case "$step" in
hang) exec sleep 600 ;;
up:*)
	echo "rrxe-guest: up after 9.1s" >>"$console"
	echo "script of boot $n" >>"$results/output.log"
	sleep "${step#up:}"
	echo 0 >"$results/rc"
	;;
esac
EOF
chmod +x "$tmp/qemu"

# case NAME PLAN LIMIT WANT_RC WANT_BOOTS: vm.sh runs this file as the
# guest's script (the fake never reads it).
case_() {
	local name=$1 plan=$2 limit=$3 want_rc=$4 want_boots=$5 rc boots out=$tmp/$1
	rm -f "$tmp/boots"
	FAKE_DIR=$tmp FAKE_PLAN=$plan RRXE_QEMU=$tmp/qemu RRXE_ACCEL=tcg \
		"$top/scripts/vm.sh" --quiet --timeout 60 --boot-limit "$limit" --out "$out" \
		tests/harness/vm-boot-hang.sh >"$tmp/$name.log" 2>&1
	rc=$?
	boots=$(cat "$tmp/boots" 2>/dev/null || echo 0)
	if [ "$rc" != "$want_rc" ] || [ "$boots" != "$want_boots" ]; then
		echo "$name: exit $rc after $boots boots, want $want_rc after $want_boots: $(tail -n 3 "$tmp/$name.log" | tr '\n' ' ')"
		bad=1
	fi
	# A hung boot is stopped at the limit, not at the 60 s VM timeout.
	secs=$(cat "$out/seconds" 2>/dev/null || echo 999)
	if [ "$secs" -ge 40 ]; then
		echo "$name: took ${secs}s; a hung boot was not stopped at its limit"
		bad=1
	fi
}
case_ up-first "up:0" 3 0 1
case_ hang-then-up "hang up:0" 3 0 2
case_ hang-twice "hang hang up:0" 3 124 2
case_ dark-then-up "dark up:0" 3 0 2
# Up at once, then a script longer than the limit: never stopped.
case_ long-script "up:6" 3 0 1
if "$top/scripts/vm.sh" --boot-limit 0 tests/harness/vm-boot-hang.sh >/dev/null 2>&1; [ $? != 2 ]; then
	echo "bad-limit: --boot-limit 0 is not refused"
	bad=1
fi
[ -f "$tmp/hang-then-up/console.hung.log" ] || { echo "hang-then-up: no console.hung.log kept"; bad=1; }
grep -q "script of boot 2" "$tmp/hang-then-up/output.log" 2>/dev/null ||
	{ echo "hang-then-up: output.log is not the second boot's"; bad=1; }
grep -q "booting once more" "$tmp/hang-then-up.log" ||
	{ echo "hang-then-up: vm.sh did not say it boots once more"; bad=1; }
exit $bad
