#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: build what is missing, then run every test, host and guest.
# Each test adds one line to out/check/results.txt (PASS/FAIL/SKIP name);
# the last line printed is "N passed, N failed, N skipped", and the exit
# status is non-zero if anything failed.
#
#   RRXE_GUEST_TESTS="device ..."  run only these guest scripts
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
cd "$top"
res=out/check/results.txt
rm -rf out/check
mkdir -p out/check
: >"$res"
start=$(date +%s)
# The host's listening sockets (address:port and program), before any VM:
# compared at the end (host/no-new-listening-socket-on-host).
listeners() { ss -Hltunp 2>/dev/null | awk '{ sub(/,pid=[0-9]+,fd=[0-9]+/, ""); print $1, $5, $7 }' | sort -u; }
listeners >out/check/listeners-before

pass() { echo "PASS $1" >>"$res"; echo "ok   $1"; }
fail() { echo "FAIL $1: ${2:-}" >>"$res"; echo "FAIL $1: ${2:-}"; }
stage() { echo "== $* ($(( $(date +%s) - start ))s)"; }

summary() {
	local p f s
	p=$(grep -c '^PASS' "$res")
	f=$(grep -c '^FAIL' "$res")
	s=$(grep -c '^SKIP' "$res")
	if [ "$f" != 0 ]; then
		echo "== failures:"
		grep '^FAIL' "$res"
	fi
	echo "== took $(( $(date +%s) - start ))s; results in $res"
	echo "$p passed, $f failed, $s skipped"
	[ "$f" = 0 ]
	exit
}

stage "kernel (debug)"
if ! scripts/kernel.sh build debug >/dev/null; then
	fail host/kernel-build "debug kernel did not build"
	summary
fi

stage "host: module build"
if scripts/module.sh debug >out/check/module-build.log 2>&1; then
	pass host/module-build-no-warnings
else
	fail host/module-build-no-warnings "see out/check/module-build.log"
	tail -n 30 out/check/module-build.log
	summary
fi

# The module compiles the protocol crate in (as `rrxe::proto`): its parse
# and ICRC code must be in the .ko.
ko=out/debug/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
syms=$(llvm-nm "$ko" 2>/dev/null)
if grep -q '4rrxe5proto5parse' <<<"$syms" && grep -q '4rrxe5proto4icrc' <<<"$syms"; then
	pass host/module-includes-proto
else
	fail host/module-includes-proto "no rrxe::proto::{parse,icrc} symbols in $ko"
fi

# Every module parameter is in README.md's table, and the table names no
# other (tests' knobs and counts live in debugfs, rdma/debugfs.rs).
params=$(modinfo -p "$ko" 2>/dev/null | sed 's/:.*//' | sort)
readme=$(sed -n 's/^| `\([a-z_0-9]*\)[=`].*/\1/p' README.md | sort)
if [ -n "$params" ] && [ "$params" = "$readme" ]; then
	pass host/readme-lists-every-module-parameter
else
	fail host/readme-lists-every-module-parameter \
		"modinfo -p: $(echo $params); README.md's table: $(echo $readme)"
fi

# make install into a root that holds the debug kernel's own modules (as a
# distribution's /lib/modules/KVER does), and the udev rule of make
# install-link; the device lane loads the module from there with modprobe,
# by the link's alias and by the rule (tests/guest/device.sh, "install").
stage "host: make install"
rm -rf out/install
if cp -a "$(cat out/debug/kernel-dir)/modroot" out/install &&
	make --no-print-directory install DESTDIR=out/install >out/check/install.log 2>&1 &&
	make --no-print-directory install-link DESTDIR=out/install NETDEV=vinst0 LINK=rrxe9 \
		>>out/check/install.log 2>&1 &&
	grep -q '^updates/rdma_rrxe.ko:' out/install/lib/modules/*/modules.dep &&
	grep -q '^alias rdma-link-rrxe rdma_rrxe$' out/install/lib/modules/*/modules.alias; then
	pass host/make-install-into-destdir
else
	fail host/make-install-into-destdir "$(tail -n 5 out/check/install.log)"
fi

