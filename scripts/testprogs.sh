#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the guest tests' C programs on the host, into out/tests/, and
# readies rdma-core's pyverbs suite there (out/tests/pyverbs/):
#
#   scripts/testprogs.sh
#
# The guests run the host's root file system, so a program built here runs
# there as is; built in a debug guest under TCG the same program took 8 to
# 35 s of gcc each, a dozen times per `make check`. scripts/vm.sh runs
# this before every boot; a program is rebuilt when it (or its .err) is
# older than its source, a header of tests/verbs, or this script.
# A program that does not build leaves out/tests/NAME.err (the compiler's
# output) instead of out/tests/NAME, and the guest test that needs it
# fails its setup/build check with that output (tests/guest/lib.sh: prog).
# Exit status: 0, also when a program did not build (that is the guest
# test's failure to report); 2 if there is no C compiler.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
dir=$top/out/tests
mkdir -p "$dir"
command -v gcc >/dev/null || { echo "testprogs: no gcc (scripts/deps.sh)" >&2; exit 2; }

# NAME SOURCE LIBS...
progs=(
	"uverbs_fuzz tests/verbs/uverbs_fuzz.c"
	"mcast_mlids tests/verbs/mcast_mlids.c -libverbs"
	"res_limits tests/verbs/res_limits.c -libverbs"
	"object_safety tests/verbs/object_safety.c -libverbs -lpthread"
	"user_bounds tests/verbs/user_bounds.c -libverbs"
	"ring_layout tests/verbs/ring_layout.c -libverbs"
	"rereg_mr tests/verbs/rereg_mr.c -libverbs"
	"sge_keys tests/verbs/sge_keys.c -libverbs"
	"qp_query tests/verbs/qp_query.c -libverbs"
	"sqd_drain tests/verbs/sqd_drain.c -libverbs"
	"revoke_race tests/verbs/revoke_race.c -libverbs"
	"zcopy_unmap tests/verbs/zcopy_unmap.c -libverbs"
	"kpeer_write tests/verbs/kpeer_write.c -libverbs"
	"slow_fault tests/verbs/slow_fault.c -libverbs -lpthread"
	"send_after_error tests/verbs/send_after_error.c -libverbs"
	"recv_cq_full tests/verbs/recv_cq_full.c -libverbs"
	"stale_vlan_av tests/verbs/stale_vlan_av.c -libverbs"
	"odp_mr tests/verbs/odp_mr.c -libverbs -lpthread"
	"flush_wr tests/verbs/flush_wr.c -libverbs"
	"retry_exc tests/verbs/retry_exc.c -libverbs"
	"hostile tests/traffic/hostile.c -libverbs"
	"tdtraffic tests/traffic/tdtraffic.c -libverbs"
	"rdma_verify tests/traffic/rdma_verify.c -libverbs"
	"init_mounts tests/guest/init_mounts.c -static -s"
)

# Two VMs may start at once (make check's lanes): one builds, the other
# waits for it and then finds everything fresh.
exec 9>"$dir/.lock"
flock 9

stale() { # BIN DEP...: BIN is missing or older than a DEP
	local bin=$1 d
	shift
	[ -e "$bin" ] || return 0
	for d in "$@"; do [ "$d" -nt "$bin" ] && return 0; done
	return 1
}

cd "$top"

