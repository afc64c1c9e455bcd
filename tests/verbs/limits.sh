# SPDX-License-Identifier: GPL-2.0
#
# Resource limits (tests/verbs/res_limits.c), sourced by tests/guest/fuzz.sh,
# which runs them in its VM after the fuzzer, on the device it set up:
#
#   limits_run DEV GID_INDEX  (res_limits built by scripts/testprogs.sh)
#
# - limits/objects/T/...: PDs, CQs, QPs, MRs, MWs, SRQs and AHs are created
#   until the device's advertised maximum (ibv_devinfo -v: max_pd, max_cq,
#   max_qp, max_mr, max_mw, max_srq, max_ah), a failure (only ENOMEM is
#   fine), the cap or the memory guard, then all destroyed, twice, by user
#   nobody under a small RLIMIT_MEMLOCK: CQs, QPs, MRs and SRQs are charged
#   to it, so ENOMEM must stop them within the limit and their charge must
#   come back (VmPin) after the destroys; the second round must create as
#   many as the first and one beyond a maximum is refused;
# - limits/memlock/...: the queue memory of one unprivileged process is
#   charged to its RLIMIT_MEMLOCK: QPs, CQs and SRQs at the advertised
#   maxima and a CQ resized to them are refused with nothing allocated;
#   with the limit raised the max_qp_wr QP works, its charge covers what
#   the kernel vmalloc'ed and goes back on destroy; under 64 MiB many QPs
#   stop with ENOMEM and the kernel allocated no more than that; under
#   8 MiB, CQs whose rings the process maps a second time before destroying
#   them stay charged until it unmaps them (ENOMEM within the limit);
# - limits/resources-released: restrack lists for the device what it
#   listed before (the caller's kmemleak scan covers these too).
# Environment:
#   LIMITS_CAP          objects of an uncharged kind (pd, mw, ah) per round
#                       (default 2000; 0: up to the device maxima, which the
#                       memory guard stops for the kinds whose maxima do not
#                       fit in the VM's memory)
#   LIMITS_MEMLOCK_KIB  RLIMIT_MEMLOCK of the object rounds (default 1024;
#                       0: run them as root, the charged kinds capped by
#                       LIMITS_CAP as the others)
# Needs tests/guest/lib.sh (run_helper) and tests/traffic/lib.sh (TR).

limits_run() {
	local dev=$1 g4=$2 cap=${LIMITS_CAP:-2000} memlock=${LIMITS_MEMLOCK_KIB:-1024} uid t0=$SECONDS
	local saved_group=$GROUP
	GROUP=limits
	echo "# limits: device $dev, cap $cap, memlock $memlock KiB"
	if ! tt setup/build prog res_limits; then
		GROUP=$saved_group
		return 1
	fi
	# (A copy in /tmp for the unprivileged run: it need not reach the share.)
	cp $PROGS/res_limits /tmp/res_limits && chmod 0755 /tmp/res_limits
	# librxe maps each CQ, SRQ and queue of a QP: 2^20 QPs need more than
	# the default 65530 mappings.
	[ "$cap" = 0 ] && sysctl -qw vm.max_map_count=4194304
	limits_resources() {
		local r
		for r in pd cq qp mr srq; do
			rdma resource show "$r" 2>/dev/null | grep -w "$dev" | sed 's/ users [0-9]*//; s/ [sr]q-psn [0-9]*//g'
		done | sort
	}
	limits_same() { diff -q $TR/limits.before <(limits_resources) >/dev/null && [ "$(rdma resource show | grep -w "$dev:")" = "$(cat $TR/limits.sum)" ]; }
	limits_resources >$TR/limits.before
	rdma resource show | grep -w "$dev:" >$TR/limits.sum
	if [ "$memlock" != 0 ]; then
		uid=$(id -u nobody)
		run_helper objects 1800 bash -c "ulimit -l $memlock && exec setpriv --reuid=$uid --regid=$uid --clear-groups \
			/tmp/res_limits -n $cap $dev $g4 limits"
	else
		run_helper objects 1800 /tmp/res_limits -n "$cap" "$dev" "$g4" limits
	fi
	echo "# limits: objects after $((SECONDS - t0)) s"
	run_helper memlock 600 /tmp/res_limits "$dev" "$g4" memlock
	if wait_for 30 limits_same; then
		pass resources-released
	else
		fail resources-released "restrack: $(diff $TR/limits.before <(limits_resources) | grep '^[<>]' | head -n 5 | tr '\n' ' '); summary now '$(rdma resource show | grep -w "$dev:")', before '$(cat $TR/limits.sum)'"
	fi
	echo "# limits: $((SECONDS - t0)) s"
	GROUP=$saved_group
}
