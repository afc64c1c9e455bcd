// SPDX-License-Identifier: GPL-2.0

//! What packet intake asks of the scheduling of QPs: a QP that took a
//! packet is woken, or, when another QP of this device sent it (loopback),
//! left to run after the sender's run, in its chain (`engine::run`).
//!
//! Intake (`net::rx`) calls this, never the engines: the engines send
//! through `net::tx`, which loops packets back through intake, so an
//! arrow from intake into the engines would close a circle.

use crate::rdma::objects::Qp;
use crate::rdma::pool::PoolRef;
use crate::Rrxe;

/// Packets queued on a loopback destination at which its work is queued
/// at once instead of waiting for the sender's run to end (see [`kick`]):
/// twice the requester's in-flight limit (`engine::state::INFLIGHT_HIGH`,
/// which asserts it at build time), above what one run lets out.
pub(crate) const KICK_BACKLOG: usize = 128;

/// Packets waiting for `qp`'s engines (both queues).
pub(crate) fn queued(qp: &Qp<Rrxe>) -> usize {
    qp.req_pkts.len() + qp.resp_pkts.len()
}

/// `from`'s run queued packets for `to` (loopback): `to` runs when
/// `from`'s run ends (`engine::run`). If `from` already has another QP to
/// run, `to`'s work is queued.
pub(crate) fn kick(from: &Qp<Rrxe>, to: PoolRef<Qp<Rrxe>>) {
    // A run that may wait in a fault (its PD has ODP memory: see
    // `PdState::no_faults`) parks no other QP in its slot: the slot holds
    // the destination until the run ends, and its destroy would wait as
    // long.
    if from.is_user && from.pd().no_faults.is_closed() {
        to.schedule();
        return;
    }
    if queued(&to) == KICK_BACKLOG {
        // `from` produces faster than a run at its end would consume (a
        // long READ response): `to` must not wait that long (its timers
        // would see no progress), so its work starts now, on any CPU.
        to.schedule();
    }
    let other = {
        let mut k = from.kick.lock();
        match &*k {
            None => {
                *k = Some(to);
                None
            }
            Some(cur) if core::ptr::eq::<Qp<Rrxe>>(&**cur, &*to) => None,
            Some(_) => Some(to),
        }
    };
    // Queued (or dropped) outside the lock.
    if let Some(q) = other {
        q.schedule();
    }
}
