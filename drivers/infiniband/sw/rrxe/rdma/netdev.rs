// SPDX-License-Identifier: GPL-2.0

//! Network devices (`struct net_device`) and netdev event notifiers.
//!
//! A [`NetDevice`] is only ever seen by reference: either borrowed for the
//! length of a callback from the network stack, or held through an
//! [`ARef<NetDevice>`], which owns one `dev_hold` reference.

use super::bindings;
use core::ptr::NonNull;
use kernel::c_str;
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::types::{AlwaysRefCounted, Opaque};

/// Length of an Ethernet MAC address.
pub(crate) const ETH_ALEN: usize = bindings::ETH_ALEN as usize;

/// A network device.
///
/// # Invariants
///
/// A `&NetDevice` points at a `struct net_device` that is registered (or
/// being unregistered) and stays allocated for the borrow, because a
/// reference on it is held (by an [`ARef`] or by the network stack for the
/// length of a callback).
#[repr(transparent)]
pub(crate) struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: `struct net_device` is designed to be shared between threads; the
// accessors below only read fields the stack updates atomically or under its
// own locks, and reference counting is thread safe.
unsafe impl Send for NetDevice {}
// SAFETY: See `Send` above.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold`/`dev_put` keep the net_device allocated while the count
// is non-zero, as `AlwaysRefCounted` requires.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: By the type invariant the device is alive.
        unsafe { bindings::rrxe_helper_dev_hold(self.as_ptr()) };
    }

    /// # Safety
    ///
    /// As [`AlwaysRefCounted::dec_ref`]: the caller owns one reference.
    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives up one reference it holds.
        unsafe { bindings::rrxe_helper_dev_put(obj.cast().as_ptr()) };
    }
}

