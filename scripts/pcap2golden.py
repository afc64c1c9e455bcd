#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn a tcpdump capture of RoCEv2 traffic into golden vector lines.

    pcap2golden.py CAPTURE.pcap MTU SOURCE-NOTE > vectors.txt

Reads a classic pcap (Ethernet link type), keeps UDP datagrams to port
4791, strips the Ethernet header, and prints up to PER_KIND frames per
(IP version, opcode, AETH syndrome class) as

    <hex of the IP datagram> mtu=MTU <opcode name> <IPvN> <note>

the format of drivers/infiniband/sw/rrxe/proto/tests/golden/. The names are
labels only; the protocol crate's own table decides what a frame is.
"""
import struct
import sys

PER_KIND = 2
# IBA opcode names, for labels.
RC = ["SEND_FIRST", "SEND_MIDDLE", "SEND_LAST", "SEND_LAST_WITH_IMMEDIATE",
      "SEND_ONLY", "SEND_ONLY_WITH_IMMEDIATE", "RDMA_WRITE_FIRST",
      "RDMA_WRITE_MIDDLE", "RDMA_WRITE_LAST", "RDMA_WRITE_LAST_WITH_IMMEDIATE",
      "RDMA_WRITE_ONLY", "RDMA_WRITE_ONLY_WITH_IMMEDIATE", "RDMA_READ_REQUEST",
      "RDMA_READ_RESPONSE_FIRST", "RDMA_READ_RESPONSE_MIDDLE",
      "RDMA_READ_RESPONSE_LAST", "RDMA_READ_RESPONSE_ONLY", "ACKNOWLEDGE",
      "ATOMIC_ACKNOWLEDGE", "COMPARE_SWAP", "FETCH_ADD", "RESYNC",
      "SEND_LAST_WITH_INVALIDATE", "SEND_ONLY_WITH_INVALIDATE", "FLUSH",
      "ATOMIC_WRITE"]


def opname(op):
    base, code = op & 0xe0, op & 0x1f
    kind = {0x00: "RC", 0x20: "UC", 0x40: "RD", 0x60: "UD"}.get(base, "?")
    name = RC[code] if code < len(RC) else "0x%02x" % op
    return "%s_%s" % (kind, name)


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xa1b2c3d4:
        end = "<"
    elif magic == 0xd4c3b2a1:
        end = ">"
    else:
        sys.exit("not a classic pcap file")
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    if linktype != 1:
        sys.exit("link type %d, want Ethernet" % linktype)
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from(end + "IIII", data, off)
        off += 16
        pkt = data[off:off + incl]
        off += incl
        if len(pkt) < 14:
            continue
        etype = struct.unpack_from(">H", pkt, 12)[0]
        ip = pkt[14:]
        if etype == 0x0800 and len(ip) >= 20 and ip[9] == 17:
            ihl = (ip[0] & 0xf) * 4
            total = struct.unpack_from(">H", ip, 2)[0]
            ip, udp, ver = ip[:total], ip[ihl:], 4
        elif etype == 0x86dd and len(ip) >= 40 and ip[6] == 17:
            total = 40 + struct.unpack_from(">H", ip, 4)[0]
            ip, udp, ver = ip[:total], ip[40:], 6
        else:
            continue
        if len(udp) < 8 + 12 or struct.unpack_from(">H", udp, 2)[0] != 4791:
            continue
        yield ver, ip, udp[8:]


def main():
    path, mtu, note = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    seen = {}
    for ver, ip, roce in frames(path):
        op = roce[0]
        kind = opname(op)
        if op in (0x11, 0x12):  # ACK, ATOMIC ACK: tell ACK from NAK/RNR
            syn = roce[12]
            cls = {0: "ACK", 1: "RNR_NAK", 3: "NAK"}.get(syn >> 5, "AETH?")
            kind += "(%s code=%d)" % (cls, syn & 0x1f) if cls != "ACK" else "(ACK)"
        key = (ver, kind)
        if seen.get(key, 0) >= PER_KIND:
            continue
        seen[key] = seen.get(key, 0) + 1
        print("%s mtu=%d %s IPv%d %s" % (ip.hex(), mtu, kind, ver, note))
    for (ver, kind), n in sorted(seen.items()):
        print("# %d x %s IPv%d" % (n, kind, ver), file=sys.stderr)


if __name__ == "__main__":
    main()