# A current rdma-core beside the system's 44 (scripts/rdmacore.sh: built
# from Debian's source package, cached outside the repository like the
# kernel), for the second half of the pyverbs lane.
stage "host: current rdma-core"
if scripts/rdmacore.sh build >out/check/rdmacore.log 2>&1; then
	pass host/current-rdma-core-built
else
	fail host/current-rdma-core-built "$(tail -n 5 out/check/rdmacore.log)"
fi

stage "host: guest test programs"
# (Built here once, for every guest; each guest test also reports its own
# program's build as its setup/build check.)
if scripts/testprogs.sh >out/check/testprogs.log 2>&1 && ! ls out/tests/*.err >/dev/null 2>&1; then
	pass host/test-programs-build
else
	fail host/test-programs-build "$(cat out/check/testprogs.log)"
fi

# `make KDIR=DIR` (scripts/kdir.sh): its build against the cached release
# kernel as if it were the user's is DKMS's (tests/kbuild/dkms.sh: dkms
# build runs make KDIR=, and the module's vermagic must name that kernel);
# here, against a tree holding only that .config less two options the
# module needs: that must fail naming both, before any compiler runs.
kdir_checks() {
	local k t out
	k=$(scripts/kernel.sh path release)
	[ -f "$k/Module.symvers" ] || k=$(scripts/kernel.sh path debug)
	t=$(mktemp -d)
	grep -v '^CONFIG_NET_UDP_TUNNEL=\|^CONFIG_INFINIBAND_USER_ACCESS=' "$k/.config" >"$t/.config"
	if out=$(make --no-print-directory KDIR="$t" 2>&1); then
		fail host/kdir-names-missing-options "make KDIR= passed with options missing"
	elif grep -q 'CONFIG_NET_UDP_TUNNEL' <<<"$out" && grep -q 'CONFIG_INFINIBAND_USER_ACCESS' <<<"$out" &&
		! grep -qE '^ *(CC|RUSTC|BINDGEN|LD) ' <<<"$out"; then
		pass host/kdir-names-missing-options
	else
		fail host/kdir-names-missing-options "$out"
	fi
	rm -rf "$t"
}

# In-tree (scripts/intree.sh, tests/kbuild/intree.sh): applied into the
# cached kernel source under an overlay, offered by Kconfig, compiled by
# the kernel's build as a module (left in out/intree/ for kverbs.sh, which
# runs after the host gates and loads it) and built in.
# DKMS (tests/kbuild/dkms.sh): dkms.conf through dkms add, build,
# install and remove against the KDIR checks' tree, in out/dkms/ only.
# kbuild_test SCRIPT OUT N: its PASS/FAIL lines as host/..., and a failure
# if it printed fewer than N (it stopped early).
kbuild_test() {
	local line rest n=0 o=out/check/$(basename "$1" .sh).out
	"$1" "$2" >"$o" 2>&1
	while IFS= read -r line; do
		case $line in
		'PASS '*) pass "host/${line#PASS }"; n=$((n + 1)) ;;
		'FAIL '*) rest=${line#FAIL }; fail "host/${rest%%: *}" "${rest#*: }"; n=$((n + 1)) ;;
		esac
	done <"$o"
	[ "$n" -ge "$3" ] || fail "host/$(basename "$1" .sh)/completed" "$(tail -n 5 "$o")"
}

# The front door: make help lists every target of the Makefile;
# scripts/accel.sh prints its answer and nothing else, also when the KVM
# probe's QEMU aborts (a stand-in QEMU that does, the cache bypassed);
# scripts/run.sh prints its five stages and the summary (a dry run: no VM).
front_door_checks() {
	local targets missing= t o e
	targets=$(sed -n 's/^\([a-z][a-z-]*\):.*/\1/p' Makefile)
	o=$(make --no-print-directory help 2>&1)
	for t in $targets; do grep -q "^  make $t " <<<"$o" || missing+=" $t"; done
	for t in VARIANT KDIR; do grep -q "^  $t=" <<<"$o" || missing+=" $t="; done
	if [ -z "$missing" ]; then pass host/make-help-lists-targets; else fail host/make-help-lists-targets "missing:$missing"; fi
	# make install without KDIR means the guest kernel's module: it is
	# refused unless it goes into a DESTDIR (nothing is built or written).
	if o=$(make --no-print-directory install KDIR= DESTDIR= 2>&1); then
		fail host/make-install-needs-kdir-or-destdir "make install without KDIR or DESTDIR succeeded"
	elif grep -q 'give KDIR=' <<<"$o"; then
		pass host/make-install-needs-kdir-or-destdir
	else
		fail host/make-install-needs-kdir-or-destdir "$(tail -n 2 <<<"$o")"
	fi

	t=$(mktemp -d)
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo "QEMU emulator version 0.0"; exit 0; }\necho qemu-noise >&2\nkill -ABRT $$\n' \
		>"$t/qemu-system-x86_64"
	chmod +x "$t/qemu-system-x86_64"
	: >"$t/kvm"
	PATH="$t:$PATH" RRXE_ACCEL_CACHE=0 RRXE_ACCEL_KVM="$t/kvm" RRXE_CACHE="$t/cache" \
		scripts/accel.sh release >"$t/out" 2>"$t/err"
	if [ "$(cat "$t/out")" = tcg ] && [ ! -s "$t/err" ] && [ ! -e "$t/cache" ]; then
		pass host/accel-prints-only-its-answer
	else
		fail host/accel-prints-only-its-answer "stdout '$(cat "$t/out")', stderr '$(cat "$t/err")'"
	fi
	rm -rf "$t"

	# Without rustup (its ~/.cargo/bin off PATH), deps.sh still passes and
	# the cargo it leaves is Debian's, of the same release as the rustc
	# the kernel builds with (cargo-web, rustc-web).
	o=$(env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin scripts/deps.sh 2>&1 &&
		env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c 'command -v cargo; cargo --version' 2>&1)
	e=$(/usr/bin/rustc --version 2>&1 | sed -n 's/^rustc \([0-9]*\.[0-9]*\)\..*/\1/p')
	if grep -q '^deps: ok$' <<<"$o" && grep -qx /usr/bin/cargo <<<"$o" && [ -n "$e" ] && grep -q "^cargo $e\." <<<"$o"; then
		pass host/deps-without-rustup
	else
		fail host/deps-without-rustup "rustc $e; $(tail -n 3 <<<"$o" | tr '\n' ' ')"
	fi

	o=$(RRXE_RUN_DRY=1 RRXE_ACCEL=kvm scripts/run.sh 2>&1)
	if [ "$(grep -cE '^\[[1-5]/5\] (deps|kernel|module|boot|demo) +ok \([0-9]+s\)$' <<<"$o")" = 5 ] &&
		grep -q '^== make run: .* the demo passed' <<<"$o" && grep -q 'logs: out/run/' <<<"$o" &&
		[ "$(wc -l <<<"$o")" = 9 ]; then
		pass host/make-run-prints-stages-and-summary
	else
		fail host/make-run-prints-stages-and-summary "$o"
	fi
	# A kernel build's progress lines reach the (captured) output while it
	# runs, and a VM without KVM is announced: a stand-in kernel stage that
	# prints two progress lines, a second apart.
	t=$(mktemp -d)
	printf '#!/bin/sh\necho "kernel: building" >&2\nsleep 1.5\necho "kernel: [release] 0 min, 120 steps, last: CC a.o" >&2\nsleep 1.5\necho "kernel: [release] 1 min, 480 steps, last: CC b.o" >&2\nsleep 1.5\n' >"$t/kernel"
	chmod +x "$t/kernel"
	o=$(RRXE_RUN_DRY=1 RRXE_ACCEL=tcg RRXE_RUN_KERNEL="$t/kernel" scripts/run.sh 2>&1)
	if grep -qx '  | \[release\] 0 min, 120 steps, last: CC a.o' <<<"$o" &&
		grep -qx '  | \[release\] 1 min, 480 steps, last: CC b.o' <<<"$o" &&
		grep -qE '^\[2/5\] kernel +ok \([0-9]+s\)$' <<<"$o" &&
		grep -q '^   the VM runs under TCG' <<<"$o"; then
		pass host/make-run-shows-kernel-progress-and-tcg
	else
		fail host/make-run-shows-kernel-progress-and-tcg "$o"
	fi
	rm -rf "$t"
}

