# SPDX-License-Identifier: GPL-2.0
#
# Shared by the traffic suites (tests/guest/traffic.sh, interop.sh, loss.sh,
# hostile.sh), sourced after tests/guest/lib.sh:
# - the driver under test (rrxe or C rxe) and its link;
# - GID indexes by kind (IPv4, global IPv6, link-local);
# - `pair`: a server and a client of a tool on this VM, each under
#   `timeout`, the server's readiness awaited (a TCP or rdma_cm listener)
#   rather than guessed;
# - checks of the tools' outputs; each prints nothing when the output is
#   right and one line saying what is wrong otherwise.

TR=/tmp/traffic
mkdir -p "$TR"

# libibverbs loads every provider listed in /etc/libibverbs.d before it
# looks at the devices: 17 dlopen()s over 9p, a second per process under
# TCG. Only librxe can bind here (rxe and rrxe devices report
# RDMA_DRIVER_RXE), so the guest sees a directory that lists only it. The
# host's files are untouched (a bind mount over tmpfs, inside the guest).
rxe_provider_only() {
	mountpoint -q /etc/libibverbs.d && return 0
	mkdir -p /tmp/libibverbs.d &&
		cp /etc/libibverbs.d/rxe.driver /tmp/libibverbs.d/ &&
		mount --bind /tmp/libibverbs.d /etc/libibverbs.d
}

# link_up DRIVER DEV NETDEV: loads the driver's module and adds the link.
link_up() {
	case $1 in
	rrxe) load_rrxe && rdma link add "$2" type rrxe netdev "$3" ;;
	rxe) load_rxe && rdma link add "$2" type rxe netdev "$3" ;;
	*) echo "unknown driver '$1' (rrxe or rxe)" >&2; return 2 ;;
	esac
}

# unload DRIVER: removes the module (its links go with it).
unload() {
	case $1 in
	rrxe) unload_rrxe ;;
	rxe) ! lsmod | grep -q '^rdma_rxe ' || rmmod rdma_rxe ;;
	esac
}

# port_ready DEV: port ACTIVE and an IPv4 GID present.
port_ready() {
	ibv_devinfo -d "$1" 2>/dev/null | grep -q PORT_ACTIVE && gid_index "$1" v4 >/dev/null
}

# gid_of DEV IPV4: the index of DEV's RoCE v2 GID for the address IPV4.
gid_of() {
	gid_index "$1" "=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })"
}

# counter DEV NAME: a port counter of `rdma statistic show link DEV/1`.
counter() {
	rdma statistic show link "$1/1" | tr ' ' '\n' | awk -v n="$2" 'p { print; exit } $0 == n { p = 1 }'
}

# now: seconds since the epoch, to the microsecond; elapsed T0: seconds
# since T0 (a now), to the hundredth. Both without starting a program (see
# nap in tests/guest/lib.sh): each cell calls them four times.
now() { echo "$EPOCHREALTIME"; }
elapsed() {
	local t=$EPOCHREALTIME # (read once: two reads may straddle a second)
	local a=${1%.*} af=${1#*.}000000 b=${t%.*} bf=${t#*.} d
	[[ $1 == *.* ]] || af=000000
	d=$(( (b - a) * 1000000 + 10#$bf - 10#${af:0:6} ))
	printf '%d.%02d' $((d / 1000000)) $((d % 1000000 / 10000))
}

# listening SPEC: tcp:PORT, a TCP socket listening on PORT (IPv4 or IPv6);
# cm, an rdma_cm listener on any device.
listening() {
	case $1 in
	tcp:*)
		# (read, not grep: this runs in polling loops, see nap)
		local port f laddr raddr st
		printf -v port '%04X' "${1#tcp:}"
		for f in /proc/net/tcp /proc/net/tcp6; do
			while read -r _ laddr raddr st _; do
				[[ ${laddr^^} == *:$port && $raddr == *:0000 && $st == 0A ]] && return 0
			done <"$f"
		done
		return 1
		;;
	cm) rdma resource show cm_id 2>/dev/null | grep -q LISTEN ;;
	esac
}

# serve NAME LIMIT READY SERVER_CMD: starts the server in the background
# under `timeout LIMIT` (log in $TR/NAME.server, pid in SPID) and waits at
# most 60 s until READY (see listening; a number: that many seconds).
# Fails, with the server stopped and RC_S set, if it never got ready.
serve() {
	local name=$1 limit=$2 ready=$3 cmd=$4 end t0
	SLOG=$TR/$name.server
	t0=$(now)
	# (CMD is a simple command, parsed by the shell as `bash -c` would,
	# started by the subshell in place of itself: no bash to start.)
	(eval "exec timeout -k 5 $limit $cmd") >"$SLOG" 2>&1 </dev/null 7>&- 8<&- &
	SPID=$!
	end=$((SECONDS + 60))
	case $ready in
	[0-9]*) sleep "$ready" ;;
	*)
		until listening "$ready"; do
			if ! kill -0 $SPID 2>/dev/null || [ $SECONDS -ge $end ]; then
				kill $SPID 2>/dev/null
				wait $SPID
				RC_S=$?
				echo "(server never listened)" >>"$SLOG"
				READY=-1
				return 1
			fi
			nap 0.1
		done
		;;
	esac
	READY=$(elapsed "$t0")
}

