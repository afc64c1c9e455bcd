// SPDX-License-Identifier: GPL-2.0

//! UD multicast: the groups of a device, each with the QPs attached to it.
//!
//! A packet for the multicast QPN (0xFFFFFF) is delivered to every QP
//! attached to the group of its destination address, each QP getting its
//! own clone. The net device's link-layer filter holds the group's MAC
//! while the group has members.
//!
//! Locking: `Core::mcast` (interrupts off; receive reads it in softirq).
//! The filter update (`dev_mc_add`/`dev_mc_del`, which take the net
//! device's address lock with bottom halves off) cannot run under it, so
//! attach and detach also hold the `Core::mcast_ops` mutex from the
//! group's change to the filter's: a detach that empties a group cannot
//! come between the attach that created it and that attach's `mc_add`
//! (whose MAC would then stay in the filter with no group).
//! Slots are reused rather than removed: a QP slot or a group slot holds
//! `None` when free. Members are kept by [`Handle`], not by QP number: a
//! packet that looked a member up just as it was destroyed finds nothing,
//! never a new QP that took the number.
//!
//! A QP attached twice to one group (on RoCE the MLID means nothing, so
//! uverbs' attachments (MGID, 0) and (MGID, 1) both reach us as the same
//! group) is a member once but counts both: ib_core counts every attach a
//! driver accepts in the QP's `usecnt` and uncounts every detach it
//! accepts, and refuses to destroy a QP whose count is not 0. Were the
//! second attach a no-op and the second detach refused, the count would
//! never return to 0: the QP could not be destroyed and closing its
//! context would abandon it (uverbs WARNs and frees the context under it).

use crate::param::{MAX_MCAST_GRP, MAX_MCAST_QP_ATTACH, MAX_TOT_MCAST_QP_ATTACH};
use crate::rdma::objects::Qp;
use crate::rdma::pool::Handle;
use crate::Rrxe;
use kernel::prelude::*;

/// The QPN multicast packets are sent to.
pub(crate) const MULTICAST_QPN: u32 = 0x00ff_ffff;

/// Most QPs a group delivers to.
pub(crate) const GROUP_MAX: usize = MAX_MCAST_QP_ATTACH as usize;

/// A QP attached to a group, and how many attaches it has not detached.
#[derive(Clone, Copy)]
struct Member {
    qp: Handle,
    refs: u32,
}

struct Group {
    mgid: [u8; 16],
    qps: KVec<Option<Member>>,
}

impl Group {
    fn members(&self) -> usize {
        self.qps.iter().flatten().count()
    }

    fn member(&mut self, h: Handle) -> Option<&mut Option<Member>> {
        self.qps
            .iter_mut()
            .find(|q| matches!(q, Some(m) if m.qp == h))
    }

    fn has(&self, h: Handle) -> bool {
        self.qps.iter().flatten().any(|m| m.qp == h)
    }
}

/// The multicast groups of a device.
pub(crate) struct Groups {
    groups: KVec<Option<Group>>,
    /// Attachments over all groups.
    attached: u32,
}

impl Groups {
    /// No groups.
    pub(crate) fn new() -> Self {
        Self {
            groups: KVec::new(),
            attached: 0,
        }
    }

    fn find(&mut self, mgid: &[u8; 16]) -> Option<&mut Group> {
        self.groups.iter_mut().flatten().find(|g| g.mgid == *mgid)
    }

    /// The QPs attached to `mgid`, copied into `out`; how many.
    pub(crate) fn members_of(
        &self,
        mgid: &[u8; 16],
        out: &mut [Option<Handle>; GROUP_MAX],
    ) -> usize {
        let Some(g) = self.groups.iter().flatten().find(|g| g.mgid == *mgid) else {
            return 0;
        };
        let mut n = 0;
        for q in g.qps.iter().flatten() {
            if let Some(o) = out.get_mut(n) {
                *o = Some(q.qp);
                n += 1;
            }
        }
        n
    }
}

/// The link-layer multicast address of a group: IPv4 (01:00:5e and the
/// low 23 bits) for IPv4-mapped GIDs, IPv6 (33:33 and the low 32 bits)
/// otherwise.
pub(crate) fn group_mac(mgid: &[u8; 16]) -> [u8; 6] {
    if crate::av::is_v4_mapped(mgid) {
        [0x01, 0x00, 0x5e, mgid[13] & 0x7f, mgid[14], mgid[15]]
    } else {
        [0x33, 0x33, mgid[12], mgid[13], mgid[14], mgid[15]]
    }
}

