// SPDX-License-Identifier: GPL-2.0

//! rdma_rrxe: Soft-RoCE (RDMA over Converged Ethernet v2) in Rust.
//!
//! `rdma link add NAME type rrxe netdev DEV` turns an Ethernet net device
//! into an RDMA device that rdma-core's unchanged rxe provider (librxe)
//! drives: the device reports `RDMA_DRIVER_RXE` and uverbs ABI 2.
//!
//! Layers: `rdma` holds every `unsafe` block (safe wrappers over ib_core,
//! netdev and UDP tunnels); the driver files above it are safe Rust.
//! See Documentation/architecture.md.

// `try_pin_init!` over the QP state expands deeper than the default allows.
#![recursion_limit = "256"]
// The compiler holds unsafe code to the abstraction layer: every module but
// `rdma` is denied it (and `proto` forbids it on its own).
#![deny(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

mod av;
mod counters;
mod cq;
mod device;
mod engine;
mod mcast;
mod mem;
mod mr;
mod mw;
mod net;
mod param;
mod post;
#[path = "proto/src/lib.rs"]
pub mod proto;
mod qp;
mod qp_attr;
mod queue;
mod quota;
#[allow(unsafe_code)]
mod rdma;
mod sched;
mod srq;
mod verbs;

pub(crate) use device::Rrxe;
use net::Sockets;
use rdma::consts::RDMA_DRIVER_RXE;
use rdma::debugfs::DebugDir;
use rdma::device::{DeviceConfig, Registry};
use rdma::link::{LinkOps, LinkRegistration};
use rdma::netdev::{NetDevice, NetdevEvent, NetdevHandler, NetdevNotifier};
use rdma::skb::ZeroPage;
use rdma::task::{Owner, Workqueue};

module! {
    type: RrxeModule,
    name: "rdma_rrxe",
    author: "rrxe developers",
    description: "Soft RoCE (RoCEv2) RDMA transport in Rust",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// Creates devices for `rdma link add ... type rrxe`.
struct Linker {
    registry: Arc<Registry<Rrxe>>,
    sockets: Arc<Sockets>,
}

impl LinkOps for Linker {
    const TYPE: &'static CStr = c_str!("rrxe");

    fn newlink(&self, name: &CStr, ndev: &NetDevice) -> Result {
        if !ndev.is_plain_ethernet() {
            pr_err!("{}: not an Ethernet device; rrxe needs one\n", ndev.name());
            return Err(EINVAL);
        }
        // ib_core runs link adds side by side: two on one net device would
        // both pass a check made outside the registry's lock.
        let check = || {
            if self.registry.find(|d| d.is_on(ndev)).is_some()
                || rdma::device::netdev_has_device(ndev, RDMA_DRIVER_RXE)
            {
                pr_err!("{}: already carries an rxe/rrxe device\n", ndev.name());
                return Err(EEXIST);
            }
            if rdma::device::name_in_use(name) {
                return Err(EEXIST);
            }
            Ok(())
        };
        // Once before the sockets (a C rxe device's net device gets EEXIST,
        // not its port's EADDRINUSE), once more under the lock.
        check()?;
        let net = Sockets::get(&self.sockets, ndev)?;
        let init = Rrxe::new(ndev, net)?;
        let config = DeviceConfig {
            node_guid: device::node_guid(ndev),
            node_desc: c_str!("rrxe"),
            num_comp_vectors: rdma::device::num_possible_cpus(),
            extra_uverbs_cmds: &[
                rdma::consts::IB_USER_VERBS_CMD_POST_SEND,
                rdma::consts::IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
            ],
            local_dma_lkey: param::LOCAL_DMA_LKEY,
        };
        // Registration announces the port state (`enable_driver`).
        self.registry.register(name, ndev, &config, init, check)?;
        if let Some(dev) = self.registry.find(|d| d.is_on(ndev)) {
            if let Err(e) = dev.attach_rx() {
                dev.unregister_queued();
                return Err(e);
            }
            pr_info!("{}: added on {}\n", dev.name(), ndev.name());
        }
        Ok(())
    }
}

/// Follows the net devices that carry rrxe devices.
struct NetEvents {
    registry: Arc<Registry<Rrxe>>,
}

impl NetdevHandler for NetEvents {
    fn event(&self, event: NetdevEvent, ndev: &NetDevice) {
        let Some(dev) = self.registry.find(|d| d.is_on(ndev)) else {
            return;
        };
        match event {
            // RTNL is held: unregister from a work item.
            NetdevEvent::Unregister => dev.unregister_queued(),
            NetdevEvent::Up | NetdevEvent::Down | NetdevEvent::Change => Rrxe::port_changed(&dev),
            // The active MTU is derived from the netdev at each query.
            NetdevEvent::ChangeMtu => {}
        }
    }
}

struct RrxeModule {
    // Dropped in this order: no new links, no more netdev events, then the
    // registry unregisters the remaining devices, the sockets close, and
    // the workqueue (idle by then) goes.
    _link: Pin<KBox<LinkRegistration<Linker>>>,
    _notifier: Pin<KBox<NetdevNotifier<NetEvents>>>,
    _registry: Arc<Registry<Rrxe>>,
    _sockets: Arc<Sockets>,
    _wq: Workqueue,
    _kernel_wq: Workqueue,
    // Faults of privileged contexts' QPs: after the devices (a fault still
    // under way holds its device's memory, `DeviceMem`), drained here.
    _fault_wq: Workqueue,
    // Users' workqueues whose faults were under way when their device
    // went: after the devices, drained here (waiting for those faults).
    _reap_wq: Workqueue,
    // Looped-back packets' pad and trailer: packets hold their own
    // references, and no packet is built once the devices are gone.
    _zero_page: ZeroPage,
    // Tests' knobs and counts (rdma/debugfs.rs).
    _debugfs: DebugDir,
}

impl kernel::Module for RrxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        crate::rdma::crc::select()?;
        let wq = Workqueue::new(c_str!("rrxe"), Owner::User)?;
        let kernel_wq = Workqueue::new(c_str!("rrxe_kernel"), Owner::Kernel)?;
        let fault_wq = Workqueue::faults()?;
        let reap_wq = Workqueue::reaper()?;
        let zero_page = ZeroPage::new()?;
        let sockets = Arc::pin_init(Sockets::new(), GFP_KERNEL)?;
        let registry = Arc::pin_init(Registry::new(), GFP_KERNEL)?;
        let notifier = KBox::pin_init(
            NetdevNotifier::new(NetEvents {
                registry: registry.clone(),
            }),
            GFP_KERNEL,
        )?;
        let link = KBox::pin_init(
            LinkRegistration::new(Arc::new(
                Linker {
                    registry: registry.clone(),
                    sockets: sockets.clone(),
                },
                GFP_KERNEL,
            )?),
            GFP_KERNEL,
        )?;
        pr_info!("loaded\n");
        Ok(Self {
            _link: link,
            _notifier: notifier,
            _registry: registry,
            _sockets: sockets,
            _wq: wq,
            _kernel_wq: kernel_wq,
            _fault_wq: fault_wq,
            _reap_wq: reap_wq,
            _zero_page: zero_page,
            _debugfs: DebugDir::new(),
        })
    }
}

impl Drop for RrxeModule {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