impl NetDevice {
    /// Borrows a `struct net_device` for `'a`.
    ///
    /// # Safety
    ///
    /// `ptr` must point at a live net_device on which a reference is held
    /// for all of `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDevice` is a transparent wrapper; the caller promises
        // the device stays alive for `'a`.
        unsafe { &*ptr.cast() }
    }

    /// The C pointer.
    pub(crate) fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// An identity of the device (its address), for lookups; never
    /// dereferenced.
    pub(crate) fn id(&self) -> usize {
        self.as_ptr() as usize
    }

    /// An identity of the device's network namespace, for lookups; never
    /// dereferenced.
    pub(crate) fn net_id(&self) -> usize {
        // SAFETY: The device is alive, so its namespace pointer is valid.
        unsafe { bindings::rrxe_helper_dev_net(self.as_ptr()) as usize }
    }

    /// The interface name, NUL padded.
    pub(crate) fn name(&self) -> IfName {
        let mut n = [0u8; 16];
        // SAFETY: By the type invariant the device is alive. A rename
        // rewrites the name under RTNL; a torn read yields a stale but
        // NUL-terminated name, which only feeds log messages.
        let name = unsafe { &(*self.as_ptr()).name };
        for (d, s) in n.iter_mut().zip(name.iter()) {
            *d = *s;
        }
        n[15] = 0;
        IfName(n)
    }

    /// The device this net device sits on (a NIC's PCI or virtio device),
    /// with a `get_device` reference for the caller to give back; null for
    /// a net device without one (veth) or one being unregistered.
    pub(crate) fn parent_device_get(&self) -> *mut bindings::device {
        // A registered net device's `struct device` holds its parent (from
        // `device_add` to `device_del`, which unregistration calls under
        // RTNL), so under RTNL the parent lives while we take our own.
        // SAFETY: The net device is alive (type invariant); see above;
        // `get_device(NULL)` is NULL.
        unsafe {
            bindings::rtnl_lock();
            let parent = if bindings::rrxe_helper_netdev_registered(self.as_ptr()) {
                bindings::get_device((*self.as_ptr()).dev.parent)
            } else {
                core::ptr::null_mut()
            };
            bindings::rtnl_unlock();
            parent
        }
    }

    /// The current MTU.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: By the type invariant the device is alive.
        unsafe { bindings::rrxe_helper_netdev_mtu(self.as_ptr()) }
    }

    /// Adds a link-layer multicast address to the device's filter.
    pub(crate) fn mc_add(&self, mac: &[u8; ETH_ALEN]) -> Result {
        // SAFETY: The device is alive; the address is copied.
        kernel::error::to_result(unsafe { bindings::dev_mc_add(self.as_ptr(), mac.as_ptr()) })
    }

    /// Removes a link-layer multicast address added by `mc_add`.
    pub(crate) fn mc_del(&self, mac: &[u8; ETH_ALEN]) {
        // SAFETY: As `mc_add`.
        let _ = unsafe { bindings::dev_mc_del(self.as_ptr(), mac.as_ptr()) };
    }

    /// The current hardware address (the first six bytes of `dev_addr`).
    pub(crate) fn mac(&self) -> [u8; ETH_ALEN] {
        let mut mac = [0u8; ETH_ALEN];
        // SAFETY: By the type invariant the device is alive; `dev_addr`
        // points at `addr_len` (at least `ETH_ALEN` for Ethernet, checked
        // by `addr_len()`) bytes that stay allocated with the device.
        unsafe {
            let dev = self.as_ptr();
            let len = usize::from((*dev).addr_len).min(ETH_ALEN);
            let src = (*dev).dev_addr;
            if !src.is_null() {
                core::ptr::copy_nonoverlapping(src, mac.as_mut_ptr(), len);
            }
        }
        mac
    }

    /// Whether this is an Ethernet device (`ARPHRD_ETHER`, 6-byte address)
    /// that is neither loopback nor a VLAN device.
    pub(crate) fn is_plain_ethernet(&self) -> bool {
        // SAFETY: By the type invariant the device is alive; `type_`,
        // `addr_len` and `flags` are read-only for a registered Ethernet
        // device except for flags, read racily as C does.
        let (ty, alen, flags) = unsafe {
            let d = self.as_ptr();
            ((*d).type_, (*d).addr_len, (*d).flags)
        };
        // SAFETY: By the type invariant the device is alive.
        let vlan = unsafe { bindings::rrxe_helper_is_vlan_dev(self.as_ptr()) };
        u32::from(ty) == bindings::ARPHRD_ETHER
            && usize::from(alen) == ETH_ALEN
            && flags & bindings::net_device_flags_IFF_LOOPBACK == 0
            && !vlan
    }

    /// Whether the device is administratively up and has carrier.
    pub(crate) fn is_up_with_carrier(&self) -> bool {
        // SAFETY: By the type invariant the device is alive.
        unsafe {
            bindings::rrxe_helper_netif_running(self.as_ptr())
                && bindings::rrxe_helper_netif_carrier_ok(self.as_ptr())
        }
    }

    /// Whether the device is administratively up (`IFF_UP`).
    pub(crate) fn is_admin_up(&self) -> bool {
        // SAFETY: By the type invariant the device is alive.
        let flags = unsafe { bindings::dev_get_flags(self.as_ptr()) };
        flags & bindings::net_device_flags_IFF_UP != 0
    }
}

impl PartialEq for NetDevice {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self, other)
    }
}

/// An interface name, for messages.
pub(crate) struct IfName([u8; 16]);

impl IfName {
    /// The name's bytes, without the NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        self.0.get(..end).unwrap_or(&[])
    }

    /// The name as a C string.
    pub(crate) fn as_cstr(&self) -> &CStr {
        // (The last byte is always NUL: `NetDevice::name`.)
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(15);
        CStr::from_bytes_with_nul(self.0.get(..=end).unwrap_or(b"\0")).unwrap_or(c_str!(""))
    }
}

impl core::fmt::Display for IfName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &b in self.as_bytes() {
            let c = if b.is_ascii_graphic() { b as char } else { '?' };
            core::fmt::Write::write_char(f, c)?;
        }
        Ok(())
    }
}

