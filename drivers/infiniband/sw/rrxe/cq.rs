// SPDX-License-Identifier: GPL-2.0

//! Completion queues.
//!
//! A CQ is a ring of completion entries that the driver fills: user CQs
//! are mapped by librxe (`struct ib_uverbs_wc` entries), kernel CQs are
//! polled through `poll_cq` (`struct ib_wc` entries). Both use rxe's slot
//! size, the larger of the two.
//!
//! Locking: `CqState::inner` (a spinlock taken with interrupts off: kernel
//! consumers poll and arm from any context) guards the ring and the
//! notification state. Lifetime: from create until ib_core's destroy, which
//! it only allows once no QP uses the CQ.

use crate::new_irq_spinlock;
use crate::param;
use crate::queue::{Dir, Queue};
use crate::quota::{self, Charge, Kind, UserShare};
use crate::rdma::attrs::CqInitAttr;
use crate::rdma::device::Device;
use crate::rdma::ib::CqNotify;
use crate::rdma::objects::{Cq, Creating, KCq};
use crate::rdma::sync::IrqSpinLock;
use crate::rdma::uapi::{self, CreateCqResp, MmInfo, ResizeCqResp};
use crate::rdma::udata::UData;
use crate::rdma::wc::{wc_bytes_mut, Wc};
use crate::Rrxe;
use kernel::prelude::*;

/// What the consumer asked to be notified of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notify {
    None,
    Solicited,
    NextComp,
}

struct CqInner {
    queue: Queue,
    notify: Notify,
    /// The CQ overflowed and `IB_EVENT_CQ_ERR` went out: it is in error
    /// (IBA 11.4.2.1) and raises no other event until it is resized.
    /// (Otherwise a flush of many WQEs into a full CQ would raise one
    /// each, each an allocation in uverbs, and a user who empties the ring
    /// by writing its consumer index could overflow it again at will.)
    overflowed: bool,
}

/// Driver state of a CQ.
#[pin_data]
pub(crate) struct CqState {
    is_user: bool,
    /// The ring's mmap offer, reported to user space after create.
    mi: MmInfo,
    #[pin]
    inner: IrqSpinLock<CqInner>,
    /// A user CQ's charge to its user.
    _charge: Option<Charge>,
}

/// Checks a requested CQ size as rxe does.
fn check_cqe(cqe: u32, current: Option<u32>) -> Result {
    if cqe == 0 || cqe > param::MAX_CQE {
        return Err(EINVAL);
    }
    if let Some(count) = current {
        if cqe < count {
            return Err(EINVAL);
        }
    }
    Ok(())
}

/// `create_cq`: the ring, sized for at least `attr.cqe` entries; a user
/// CQ charged to `share`.
pub(crate) fn create(
    dev: &Device<Rrxe>,
    attr: &CqInitAttr,
    udata: &UData<'_>,
    share: Option<&kernel::sync::Arc<UserShare>>,
) -> Result<impl PinInit<CqState, Error>> {
    if attr.flags != 0 {
        return Err(crate::rdma::error::eopnotsupp());
    }
    check_cqe(attr.cqe, None)?;
    if udata.is_user() && udata.outlen() < core::mem::size_of::<CreateCqResp>() {
        return Err(EINVAL);
    }
    dev.cq_count_check()?;
    let charge = quota::charge(share, Kind::Cq)?;
    let (mut queue, _) = Queue::new(attr.cqe, uapi::CQE_SIZE, Dir::ToClient, udata.is_user())?;
    // Offered before the ring goes under its lock (the offer allocates).
    let mi = match udata.ucontext::<Rrxe>() {
        Some(uctx) => queue.expose(uctx)?,
        None => uapi::mminfo(0, 0),
    };
    let is_user = udata.is_user();
    Ok(try_pin_init!(CqState {
        is_user,
        mi,
        inner <- new_irq_spinlock!(
            CqInner {
                queue,
                notify: Notify::None,
                overflowed: false,
            },
            "CqState::inner"
        ),
        _charge: charge,
    }? Error))
}

/// After create: count the CQ, offer the ring to user space, report the
/// real size.
pub(crate) fn created(cq: Creating<'_, KCq, Rrxe>, udata: &mut UData<'_>) -> Result {
    cq.device().cq_pool.insert(&cq)?;
    let cap = cq.inner.lock().queue.capacity();
    cq.set_cqe(cap);
    if cq.is_user {
        udata.write(&CreateCqResp { mi: cq.mi })?;
    }
    Ok(())
}

