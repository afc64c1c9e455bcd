#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Builds the synthetic golden vector tests/golden/synthetic.txt from first
principles, independently of the Rust crate: struct packing of the IPv4, UDP
and BTH headers by hand, and the ICRC as the zlib CRC-32 of

    8 x 0xff (the masked LRH)
    | IPv4 header with TOS, TTL and checksum set to ones
    | UDP header with the checksum set to ones
    | BTH with byte 4 (FECN/BECN/resv6a) set to ones
    | payload | pad

stored little-endian after the pad (IBA Annex A17, as rdma_rxe computes it).
Run it from the crate directory: python3 tests/make_synthetic_golden.py
"""
import struct
import zlib


def ipv4_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(payload):
    pad = (-len(payload)) & 3
    # BTH: RC SEND ONLY (0x04); SE=0 M=0 PadCnt=pad TVer=0; P_Key 0xffff;
    # FECN/BECN/resv6a 0, DestQP 0x000011; AckReq=1, resv7 0, PSN 0x000abc.
    bth = struct.pack("!BBHII", 0x04, pad << 4, 0xFFFF, 0x000011,
                      0x80000000 | 0x000ABC)
    roce = bth + payload + bytes(pad)
    udp_len = 8 + len(roce) + 4
    # UDP: source port 0xc0de (rxe uses 0xc000 + hash), to 4791, csum 0.
    udp = struct.pack("!HHHH", 0xC0DE, 4791, udp_len, 0)
    # IPv4 (TEST-NET-1 addresses): TOS 0x02 (ECT(0)), id 0x1234, DF, TTL 64.
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0x02, 20 + udp_len, 0x1234,
                     0x4000, 64, 17, 0, bytes([192, 0, 2, 1]),
                     bytes([192, 0, 2, 2]))
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    masked_ip = bytearray(ip)
    masked_ip[1] = 0xFF
    masked_ip[8] = 0xFF
    masked_ip[10:12] = b"\xff\xff"
    masked_udp = bytearray(udp)
    masked_udp[6:8] = b"\xff\xff"
    masked_bth = bytearray(bth)
    masked_bth[4] = 0xFF
    covered = (b"\xff" * 8 + bytes(masked_ip) + bytes(masked_udp)
               + bytes(masked_bth) + payload + bytes(pad))
    icrc = zlib.crc32(covered) & 0xFFFFFFFF
    return ip + udp + roce + struct.pack("<I", icrc)


if __name__ == "__main__":
    f = frame(b"Hello, RoCE v2")
    with open("tests/golden/synthetic.txt", "w") as out:
        out.write("# SPDX-License-Identifier: GPL-2.0\n")
        out.write("# Golden RoCEv2 frames: '<hex of IP+UDP+BTH..ICRC> "
                  "[mtu=N] <label>' per line; see Documentation/proto.md.\n")
        out.write("# Built by tests/make_synthetic_golden.py, not captured: "
                  "replace with real rdma_rxe captures.\n")
        out.write(f.hex() + " mtu=1024 SYNTHETIC (hand-built, not a capture): "
                  "IPv4 RC SEND ONLY, 14-byte payload, pad 2, QP 0x11, "
                  "PSN 0xabc, AckReq\n")