# reap [GRACE]: waits for the server (killing it GRACE s, default 10,
# from now if it still runs) and sets RC_S.
reap() {
	local end=$((SECONDS + ${1:-10}))
	while kill -0 $SPID 2>/dev/null && [ $SECONDS -lt $end ]; do nap 0.1; done
	kill $SPID 2>/dev/null
	wait $SPID
	RC_S=$?
}

# client NAME LIMIT CLIENT_CMD: runs the client under `timeout LIMIT` (log
# in $TR/NAME.client); sets RC_C and WALL (its wall-clock seconds).
# The client's stdout is line-buffered (stdbuf -oL): the log then holds
# its lines in the order they were printed. Fully buffered (a file), what
# it printed to stdout reaches the log only when the buffer fills or the
# process exits, after lines it printed to stderr later (see
# rping_teardown_race).
client() {
	local t0
	CLOG=$TR/$1.client
	t0=$(now)
	(eval "exec timeout -k 5 $2 stdbuf -oL $3") >"$CLOG" 2>&1 </dev/null 7>&- 8<&-
	RC_C=$?
	WALL=$(elapsed "$t0")
	rping_teardown_race "$3"
}

# rping_teardown_race CLIENT_CMD: rping of rdma-core 44 has a race of its
# own at exit. Its cm thread blocks in rdma_get_cm_event() and is never
# stopped: main destroys the cm_id and the event channel and returns. When
# the connection's TIMEWAIT_EXIT event comes during that teardown (the cm
# thread prints "unhandled event: RDMA_CM_EVENT_TIMEWAIT_EXIT"), the
# thread takes it, goes back to the channel main has just closed, and
# calls exit(-1): "rdma_get_cm_event: Bad file descriptor", exit 255,
# after every ping passed. (Newer rping stops the thread with an eventfd.)
# The timing depends on the machine's load, not on the driver; seen twice
# in make check: beside the hostile process, and in interop's VLAN cell
# (Dec 2026), exit 255 after 3 pings. The pings go to stdout, the error
# to stderr: with stdout fully buffered, the thread's exit(-1) coming
# before main's exit writes the last pings after the error line (the
# likely cause of the second); `client` line-buffers stdout, so every
# ping printed is in the log before the error line. So a client `rping -c ... -V
# -v -C N` whose exit is 255, whose last line is that one, and which
# printed N verified pings (-V stops at a mismatch before printing) has
# passed: RC_C becomes 0 and the log says so. Anything else keeps its
# exit code.
rping_teardown_race() {
	local line last=
	[ "$RC_C" = 255 ] && [[ $1 =~ (^|[[:space:]])rping\ -c\ .*-C\ ([0-9]+) ]] &&
		[[ $1 == *" -v"* && $1 == *" -V"* ]] || return 0
	local want=${BASH_REMATCH[2]}
	while IFS= read -r line; do
		[ -n "$line" ] && last=$line
	done <"$CLOG"
	if [ "$last" = "rdma_get_cm_event: Bad file descriptor" ] && [ "$(rping_pings <"$CLOG")" = "$want" ]; then
		echo "(rping's own teardown race after all $want pings: exit 255 taken as 0; see rping_teardown_race in tests/traffic/lib.sh)" >>"$CLOG"
		RC_C=0
	fi
}

# pair NAME LIMIT READY SERVER_CMD CLIENT_CMD: serve, client, reap. A client
# whose server never got ready is not run (RC_C=125).
pair() {
	CLOG=$TR/$1.client
	if serve "$1" "$2" "$3" "$4"; then
		client "$1" "$2" "$5"
		reap 10
	else
		RC_C=125 WALL=0
		echo "(not run: the server never got ready)" >"$CLOG"
	fi
	return 0
}

# tail_of FILE: the last lines of FILE on one line, for a FAIL message.
tail_of() { grep -v '^ *$' "$1" 2>/dev/null | tail -n 3 | tr '\n\t' '  ' | cut -c1-300; }