# make bench's chart: report.py on the committed fixture of results
# (tests/bench/fixture) draws bench.png with matplotlib and the series the
# results hold (tests/bench/chart-check.py); once as committed (with the
# siw slot, and the wire part's figures from its two VMs' fixture, so
# that the chart shows both topologies) and once without the siw slot's
# lines and the wire part (BENCH_SIW=0, BENCH_WIRE=0).
bench_chart_check() {
	local d=out/check/bench-fixture out v
	for v in siw nosiw; do
		rm -rf "$d-$v"
		mkdir -p "$d-$v"
		cp -r tests/bench/fixture/. "$d-$v/"
		# With siw, the wire part's figures too (its fixture has siw).
		if [ $v = siw ]; then
			/usr/bin/python3 tests/bench/wire.py "$d-$v" >/dev/null 2>&1 || true
		else
			sed -i '/ slot=S /d; s/ S=siw / /' "$d-$v/vm/raw.txt"
			rm -rf "$d-$v/wire-a" "$d-$v/wire-b"
		fi
		if ! out=$(/usr/bin/python3 tests/bench/report.py "$d-$v" 2>&1 >/dev/null); then
			fail host/bench-chart-by-matplotlib "$v: report.py: $out"
			return
		elif ! out=$(/usr/bin/python3 tests/bench/chart-check.py "$d-$v" $([ $v = siw ] && echo --wire) 2>&1); then
			fail host/bench-chart-by-matplotlib "$v: $out"
			return
		fi
	done
	pass host/bench-chart-by-matplotlib
}

