// SPDX-License-Identifier: GPL-2.0

//! The network side of rrxe: one pair of UDP tunnel sockets (IPv4 and
//! IPv6, port 4791) per network namespace that has rrxe devices, received
//! datagrams handed to the device of the net device they arrived on, and
//! the transmit of built packets (or their direct loopback to this device).
//!
//! Sockets are per namespace (C rxe only listens in the initial one), so a
//! device works in any namespace and both drivers can run side by side as
//! long as they do not share a namespace's port.
//!
//! Lifetime: a [`NetSock`] is shared (`Arc`) by the devices of its
//! namespace and closed when the last one goes. Receive runs in softirq:
//! it finds the device's [`Core`](dev::Core) under a spinlock and takes
//! an `Arc` to it for the packet's processing.
//!
//! - [`dev`]: what intake needs of a device (`Core`);
//! - [`rx`]: packet intake, from the socket or from this device itself
//!   (loopback), to the QP's queues;
//! - [`tx`]: building and sending packets for the engines.
//!
//! The arrows run one way: the engines send through `tx`, `tx` loops
//! packets back into `rx`, and `rx` wakes the QP that took one through
//! the scheduler (`sched`), never through the engines.

use crate::new_irq_spinlock;
use crate::rdma::error::{eaddrinuse, eafnosupport};
use crate::rdma::net::{EncapHandler, UdpTunnel};
use crate::rdma::netdev::NetDevice;
use crate::rdma::skb::SkBuff;
use crate::rdma::sync::IrqSpinLock;
use core::sync::atomic::{AtomicU32, Ordering};
use dev::Core;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

pub(crate) mod dev;
pub(crate) mod rx;
pub(crate) mod tx;

/// Receives the namespace's datagrams and hands each to its device.
#[pin_data]
pub(crate) struct Intake {
    #[pin]
    /// The devices of the namespace, by the identity of their net device
    /// (a detached device leaves a free slot).
    devs: IrqSpinLock<KVec<Option<(usize, Arc<Core>)>>>,
}

impl EncapHandler for Intake {
    fn recv(&self, mut skb: SkBuff) {
        // (A packet on a VLAN device is for the RDMA device of its real
        // device, whose GID table holds the VLAN device's addresses.)
        let id = skb.intake_dev_id();
        let core = {
            let devs = self.devs.lock();
            devs.iter()
                .flatten()
                .find(|(d, _)| *d == id)
                .map(|(_, c)| c.clone())
        };
        match core {
            Some(c) => rx::rcv(&c, skb),
            // Not an rrxe device's packet: drop it.
            None => drop(skb),
        }
    }
}

/// The sockets of one network namespace.
pub(crate) struct NetSock {
    /// Identity of the namespace (never dereferenced).
    net_id: usize,
    /// Devices using the sockets; changed under the `Sockets` lock.
    users: AtomicU32,
    intake: Arc<Intake>,
    pub(crate) v4: UdpTunnel<Intake>,
    pub(crate) v6: Option<UdpTunnel<Intake>>,
}

impl NetSock {
    fn open(ndev: &NetDevice) -> Result<Arc<Self>> {
        let intake = Arc::pin_init(
            pin_init!(Intake {
                devs <- new_irq_spinlock!(KVec::new(), "Intake::devs"),
            }),
            GFP_KERNEL,
        )?;
        let v4 = UdpTunnel::open(ndev, false, intake.clone())?;
        // A kernel without IPv6 still carries RoCEv2 over IPv4.
        let v6 = UdpTunnel::open(ndev, true, intake.clone()).ok();
        Ok(Arc::new(
            Self {
                net_id: ndev.net_id(),
                users: AtomicU32::new(0),
                intake,
                v4,
                v6,
            },
            GFP_KERNEL,
        )?)
    }

    /// Starts delivering packets that arrive on `core.ndev` to `core`.
    pub(crate) fn attach(&self, core: Arc<Core>) -> Result {
        let id = core.ndev.id();
        let mut devs = self.intake.devs.lock();
        if let Some(slot) = devs.iter_mut().find(|e| e.is_none()) {
            *slot = Some((id, core));
            return Ok(());
        }
        devs.push(Some((id, core)), GFP_ATOMIC)?;
        Ok(())
    }

    /// Stops delivering to the device on `ndev`.
    pub(crate) fn detach(&self, ndev: &NetDevice) {
        let id = ndev.id();
        let removed = {
            let mut devs = self.intake.devs.lock();
            devs.iter_mut()
                .find(|e| matches!(e, Some((d, _)) if *d == id))
                .and_then(Option::take)
        };
        // The core is released outside the lock.
        drop(removed);
    }

    /// The tunnel for `ipv6` packets.
    pub(crate) fn tunnel(&self, ipv6: bool) -> Result<&UdpTunnel<Intake>> {
        if ipv6 {
            self.v6.as_ref().ok_or_else(eafnosupport)
        } else {
            Ok(&self.v4)
        }
    }
}

/// The namespaces' sockets, shared by all devices of the module.
#[pin_data]
pub(crate) struct Sockets {
    #[pin]
    socks: Mutex<KVec<Option<Arc<NetSock>>>>,
}

/// A device's use of its namespace's sockets; the sockets close when the
/// last use ends.
pub(crate) struct NetUse {
    sockets: Arc<Sockets>,
    net: Arc<NetSock>,
}

impl core::ops::Deref for NetUse {
    type Target = NetSock;

    fn deref(&self) -> &NetSock {
        &self.net
    }
}

impl Drop for NetUse {
    fn drop(&mut self) {
        let last = {
            let mut socks = self.sockets.socks.lock();
            if self.net.users.fetch_sub(1, Ordering::AcqRel) == 1 {
                socks
                    .iter_mut()
                    .find(|s| matches!(s, Some(s) if Arc::ptr_eq(s, &self.net)))
                    .and_then(Option::take)
            } else {
                None
            }
        };
        // Closing waits for RCU readers: outside the lock.
        drop(last);
    }
}

impl Sockets {
    /// No sockets yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            socks <- new_mutex!(KVec::new(), "Sockets::socks"),
        })
    }

    /// A use of the sockets of `ndev`'s namespace, opened if needed.
    /// `EADDRINUSE` when the namespace's port 4791 belongs to someone else
    /// (C rxe).
    pub(crate) fn get(this: &Arc<Self>, ndev: &NetDevice) -> Result<NetUse> {
        let id = ndev.net_id();
        let mut socks = this.socks.lock();
        if let Some(s) = socks.iter().flatten().find(|s| s.net_id == id) {
            s.users.fetch_add(1, Ordering::AcqRel);
            return Ok(NetUse {
                sockets: this.clone(),
                net: s.clone(),
            });
        }
        let s = NetSock::open(ndev).inspect_err(|e| {
            if *e == eaddrinuse() {
                pr_err!(
                    "UDP port 4791 of {}'s namespace is in use (rdma_rxe loaded?)\n",
                    ndev.name()
                );
            }
        })?;
        match socks.iter_mut().find(|e| e.is_none()) {
            Some(slot) => *slot = Some(s.clone()),
            None => socks.push(Some(s.clone()), GFP_KERNEL)?,
        }
        s.users.fetch_add(1, Ordering::AcqRel);
        Ok(NetUse {
            sockets: this.clone(),
            net: s,
        })
    }
}