# why: a one-line account of the last pair, for a FAIL line.
why() {
	printf 'server exit %s, client exit %s; server: %s; client: %s' \
		"$RC_S" "$RC_C" "$(tail_of "$SLOG")" "$(tail_of "$CLOG")"
}

# pair_ok NAME [PROBLEM]: PASS if both ends of the last pair exited 0 and
# PROBLEM (what an output check printed) is empty, else FAIL.
pair_ok() {
	if [ "$RC_S" = 0 ] && [ "$RC_C" = 0 ] && [ -z "${2:-}" ]; then
		pass "$1"
		return 0
	fi
	fail "$1" "${2:+$2; }$(why)"
	return 1
}

# --- output checks -----------------------------------------------------------

# (The log checks read the logs with the shell: a grep costs a debug guest
# 0.2 to 0.5 s under TCG, and every cell ran four to six.)
# pingpong_check FILE SIZE ITERS: an ibv_*_pingpong end printed
# "BYTES bytes in" with BYTES = 2 * SIZE * ITERS, and its -c buffer check
# reported no invalid data.
pingpong_check() {
	local want=$(($2 * $3 * 2)) text
	text=$(<"$1")
	if [[ $text == *"invalid data"* ]]; then
		echo "${1##*/}: $(first_line "$text" "invalid data")"
	elif [[ $'\n'$text != *$'\n'"$want bytes in"* ]]; then
		echo "${1##*/}: no '$want bytes in' line"
	fi
}

# rping_check FILE [COUNT]: no data mismatch reported; with COUNT (the
# client's log, rping -v), exactly COUNT pings printed.
rping_check() {
	local text n line
	text=$(<"$1")
	if [[ ${text,,} == *mismatch* ]]; then
		while IFS= read -r line; do
			[[ ${line,,} == *mismatch* ]] && break
		done <<<"$text"
		echo "${1##*/}: $line"
	elif [ -n "${2:-}" ]; then
		n=$(rping_pings <<<"$text")
		[ "$n" = "$2" ] || echo "${1##*/}: $n pings printed, want $2"
	fi
}

# rping_pings: how many pings an rping client's log (stdin, rping -v) printed.
rping_pings() {
	local n=0 line
	while IFS= read -r line; do
		[[ $line == "ping data: "* ]] && n=$((n + 1))
	done
	echo "$n"
}

# cm_check FILE: ucmatose/udaddy ran to "test complete".
cm_check() { [[ $(<"$1") == *"test complete"* ]] || echo "${1##*/}: no 'test complete'"; }

# first_line TEXT SUBSTRING: the first line of TEXT that contains SUBSTRING.
first_line() {
	local line
	while IFS= read -r line; do
		if [[ $line == *"$2"* ]]; then
			printf '%s\n' "$line"
			return 0
		fi
	done <<<"$1"
	return 1
}