# make bench's table judges issue 19's goals from the figures: on the
# fixture as committed, and changed to meet and to miss each one
# (tests/bench/goals-check.py).
bench_goals_check() {
	local out
	if out=$(/usr/bin/python3 tests/bench/goals-check.py out/check/bench-goals 2>&1); then
		pass host/bench-goals-judged-from-figures
	else
		fail host/bench-goals-judged-from-figures "$out"
	fi
}

# make bench's wire part: tests/bench/wire.py on the committed fixture of
# two VMs' WIRE lines (tests/bench/fixture/wire-a, wire-b): medians, a
# failed round left out and shown, ratios (latency's the other way), CPU
# per GiB on the side that sends and the side that receives, 120 columns.
bench_wire_check() {
	local out
	if out=$(/usr/bin/python3 tests/bench/wire.py --selftest 2>&1); then
		pass host/bench-wire-figures
	else
		fail host/bench-wire-figures "$out"
	fi
}

# The source gates and proto's host tests need neither the VMs nor each
# other's output: they run beside the first pair of VMs (the two-VM ulp
# test, whose VMs wait for timeouts a quarter of their time), their output
# kept in out/check/host-gates.out and printed when the guests are done.
host_gates() {
	stage "host: unsafe audit"
	if out=$(scripts/audit-unsafe.py 2>&1); then
		pass host/unsafe-only-in-rdma-with-safety-comments
	else
		fail host/unsafe-only-in-rdma-with-safety-comments "$out"
	fi
	if out=$(scripts/audit-unsafe.py --lints 2>&1); then
		pass host/compiler-denies-unsafe-outside-rdma
	else
		fail host/compiler-denies-unsafe-outside-rdma "$out"
	fi

	stage "host: source gates (rustfmt, clippy, function length, module graph)"
	if out=$(scripts/lint.sh fmt 2>&1); then
		pass host/rustfmt-and-line-width
	else
		fail host/rustfmt-and-line-width "$(head -n 40 <<<"$out")"
	fi
	if scripts/lint.sh clippy >out/check/clippy.log 2>&1; then
		pass host/clippy-no-warnings
	else
		fail host/clippy-no-warnings "see out/check/clippy.log"
		grep -A8 -E '^(warning|error)' out/check/clippy.log | head -n 40
	fi

	if out=$(scripts/lint.sh size 2>&1); then
		pass host/no-function-over-80-lines
	else
		fail host/no-function-over-80-lines "$out"
	fi
	if out=$(scripts/lint.sh graph 2>&1); then
		pass host/module-graph-acyclic
	else
		fail host/module-graph-acyclic "$(grep '^cycle' <<<"$out")"
	fi
	if out=$(scripts/lint.sh words 2>&1); then
		pass host/rdma-hands-up-typed-words
	else
		fail host/rdma-hands-up-typed-words "$out"
	fi
	if out=$(scripts/lint.sh checkpatch 2>&1); then
		pass host/kernel-c-passes-checkpatch
	else
		fail host/kernel-c-passes-checkpatch "$(head -n 40 <<<"$out")"
	fi

	stage "host: cargo test (proto)"
	if [ -f drivers/infiniband/sw/rrxe/proto/Cargo.toml ]; then
		(cd drivers/infiniband/sw/rrxe/proto && cargo test --release 2>&1) >out/check/cargo-test.log
		crc=$?
		n=0
		while read -r name result; do
			n=$((n + 1))
			case "$result" in
			ok) pass "host/proto/$name" ;;
			ignored) echo "SKIP host/proto/$name: ignored" >>"$res" ;;
			*) fail "host/proto/$name" "$result" ;;
			esac
		done < <(sed -n 's/^test \(.*\) \.\.\. \([a-zA-Z]*\).*$/\1 \2/p' out/check/cargo-test.log)
		if [ "$crc" != 0 ] || [ "$n" = 0 ]; then
			fail host/proto/cargo-test "cargo test exited $crc with $n tests; see out/check/cargo-test.log"
			tail -n 30 out/check/cargo-test.log
		fi
	fi

	# The harness's one allowance for a tool's own bug (rping 44's exit
	# race, tests/traffic/lib.sh): exactly which client exits it passes.
	stage "host: the harness's rping exit-race allowance"
	if out=$(tests/traffic/race-check.sh 2>&1); then
		pass host/rping-teardown-race-only
	else
		fail host/rping-teardown-race-only "$out"
	fi

	# vm.sh's one retry for a boot that hangs (with a fake QEMU).
	stage "host: the VM harness's hung-boot retry"
	if out=$(tests/harness/vm-boot-hang.sh 2>&1); then
		pass host/vm-hung-boot-retried-once
	else
		fail host/vm-hung-boot-retried-once "$out"
	fi

	stage "host: make KDIR=, in-tree, DKMS, the front door, the bench chart"
	kdir_checks
	kbuild_test tests/kbuild/intree.sh out/intree 4
	kbuild_test tests/kbuild/dkms.sh out/dkms 7
	# Documentation/features.md: every "yes" of rrxe names checks that
	# its test files hold (after the guests, that they passed: below).
	if out=$(/usr/bin/python3 tests/features-check.py 2>&1); then
		pass host/features-table-proven
	else
		fail host/features-table-proven "$out"
	fi
	front_door_checks
	bench_chart_check
	bench_goals_check
	bench_wire_check
}

