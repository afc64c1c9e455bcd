/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdma_rrxe's tracepoints (tracefs events/rrxe/, perf trace -e 'rrxe:*',
 * bpftrace 'tracepoint:rrxe:*'): a packet sent, a packet taken by a QP,
 * and a packet dropped with the reason. Each costs a test of a static key
 * while it is off. Defined in rrxe_helpers.c (CREATE_TRACE_POINTS), fired
 * through its rrxe_helper_trace_* functions.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rrxe

#if !defined(RRXE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RRXE_TRACE_H

#include <linux/tracepoint.h>

DECLARE_EVENT_CLASS(rrxe_pkt,
	TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 opcode,
		 u32 pkts, u32 len),
	TP_ARGS(dev, qpn, psn, opcode, pkts, len),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(u32, pkts)
		__field(u32, len)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->opcode = opcode;
		__entry->pkts = pkts;
		__entry->len = len;
	),
	TP_printk("%s qpn=%u psn=%u opcode=0x%02x pkts=%u len=%u",
		  __get_str(dev), __entry->qpn, __entry->psn, __entry->opcode,
		  __entry->pkts, __entry->len)
);

/*
 * Packets a QP handed to the IP stack, or to this device (loopback): one
 * event per buffer (a train: its first PSN, its packets and bytes).
 */
DEFINE_EVENT(rrxe_pkt, rrxe_send,
	TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 opcode,
		 u32 pkts, u32 len),
	TP_ARGS(dev, qpn, psn, opcode, pkts, len));

/* A packet validated and queued for a QP's engines. */
DEFINE_EVENT(rrxe_pkt, rrxe_recv,
	TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 opcode,
		 u32 pkts, u32 len),
	TP_ARGS(dev, qpn, psn, opcode, pkts, len));

/*
 * A received packet dropped before any QP took it, and why; dev is the
 * RDMA device, or for a packet for no QP the net device it came in on;
 * qpn is the one it was addressed to (0xffffff: not known), psn and
 * opcode as far as they could be read (0 and 0xff otherwise).
 */
TRACE_EVENT(rrxe_drop,
	TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 opcode,
		 const char *reason),
	TP_ARGS(dev, qpn, psn, opcode, reason),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__string(reason, reason)
	),
	TP_fast_assign(
		__assign_str(dev);
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->opcode = opcode;
		__assign_str(reason);
	),
	TP_printk("%s qpn=%u psn=%u opcode=0x%02x reason=%s",
		  __get_str(dev), __entry->qpn, __entry->psn, __entry->opcode,
		  __get_str(reason))
);

#endif /* RRXE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH rrxe
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rrxe_trace
#include <trace/define_trace.h>
