#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host check of rping_teardown_race (tests/traffic/lib.sh): which rping
# client exits it takes as passed. Only rping's own exit race after every
# ping passed; a failed ping, a missing ping, another last line, another
# exit code or another tool keeps its exit code; and `client` keeps the
# order of a client's stdout and stderr lines. Prints one line per wrong
# verdict; exits 1 if there was one.
. "$(dirname "$0")/lib.sh"
CLOG=$(mktemp)
trap 'rm -f "$CLOG"' EXIT
bad=0
# case NAME WANT_RC RC CMD LOG...: LOG lines are the client's output.
case_() {
	local name=$1 want=$2
	RC_C=$3
	local cmd=$4
	shift 4
	printf '%s\n' "$@" >"$CLOG"
	rping_teardown_race "$cmd"
	if [ "$RC_C" != "$want" ]; then
		echo "$name: RC_C $RC_C, want $want"
		bad=1
	fi
}
pings() { local i; for ((i = 0; i < $1; i++)); do echo "ping data: rdma-ping-$i: ABC"; done; }
cmd="rping -c -a 10.0.0.1 -V -v -C 3 -S 5000"
race="rdma_get_cm_event: Bad file descriptor"
tw="unhandled event: RDMA_CM_EVENT_TIMEWAIT_EXIT, ignoring"
mapfile -t p3 < <(pings 3)
mapfile -t p2 < <(pings 2)
case_ race 0 255 "$cmd" "${p3[@]}" "$tw" "$race"
case_ race-in-netns 0 255 "ip netns exec peer $cmd" "${p3[@]}" "$tw" "$race"
case_ race-without-event-line 0 255 "$cmd" "${p3[@]}" "$race"
case_ a-ping-missing 255 255 "$cmd" "${p2[@]}" "$tw" "$race"
case_ mismatch 255 255 "$cmd" "${p2[@]}" "data mismatch!" "rping client failed: -1" "$race"
case_ other-last-line 255 255 "$cmd" "${p3[@]}" "$race" "rping client failed: -1"
case_ other-exit 1 1 "$cmd" "${p3[@]}" "$race"
case_ timeout 124 124 "$cmd" "${p3[@]}" "$race"
case_ passed 0 0 "$cmd" "${p3[@]}"
case_ no-count 255 255 "rping -c -a 10.0.0.1 -V -v" "${p3[@]}" "$race"
case_ not-verbose 255 255 "rping -c -a 10.0.0.1 -V -C 3" "$race"
case_ not-validated 255 255 "rping -c -a 10.0.0.1 -v -C 3" "${p3[@]}" "$race"
case_ server 255 255 "rping -s -a 10.0.0.1 -V -v -C 3" "${p3[@]}" "$race"
case_ other-tool 255 255 "ibv_rc_pingpong -c -C 3 -v" "${p3[@]}" "$race"

# Through `client`, with a stand-in rping whose stdout is a C program's
# (GNU sed's stdio): it prints the pings to stdout, the race's line to
# stderr, and exits 255, so a fully buffered stdout reaches the log after
# the race's line. `client` must line-buffer it: the pings come first and
# the exit is the race's.
rm -f "$CLOG"
FAKE=$(mktemp -d)
trap 'rm -rf "$FAKE"' EXIT
cat >"$FAKE/rping" <<-'EOS'
	#!/bin/bash
	printf '%s\n' "ping data: rdma-ping-0: ABC" "ping data: rdma-ping-1: BCD" \
		"ping data: rdma-ping-2: CDE" "rdma_get_cm_event: Bad file descriptor" |
		exec sed -n -e '$!p' -e '${w /dev/stderr' -e 'Q 255' -e '}'
EOS
chmod +x "$FAKE/rping"
TR=$FAKE
PATH=$FAKE:$PATH client buffered 10 "$cmd"
if [ "$RC_C" != 0 ]; then
	echo "client-line-buffers-stdout: RC_C $RC_C, want 0; log: $(tr '\n' '|' <"$CLOG")"
	bad=1
fi
exit $bad
