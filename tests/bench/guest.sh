# SPDX-License-Identifier: GPL-2.0
#
# The bench inside the VM (scripts/bench.sh boots it with scripts/vm.sh).
# Arguments are KEY=VALUE settings (see scripts/bench.sh). For each round it
# measures the limit (tests/bench/limit.c), then runs every case on the
# driver of slot A, then on the driver of slot B: load the module, add one
# device on veth0, run the cases, delete the device, unload the module.
# With SIW=1 (the default) a third slot S follows: siw, the kernel's
# SoftiWARP (built in), one device siw0 on the same veth0, every perftest
# run with -R (rdma_cm: iWARP connects through it); see bench.md.
#
# Topology: one veth pair in the initial network namespace, both ends up,
# veth0 10.0.0.1/24; ONE RDMA device on veth0; every perftest server and
# client run on that device (GID ::ffff:10.0.0.1), talking to each other
# through the driver's same-device loopback (C rxe: destination MAC equals
# the device's own, rxe_loopback() hands the packet to its receive path;
# no IP routing and no veth crossing). C rxe cannot do better inside one
# guest: it listens on UDP 4791 in the initial namespace only, and two
# devices in the same namespace route each other's addresses through lo
# (this kernel has no policy routing). See Documentation/bench.md.
# siw's loopback is its own: a kernel TCP connection from 10.0.0.1 to
# itself, which the IP stack carries over lo.
#
# Output, in /run/results (out/bench/vm on the host):
#   raw.txt       one line of key=value per run (and per limit measurement)
#   logs/         each run's client and server output, time-stamped
set -u
for a in "$@"; do
	case "$a" in
	[A-Z]*=*) declare -x "BENCH_${a%%=*}=${a#*=}" ;;
	*) echo "bench-guest: bad argument $a" >&2; exit 2 ;;
	esac
done
ROUNDS=${BENCH_ROUNDS:-5}
NVME_MIB=${BENCH_NVME_MIB:-256}
CASES=${BENCH_CASES:-*}
A=${BENCH_A:-rrxe}
B=${BENCH_B:-rxe}
SIW=${BENCH_SIW:-1}
DUR=${BENCH_DURATION:-2}
MARGIN=${BENCH_MARGIN:-0}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
MTU=${BENCH_MTU:-1500}
SLACK=${BENCH_SLACK:-40}
RETRY=${BENCH_RETRY_FAILED:-0}
TSC_MHZ=${BENCH_HOST_TSC_MHZ:-0}
CLOCK=${BENCH_CLOCK:-host}
OUTREL=${BENCH_OUT:-out/bench}
KO=$OUTREL/ko
LIMIT=$OUTREL/bin/limit
SHIM=$PWD/$OUTREL/bin/tscshim.so
# perftest's time base: the host's TSC rate through the shim (see
# tests/bench/tscshim.c), or perftest's own estimate (CLOCK=native)
# libibverbs dlopens every provider listed in /etc/libibverbs.d in every
# perftest process; in this throw-away guest only rxe's is listed (librxe
# serves both drivers), and siw's (libsiw) for slot S
mkdir -p /tmp/ibv.d && echo "driver rxe" >/tmp/ibv.d/rxe.driver &&
	{ [ "$SIW" != 1 ] || echo "driver siw" >/tmp/ibv.d/siw.driver; } &&
	mount --bind /tmp/ibv.d /etc/libibverbs.d
PTENV=(env)
[ "$CLOCK" = host ] && [ -f "$SHIM" ] && PTENV+=(RRXE_TSC_MHZ="$TSC_MHZ" LD_PRELOAD="$SHIM")
RES=/run/results
RAW=$RES/raw.txt
LOGS=$RES/logs
WINDOW=$((DUR - 2 * MARGIN))
# WQEs posted over all QPs in the cases with more than 4 QPs
SCALE_WQES=512
FIO_SECS=${BENCH_FIO_SECONDS:-$((DUR > 5 ? DUR : 5))}
FIO_RAMP=1
mkdir -p "$LOGS"
: >"$RAW"

say() { echo "bench: $*"; }
raw() { echo "$*" >>"$RAW"; }

# ---- cases ------------------------------------------------------------
# name test size qps kind
ALL_CASES=()
for t in write read send; do
	for s in 4096:4k 65536:64k 1048576:1m; do
		for q in 1 4; do
			ALL_CASES+=("${t}_bw-${s#*:}-q$q ib_${t}_bw ${s%%:*} $q bw")
		done
	done
