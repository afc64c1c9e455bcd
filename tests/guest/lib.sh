# SPDX-License-Identifier: GPL-2.0
#
# Guest test library: sourced by the scripts under tests/guest/ that
# scripts/vm.sh runs inside the VM (from the repository root, as root).
#
# Every check appends one line to $RESULTS, which `make check` counts:
#   PASS name | FAIL name: why | SKIP name: why

RESULTS=${RESULTS:-/run/results/results.txt}
VARIANT=${RRXE_VARIANT:-debug}
OUT=out/$VARIANT
RRXE_KO=$OUT/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
RXE_KO=$OUT/rdma_rxe.ko
GROUP=${GROUP:-$(basename "$0" .sh)}

pass() { echo "PASS $GROUP/$1" >>"$RESULTS"; echo "ok   $GROUP/$1"; }
fail() {
	echo "FAIL $GROUP/$1: ${2:-}" >>"$RESULTS"
	echo "FAIL $GROUP/$1: ${2:-}"
}
skip() { echo "SKIP $GROUP/$1: ${2:-}" >>"$RESULTS"; echo "skip $GROUP/$1: ${2:-}"; }

# t NAME CMD...: passes if CMD exits 0.
t() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "'$*' exited $?: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}

# t_err NAME ERRNO_TEXT CMD...: passes if CMD fails and says ERRNO_TEXT.
t_err() {
	local name=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		fail "$name" "'$*' succeeded, expected failure ($want)"
	elif printf '%s' "$out" | grep -qi -- "$want"; then
		pass "$name"
	else
		fail "$name" "'$*' failed without '$want': $(printf '%s' "$out" | tail -n 2 | tr '\n' ' ')"
	fi
}

# t_eq NAME GOT WANT
t_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi
}

# t_match NAME TEXT REGEX
t_match() {
	if printf '%s' "$2" | grep -qE -- "$3"; then
		pass "$1"
	else
		fail "$1" "no match for /$3/ in: $(printf '%s' "$2" | head -c 300 | tr '\n' ' ')"
	fi
}

# wait_for SECONDS CMD...: retries CMD until it succeeds or time runs out.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

load_rrxe() { lsmod | grep -q '^rdma_rrxe ' || insmod "$RRXE_KO"; }
unload_rrxe() { ! lsmod | grep -q '^rdma_rrxe ' || rmmod rdma_rrxe; }
load_rxe() { lsmod | grep -q '^rdma_rxe ' || insmod "$RXE_KO"; }

# veth_pair A B [ADDR_A ADDR_B]: a veth pair, both ends up.
veth_pair() {
	ip link add "$1" type veth peer name "$2" || return 1
	[ -n "${3:-}" ] && ip addr add "$3" dev "$1"
	[ -n "${4:-}" ] && ip addr add "$4" dev "$2"
	ip link set "$1" up && ip link set "$2" up
}

# The value of field FIELD (e.g. "node_guid") of `ibv_devinfo -v -d DEV`.
devinfo_field() {
	ibv_devinfo -v -d "$1" | awk -v f="$2:" '$1 == f { $1 = ""; sub(/^ +/, ""); print; exit }'
}

# The modified EUI-64 (as ibv_devinfo prints a GUID) of a netdev's MAC.
eui64_of() {
	local m
	m=$(cat "/sys/class/net/$1/address") || return 1
	IFS=: read -r a b c d e f <<<"$m"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x$a ^ 2)) "$b" "$c" "$d" "$e" "$f"
}

kmemleak_clear() { echo clear >/sys/kernel/debug/kmemleak; }

# Passes if a kmemleak scan finds nothing new since kmemleak_clear.
kmemleak_check() {
	local name=$1 leaks
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(cat /sys/kernel/debug/kmemleak)
	if [ -z "$leaks" ]; then
		pass "$name"
	else
		fail "$name" "kmemleak: $(printf '%s' "$leaks" | head -n 20 | tr '\n' ' ')"
	fi
}
