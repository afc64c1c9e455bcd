# SPDX-License-Identifier: GPL-2.0
#
# Sourced by guest scripts that run on two linked VMs (scripts/vm2.sh).
# $1 of the script is the role, a or b. Sets up eth0 with
#   A: 10.0.0.1/24 fd00::1/64    B: 10.0.0.2/24 fd00::2/64
# and provides `barrier NAME`, which returns once the peer reached the same
# barrier (over TCP on the link; A connects, B listens).

ROLE=${1:?role a or b}
shift
if [ "$ROLE" = a ]; then
	ME=10.0.0.1 PEER=10.0.0.2 ME6=fd00::1 PEER6=fd00::2
else
	ME=10.0.0.2 PEER=10.0.0.1 ME6=fd00::2 PEER6=fd00::1
fi
ip addr add "$ME/24" dev eth0
ip -6 addr add "$ME6/64" dev eth0 nodad
ip link set eth0 up

# barrier NAME [TIMEOUT]: meet the peer.
barrier() {
	local port=$((20000 + $(printf '%s' "$1" | cksum | cut -d' ' -f1) % 20000))
	python3 - "$ROLE" "$PEER" "$port" "$1" "${2:-600}" <<'PY'
import socket, sys, time
role, peer, port, name, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
end = time.time() + limit
if role == "b":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(1); s.settimeout(limit)
    c, _ = s.accept(); c.sendall(name.encode()); got = c.recv(256).decode()
else:
    while True:
        try:
            c = socket.create_connection((peer, port), timeout=5); break
        except OSError:
            if time.time() > end: sys.exit("barrier %s: peer never came" % name)
            time.sleep(0.3)
    got = c.recv(256).decode(); c.sendall(name.encode())
sys.exit(0 if got == name else "barrier mismatch: %s vs %s" % (got, name))
PY
}

barrier link-up 300 || { echo "peer unreachable" >&2; exit 1; }