done
ALL_CASES+=("write_rate-64-q1 ib_write_bw 64 1 rate")
# scaling: WRITE bandwidth with 16 and 64 QPs beside the 1 and 4 above,
# and the 2 B message rate with 1 to 64 QPs. From 4 QPs on, all the QPs
# together keep the same 512 WQEs posted (perftest -t 512/QPs; 4 QPs have
# perftest's default 128 each), so more QPs share the same work: a driver
# that scales moves as much with 64 as with 4 (see run_case).
for s in 4096:4k 65536:64k 1048576:1m; do
	for q in 16 64; do
		ALL_CASES+=("write_bw-${s#*:}-q$q ib_write_bw ${s%%:*} $q bw")
	done
done
for q in 1 4 16 64; do
	ALL_CASES+=("write_rate-2-q$q ib_write_bw 2 $q rate")
done
for t in send write; do
	for s in 2:2 64:64 4096:4k; do
		ALL_CASES+=("${t}_lat-${s#*:} ib_${t}_lat ${s%%:*} 1 lat")
	done
done
# storage: fio on an NVMe-oF namespace over the device (see nvme_up);
# "test" is fio's rw mode, "qps" its iodepth
ALL_CASES+=("nvme_seqread-128k-qd16 read 131072 16 fio"
	"nvme_seqwrite-128k-qd16 write 131072 16 fio"
	"nvme_randread-4k-qd32 randread 4096 32 fio"
	"nvme_lat-4k-qd1 randread 4096 1 fio")
selected() {
	local p pats
	read -ra pats <<<"${CASES//,/ }"
	for p in "${pats[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 0
	done
	return 1
}
# The cases siw refused (see siw_refused), with the reason: reported "not
# supported" and not run again. None of today's cases needs what siw lacks
# (atomics).
declare -A SIW_NA=()
RUN_CASES=()
NVME=0
for c in "${ALL_CASES[@]}"; do
	selected "${c%% *}" && RUN_CASES+=("$c") && [[ $c == nvme_* ]] && NVME=1
done

# ---- environment ------------------------------------------------------
say "guest $(uname -r), $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
	"$(grep -m1 'cpu MHz' /proc/cpuinfo | tr -s ' \t' ' ')"
