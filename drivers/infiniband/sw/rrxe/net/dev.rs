// SPDX-License-Identifier: GPL-2.0

//! A device's [`Core`]: what packet intake (`net::rx`) needs of the
//! device, shared with the namespace's socket, which finds it by the net
//! device a packet arrived on.

use crate::counters::{Bindings, Counters, KeyViolations};
use crate::mcast::Groups;
use crate::new_irq_spinlock;
use crate::rdma::netdev::NetDevice;
use crate::rdma::objects::Qp;
use crate::rdma::pool::{Handle, Pool, PoolRef};
use crate::rdma::sync::IrqSpinLock;
use crate::Rrxe;
use core::sync::atomic::AtomicU64;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;
use kernel::types::ARef;

/// What receive needs of a device, shared with the namespace's socket.
#[pin_data]
pub(crate) struct Core {
    /// The device's net device.
    pub(crate) ndev: ARef<NetDevice>,
    /// QPs by number.
    #[pin]
    pub(crate) qp_pool: Pool<Qp<Rrxe>>,
    /// The GSI QP (QP1), if there is one: by handle, so a packet for QP1
    /// never reaches a QP that took the pool index of a destroyed GSI QP.
    #[pin]
    pub(crate) gsi: IrqSpinLock<Option<Handle>>,
    /// Port counters.
    pub(crate) counters: Counters,
    /// The QPs each counter of `rdma statistic qp` holds.
    #[pin]
    pub(crate) bindings: Mutex<Bindings>,
    /// Packets of this device's QPs that the stack freed (sent, or taken
    /// by the destination's engines on loopback): whether the host moves
    /// packets, for a retransmit timeout (`retransmit::put_off_in_host`).
    pub(crate) tx_freed: AtomicU64,
    /// The port's P_Key and Q_Key violation counts (port attributes).
    pub(crate) key_violations: KeyViolations,
    /// UD multicast groups.
    #[pin]
    pub(crate) mcast: IrqSpinLock<Groups>,
    /// Serializes attach and detach, each with its update of the net
    /// device's filter (see `mcast`).
    #[pin]
    pub(crate) mcast_ops: Mutex<()>,
}

impl Core {
    /// A new core for a device on `ndev`.
    pub(crate) fn new(ndev: ARef<NetDevice>) -> impl PinInit<Self> {
        pin_init!(Self {
            ndev,
            qp_pool <- crate::param::pool(crate::quota::Kind::Qp),
            gsi <- new_irq_spinlock!(None, "Core::gsi"),
            counters: Counters::new(),
            bindings <- new_mutex!(Bindings::new(), "Core::bindings"),
            tx_freed: AtomicU64::new(0),
            key_violations: KeyViolations::new(),
            mcast <- new_irq_spinlock!(Groups::new(), "Core::mcast"),
            mcast_ops <- new_mutex!((), "Core::mcast_ops"),
        })
    }

    /// The QP a packet addressed to `qpn` goes to.
    pub(crate) fn qp(&self, qpn: u32) -> Option<PoolRef<Qp<Rrxe>>> {
        match qpn {
            0 => None,
            1 => {
                let h = (*self.gsi.lock())?;
                self.qp_pool.get_handle(h)
            }
            n => self.qp_pool.get(n),
        }
    }

    /// The QP `h` names, if it still exists.
    pub(crate) fn qp_by_handle(&self, h: Handle) -> Option<PoolRef<Qp<Rrxe>>> {
        self.qp_pool.get_handle(h)
    }
}
