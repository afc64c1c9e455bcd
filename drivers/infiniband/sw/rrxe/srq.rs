// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues.
//!
//! Locking: `SrqState::rq` (interrupts off) guards the ring, its limits and
//! the limit event threshold. Lifetime: create to destroy, which ib_core
//! allows once no QP uses the SRQ.

use crate::new_irq_spinlock;
use crate::param;
use crate::queue::{Dir, Queue};
use crate::quota::{Charge, Kind};
use crate::rdma::attrs::{SrqAttr, SrqInitAttr};
use crate::rdma::error::eopnotsupp;
use crate::rdma::ib::SrqAttrMask;
use crate::rdma::objects::{Pd, Srq};
use crate::rdma::sync::IrqSpinLock;
use crate::rdma::uapi::{self, CreateSrqResp, MmInfo, ModifySrqCmd};
use crate::rdma::udata::UData;
use crate::Rrxe;
use kernel::prelude::*;

/// The ring of an SRQ and its limits.
pub(crate) struct SrqRing {
    pub(crate) queue: Queue,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    /// Arm level of the limit event (0: disarmed).
    pub(crate) limit: u32,
}

/// Driver state of an SRQ.
#[pin_data]
pub(crate) struct SrqState {
    is_user: bool,
    /// The ring's mmap offer, reported to user space after create.
    mi: MmInfo,
    #[pin]
    pub(crate) rq: IrqSpinLock<SrqRing>,
    /// A user SRQ's charge to its user.
    _charge: Option<Charge>,
}

impl SrqState {
    /// Whether user space owns the ring.
    pub(crate) fn is_user(&self) -> bool {
        self.is_user
    }
}

fn wqe_size(max_sge: u32) -> usize {
    uapi::RECV_WQE_SIZE + max_sge as usize * uapi::SGE_SIZE
}

/// `create_srq`: checks the sizes as rxe does (raising them to the
/// minimums) and builds the ring.
pub(crate) fn create(
    pd: &Pd<Rrxe>,
    init: &mut SrqInitAttr<'_>,
    udata: &UData<'_>,
) -> Result<impl PinInit<SrqState, Error>> {
    if udata.is_user() && udata.outlen() < core::mem::size_of::<CreateSrqResp>() {
        return Err(EINVAL);
    }
    if !init.is_basic() {
        return Err(eopnotsupp());
    }
    let mut a = init.attr();
    if a.max_wr == 0 || a.max_wr > param::MAX_SRQ_WR || a.max_sge > param::MAX_SRQ_SGE {
        return Err(EINVAL);
    }
    a.max_wr = a.max_wr.max(param::MIN_SRQ_WR);
    a.max_sge = a.max_sge.max(param::MIN_SRQ_SGE);
    pd.device().srq_pool.count_check()?;
    let charge = pd.charge(Kind::Srq)?;
    let (mut queue, cap) = Queue::new(
        a.max_wr,
        wqe_size(a.max_sge),
        Dir::FromClient,
        udata.is_user(),
    )?;
    // Offered before the ring goes under its lock (the offer allocates).
    let mi = match udata.ucontext::<Rrxe>() {
        Some(uctx) => queue.expose(uctx)?,
        None => uapi::mminfo(0, 0),
    };
    a.max_wr = cap;
    init.set_attr(a);
    let ring = SrqRing {
        queue,
        max_wr: cap,
        max_sge: a.max_sge,
        limit: a.srq_limit,
    };
    let is_user = udata.is_user();
    Ok(try_pin_init!(SrqState {
        is_user,
        mi,
        rq <- new_irq_spinlock!(ring, "SrqState::rq"),
        _charge: charge,
    }? Error))
}

/// After create: an SRQ number, and the ring offered to user space.
pub(crate) fn created(srq: &Srq<Rrxe>, udata: &mut UData<'_>) -> Result {
    let srq_num = srq.device().srq_pool.insert(srq)?;
    if srq.is_user {
        udata.write(&CreateSrqResp {
            mi: srq.mi,
            srq_num,
            reserved: 0,
        })?;
    }
    Ok(())
}

/// `modify_srq`: resize (`IB_SRQ_MAX_WR`; user space gets the new ring's
/// `mminfo` at the address its command carries) and arm the limit event
/// (`IB_SRQ_LIMIT`).
pub(crate) fn modify(
    srq: &Srq<Rrxe>,
    attr: &SrqAttr,
    mask: SrqAttrMask,
    udata: &mut UData<'_>,
) -> Result {
    if mask.without(SrqAttrMask::MAX_WR | SrqAttrMask::LIMIT) != SrqAttrMask::NONE {
        return Err(eopnotsupp());
    }
    let cmd: Option<ModifySrqCmd> = if srq.is_user {
        Some(udata.read()?)
    } else {
        None
    };
    let (limit, max_sge, cap) = {
        let r = srq.rq.lock();
        (r.limit, r.max_sge, r.queue.capacity())
    };
    let mut max_wr = attr.max_wr;
    if mask.contains(SrqAttrMask::MAX_WR) {
        if max_wr == 0 || max_wr > param::MAX_SRQ_WR || (limit != 0 && max_wr < limit) {
            return Err(EINVAL);
        }
        max_wr = max_wr.max(param::MIN_SRQ_WR);
    }
    if mask.contains(SrqAttrMask::LIMIT)
        && (attr.srq_limit > param::MAX_SRQ_WR || attr.srq_limit > cap)
    {
        return Err(EINVAL);
    }
    if mask.contains(SrqAttrMask::MAX_WR) {
        let (mut new, new_cap) =
            Queue::new(max_wr, wqe_size(max_sge), Dir::FromClient, srq.is_user)?;
        if let Some(cmd) = cmd {
            let uctx = udata.ucontext::<Rrxe>().ok_or(EINVAL)?;
            let mi = new.expose(uctx)?;
            udata.write_user(cmd.mmap_info_addr, &mi)?;
        }
        let res = {
            let mut r = srq.rq.lock();
            let res = r.queue.resize_into(new);
            if res.is_ok() {
                r.max_wr = new_cap;
            }
            res
        };
        // The replaced ring is freed here, outside the lock.
        match res {
            Ok(old) => drop(old),
            Err((e, new)) => {
                drop(new);
                return Err(e);
            }
        }
    }
    if mask.contains(SrqAttrMask::LIMIT) {
        srq.rq.lock().limit = attr.srq_limit;
    }
    Ok(())
}

/// `query_srq`.
pub(crate) fn query(srq: &Srq<Rrxe>, attr: &mut SrqAttr) -> Result {
    let r = srq.rq.lock();
    *attr = SrqAttr {
        max_wr: r.max_wr,
        max_sge: r.max_sge,
        srq_limit: r.limit,
    };
    Ok(())
}