SLOTS=(A B) SDESC=
[ "$SIW" = 1 ] && SLOTS+=(S) SDESC=" S=siw"
say "slots: A=$A B=$B$SDESC; $ROUNDS rounds; ${#RUN_CASES[@]} cases; -D $DUR (margin $MARGIN, window ${WINDOW}s); latency -n $LAT_ITERS; MTU $MTU; perftest clock $CLOCK (host TSC $TSC_MHZ MHz)"
raw "kind=env nproc=$(nproc) kernel=$(uname -r) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"A=$A B=$B$SDESC rounds=$ROUNDS duration=$DUR margin=$MARGIN window=$WINDOW lat_iters=$LAT_ITERS mtu=$MTU" \
	"ncases=${#RUN_CASES[@]} retry=$RETRY host_tsc_mhz=$TSC_MHZ clock=$CLOCK cpuinfo_mhz=$(awk '/cpu MHz/ { print $4; exit }' /proc/cpuinfo)"
[ "$WINDOW" -gt 0 ] || { say "BENCH_DURATION must exceed 2 x BENCH_MARGIN"; exit 2; }

if [ "$NVME" = 1 ]; then
	# the NVMe-oF set-up of tests/lib/ulp.sh; it waits with wait_for, and
	# ulp_modules reads the kernel's build directory (modroot/) from
	# $OUT/kernel-dir, which scripts/bench.sh writes
	wait_for() {
		local end=$((SECONDS + $1))
		shift
		until "$@" >/dev/null 2>&1; do
			[ $SECONDS -ge $end ] && return 1
			sleep 0.2
		done
	}
	. tests/lib/ulp.sh
	OUT=$OUTREL
	export -f wait_for
	ulp_modules >/tmp/ulp-modules.log 2>&1 ||
		{ say "storage cases: no ULP modules: $(tr '\n' ' ' </tmp/ulp-modules.log)"; NVME=bad; }
fi

ip link add veth0 mtu "$MTU" type veth peer name veth1 mtu "$MTU" || exit 1
ip addr add 10.0.0.1/24 dev veth0
ip link set veth0 up
ip link set veth1 up
GID=0000:0000:0000:0000:0000:ffff:0a00:0001

# ---- drivers ----------------------------------------------------------
DEV= GIDX= LOADED= WHY=
driver_up() { # DRIVER -> sets DEV, GIDX, LOADED; on failure returns 1 with WHY set
	local d=$1 ko= mod out end type=$1
	WHY= LOADED=
	case "$d" in
	rxe) ko=$KO/rdma_rxe.ko mod=rdma_rxe DEV=rxe0 ;;
	rrxe) ko=$KO/rdma_rrxe.ko mod=rdma_rrxe DEV=rrxe0 ;;
	# Another rrxe build (BENCH_BASE_KO): the same link type and device.
	base) ko=$KO/rdma_rrxe-base.ko mod=rdma_rrxe DEV=rrxe0 type=rrxe ;;
	# siw is built into the guest kernel (CONFIG_RDMA_SIW=y): no module
	siw) DEV=siw0 ;;
	*) WHY="unknown driver $d"; return 1 ;;
	esac
	if [ -n "$ko" ]; then
		[ -f "$ko" ] || { WHY="no module $ko"; return 1; }
		if ! lsmod | grep -q "^$mod "; then
			local seen
			seen=$(dmesg | wc -l)
			out=$(insmod "$ko" 2>&1) || { WHY="insmod: $out"; return 1; }
			# rrxe measures its two ICRC CRCs at load and says which it
			# uses (rrxe_helper_crc_select): part of the limit line.
			[ "$mod" = rdma_rrxe ] && dmesg | tail -n +"$((seen + 1))" | sed -n 's/.*rdma_rrxe: ICRC: table \([0-9]*\) MiB\/s, clmul \([0-9]*\) MiB\/s: using \([a-z]*\).*/\1 \2 \3/p' | tail -n 1 |
				while read -r tab clm use; do raw "kind=icrc round=$round driver=$d icrc_table_mibs=$tab icrc_clmul_mibs=$clm icrc_using=$use"; done
		fi
		LOADED=$mod
	fi
	out=$(rdma link add "$DEV" type "$type" netdev veth0 2>&1) || { WHY="rdma link add: $out"; return 1; }
	end=$((SECONDS + 15))
	until grep -q ACTIVE "/sys/class/infiniband/$DEV/ports/1/state" 2>/dev/null; do
		[ $SECONDS -ge $end ] && { WHY="port never ACTIVE"; return 1; }
		sleep 0.2
	done
	GIDX=
	# iWARP has no RoCE GIDs (siw's one GID is its MAC): rdma_cm (-R)
	# resolves 10.0.0.1 to the device instead
	[ "$d" = siw ] && return 0
	while :; do
		GIDX=$(grep -lsx "$GID" /sys/class/infiniband/"$DEV"/ports/1/gids/* | head -n 1)
		GIDX=${GIDX##*/}
		[ -n "$GIDX" ] && break
		[ $SECONDS -ge $end ] && { WHY="no GID $GID"; return 1; }
		sleep 0.2
	done
	return 0
}
driver_down() { # returns non-zero if the module stays loaded
	[ -n "$DEV" ] && [ -e "/sys/class/infiniband/$DEV" ] && timeout 30 rdma link delete "$DEV"
	if [ -n "$LOADED" ]; then
		timeout 60 rmmod "$LOADED" || return 1
	fi
	LOADED= DEV=
	return 0
}

