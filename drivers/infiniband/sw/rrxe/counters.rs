// SPDX-License-Identifier: GPL-2.0

//! Port counters, shown by `rdma statistic show`: rxe's fifteen, with the
//! same names and indices, so tools written for rxe read rrxe, then rrxe's
//! own; and per QP, for `rdma statistic qp`. Documentation/datapath.md
//! ("Counters") says what each counts.

use crate::proto::pma::PortCounts;
use crate::rdma::objects::Qp;
use crate::rdma::pool::Handle;
use crate::rdma::stats::{CounterId, StatDesc};
use crate::Rrxe;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel::c_str;
use kernel::prelude::*;
use kernel::rbtree::RBTree;

/// The counters, in the order of [`DESCS`].
#[derive(Clone, Copy, Debug)]
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
    /// Bytes of the packets counted in `SentPkts`: each one's UDP payload,
    /// BTH through ICRC.
    SentBytes,
    /// Bytes of the packets counted in `RcvdPkts`: each one's UDP payload
    /// as received, BTH through ICRC.
    RcvdBytes,
    /// Retransmit timeouts put off because requests of the QP were still
    /// in this host (`retransmit::put_off_in_host`).
    RetryDeferred,
    /// Looped-back packets sent with their payload attached from the
    /// sender's pinned pages, not copied (`net::tx`; also in `SentPkts`).
    SentPktsZcopy,
    /// Packets sent to the network whose payload was folded into the ICRC
    /// as it was copied, in one pass (`net::tx`; also in `SentPkts`).
    SentPktsIcrcFused,
    /// Packets from the network taken in page fragments, not made linear
    /// (`net::rx`; also in `RcvdPkts`).
    RcvdPktsFrags,
    /// Packets dropped because their QP's queue held its maximum: its
    /// work did not keep up (`rdma::skb::SkbQueue`; also in `RcvdPkts`).
    RcvdQueueFull,
    /// Trains sent to the network: a message's packets handed to the
    /// stack as one UDP GSO buffer (`net::tx`).
    SentTrains,
    /// Packets sent in those trains (also in `SentPkts`).
    SentTrainPkts,
    /// Accesses of a QP's that found memory paged on demand not in and
    /// waited for a fault to bring it in (`mem::settle`).
    OdpFaults,
    /// Retransmit timeouts that resent (`comp::on_timeout`; also in
    /// `CompleterRetryErr`): a loss no NAK or gap showed.
    RetryTimeouts,
}

/// Number of counters.
pub(crate) const N: usize = 27;

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
    StatDesc::new(c_str!("sent_bytes")),
    StatDesc::new(c_str!("rcvd_bytes")),
    StatDesc::new(c_str!("retry_deferred")),
    StatDesc::new(c_str!("sent_pkts_zcopy")),
    StatDesc::new(c_str!("sent_pkts_icrc_fused")),
    StatDesc::new(c_str!("rcvd_pkts_frags")),
    StatDesc::new(c_str!("rcvd_queue_full")),
    StatDesc::new(c_str!("sent_trains")),
    StatDesc::new(c_str!("sent_train_pkts")),
    StatDesc::new(c_str!("odp_faults")),
    StatDesc::new(c_str!("retry_timeouts")),
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
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Adds `n`.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Copies the values out.
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.0.iter()) {
            *o = c.load(Ordering::Relaxed);
        }
    }
}

/// The port's counts as its Performance Management Agent reports them
/// (`proto::pma`): the device's counters (events of QPs bound to a counter
/// of ib_core's are counted there, not here).
pub(crate) fn port_counts(c: &Counters) -> PortCounts {
    let get = |k: Counter| c.0[k as usize].load(Ordering::Relaxed);
    PortCounts {
        xmit_bytes: get(Counter::SentBytes),
        rcv_bytes: get(Counter::RcvdBytes),
        xmit_pkts: get(Counter::SentPkts),
        rcv_pkts: get(Counter::RcvdPkts),
        rcv_errors: get(Counter::RcvdIcrcErr),
        link_downed: get(Counter::LinkDowned),
    }
}

/// A QP's counters for `rdma statistic qp`. While the QP is bound to a
/// counter of ib_core's (`rdma statistic qp bind`, or auto mode), its
/// events are counted here instead of in its device's [`Counters`], and
/// the counter takes them when ib_core reads it or the QP leaves it
/// ([`Self::harvest`]); ib_core shows a port's counters as the device's
/// plus its counters' (and those of counters gone), so each event is in
/// `rdma statistic show` once. An unbound QP counts on the device, at the
/// cost of one load more per event.
///
/// A count racing with an unbind may land here after the harvest; the
/// next bind, or the QP's destroy, gives it to the device. rrxe's own
/// proof counters of the send path (`sent_pkts_zcopy`,
/// `sent_pkts_icrc_fused`, `sent_trains`, `sent_train_pkts`) and ICRC
/// errors of multicast packets stay on the device.
pub(crate) struct QpCounters {
    /// The counter bound ([`CounterId::raw`]; 0: none).
    bound: AtomicUsize,
    counts: [AtomicU64; N],
}