# perf_row FILE: the first result row of a perftest report (a line whose
# first two fields are numbers).
perf_row() {
	local line f
	while IFS= read -r line; do
		read -ra f <<<"$line"
		if [ ${#f[@]} -ge 5 ] && [[ ${f[0]} =~ ^[0-9]+$ && ${f[1]} =~ ^[0-9]+$ ]]; then
			printf '%s\n' "$line"
			return 0
		fi
	done <"$1"
}

# perf_check FILE KIND BYTES ITERS WALL [MTU]: the perftest client's report
# has a row for BYTES and ITERS with finite, non-negative figures that do
# not claim the transfer took longer than WALL, the seconds the client ran
# in all (set-up included): for bw, BYTES * ITERS at the BW average and
# ITERS at the message rate, for lat, ITERS times t_min, each taken at the
# upper end of its printed rounding (with 2% and 10 ms of slack for the
# TSC rate perftest samples); and with MTU, the report says that
# path MTU was used. The row goes to stderr (the output log) either way.
perf_check() {
	local f=$1 kind=$2 bytes=$3 iters=$4 wall=$5 mtu=${6:-} row b n out text said
	row=$(perf_row "$f")
	[ -n "$row" ] || { echo "no result row in the client's report"; return; }
	echo "# $(basename "$f"): $(echo $row); client ran ${wall}s" >&2
	read -r b n _ <<<"$row"
	[ "$b" = "$bytes" ] || { echo "report row for $b bytes, want $bytes"; return; }
	[ "$n" = "$iters" ] || { echo "report row for $n iterations, want $iters"; return; }
	text=$(<"$f")
	if [ -n "$mtu" ] && ! [[ $'\n'$text =~ $'\n'\ *Mtu\ *:\ *$mtu\[B\] ]]; then
		read -ra said <<<"$(first_line "$text" Mtu)"
		echo "report does not say Mtu : $mtu[B] (${said[*]})"
		return
	fi
	# perftest times with the TSC at a rate it samples against
	# gettimeofday(); when the sample is too noisy (often under TCG, where
	# the guest runs on the jiffies clocksource) it says "Correlation
	# coefficient r^2: ... < 0.9" and divides by 0 MHz, so its figures mean
	# nothing: then only the row and the exit status count.
	if [[ $text == *'Correlation coefficient r^2'* ]]; then
		echo "# $(basename "$f"): perftest could not sample its clock; figures not checked" >&2
		return
	fi
	# The same without the warning: a latency row of inf and nan is a time
	# divided by a TSC rate of 0 (no figure the driver's work can produce).
	if [ "$kind" = lat ] && awk '{ exit !($3 == "inf" && $6 == "inf") }' <<<"$row"; then
		echo "# $(basename "$f"): perftest's TSC rate was 0 (times print as inf); figures not checked" >&2
		return
	fi
	out=$(awk -v kind="$kind" -v b="$bytes" -v n="$iters" -v wall="$wall" '
		function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
		{
			if (kind == "bw") {
				if (!num($4) || !num($5)) { print "BW average " $4 ", MsgRate " $5 ": not numbers"; exit }
				# A figure printed as (nearly) 0 bounds nothing.
				t1 = ($4 >= 0.1) ? b * n / (($4 + 0.005) * 1048576) : 0
				t2 = ($5 >= 0.001) ? n / (($5 + 0.0000005) * 1e6) : 0
				t = t1 > t2 ? t1 : t2
			} else {
				if (!num($3) || !num($6)) { print "t_min " $3 ", t_avg " $6 ": not numbers"; exit }
				if ($6 + 0.01 < $3) { print "t_avg " $6 " below t_min " $3; exit }
				t = n * ($3 - 0.005) / 1e6
			}
			# (2% and 10 ms of slack: perftest samples its TSC rate
			# against gettimeofday(), under TCG to within a few
			# tenths of a percent, and the wall time is in 10 ms.)
			if (t > wall * 1.02 + 0.01) printf "the report implies at least %.3fs of transfer, more than the %ss the client ran\n", t, wall
		}' <<<"$row")
	[ -z "$out" ] || echo "$out"
}

# --- two VMs (after tests/lib/twohost.sh) -------------------------------------

# chan_open [PORT]: opens the control channel to the peer VM, one TCP
# connection for the whole suite: fd 7 writes to the peer, fd 8 reads from
# it. A connects with bash's /dev/tcp; B, which cannot listen from bash,
# relays between the connection and two FIFOs with one python process.
# (Starting python per meeting costs seconds under TCG.)
chan_open() {
	local port=${1:-19999} end=$((SECONDS + 300))
	if [ "$ROLE" = b ]; then
		rm -f "$TR/chan.to" "$TR/chan.from"
		mkfifo "$TR/chan.to" "$TR/chan.from" || return 1
		python3 - "$port" "$TR/chan.to" "$TR/chan.from" <<'PY' &
import os, socket, sys, threading
port, to_peer, from_peer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port)); s.listen(1)
c, _ = s.accept(); s.close()
def up():
    fd = os.open(to_peer, os.O_RDONLY)
    while True:
        d = os.read(fd, 65536)
        if not d: break
        c.sendall(d)
    c.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
fd = os.open(from_peer, os.O_WRONLY)
while True:
    d = c.recv(65536)
    if not d: break
    os.write(fd, d)
PY
		CHAN_PID=$!
		exec 7>"$TR/chan.to" 8<"$TR/chan.from"
	else
		until { exec 7<>"/dev/tcp/$PEER/$port"; } 2>/dev/null; do
			[ $SECONDS -ge $end ] && return 1
			nap 0.3
		done
		exec 8<&7
	fi
}

# swap NAME VALUE [TIMEOUT]: meets the peer VM at NAME on the channel and
# exchanges values: prints the peer's VALUE (one line; newlines in VALUE
# become spaces). Fails if the peer does not answer within TIMEOUT (600 s)
# or is at another meeting, which means the two scripts went out of step.
swap() {
	local line
	printf '%s|%s\n' "$1" "${2//$'\n'/ }" >&7 || return 1
	IFS= read -r -t "${3:-600}" line <&8 || { echo "swap $1: no answer from the peer" >&2; return 1; }
	if [ "${line%%|*}" != "$1" ]; then
		echo "swap $1: the peer is at '${line%%|*}'" >&2
		return 1
	fi
	printf '%s\n' "${line#*|}"
}