/// The netdev events the driver reacts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetdevEvent {
    /// The device came up (`NETDEV_UP`).
    Up,
    /// The device went down (`NETDEV_DOWN`).
    Down,
    /// Carrier or other state changed (`NETDEV_CHANGE`).
    Change,
    /// The MTU changed (`NETDEV_CHANGEMTU`).
    ChangeMtu,
    /// The device is being unregistered (`NETDEV_UNREGISTER`).
    Unregister,
}

impl NetdevEvent {
    fn from_raw(ev: kernel::ffi::c_ulong) -> Option<Self> {
        let ev = u32::try_from(ev).ok()?;
        Some(match ev {
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_DOWN => Self::Down,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Self::ChangeMtu,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            _ => return None,
        })
    }
}

/// Receives netdev events; see [`NetdevNotifier`].
pub(crate) trait NetdevHandler: Send + Sync + 'static {
    /// Called in process context with RTNL held, for every device of every
    /// network namespace. Must not sleep for long and must not take RTNL.
    fn event(&self, event: NetdevEvent, ndev: &NetDevice);
}

// SAFETY: The notifier block is only touched by the notifier chain code,
// under its own lock; the handler is `Send + Sync`.
unsafe impl<H: NetdevHandler> Send for NetdevNotifier<H> {}
// SAFETY: See `Send`; no method gives access to the notifier block.
unsafe impl<H: NetdevHandler> Sync for NetdevNotifier<H> {}

/// A registered netdevice notifier; unregistered when dropped.
#[pin_data(PinnedDrop)]
pub(crate) struct NetdevNotifier<H: NetdevHandler> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    handler: H,
}

impl<H: NetdevHandler> NetdevNotifier<H> {
    /// An initialiser that registers `handler` for netdev events once the
    /// notifier block is in its final (pinned) place.
    pub(crate) fn new(handler: H) -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| {
            // SAFETY: `slot` is valid for writes and pinned (the
            // `pin_init_from_closure` contract).
            unsafe {
                let nb = Opaque::raw_get(core::ptr::addr_of!((*slot).nb));
                nb.write(bindings::notifier_block {
                    notifier_call: Some(Self::notifier_call),
                    ..Default::default()
                });
                core::ptr::addr_of_mut!((*slot).handler).write(handler);
                let ret = bindings::register_netdevice_notifier(nb);
                if let Err(e) = to_result(ret) {
                    core::ptr::drop_in_place(core::ptr::addr_of_mut!((*slot).handler));
                    return Err(e);
                }
            }
            Ok(())
        };
        // SAFETY: On success every field is initialised; on error nothing
        // is left initialised (the handler is dropped again) and the
        // notifier is not registered.
        unsafe { kernel::init::pin_init_from_closure(init) }
    }

    /// # Safety
    ///
    /// Only the netdevice notifier chain calls this, with the `nb` field of a
    /// registered `Self` and, for netdevice events, a `netdev_notifier_info`.
    unsafe extern "C" fn notifier_call(
        nb: *mut bindings::notifier_block,
        event: kernel::ffi::c_ulong,
        ptr: *mut kernel::ffi::c_void,
    ) -> kernel::ffi::c_int {
        let Some(ev) = NetdevEvent::from_raw(event) else {
            return bindings::NOTIFY_DONE as _;
        };
        // SAFETY: `nb` is the `nb` field of a registered `Self` (only
        // `register` installs this callback), which outlives registration.
        let this = unsafe { &*kernel::container_of!(nb, Self, nb) };
        // SAFETY: For netdevice notifiers `ptr` is a
        // `netdev_notifier_info` whose device the stack keeps alive for the
        // duration of the call.
        let ndev = unsafe { NetDevice::from_raw(bindings::rrxe_helper_notifier_info_to_dev(ptr)) };
        this.handler.event(ev, ndev);
        bindings::NOTIFY_DONE as _
    }
}

#[pinned_drop]
impl<H: NetdevHandler> PinnedDrop for NetdevNotifier<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `register` only hands out registered notifiers.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}
