// SPDX-License-Identifier: GPL-2.0

//! Per-user bounds on a device's objects.
//!
//! Every object pool of a device (PDs, AHs, CQs, SRQs, QPs, MRs, MWs) is
//! shared by all its users and by kernel consumers. Without a bound per
//! user, one unprivileged process could take every AH (and with them
//! rdma_cm: ib_cm makes an AH for each connection message) or every MR
//! index (nvme-rdma's `alloc_mr` at reconnect), for everyone else.
//!
//! - The objects of a user context are charged to the user who opened it
//!   (its real uid), in a [`UserShare`] that all the user's contexts on
//!   the device share: opening more contexts gains nothing.
//! - One user holds at most a quarter of a pool's capacity
//!   ([`Bounds::per_user`]); users together hold at most all but a
//!   sixteenth of it ([`Bounds::users`]): the rest is kept for kernel
//!   consumers and for privileged callers.
//! - Kernel consumers, and contexts opened by a task with
//!   `CAP_SYS_RESOURCE` (the capability that overrides resource limits),
//!   are charged nothing and bounded by the pool alone.
//! - A refused create fails with `ENOMEM`, as at the pool's own limit.
//!
//! - Each user also has a workqueue of its own for its QPs' work
//!   ([`UserShare::workqueue`]): a user whose QPs wait (in faults on its
//!   own memory paged on demand) fills its own slots, never another
//!   user's; privileged contexts' QPs share the module's user workqueue
//!   (their faults the module's `rrxe_faults`),
//!   kernel consumers' have theirs.
//!
//! Locking: the counts are atomics, each moved only by a compare and swap
//! that stays within its bound, so concurrent creates never overshoot.
//! `Quota::users` (a mutex) guards the list of users with contexts.

use crate::rdma::charge::CallingUser;
use crate::rdma::task::UserWorkqueue;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// A kind of object charged to its user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pd,
    Ah,
    Cq,
    Srq,
    Qp,
    Mr,
    Mw,
}

/// The number of [`Kind`]s.
pub(crate) const KINDS: usize = 7;

/// Every [`Kind`], in index order.
pub(crate) const ALL: [Kind; KINDS] = [
    Kind::Pd,
    Kind::Ah,
    Kind::Cq,
    Kind::Srq,
    Kind::Qp,
    Kind::Mr,
    Kind::Mw,
];

/// A user's share of a pool of `capacity` objects.
const fn per_user(capacity: u32) -> u32 {
    let n = capacity / 4;
    if n == 0 {
        1
    } else {
        n
    }
}

/// What all users together may hold of a pool of `capacity` objects.
const fn users_max(capacity: u32) -> u32 {
    capacity - capacity / 16
}

/// The bounds of one device, per kind.
struct Bounds {
    per_user: [u32; KINDS],
    users: [u32; KINDS],
    /// What users hold together.
    held: [AtomicU32; KINDS],
}

/// Takes one of `count` if it stays at most `max`.
fn take(count: &AtomicU32, max: u32) -> Result {
    count
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < max).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| ENOMEM)
}

/// One user's objects on one device.
pub(crate) struct UserShare {
    uid: u32,
    /// Live contexts of the user on the device.
    contexts: AtomicU32,
    held: [AtomicU32; KINDS],
    bounds: Arc<Bounds>,
    wq: Arc<UserWorkqueue>,
}

impl UserShare {
    /// The workqueue of the user's QPs.
    pub(crate) fn workqueue(&self) -> Arc<UserWorkqueue> {
        self.wq.clone()
    }