# ---- the NVMe-oF namespace (storage cases) -----------------------------
# nvme_up ROUND SLOT DRIVER: nvmet-rdma target on 10.0.0.1:4420 with one
# namespace, a memory-backed null_blk disk of NVME_MIB MiB (512-byte
# blocks; tests/lib/ulp.sh), written through once so that every read
# finds data; nvme-rdma connected to it over the device (default module
# parameters: register_always=Y). Sets NVME_DEV, or NVME_WHY and returns 1.
NVME_DEV= NVME_WHY=
nvme_up() {
	local t0=$SECONDS out ra=-
	NVME_DEV= NVME_WHY=
	[ "$NVME" = 1 ] || { NVME_WHY="no-ULP-modules"; return 1; }
	out=$(nvme_target_up 10.0.0.1 "$NVME_MIB" 2>&1) || { NVME_WHY="target-up:$out"; return 1; }
	out=$(dd if=/dev/zero of=/dev/nullb-ulp bs=1M count="$NVME_MIB" oflag=direct 2>&1) ||
		{ NVME_WHY="namespace-fill:$out"; return 1; }
	out=$(timeout -k 5 120 bash -c '. tests/lib/ulp.sh; MODROOT=$1; nvme_host_up 10.0.0.1 && echo "$ULP_PATH"' \
		_ "$MODROOT" 2>&1) || { NVME_WHY="host-up:$out"; return 1; }
	NVME_DEV=$(printf '%s\n' "$out" | tail -n 1)
	[ -b "$NVME_DEV" ] || { NVME_WHY="host-up:no-block-device:$out"; NVME_DEV=; return 1; }
	[ -r /sys/module/nvme_rdma/parameters/register_always ] &&
		ra=$(</sys/module/nvme_rdma/parameters/register_always)
	raw "kind=nvme round=$1 slot=$2 driver=$3 status=ok dev=$NVME_DEV mib=$NVME_MIB register_always=$ra" \
		"setup_secs=$((SECONDS - t0))"
	return 0
}
nvme_down() { # returns non-zero if the host or the target would not go
	local rc=0
	if nvme_ctrl >/dev/null 2>&1; then
		timeout -k 5 60 nvme disconnect -n "$NVME_NQN" >/dev/null 2>&1 || rc=1
		nvme_ctrl >/dev/null 2>&1 && rc=1
	fi
	nvme_target_down >/dev/null 2>&1 || rc=1
	NVME_DEV=
	return $rc
}

# ---- one perftest run -------------------------------------------------
# Every fork costs under TCG: the loops below use builtins only. nap is a
# sleep without a process: a read with a timeout on a FIFO nobody writes.
mkfifo /tmp/.bench-nap && exec 9<>/tmp/.bench-nap
nap() { read -rt "$1" -u 9 || :; }
PORT=18515
# a probe of the clocks and the CPU counters: "TSC MONOTONIC_ns user nice system idle ..."
probe() { local l; read -r _ l </proc/stat; echo "$("$LIMIT" now) $l"; }

