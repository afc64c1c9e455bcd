// SPDX-License-Identifier: GPL-2.0

//! A queued packet's headers as the engines read them: packet intake
//! (`net::rx`) parsed and validated the packet before queueing it, and
//! kept what the parse found with it (`SkBuff::found`); the headers are
//! seen again from that, without a second parse.

use crate::proto::aeth::Syndrome;
use crate::proto::build::{AtomicEthFields, DethFields, FethFields, RethFields};
use crate::proto::net::UDP_LEN;
use crate::proto::parse::Headers;
use crate::proto::{Opcode, Psn};
use crate::rdma::skb::{SkBuff, Src};
use core::ops::Range;

/// The headers of a validated packet, as its parse found them.
pub(crate) struct Parsed<'a> {
    pub(crate) opcode: Opcode,
    pub(crate) psn: Psn,
    pub(crate) ack_req: bool,
    pub(crate) se: bool,
    pub(crate) reth: Option<RethFields>,
    pub(crate) atomic: Option<AtomicEthFields>,
    pub(crate) feth: Option<FethFields>,
    pub(crate) syndrome: Option<Syndrome>,
    pub(crate) atomic_orig: Option<u64>,
    pub(crate) imm: Option<[u8; 4]>,
    pub(crate) ieth: Option<u32>,
    pub(crate) deth: Option<DethFields>,
    /// The payload's range in the UDP payload.
    pub(crate) payload: Range<usize>,
    /// The UDP payload's linear part: all of it, but for a looped-back
    /// SEND or WRITE whose payload is in page fragments (`net::tx`).
    bytes: &'a [u8],
    skb: &'a SkBuff,
}

impl<'a> Parsed<'a> {
    /// The headers of a queued packet, from what its parse in `rx::take`
    /// found (`Headers::at`); `None` for a packet that no parse went over.
    pub(crate) fn of(skb: &'a SkBuff) -> Option<Self> {
        let body = skb.data().get(UDP_LEN..)?;
        let h = Headers::at(body, skb.found()?)?;
        let off = h.payload_offset();
        Some(Self {
            opcode: h.opcode(),
            psn: h.psn(),
            ack_req: h.ack_req(),
            se: h.se(),
            reth: h.reth().map(|r| RethFields {
                va: r.va(),
                rkey: r.rkey(),
                len: r.dma_len(),
            }),
            atomic: h.atomic_eth().map(|a| AtomicEthFields {
                va: a.va(),
                rkey: a.rkey(),
                swap_add: a.swap_add(),
                comp: a.comp(),
            }),
            feth: h.feth().map(|f| FethFields {
                plt: f.plt(),
                sel: f.sel(),
            }),
            syndrome: h.aeth().map(|a| a.syndrome()),
            atomic_orig: h.atomic_ack_eth().map(|a| a.orig()),
            imm: h.immdt().map(|i| i.imm_bytes()),
            ieth: h.ieth().map(|i| i.rkey()),
            deth: h.deth().map(|d| DethFields {
                qkey: d.qkey(),
                src_qpn: d.src_qpn(),
            }),
            payload: off..off + h.payload_len(),
            bytes: body,
            skb,
        })
    }

    /// The payload, wherever it is (linear or in page fragments).
    pub(crate) fn payload(&self) -> Option<Src<'a>> {
        Src::skb(
            self.skb,
            UDP_LEN + self.payload.start,
            self.payload.end - self.payload.start,
        )
    }

    /// The payload if it is linear (every packet but a looped-back SEND
    /// or WRITE: `rx::deliver`).
    pub(crate) fn payload_bytes(&self) -> Option<&'a [u8]> {
        self.bytes.get(self.payload.clone())
    }
}