/// `attach_mcast`.
pub(crate) fn attach(qp: &Qp<Rrxe>, mgid: &[u8; 16]) -> Result {
    let dev = qp.device();
    let me = qp.handle().ok_or(EINVAL)?;
    let _ops = dev.core().mcast_ops.lock();
    let created = {
        let mut m = dev.core().mcast.lock();
        if m.attached >= MAX_TOT_MCAST_QP_ATTACH {
            return Err(ENOMEM);
        }
        let created = m.find(mgid).is_none();
        if created {
            if m.groups.iter().flatten().count() >= MAX_MCAST_GRP as usize {
                return Err(ENOMEM);
            }
            let g = Group {
                mgid: *mgid,
                qps: KVec::new(),
            };
            match m.groups.iter_mut().find(|s| s.is_none()) {
                Some(s) => *s = Some(g),
                None => m.groups.push(Some(g), GFP_ATOMIC)?,
            }
        }
        let g = m.find(mgid).ok_or(EINVAL)?;
        if let Some(Some(mem)) = g.member(me) {
            // Attached already: one more attach to undo (see the top).
            mem.refs = mem.refs.checked_add(1).ok_or(ENOMEM)?;
            return Ok(());
        }
        let new = Some(Member { qp: me, refs: 1 });
        let r = if g.members() >= GROUP_MAX {
            Err(ENOMEM)
        } else {
            match g.qps.iter_mut().find(|q| q.is_none()) {
                Some(q) => {
                    *q = new;
                    Ok(())
                }
                None => g.qps.push(new, GFP_ATOMIC).map_err(|_| ENOMEM),
            }
        };
        if let Err(e) = r {
            if created {
                // Do not leave an empty group behind.
                if let Some(s) = m
                    .groups
                    .iter_mut()
                    .find(|s| matches!(s, Some(g) if g.mgid == *mgid))
                {
                    *s = None;
                }
            }
            return Err(e);
        }
        m.attached += 1;
        created
    };
    if created {
        if let Err(e) = dev.netdev_ref().mc_add(&group_mac(mgid)) {
            let _ = detach_inner(qp, mgid, false, true);
            return Err(e);
        }
    }
    Ok(())
}

/// `detach_mcast`.
pub(crate) fn detach(qp: &Qp<Rrxe>, mgid: &[u8; 16]) -> Result {
    let _ops = qp.device().core().mcast_ops.lock();
    detach_inner(qp, mgid, true, false)
}

/// Undoes one attach (the caller holds `mcast_ops`), or every attach
/// with `all`; `mc` says the group's MAC is in the filter.
fn detach_inner(qp: &Qp<Rrxe>, mgid: &[u8; 16], mc: bool, all: bool) -> Result {
    let dev = qp.device();
    let me = qp.handle().ok_or(EINVAL)?;
    let emptied = {
        let mut m = dev.core().mcast.lock();
        let Some(slot) = m
            .groups
            .iter_mut()
            .find(|s| matches!(s, Some(g) if g.mgid == *mgid))
        else {
            return Err(EINVAL);
        };
        let Some(g) = slot.as_mut() else {
            return Err(EINVAL);
        };
        let Some(q) = g.member(me) else {
            return Err(EINVAL);
        };
        if let Some(mem) = q.as_mut() {
            if mem.refs > 1 && !all {
                mem.refs -= 1;
                return Ok(());
            }
        }
        *q = None;
        let emptied = g.members() == 0;
        let old = if emptied { slot.take() } else { None };
        m.attached = m.attached.saturating_sub(1);
        old
    };
    if emptied.is_some() && mc {
        dev.netdev_ref().mc_del(&group_mac(mgid));
    }
    Ok(())
}

/// Detaches a QP being destroyed from every group.
pub(crate) fn detach_all(qp: &Qp<Rrxe>) {
    let Some(me) = qp.handle() else { return };
    loop {
        let mgid = {
            let m = qp.device().core().mcast.lock();
            m.groups
                .iter()
                .flatten()
                .find(|g| g.has(me))
                .map(|g| g.mgid)
        };
        match mgid {
            Some(g) => {
                let _ops = qp.device().core().mcast_ops.lock();
                if detach_inner(qp, &g, true, true).is_err() {
                    return;
                }
            }
            None => return,
        }
    }
}