# stamp FILE PROBEFILE MODE: copy stdin to FILE with a guest-clock stamp
# per line, the result line to FILE.res, and mark FILE.r2 if perftest's
# TSC-rate fit failed. On perftest's result header: MODE D probes the
# clocks and CPU counters at the start and the end of the -D window (a
# separate process sleeping through it); MODE n probes at the header and
# at the result line.
stamp() {
	local out=$1 cpu=$2 mode=$3 l h=0
	while IFS= read -r l; do
		printf '%s %s\n' "$EPOCHREALTIME" "$l" >>"$out"
		if [[ $l == *#bytes* ]] && [ $h = 0 ]; then
			h=1
			if [ "$mode" = D ]; then
				( [ "$MARGIN" -gt 0 ] && nap "$MARGIN"; probe >"$cpu.1"
				  nap "$WINDOW"; probe >"$cpu.2" ) &
			else
				probe >"$cpu.1"
			fi
		elif [ $h = 1 ] && [[ $l =~ ^[[:space:]]*[0-9]+[[:space:]]+[0-9]+ ]]; then
			printf '%s\n' "$l" >"$out.res"
			[ "$mode" = n ] && probe >"$cpu.2"
			h=2
		fi
		[[ $l == *"Correlation coefficient"* ]] && : >"$out.r2"
	done
	wait
}

listening() { # PORT: a TCP socket listens on it
	local hex f a b c d
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		while read -r a b c d _; do
			[[ $d == 0A && $b == *"$hex" ]] && return 0
		done <"$f"
	done
	return 1
}

# pt TAG TEST ARGS... -> runs server and client; sets PT_RC, PT_LOG, PT_RES
# (the client's result line), PT_NOTE and PT_PHASES (guest-clock times of
# start, server listening, client done, server done). RoCE devices: GID
# index GIDX, the client reaches the server's TCP socket on 127.0.0.1.
# siw (PT_CM=1): -R, both connect through rdma_cm on the same port, the
# client to 10.0.0.1 (the address rdma_cm resolves to siw0); rdma_cm works
# only before the test's timed part begins. The server's rdma_cm listen is
# siw's kernel TCP listener on PORT, which listening() sees as well.
PT_CM=0
pt() {
	local tag=$1 test=$2
	shift 2
	local base=(-d "$DEV" -i 1 -x "$GIDX" -F "$@") peer=127.0.0.1
	[ "$PT_CM" = 1 ] && base=(-d "$DEV" -i 1 -R -F "$@") peer=10.0.0.1
	PORT=$((PORT >= 18714 ? 18515 : PORT + 1))
	local slog=$LOGS/$tag.server clog=$LOGS/$tag.client cpu=$LOGS/$tag.cpu
	local tmo=$((DUR + SLACK))
	[[ " $* " == *" -n "* ]] && tmo=$((SLACK + LAT_ITERS / 50))
	[ -n "${PT_TMO:-}" ] && tmo=$PT_TMO
	rm -f "$cpu".* "$clog".*
	local t_start=$EPOCHREALTIME
	timeout -k 5 "$tmo" "${PTENV[@]}" "$test" "${base[@]}" -p "$PORT" >"$slog" 2>&1 &
	local spid=$! end=$((SECONDS + 15))
	until listening "$PORT"; do
		if ! kill -0 "$spid" 2>/dev/null || [ $SECONDS -ge $end ]; then break; fi
		nap 0.05
	done
	local mode=n t_listen=$EPOCHREALTIME t_client
	[[ " $* " == *" -D "* ]] && mode=D
	: >"$clog"
	timeout -k 5 "$tmo" "${PTENV[@]}" stdbuf -oL "$test" "${base[@]}" -p "$PORT" "$peer" 2>&1 | stamp "$clog" "$cpu" "$mode"
	PT_RC=${PIPESTATUS[0]}
	t_client=$EPOCHREALTIME
	# the server ends right after the client; if the client failed, stop it
	local sdead=0 i
	[ "$PT_RC" = 0 ] || kill "$spid" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$spid" 2>/dev/null || { sdead=1; break; }
		nap 0.05
	done
	[ $sdead = 1 ] || kill -9 "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	local src=$?
	PT_LOG=$clog
	PT_PHASES=$t_start,$t_listen,$t_client,$EPOCHREALTIME
	PT_RES=
	[ -s "$clog.res" ] && PT_RES=$(<"$clog.res")
	PT_NOTE=
	[ "$PT_RC" = 124 ] || [ "$PT_RC" = 137 ] && PT_NOTE=client-timeout
	[ "$PT_RC" != 0 ] && [ -z "$PT_NOTE" ] && PT_NOTE=client-exit-$PT_RC
	[ "$PT_RC" = 0 ] && [ "$src" != 0 ] && [ "$sdead" = 1 ] && PT_NOTE=${PT_NOTE:+$PT_NOTE,}server-exit-$src
	[ "$sdead" = 0 ] && PT_NOTE=${PT_NOTE:+$PT_NOTE,}server-killed
	[ -e "$clog.r2" ] && PT_NOTE=${PT_NOTE:+$PT_NOTE,}perftest-r2-below-0.9
	return 0
}

# the two probes around the sample window, as key=value
probes() {
	local f=$1 a b
	[ -s "$f.1" ] && [ -s "$f.2" ] || { echo "probe=none"; return; }
	read -r a <"$f.1"
	read -r b <"$f.2"
	echo "probe1=${a// /,} probe2=${b// /,}"
}

# ---- cases ------------------------------------------------------------
declare -A FAILED LATOK
# siw_refused NAME LOG...: on slot S, a failed run whose logs say that the
# device refused what the case asks for makes the case "not supported" on
# siw (SIW_NA) for this and later rounds: the table then says so instead
# of FAILED. A refusal is perftest's "not supported"/"unsupported" (a
# setting the device lacks), or a work request that post_send rejected
# ("Couldn't post send": perftest sizes its queues within the device's
# limits, so a rejected post is an operation the device does not do; that
# is how siw, atomic_cap 0, answers an atomic).
siw_refused() {
	local name=$1 why
	shift
	[ "$PT_CM" = 1 ] || return 1
	why=$(grep -ohiE -m1 "(operation )?not supported|unsupported[a-z ]*|couldn't post send" "$@" 2>/dev/null |
		head -n 1)
	[ -n "$why" ] || return 1
	why=${why//\'/}
	SIW_NA[$name]="siw-refused:${why// /-}"
}
run_case() { # ROUND SLOT DRIVER CASE-SPEC
	local round=$1 slot=$2 drv=$3 name test size qps kind
	read -r name test size qps kind <<<"$4"
	local tag="r$round-$slot-$drv-$name" common="kind=run round=$round slot=$slot driver=$drv case=$name test=$test size=$size qps=$qps type=$kind"
	if [ "$drv" = siw ] && [ -n "${SIW_NA[$name]:-}" ]; then
		raw "$common status=unsupported note=${SIW_NA[$name]}"
		return
	fi
	if [ -n "${FAILED[$slot/$name]:-}" ] && [ "$RETRY" = 0 ]; then
		raw "$common status=skipped note=${FAILED[$slot/$name]}"
		return
	fi
	if [ "$kind" = fio ]; then
		run_fio "$tag" "$common" "$slot" "$drv" "$name" "$test" "$size" "$qps"
		return
	fi
	if [ "$kind" = lat ]; then
		# until this test has worked once on this slot, a short run first,
		# so that a driver that moves no data costs seconds, not a timeout
		local lk="$slot/$test"
		if [ -z "${LATOK[$lk]:-}" ]; then
			PT_TMO=25 pt "$tag-pre" "$test" -s 64 -n 20
			if [ "$PT_RC" = 0 ] && [ -n "$PT_RES" ]; then
				LATOK[$lk]=ok
			else
				LATOK[$lk]="$test-20-iterations-failed-(${PT_NOTE:-no-result})-in-round-$round"
			fi
		fi
		if [ "${LATOK[$lk]}" != ok ] && siw_refused "$name" "$LOGS/$tag-pre".*; then
			raw "$common status=unsupported note=${SIW_NA[$name]}"
			say "  $drv $name: not supported (${SIW_NA[$name]})"
			unset "LATOK[$lk]"
			return
		fi
		if [ "${LATOK[$lk]}" != ok ]; then
			raw "$common status=fail note=${LATOK[$lk]}"
			FAILED[$slot/$name]="${LATOK[$lk]}"
			say "  $drv $name: FAILED (${LATOK[$lk]})"
			[ "$RETRY" = 0 ] || unset "LATOK[$lk]"
			return
		fi
		pt "$tag" "$test" -s "$size" -n "$LAT_ITERS"
		local tmin=- tmax=- ttyp=- tavg=- tstd=- p99=- p999=- it=0
		[ -n "$PT_RES" ] && read -r _ it tmin tmax ttyp tavg tstd p99 p999 <<<"$PT_RES"
		if { [ "$PT_RC" != 0 ] || [ -z "$PT_RES" ]; } && siw_refused "$name" "$LOGS/$tag".*; then
			raw "$common status=unsupported note=${SIW_NA[$name]} phases=$PT_PHASES"
			say "  $drv $name: not supported (${SIW_NA[$name]})"
			return
		fi
		if [ "$PT_RC" != 0 ] || [ -z "$PT_RES" ]; then
			raw "$common status=fail note=${PT_NOTE:-no-result} phases=$PT_PHASES"
			FAILED[$slot/$name]="failed-in-round-$round"
			say "  $drv $name: FAILED (${PT_NOTE:-no result})"
			return
		fi
		raw "$common status=ok iters=$it t_min=$tmin t_max=$tmax t_typical=$ttyp t_avg=$tavg" \
			"t_stdev=$tstd p99=$p99 p999=$p999 $(probes "$LOGS/$tag.cpu") note=${PT_NOTE:-}" \
			"phases=$PT_PHASES"
		say "  $drv $name: typical $ttyp us, p99 $p99 us, mean $tavg us (perftest -n $it)"
		return
	fi
	local q=()
	[ "$qps" != 1 ] && q=(-q "$qps")
	# (with 64 QPs at perftest's default depth, 8192 WQEs would be posted
	# at once: its -D window would count the completions of that backlog's
	# waves, not a rate)
	[ "$qps" -gt 4 ] && q+=(-t $((SCALE_WQES / qps)))
	pt "$tag" "$test" -s "$size" "${q[@]}" -D "$DUR" -f "$MARGIN"
	local iters=0 peak=- avg=- rate=-
	[ -n "$PT_RES" ] && read -r _ iters peak avg rate _ <<<"$PT_RES"
	if [ "$PT_RC" != 0 ] || [ -z "$PT_RES" ] || [ "${iters:-0}" = 0 ]; then
		if siw_refused "$name" "$LOGS/$tag".*; then
			raw "$common status=unsupported note=${SIW_NA[$name]} phases=$PT_PHASES"
			say "  $drv $name: not supported (${SIW_NA[$name]})"
			return
		fi
		raw "$common status=fail iters=${iters:-0} note=${PT_NOTE:-no-traffic} phases=$PT_PHASES"
		FAILED[$slot/$name]="failed-in-round-$round"
		say "  $drv $name: FAILED (${PT_NOTE:-no traffic})"
		return
	fi
	raw "$common status=ok iters=$iters window=$WINDOW pt_bw_avg_mibs=$avg pt_bw_peak_mibs=$peak pt_mpps=$rate" \
		"$(probes "$LOGS/$tag.cpu") note=${PT_NOTE:-} phases=$PT_PHASES"
	say "  $drv $name: $iters messages in the window; perftest $avg MiB/s"
}

# run_fio TAG COMMON SLOT DRIVER NAME RW SIZE IODEPTH: one fio job on the
# NVMe-oF namespace, O_DIRECT through libaio, FIO_RAMP s of ramp-up then
# FIO_SECS s measured. fio's clock is clock_gettime, which the shim runs on
# the TSC at the host's rate (BENCH_CLOCK=host), like perftest's: under TCG
# the guest clock runs slow. Completion latency (clat: submission to
# completion) percentiles are fio's.
run_fio() {
	local tag=$1 common=$2 slot=$3 drv=$4 name=$5 rw=$6 size=$7 qd=$8 rc res
	local json=$LOGS/$tag.json cpu=$LOGS/$tag.cpu
	if [ -z "$NVME_DEV" ]; then
		local why=${NVME_WHY:-no-namespace}
		raw "$common status=fail note=nvme-setup:$why"
		FAILED[$slot/$name]="nvme-setup-failed-in-round-$round"
		say "  $drv $name: FAILED (NVMe-oF set-up: $why)"
		return
	fi
	rm -f "$cpu".*
	probe >"$cpu.1"
	timeout -k 5 $((FIO_RAMP + FIO_SECS + SLACK)) "${PTENV[@]}" RRXE_TSC_CLOCK_GETTIME=1 \
		fio --name="$name" --filename="$NVME_DEV" --ioengine=libaio --direct=1 --rw="$rw" \
		--bs="$size" --iodepth="$qd" --numjobs=1 --thread --time_based --runtime="$FIO_SECS" \
		--ramp_time="$FIO_RAMP" --norandommap --randrepeat=0 --clocksource=clock_gettime \
		--output-format=json --output="$json" >"$LOGS/$tag.fio" 2>&1
	rc=$?
	probe >"$cpu.2"
	res=$(python3 - "$json" "$rw" <<'PY'
import json, sys
try:
    text = open(sys.argv[1]).read()
    j = json.loads(text[text.index("{"):])["jobs"][0]
except Exception as e:
    print("note=no-fio-report")
    sys.exit()
d = j["write" if sys.argv[2] == "write" else "read"]
c = d.get("clat_ns", {})
p = c.get("percentile", {})
def us(v):
    return "%.1f" % (v / 1000.0) if v is not None else "-"
print("fio_error=%d runtime_ms=%d io_bytes=%d ios=%d mibs=%.2f iops=%.1f clat_p50_us=%s clat_p99_us=%s"
      " clat_mean_us=%s clat_max_us=%s" % (j.get("error", 0), d["runtime"], d["io_bytes"], d["total_ios"],
      d["bw_bytes"] / 1048576.0, d["iops"], us(p.get("50.000000")), us(p.get("99.000000")),
      us(c.get("mean")), us(c.get("max"))))
PY
)
	local note=
	[ "$rc" = 124 ] || [ "$rc" = 137 ] && note=fio-timeout
	[ "$rc" != 0 ] && [ -z "$note" ] && note=fio-exit-$rc
	[[ $res == note=* ]] && { note=${note:-${res#note=}}; res=; }
	[ -n "$res" ] && [[ $res != fio_error=0* ]] && note=${note:-fio-error}
	[[ $res == *" ios=0 "* ]] && note=${note:-no-io}
	if [ -n "$note" ]; then
		raw "$common status=fail note=$note $res"
		FAILED[$slot/$name]="failed-in-round-$round"
		say "  $drv $name: FAILED ($note; $(grep -v '^ *$' "$LOGS/$tag.fio" | head -n 2 | tr '\n' ' ' | cut -c1-200))"
		return
	fi
	raw "$common status=ok iodepth=$qd fio_secs=$FIO_SECS ramp=$FIO_RAMP $res $(probes "$cpu")"
	local r=" $res " mibs iops p50 p99
	mibs=${r#* mibs=} mibs=${mibs%% *}
	iops=${r#* iops=} iops=${iops%% *}
	p50=${r#* clat_p50_us=} p50=${p50%% *}
	p99=${r#* clat_p99_us=} p99=${p99%% *}
	say "  $drv $name: $mibs MiB/s, $iops IOPS, clat median $p50 us, p99 $p99 us"
}

# ---- rounds -----------------------------------------------------------
declare -A DEAD
t_start=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
	lim=$("$LIMIT" 0.3 "$TSC_MHZ" 2>&1 | tr '\n' ' ')
	raw "kind=limit round=$round $lim"
	say "round $round/$ROUNDS: limit: $lim"
	for slot in "${SLOTS[@]}"; do
		case $slot in A) drv=$A ;; B) drv=$B ;; S) drv=siw ;; esac
		PT_CM=0
		[ "$drv" = siw ] && PT_CM=1
		if [ -n "${DEAD[$drv]:-}" ]; then
			for c in "${RUN_CASES[@]}"; do
				read -r name test size qps kind <<<"$c"
				raw "kind=run round=$round slot=$slot driver=$drv case=$name test=$test size=$size qps=$qps type=$kind status=skipped note=${DEAD[$drv]}"
			done
			continue
		fi
		t_slot=$SECONDS
		if ! driver_up "$drv"; then
			why=$(printf '%s' "$WHY" | tr -s ' \n\t' '---' | cut -c1-200)
			say "round $round slot $slot ($drv): driver set-up failed: $why"
			for c in "${RUN_CASES[@]}"; do
				read -r name test size qps kind <<<"$c"
				raw "kind=run round=$round slot=$slot driver=$drv case=$name test=$test size=$size qps=$qps type=$kind status=fail note=setup:$why"
			done
			driver_down || DEAD[$drv]="module-$LOADED-would-not-unload"
			continue
		fi
		say "round $round slot $slot: $drv ($DEV, GID index $GIDX)"
		# the NVMe-oF namespace, if a storage case is to run on this slot
		want_nvme=0
		for c in "${RUN_CASES[@]}"; do
			[[ $c == nvme_* ]] || continue
			[ -z "${FAILED[$slot/${c%% *}]:-}" ] || [ "$RETRY" != 0 ] && want_nvme=1
		done
		nvme_ok=0
		if [ "$want_nvme" = 1 ]; then
			if nvme_up "$round" "$slot" "$drv"; then
				nvme_ok=1
				say "round $round slot $slot: NVMe-oF namespace $NVME_DEV over $DEV"
			else
				NVME_WHY=$(printf '%s' "$NVME_WHY" | tr -s ' \n\t' '---' | cut -c1-200)
				raw "kind=nvme round=$round slot=$slot driver=$drv status=fail note=$NVME_WHY"
				say "round $round slot $slot: NVMe-oF set-up failed: $NVME_WHY"
			fi
		fi
		for c in "${RUN_CASES[@]}"; do
			run_case "$round" "$slot" "$drv" "$c"
		done
		if [ "$want_nvme" = 1 ] && ! nvme_down; then
			raw "kind=nvme round=$round slot=$slot driver=$drv status=teardown-failed"
			say "round $round slot $slot: NVMe-oF teardown failed"
		fi
		[ "$nvme_ok" = 1 ] || NVME_WHY=
		if ! driver_down; then
			say "round $round slot $slot: $drv would not unload; its later rounds are skipped"
			DEAD[$drv]="module-would-not-unload"
		fi
		raw "kind=slot round=$round slot=$slot driver=$drv secs=$((SECONDS - t_slot))"
		say "round $round slot $slot: $drv done in $((SECONDS - t_slot)) s"
	done
done
raw "kind=end secs=$((SECONDS - t_start))"
say "all rounds done in $((SECONDS - t_start)) s"
exit 0