# Guest tests, debug kernel. One VM per script of tests/guest/ and one
# pair of linked VMs per script of tests/twohost/ (scripts/vm2.sh; A runs
# it with role a, B with role b). The pairs run one at a time, longest
# first (a pair is two VMs of one vCPU each, and busy: run beside another
# pair, interop took twice as long and a connection timed out), then the
# single VMs RRXE_CHECK_LANES (2) at a time, longest first (each script's
# "# vm-seconds: N" line: about how long it runs in make check), so that
# the lanes end close together. Beside the first pair run the host gates,
# and beside a pair the single VMs whose script names it in a line
# "# vm-beside: twohost/NAME" (one after the other): a small single VM
# uses the CPU that the two-VM ulp test leaves idle while it waits for
# its faults' timeouts. The results are reported in name order once all
# are done.
guest_tests=${RRXE_GUEST_TESTS-$(cd tests/guest && ls [a-z]*.sh | grep -v '^lib.sh$' | sed 's/\.sh$//')}
twohost_tests=${RRXE_TWOHOST_TESTS-$(cd tests/twohost 2>/dev/null && ls [a-z]*.sh | sed 's/\.sh$//')}
lanes=${RRXE_CHECK_LANES:-2}
vmt=${RRXE_VM_TIMEOUT:-1500}
# The single VMs' memory (a script's "# vm-options: --mem ..." wins): 1 GiB,
# not vm.sh's 2, because a kmemleak scan walks every page's struct page:
# two scans, which every VM does once, took 20 s with 2 GiB and 13 s with
# 1. (A pair gets vm2.sh's 1.5 GiB unless its script asks otherwise.)
vmmem=${RRXE_CHECK_MEM:-1G}