# rdma-core's pyverbs suite for tests/guest/pyverbs.sh, made ready here:
# unpacked (the package gzips most of its modules) into out/tests/pyverbs/
# and its test ids listed in all-ids (a Python that imports every test
# module: under 1 s here, some 14 s in a debug guest, where run.py used to
# list them four times). Redone when the package or this script changes.
# If it cannot be made, nothing is left and the guest fails
# pyverbs/setup/suite-unpacked.
pkg=/usr/share/doc/rdma-core/tests
pv=$dir/pyverbs
if [ -d "$pkg" ] && stale "$pv/all-ids" "$pkg" "$pkg/run_tests.py"* "$here/testprogs.sh"; then
	rm -rf "$pv"
	mkdir -p "$pv"
	if cp -r "$pkg" "$pv/tests" && gunzip -f "$pv"/tests/*.py.gz &&
		(cd "$pv/tests" && /usr/bin/python3 run_tests.py --list-tests) >"$pv/all-ids.tmp" 2>"$pv/list.log" &&
		grep -q '^tests\.' "$pv/all-ids.tmp"; then
		mv "$pv/all-ids.tmp" "$pv/all-ids"
	else
		echo "testprogs: pyverbs suite not ready: $(tail -n 3 "$pv/list.log" 2>/dev/null)" >&2
		rm -rf "$pv"
	fi
fi

# The current rdma-core's pyverbs suite (scripts/rdmacore.sh, cached
# outside the repository), for the second half of tests/guest/pyverbs.sh:
# its environment in current.env, its tests copied to current/tests and
# their ids listed in current/all-ids with its own pyverbs. Redone when
# the build or this script changes; without a build, nothing is left and
# the guest fails pyverbs/current/setup/ready.
cur=$pv/current
if env_now=$("$here/rdmacore.sh" env 2>/dev/null); then
	if [ "$env_now" != "$(cat "$pv/current.env" 2>/dev/null)" ] || stale "$cur/all-ids" "$here/testprogs.sh"; then
		rm -rf "$cur" "$pv/current.env"
		mkdir -p "$cur"
		src=$(sed -n 's/^RRXE_RDMA_CORE=//p' <<<"$env_now")/src
		if cp -r "$src/tests" "$cur/tests" &&
			(cd "$cur/tests" && LD_LIBRARY_PATH=$src/build/lib PYTHONPATH=$src/build/python \
				/usr/bin/python3 run_tests.py --list-tests) >"$cur/all-ids.tmp" 2>"$cur/list.log" &&
			grep -q '^tests\.' "$cur/all-ids.tmp"; then
			mv "$cur/all-ids.tmp" "$cur/all-ids"
			echo "$env_now" >"$pv/current.env"
		else
			echo "testprogs: current pyverbs suite not ready: $(tail -n 3 "$cur/list.log" 2>/dev/null)" >&2
			rm -rf "$cur"
		fi
	fi
else
	rm -rf "$cur" "$pv/current.env"
fi

# A file for tests/verbs/odp_mr.c's reclaim/ checks (verbs.sh): mapped
# from the repository share (9p, cached, read-only) it is page cache that
# the guest's reclaim drops, without swap, and it is three times the
# memory cgroup that the checks run in. Any bytes do: the program compares
# what its MR reads with pread(2).
odp_file=$dir/odp_file
if [ "$(stat -c %s "$odp_file" 2>/dev/null || echo 0)" != $((24 << 20)) ]; then
	head -c $((24 << 20)) /dev/urandom >"$odp_file.tmp" && mv "$odp_file.tmp" "$odp_file"
fi

for p in "${progs[@]}"; do
	read -r name src libs <<<"$p"
	bin=$dir/$name
	last=$bin # what the last build left: the program or its .err
	[ -e "$bin" ] || [ ! -e "$dir/$name.err" ] || last=$dir/$name.err
	if stale "$last" "$src" tests/verbs/*.h "$here/testprogs.sh"; then
		rm -f "$bin" "$dir/$name.err"
		# shellcheck disable=SC2086 # libs are words
		if gcc -O2 -g -Wall -Werror -o "$bin.tmp" "$src" $libs >"$dir/$name.log" 2>&1; then
			mv "$bin.tmp" "$bin"
			rm -f "$dir/$name.log"
		else
			rm -f "$bin.tmp"
			mv "$dir/$name.log" "$dir/$name.err"
			echo "testprogs: $src does not build (out/tests/$name.err)" >&2
		fi
	fi
done