impl QpCounters {
    /// Unbound, all zero.
    pub(crate) const fn new() -> Self {
        Self {
            bound: AtomicUsize::new(0),
            counts: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Counts `n` of `c` for the QP: here while it is bound, else on
    /// `dev`, its device's.
    pub(crate) fn add(&self, dev: &Counters, c: Counter, n: u64) {
        if self.bound.load(Ordering::Relaxed) != 0 {
            self.counts[c as usize].fetch_add(n, Ordering::Relaxed);
        } else {
            dev.add(c, n);
        }
    }

    /// Counts one `c`, as [`Self::add`].
    pub(crate) fn inc(&self, dev: &Counters, c: Counter) {
        self.add(dev, c, 1);
    }

    /// The counter the QP is bound to.
    pub(crate) fn bound(&self) -> CounterId {
        CounterId::from_raw(self.bound.load(Ordering::Acquire))
    }

    /// Binds the QP to `id`; what a count racing with the last unbind left
    /// here goes to `dev`.
    pub(crate) fn bind(&self, dev: &Counters, id: CounterId) {
        self.flush(dev);
        self.bound.store(id.raw(), Ordering::Release);
    }

    /// Gives what is left here (a count that raced with an unbind) to
    /// `dev`: at a bind, and once the QP's engines stopped for good.
    pub(crate) fn flush(&self, dev: &Counters) {
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.swap(0, Ordering::Relaxed);
            if n != 0 {
                dev.0[i].fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Adds what the QP counted since the last harvest to `values` (its
    /// counter's, in [`DESCS`] order) and starts again from zero.
    pub(crate) fn harvest(&self, values: &mut [u64]) {
        for (v, c) in values.iter_mut().zip(self.counts.iter()) {
            *v = v.wrapping_add(c.swap(0, Ordering::Relaxed));
        }
    }

    /// Unbinds the QP, its counts harvested into `values`.
    pub(crate) fn unbind(&self, values: &mut [u64]) {
        self.bound.store(0, Ordering::Release);
        self.harvest(values);
    }
}

/// Which QPs each counter of `rdma statistic qp` holds (by handle, so a
/// QP gone is never reached through its index's next owner), so that
/// bringing a counter up to date visits its own QPs only: any user may
/// read the counters (ib_core reads every counter for each port counter
/// shown), and a walk of all the device's QPs per read would cost
/// counters x QPs.
pub(crate) struct Bindings(RBTree<usize, KVec<Option<Handle>>>);

impl Bindings {
    /// None bound.
    pub(crate) fn new() -> Self {
        Self(RBTree::new())
    }

    /// Records that the QP `h` is bound to counter `id`.
    pub(crate) fn bind(&mut self, id: CounterId, h: Handle) -> Result {
        match self.0.get_mut(&id.raw()) {
            // A slot an unbind left, or a new one.
            Some(v) => match v.as_mut_slice().iter_mut().find(|x| x.is_none()) {
                Some(slot) => *slot = Some(h),
                None => v.push(Some(h), GFP_KERNEL)?,
            },
            None => {
                let mut v = KVec::new();
                v.push(Some(h), GFP_KERNEL)?;
                self.0.try_create_and_insert(id.raw(), v, GFP_KERNEL)?;
            }
        }
        Ok(())
    }

    /// Records that the QP `h` left counter `id`.
    pub(crate) fn unbind(&mut self, id: CounterId, h: Handle) {
        let empty = match self.0.get_mut(&id.raw()) {
            Some(v) => {
                for x in v.as_mut_slice().iter_mut().filter(|x| **x == Some(h)) {
                    *x = None;
                }
                v.as_slice().iter().all(|x| x.is_none())
            }
            None => false,
        };
        if empty {
            drop(self.0.remove(&id.raw()));
        }
    }

    /// The QPs bound to counter `id`.
    pub(crate) fn of(&self, id: CounterId) -> impl Iterator<Item = Handle> + '_ {
        let v = self.0.get(&id.raw()).map(|v| v.as_slice()).unwrap_or(&[]);
        v.iter().flatten().copied()
    }
}

/// A key check a received packet failed, counted in the port attributes
/// (`ibv_query_port`), not in the hardware counters.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyViolation {
    /// Its P_Key is not the default one.
    Pkey,
    /// A datagram with the wrong Q_Key.
    Qkey,
}

/// The port's `bad_pkey_cntr` and `qkey_viol_cntr`: 16-bit counters in
/// the IB spec's PortInfo, so they stop at 0xffff, as C rxe's do.
pub(crate) struct KeyViolations {
    pkey: AtomicU32,
    qkey: AtomicU32,
}

impl KeyViolations {
    /// Zeroes.
    pub(crate) const fn new() -> Self {
        Self {
            pkey: AtomicU32::new(0),
            qkey: AtomicU32::new(0),
        }
    }

    fn of(&self, v: KeyViolation) -> &AtomicU32 {
        match v {
            KeyViolation::Pkey => &self.pkey,
            KeyViolation::Qkey => &self.qkey,
        }
    }

    /// Counts one packet (any context), up to 0xffff.
    pub(crate) fn inc(&self, v: KeyViolation) {
        let _ = self
            .of(v)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < 0xffff).then_some(n + 1)
            });
    }

    /// The count of `v`.
    pub(crate) fn get(&self, v: KeyViolation) -> u32 {
        self.of(v).load(Ordering::Relaxed)
    }

    /// Zeroes the count of `v` (`IB_PORT_RESET_QKEY_CNTR`).
    pub(crate) fn reset(&self, v: KeyViolation) {
        self.of(v).store(0, Ordering::Relaxed);
    }
}

/// Counts one event of the QP (on its device, or on the QP while it is
/// bound to a counter of `rdma statistic qp`).
pub(crate) fn count(qp: &Qp<Rrxe>, c: Counter) {
    qp.counts.inc(&qp.device().core().counters, c);
}
