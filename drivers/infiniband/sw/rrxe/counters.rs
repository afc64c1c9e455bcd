// SPDX-License-Identifier: GPL-2.0

//! Port counters, shown by `rdma statistic show`: rxe's fifteen, with the
//! same names, so tools written for rxe read rrxe, then rrxe's own.

use crate::rdma::stats::StatDesc;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::c_str;

/// The counters, in the order of [`DESCS`].
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub(crate) enum Counter {
    SentPkts,
    RcvdPkts,
    DuplicateRequest,
    OutOfSeqRequest,
    RcvdRnrErr,
    SendRnrErr,
    RcvdSeqErr,
    AckDeferred,
    RetryExceededErr,
    RetryRnrExceededErr,
    CompleterRetryErr,
    SendErr,
    LinkDowned,
    RdmaSends,
    RdmaRecvs,
    /// Packets from the network dropped for a bad ICRC (once per packet,
    /// however many multicast members it was for).
    RcvdIcrcErr,
}

/// Number of counters.
pub(crate) const N: usize = 16;

/// Their descriptors (names as in rxe's `rxe_hw_counters.c`).
pub(crate) const DESCS: &[StatDesc] = &[
    StatDesc::new(c_str!("sent_pkts")),
    StatDesc::new(c_str!("rcvd_pkts")),
    StatDesc::new(c_str!("duplicate_request")),
    StatDesc::new(c_str!("out_of_seq_request")),
    StatDesc::new(c_str!("rcvd_rnr_err")),
    StatDesc::new(c_str!("send_rnr_err")),
    StatDesc::new(c_str!("rcvd_seq_err")),
    StatDesc::new(c_str!("ack_deferred")),
    StatDesc::new(c_str!("retry_exceeded_err")),
    StatDesc::new(c_str!("retry_rnr_exceeded_err")),
    StatDesc::new(c_str!("completer_retry_err")),
    StatDesc::new(c_str!("send_err")),
    StatDesc::new(c_str!("link_downed")),
    StatDesc::new(c_str!("rdma_sends")),
    StatDesc::new(c_str!("rdma_recvs")),
    StatDesc::new(c_str!("rcvd_icrc_err")),
];

const _: () = assert!(DESCS.len() == N);

/// A device's counters.
pub(crate) struct Counters([AtomicU64; N]);

impl Counters {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU64::new(0) }; N])
    }

    /// Adds one.
    #[allow(dead_code)]
    pub(crate) fn inc(&self, c: Counter) {
        self.0[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Copies the values out.
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.0.iter()) {
            *o = c.load(Ordering::Relaxed);
        }
    }
}