# A script may ask for VM options in a line "# vm-options: ..." (twodev.sh
# asks for two vCPUs; see its header; a pair's script, for options of
# scripts/vm2.sh such as --mem).
run_guest() {
	local g=$1 vmout=out/check/vm-$1 opts
	read -ra opts <<<"$(sed -n 's/^# vm-options: //p' "tests/guest/$g.sh")"
	scripts/vm.sh --variant debug --quiet --out "$vmout" --timeout "$vmt" --mem "$vmmem" "${opts[@]}" "tests/guest/$g.sh" \
		>"$vmout.log" 2>&1
	echo $? >"$vmout.rc"
}
run_twohost() {
	local g=$1 vmout=out/check/vm2-$1 opts
	read -ra opts <<<"$(sed -n 's/^# vm-options: //p' "tests/twohost/$g.sh")"
	scripts/vm2.sh --variant debug --quiet --out "$vmout" --timeout "$vmt" "${opts[@]}" \
		"tests/twohost/$g.sh" "tests/twohost/$g.sh" >"$vmout.log" 2>&1
	echo $? >"$vmout.rc"
}
report() {
	local name=$1 vmout=$2 rc
	rc=$(cat "$vmout.rc" 2>/dev/null || echo 1)
	stage "guest: $name"
	[ -f "$vmout/results.txt" ] && cat "$vmout/results.txt" >>"$res" &&
		sed 's/^/   /' "$vmout/results.txt" | grep -v '^   PASS' || true
	case $rc in
	0) pass "vm/$name/exit-and-kernel-log-clean" ;;
	124) fail "vm/$name/exit-and-kernel-log-clean" "guest timed out; $vmout/console.log" ;;
	125) fail "vm/$name/exit-and-kernel-log-clean" "kernel log shows a report; $vmout/console.log" ;;
	*) fail "vm/$name/exit-and-kernel-log-clean" "script exited $rc; $vmout.log, $vmout/output.log" ;;
	esac
	echo "   ($(cat "$vmout/seconds" 2>/dev/null)s in the VM, $(cat "$vmout/cpu-seconds" 2>/dev/null) CPU-s)"
}

stage "guest: $(echo $twohost_tests $guest_tests | wc -w) runs, $lanes at a time"
vm_seconds() { sed -n 's/^# vm-seconds: \([0-9]*\).*/\1/p' "$1" | head -n 1; }
beside_of() { sed -n 's/^# vm-beside: twohost\/\([a-z0-9_-]*\).*/\1/p' "tests/guest/$1.sh" | head -n 1; }
pair_order=$(for g in $twohost_tests; do echo "$(vm_seconds "tests/twohost/$g.sh") $g"; done |
	sort -k1,1nr -k2,2 | awk '{ print $NF }')
gates=1 beside=
for g in $pair_order; do
	echo "   start twohost/$g ($(( $(date +%s) - start ))s)"
	run_twohost "$g" &
	pair=$!
	companions=$(for s in $guest_tests; do [ "$(beside_of "$s")" = "$g" ] && echo "$s"; done)
	beside+=" $(echo $companions)"
	(
		[ $gates = 1 ] && host_gates >out/check/host-gates.out 2>&1
		for s in $companions; do
			echo "   start $s beside twohost/$g ($(( $(date +%s) - start ))s)"
			run_guest "$s"
		done
	) &
	wait $pair $!
	gates=0
