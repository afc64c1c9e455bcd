#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A middlebox that cuts one packet out of a train and spoils another.

    train_cut.py LEFT RIGHT DROP SPOIL

Bridges two interfaces (the far ends of two veth pairs, without an
address) frame by frame with AF_PACKET sockets, until SIGINT or
SIGTERM. Of the RoCEv2 requests going from LEFT to RIGHT that are a
message's middle packet (SEND MIDDLE or RDMA WRITE MIDDLE: inside a
train, as the sender's stack segmented it), it drops the DROP-th and
flips a payload byte of the SPOIL-th (its ICRC left as it was: the
receiver must refuse it), once each. The sockets read and write each
frame with its virtio-net header (PACKET_VNET_HDR), so what the veths
left to offload (a checksum to fill, a TCP segment to cut) goes on as
it came.

Prints "bridging" once it is, and at the end "dropped PSN N", "spoiled
PSN N" and the frames bridged each way.
"""
import select
import signal
import socket
import sys

ETH_P_ALL = 0x0003
MIDDLE = {0x01, 0x07}  # RC SEND MIDDLE, RC RDMA WRITE MIDDLE


SOL_PACKET, PACKET_VNET_HDR, VNET_LEN = 263, 15, 10


def open_raw(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return s


def roce(frame):
    """The offset of the BTH in an IPv4 RoCEv2 frame (after its
    virtio-net header), or None."""
    eth = VNET_LEN
    if len(frame) < eth + 14 + 20 + 8 + 12 or frame[eth + 12:eth + 14] != b"\x08\x00":
        return None
    udp = eth + 14 + (frame[eth + 14] & 0x0F) * 4
    if frame[eth + 23] != 17 or frame[udp + 2:udp + 4] != b"\x12\xb7":
        return None
    return udp + 8


def main():
    left, right, drop, spoil = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sl, sr = open_raw(left), open_raw(right)
    peer = {sl: sr, sr: sl}
    counts = {sl: 0, sr: 0}
    middles = 0
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    print("bridging", flush=True)
    while not stop:
        try:
            ready, _, _ = select.select([sl, sr], [], [], 0.2)
        except InterruptedError:
            continue
        for s in ready:
            try:
                frame, addr = s.recvfrom(VNET_LEN + 65536)
            except InterruptedError:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            frame = bytearray(frame)
            bth = roce(frame)
            if bth:
                if s is sl and frame[bth] in MIDDLE:
                    middles += 1
                    psn = int.from_bytes(frame[bth + 9:bth + 12], "big")
                    if middles == drop:
                        print("dropped PSN %d" % psn, flush=True)
                        continue
                    if middles == spoil:
                        frame[bth + 12 + 100] ^= 0x01
                        print("spoiled PSN %d" % psn, flush=True)
            peer[s].send(bytes(frame))
            counts[s] += 1
    print("bridged %d frames %s to %s, %d back; %d middle packets" %
          (counts[sl], left, right, counts[sr], middles), flush=True)


if __name__ == "__main__":
    main()