/// `resize_cq`: a new ring holding the waiting entries; user space gets a
/// new mapping.
pub(crate) fn resize(cq: &Cq<Rrxe>, cqe: u32, udata: &mut UData<'_>) -> Result {
    if cq.is_user && udata.outlen() < core::mem::size_of::<ResizeCqResp>() {
        return Err(EINVAL);
    }
    let count = cq.inner.lock().queue.count();
    check_cqe(cqe, Some(count))?;
    let (mut new, cap) = Queue::new(cqe, uapi::CQE_SIZE, Dir::ToClient, cq.is_user)?;
    if cq.is_user {
        let uctx = udata.ucontext::<Rrxe>().ok_or(EINVAL)?;
        let mi = new.expose(uctx)?;
        // User space learns the new ring before the CQ moves to it (as C
        // rxe's `rxe_queue_resize`): written after, a failed write left
        // the CQ on a ring its process could not find, and every later
        // completion was lost to it.
        udata.write(&ResizeCqResp { mi })?;
    }
    let r = {
        let mut inner = cq.inner.lock();
        let r = inner.queue.resize_into(new);
        if r.is_ok() {
            // A new ring: a new overflow raises its event again.
            inner.overflowed = false;
        }
        r
    };
    // The replaced ring is freed here, outside the lock.
    match r {
        Ok(old) => drop(old),
        Err((e, new)) => {
            drop(new);
            return Err(e);
        }
    }
    cq.set_resized_cqe(cap);
    Ok(())
}

/// `req_notify_cq`.
pub(crate) fn req_notify(cq: &Cq<Rrxe>, flags: CqNotify) -> Result<i32> {
    let mut inner = cq.inner.lock();
    if inner.notify != Notify::NextComp {
        inner.notify = if flags.solicited_only() {
            Notify::Solicited
        } else {
            Notify::NextComp
        };
    }
    if flags.contains(CqNotify::REPORT_MISSED_EVENTS) && !inner.queue.is_empty() {
        return Ok(1);
    }
    Ok(0)
}

/// `poll_cq` for kernel consumers.
pub(crate) fn poll(cq: &Cq<Rrxe>, wc: &mut [Wc]) -> Result<usize> {
    if cq.is_user {
        return Err(EINVAL);
    }
    let mut inner = cq.inner.lock();
    let mut n = 0;
    for w in wc.iter_mut() {
        if inner.queue.is_empty() {
            break;
        }
        inner.queue.read_head(wc_bytes_mut(w))?;
        inner.queue.client_advance_consumer()?;
        n += 1;
    }
    Ok(n)
}

/// `peek_cq`.
pub(crate) fn peek(cq: &Cq<Rrxe>, n: usize) -> Result<usize> {
    Ok((cq.inner.lock().queue.count() as usize).min(n))
}

/// Posts a completion of `qp` to `cq`; `solicited` wakes a consumer armed
/// for solicited events only. A full CQ reports `IB_EVENT_CQ_ERR` and the
/// completion is lost (as with any RNIC).
pub(crate) fn post(
    cq: &Cq<Rrxe>,
    qp: &crate::rdma::objects::Qp<Rrxe>,
    c: &crate::rdma::wc::Completion,
    solicited: bool,
) -> bool {
    let mut slot = [0u8; uapi::CQE_SIZE];
    let ok = if cq.is_user {
        c.encode_user(&mut slot)
    } else {
        c.encode_kernel(qp, &mut slot)
    };
    if !ok {
        return false;
    }
    let wake = {
        let mut inner = cq.inner.lock();
        if inner.queue.is_full() {
            let first = !core::mem::replace(&mut inner.overflowed, true);
            drop(inner);
            if first {
                cq.event(crate::rdma::objects::ObjEvent::CqErr);
            }
            return false;
        }
        if inner.queue.write_tail(&slot).is_err() || inner.queue.advance_producer().is_err() {
            return false;
        }
        let wake = match inner.notify {
            Notify::NextComp => true,
            Notify::Solicited => solicited,
            Notify::None => false,
        };
        if wake {
            inner.notify = Notify::None;
        }
        wake
    };
    if wake {
        cq.notify();
    }
    true
}