done
[ $gates = 1 ] && host_gates >out/check/host-gates.out 2>&1
start_order=$(for g in $guest_tests; do
	[[ " $beside " = *" $g "* ]] || echo "$(vm_seconds "tests/guest/$g.sh") $g"
done | sort -k1,1nr -k2,2 | awk '{ print $NF }')
running=0
for g in $start_order; do
	if [ "$running" -ge "$lanes" ]; then
		wait -n
		running=$((running - 1))
	fi
	echo "   start $g ($(( $(date +%s) - start ))s)"
	run_guest "$g" &
	running=$((running + 1))
	sleep 2
done
wait
cat out/check/host-gates.out
for g in $twohost_tests; do
	# The results are recorded by A (and B for its own checks).
	for r in a b; do
		[ -f "out/check/vm2-$g-$r/results.txt" ] && cat "out/check/vm2-$g-$r/results.txt" >>"$res" &&
			sed 's/^/   /' "out/check/vm2-$g-$r/results.txt" | grep -v '^   PASS' || true
	done
	stage "guest: twohost/$g"
	echo "   ($(cat "out/check/vm2-$g-a/seconds" 2>/dev/null)s in the VMs, $(cat "out/check/vm2-$g-a/cpu-seconds" 2>/dev/null) + $(cat "out/check/vm2-$g-b/cpu-seconds" 2>/dev/null) CPU-s)"
	rc=$(cat "out/check/vm2-$g.rc" 2>/dev/null || echo 1)
	case $rc in
	0) pass "vm/twohost/$g/exit-and-kernel-log-clean" ;;
	*) fail "vm/twohost/$g/exit-and-kernel-log-clean" "exit $rc; out/check/vm2-$g.log, out/check/vm2-$g-{a,b}/" ;;
	esac
done
for g in $guest_tests; do
	report "$g" "out/check/vm-$g"
done
# The packets of rrxe's trains as the stack segmented them (captured in
# twodev's guest; see its ICRC section): standard RoCEv2 frames whose
# ICRCs the proto crate's parser checks (examples/pcap_check.rs, built by
# its cargo test above).
# ($guest_tests is one name per line: joined by spaces for the match.)
if [[ " $(echo $guest_tests) " = *" twodev "* ]]; then
	pcap_check=drivers/infiniband/sw/rrxe/proto/target/release/examples/pcap_check
	if out=$("$pcap_check" out/check/vm-twodev/trains.pcap 1024 300 2>&1); then
		pass host/train-segments-parse
	else
		fail host/train-segments-parse "$out"
	fi
	echo "   train segments: $(tail -n 1 <<<"$out")"
fi
# A full run: every check features.md cites for a "yes" passed in it.
if [ -z "${RRXE_GUEST_TESTS+set}" ] && [ -z "${RRXE_TWOHOST_TESTS+set}" ]; then
	if out=$(/usr/bin/python3 tests/features-check.py --results "$res" 2>&1); then
		pass host/features-table-checks-passed
	else
		fail host/features-table-checks-passed "$out"
	fi
fi
# The host keeps no service of the guests' (scripts/deps.sh disables what
# its install enabled, and leaves what was enabled before it), and no VM
# or test leaves a socket listening on the host.
enabled=$(scripts/deps.sh --enabled-units)
before=$(cat "${RRXE_CACHE:-$HOME/.cache/rrxe}/host-units-before" 2>/dev/null || true)
extra=$(comm -23 <(sort <<<"$enabled" | sed '/^$/d') <(sort <<<"$before" | sed '/^$/d'))
if [ -z "$extra" ]; then
	pass host/guest-services-not-enabled-on-host
else
	fail host/guest-services-not-enabled-on-host "enabled: $(tr '\n' ' ' <<<"$extra")"
fi
new=$(comm -13 out/check/listeners-before <(listeners))
if [ -z "$new" ]; then
	pass host/no-new-listening-socket-on-host
else
	fail host/no-new-listening-socket-on-host "$(tr '\n' ';' <<<"$new")"
fi
# Where the guests' time went: each check's seconds since the check
# before it in its script (tests/guest/lib.sh writes times.txt).
if ls out/check/vm*/times.txt >/dev/null 2>&1; then
	stage "slowest checks (seconds since the one before, in its VM)"
	cat out/check/vm*/times.txt | sort -k1,1nr | head -n 20 |
		awk '{ printf "   %6.1f %s\n", $1 / 1000, $2 }'
fi

summary