    /// Charges one object of `kind`: `ENOMEM` past the user's share or
    /// the users' part of the pool.
    pub(crate) fn charge(self: &Arc<Self>, kind: Kind) -> Result<Charge> {
        let k = kind as usize;
        take(&self.held[k], self.bounds.per_user[k])?;
        if let Err(e) = take(&self.bounds.held[k], self.bounds.users[k]) {
            self.held[k].fetch_sub(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(Charge {
            share: self.clone(),
            kind,
        })
    }

    /// No context and no object: nothing can charge it or fault any more.
    /// A share whose faults are still under way (on memory that does not
    /// answer) is not idle: its slot is not reused, since dropping it
    /// would wait for them in the system call of the user who takes the
    /// slot (they wait until the device goes, or its memory answers).
    fn idle(&self) -> bool {
        self.contexts.load(Ordering::Relaxed) == 0
            && self.held.iter().all(|h| h.load(Ordering::Relaxed) == 0)
            && !self.wq.faulting()
    }
}

/// One object charged to its user, until dropped.
pub(crate) struct Charge {
    share: Arc<UserShare>,
    kind: Kind,
}

impl Charge {
    /// The user charged.
    pub(crate) fn share(&self) -> &Arc<UserShare> {
        &self.share
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let k = self.kind as usize;
        self.share.held[k].fetch_sub(1, Ordering::Relaxed);
        self.share.bounds.held[k].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Charges one object of `kind` to `share`, if the creator has one.
pub(crate) fn charge(share: Option<&Arc<UserShare>>, kind: Kind) -> Result<Option<Charge>> {
    share.map(|s| s.charge(kind)).transpose()
}

/// A user context's membership in its user's share.
pub(crate) struct Member(Arc<UserShare>);

impl Member {
    /// The share the context's objects are charged to.
    pub(crate) fn share(&self) -> &Arc<UserShare> {
        &self.0
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.0.contexts.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The per-user bounds of one device.
#[pin_data]
pub(crate) struct Quota {
    bounds: Arc<Bounds>,
    /// The users with contexts (a slot is reused once its user is idle).
    #[pin]
    users: Mutex<KVec<Option<Arc<UserShare>>>>,
}

impl Quota {
    /// Bounds for pools of `capacity` objects of each kind (indexed by
    /// [`Kind`]).
    pub(crate) fn new(capacity: [u32; KINDS]) -> Result<impl PinInit<Self>> {
        let bounds = Arc::new(
            Bounds {
                per_user: capacity.map(per_user),
                users: capacity.map(users_max),
                held: [const { AtomicU32::new(0) }; KINDS],
            },
            GFP_KERNEL,
        )?;
        Ok(pin_init!(Self {
            bounds,
            users <- new_mutex!(KVec::new(), "Quota::users"),
        }))
    }

    /// The membership of a new context of the calling user; `None` for a
    /// caller that is charged nothing (see the module's description).
    pub(crate) fn join(&self) -> Result<Option<Member>> {
        let Some(uid) = CallingUser::bounded_uid() else {
            return Ok(None);
        };
        let mut old = None;
        let mut users = self.users.lock();
        let found = users
            .as_slice()
            .iter()
            .flatten()
            .find(|s| s.uid == uid)
            .cloned();
        let share = match found {
            Some(s) => s,
            None => {
                let s = Arc::new(
                    UserShare {
                        uid,
                        contexts: AtomicU32::new(0),
                        held: [const { AtomicU32::new(0) }; KINDS],
                        bounds: self.bounds.clone(),
                        wq: Arc::new(UserWorkqueue::new(uid)?, GFP_KERNEL)?,
                    },
                    GFP_KERNEL,
                )?;
                let free = users
                    .as_mut_slice()
                    .iter_mut()
                    .find(|slot| slot.as_ref().is_none_or(|s| s.idle()));
                match free {
                    // (The idle share goes after the lock.)
                    Some(slot) => old = slot.replace(s.clone()),
                    None => users.push(Some(s.clone()), GFP_KERNEL)?,
                }
                s
            }
        };
        // Under the lock: an idle share is not replaced while it gains a
        // context.
        share.contexts.fetch_add(1, Ordering::Relaxed);
        drop(users);
        drop(old);
        Ok(Some(Member(share)))
    }
}
