#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`: install what is missing, build (or reuse) the release kernel
# and rdma_rrxe.ko, boot a VM and run tests/demo/demo.sh in it.
#
# It prints one line per stage (deps, kernel, module, boot, demo) with the
# seconds it took, the demo's output indented, and a summary naming the
# logs; each stage's own output goes to its log under out/run/. A stage
# that fails prints the end of its log and ends the run (exit non-zero).
#
# The kernel stage shows the build's progress (kernel.sh's lines: minutes,
# steps, what it compiles) as it comes: one updating line on a terminal, a
# line each when the output is captured. Before the boot, a line says if
# the VM runs under TCG (no usable KVM) and what that costs.
#
# RRXE_RUN_DRY=1 prints the stages and the summary without running them
# (scripts/check.sh tests the output that way, without booting a VM); with
# it, RRXE_RUN_KERNEL=CMD runs CMD as the kernel stage (a stand-in that
# prints progress lines), and RRXE_ACCEL=tcg|kvm (scripts/accel.sh) picks
# the accelerator without a probe.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
cd "$top"
dry=${RRXE_RUN_DRY:-0}
logs=out/run
vmout=$logs/vm
t0=$(date +%s)
n=0
[ "$dry" = 1 ] || { rm -rf "$logs"; mkdir -p "$logs"; }

# stage NAME LOG CMD...: run CMD with its output in LOG, on one line
stage() {
	local name=$1 log=$2 t rc=0
	shift 2
	n=$((n + 1))
	t=$(date +%s)
	printf '[%d/5] %-7s ' "$n" "$name"
	[ "$dry" = 1 ] || "$@" >"$log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAILED ($(( $(date +%s) - t ))s); the end of $log:"
		tail -n 20 "$log" | sed 's/^/  | /'
		exit 1
	fi
	echo "ok ($(( $(date +%s) - t ))s)"
}

# stage_kernel LOG CMD...: as stage, showing CMD's progress lines
# ("kernel: [VARIANT] ...") while it runs.
stage_kernel() {
	local log=$1 t rc=0 pid line last= shown=0
	shift
	n=$((n + 1))
	t=$(date +%s)
	printf '[%d/5] %-7s ' "$n" kernel
	if [ "$dry" = 1 ] && [ -z "${RRXE_RUN_KERNEL:-}" ]; then
		echo "ok (0s)"
		return 0
	fi
	# (A dry run's stand-in logs to a file of its own: nothing in out/run.)
	[ -z "${RRXE_RUN_KERNEL:-}" ] || { set -- $RRXE_RUN_KERNEL; log=$(mktemp); }
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		line=$(grep '^kernel: \[' "$log" 2>/dev/null | tail -n 1)
		[ -n "$line" ] && [ "$line" != "$last" ] || continue
		last=$line shown=1
		if [ -t 1 ]; then
			printf '\r\033[K[%d/5] %-7s %s' "$n" kernel "${line#kernel: }"
		else
			printf '\n  | %s' "${line#kernel: }"
		fi
	done
	wait "$pid" || rc=$?
	if [ "$shown" = 1 ]; then
		if [ -t 1 ]; then printf '\r\033[K'; else printf '\n'; fi
		printf '[%d/5] %-7s ' "$n" kernel
	fi
	if [ "$rc" != 0 ]; then
		echo "FAILED ($(( $(date +%s) - t ))s); the end of $log:"
		tail -n 20 "$log" | sed 's/^/  | /'
		exit 1
	fi
	[ -z "${RRXE_RUN_KERNEL:-}" ] || rm -f "$log"
	echo "ok ($(( $(date +%s) - t ))s)"
}

# One line if the VM will run without KVM.
tcg_notice() {
	[ "$(scripts/accel.sh release 2>/dev/null)" = tcg ] || return 0
	local why="no /dev/kvm here"
	[ -e /dev/kvm ] && why="KVM failed its probe boot here"
	echo "   the VM runs under TCG, QEMU's software emulation ($why): the demo takes minutes, not seconds"
}

# The VM: boot until the demo writes its first line, then stream the demo.
boot_and_demo() {
	local t vm rc=0
	n=$((n + 1))
	t=$(date +%s)
	printf '[%d/5] %-7s ' "$n" boot
	if [ "$dry" = 1 ]; then
		echo "ok (0s)"
		printf '[%d/5] %-7s ok (0s)\n' $((n + 1)) demo
		return 0
	fi
	scripts/vm.sh --variant release --quiet --out "$vmout" --timeout 900 tests/demo/demo.sh \
		>"$logs/vm.log" 2>&1 &
	vm=$!
	while kill -0 "$vm" 2>/dev/null && [ ! -s "$vmout/output.log" ]; do sleep 1; done
	if [ -s "$vmout/output.log" ]; then
		echo "ok ($(( $(date +%s) - t ))s)"
		t=$(date +%s)
		tail -n +1 -F --pid="$vm" "$vmout/output.log" 2>/dev/null | sed 's/^/  | /'
	fi
	wait "$vm" || rc=$?
	if [ "$n" = 4 ] && [ ! -s "$vmout/output.log" ]; then
		echo "FAILED ($(( $(date +%s) - t ))s); the end of $logs/vm.log:"
		tail -n 20 "$logs/vm.log" | sed 's/^/  | /'
		return 1
	fi
	n=$((n + 1))
	if [ "$rc" = 0 ]; then
		printf '[%d/5] %-7s ok (%ds)\n' "$n" demo $(( $(date +%s) - t ))
	else
		printf '[%d/5] %-7s FAILED (%ds, exit %d); %s\n' "$n" demo $(( $(date +%s) - t )) "$rc" \
			"$(tail -n 3 "$logs/vm.log" | tr '\n' ' ')"
	fi
	return "$rc"
}

echo "make run: rrxe on the release guest kernel (stage logs in $logs/)"
stage deps "$logs/deps.log" scripts/deps.sh
stage_kernel "$logs/kernel.log" scripts/kernel.sh build release
stage module "$logs/module.log" scripts/module.sh release
tcg_notice
boot_and_demo
rc=$?
echo "== make run: deps, kernel, module, boot and demo in $(( $(date +%s) - t0 ))s;" \
	"the demo $([ "$rc" = 0 ] && echo passed || echo FAILED)"
echo "   module: out/release/drivers/infiniband/sw/rrxe/rdma_rrxe.ko;" \
	"kernel: $(scripts/kernel.sh path release)"
echo "   logs: $logs/{deps,kernel,module,vm}.log; the guest's: $vmout/output.log (demo)," \
	"$vmout/console.log (kernel log)"
exit "$rc"
