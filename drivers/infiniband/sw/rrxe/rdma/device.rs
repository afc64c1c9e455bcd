// SPDX-License-Identifier: GPL-2.0

//! `struct ib_device`: allocation, the verbs ops table, registration, and a
//! registry of a driver's live devices.
//!
//! # Lifetime
//!
//! A [`Device<T>`] is allocated by `_ib_alloc_device` with room for the
//! driver's state `T` after the C struct. `T` is initialised in place before
//! the ops are installed and dropped by the `dealloc_driver` op, the last op
//! ib_core calls; ib_core frees the memory on the final `put_device`.
//! The driver only ever sees a `&Device<T>` inside an op (ib_core holds the
//! device registered for the call) or through a [`DeviceRef`], which holds
//! the registration count (`ib_device_try_get`), so `T` is always live when
//! it is reachable.
//!
//! [`Registry`] keeps a `get_device` reference on every device it created,
//! so it can look devices up by their state and unregister whatever is left
//! when it is dropped, without ever touching freed memory. It does not use
//! `ib_unregister_driver()`, because that unregisters every device of a
//! driver id and rrxe shares `RDMA_DRIVER_RXE` with C `rdma_rxe`.

use super::attrs::{GidNetdev, GidType, SgidEntry};
use super::bindings;
use super::netdev::NetDevice;
use super::ops::{Adapter, DeviceOps};
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNodeReservation};
use kernel::str::CStr;
use kernel::sync::Mutex;
use kernel::types::{ARef, Opaque};
use kernel::{new_mutex, ThisModule};

/// Device attributes reported by `query_device` (`struct ib_device_attr`).
pub(crate) type DeviceAttr = bindings::ib_device_attr;
/// Port attributes reported by `query_port` (`struct ib_port_attr`).
pub(crate) type PortAttr = bindings::ib_port_attr;
/// Port properties fixed at registration (`struct ib_port_immutable`).
pub(crate) type PortImmutable = bindings::ib_port_immutable;
/// Arguments of `modify_device` (`struct ib_device_modify`).
pub(crate) type DeviceModify = bindings::ib_device_modify;
/// Arguments of `modify_port` (`struct ib_port_modify`).
pub(crate) type PortModify = bindings::ib_port_modify;

/// Length of a node description.
pub(crate) const NODE_DESC_MAX: usize = bindings::IB_DEVICE_NODE_DESC_MAX as usize;

/// Asynchronous port events a driver dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortEvent {
    /// The port became active (`IB_EVENT_PORT_ACTIVE`).
    Active,
    /// The port left the active state (`IB_EVENT_PORT_ERR`).
    Error,
}

/// A port's link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkLayer {
    /// Ethernet (RoCE).
    Ethernet,
}

/// What the driver sets up once, before registration.
pub(crate) struct DeviceConfig {
    /// `node_guid` (network order, as a host integer of its bytes).
    pub(crate) node_guid: [u8; 8],
    /// `node_desc`.
    pub(crate) node_desc: &'static CStr,
    /// Number of completion vectors.
    pub(crate) num_comp_vectors: i32,
    /// Extra uverbs write commands beyond ib_core's default set.
    pub(crate) extra_uverbs_cmds: &'static [u32],
    /// `local_dma_lkey`: the lkey of all kernel memory that kernel PDs get
    /// when the device advertises `IBK_LOCAL_DMA_LKEY`.
    pub(crate) local_dma_lkey: u32,
}

// `state` starts at 0 (zeroed allocation): `T` not initialised yet.
const DATA_LIVE: u8 = 1;
const DATA_GONE: u8 = 2;

/// An RDMA device with driver state `T`.
///
/// # Invariants
///
/// `ib` is the `struct ib_device` allocated by `_ib_alloc_device` for this
/// wrapper, whose ops are `Adapter<T>`'s. Whenever a `&Device<T>` exists,
/// `state` is `DATA_LIVE` and `data` holds an initialised, pinned `T`.
#[repr(C)]
pub(crate) struct Device<T: DeviceOps> {
    ib: Opaque<bindings::ib_device>,
    state: AtomicU8,
    data: Opaque<T>,
}

// SAFETY: `T: Send + Sync`; the C part is shared by design and only touched
// through ib_core's thread-safe API or fields owned by the driver.
unsafe impl<T: DeviceOps> Send for Device<T> {}
// SAFETY: See `Send` above.
unsafe impl<T: DeviceOps> Sync for Device<T> {}

impl<T: DeviceOps> core::ops::Deref for Device<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: By the type invariant `data` is initialised while a
        // reference to `self` exists.
        unsafe { &*self.data.get() }
    }
}

impl<T: DeviceOps> Device<T> {
    const ALIGN_OK: () = assert!(core::mem::align_of::<Self>() <= 8);

    /// Borrows the device behind `ib`.
    ///
    /// # Safety
    ///
    /// `ib` must be the `ib_device` of a `Device<T>` whose state is live for
    /// all of `'a` (an ib_core op on it is running, or a registration count
    /// is held).
    pub(crate) unsafe fn from_raw<'a>(ib: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `ib` is the first field of the `#[repr(C)]` wrapper and
        // the caller guarantees liveness.
        unsafe { &*ib.cast::<Self>() }
    }

    /// The C pointer.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// Passes `r` on; if it is an error, says through dynamic debug
    /// (`rrxe_helper_dbg_dev`) that `what` failed on the device
    /// (`create_qp: -ENOMEM`), as C rxe's `rxe_dbg_dev` does.
    pub(crate) fn dbg_err<R>(&self, what: &CStr, r: Result<R>) -> Result<R> {
        if let Err(e) = &r {
            // SAFETY: The device is live (borrowed); the helper only
            // prints its name, `what` and the error.
            unsafe {
                bindings::rrxe_helper_dbg_dev(self.as_raw(), what.as_char_ptr(), e.to_errno())
            }
        }
        r
    }

    /// The device name (`rrxe0`).
    pub(crate) fn name(&self) -> &CStr {
        // The name is `ib_device.name`, an array a rename rewrites in place
        // (never freed while the device lives): a read racing a rename may
        // see a mix of the two names, which messages and events tolerate.
        // SAFETY: The device is alive (type invariant); the array's last
        // byte stays NUL.
        unsafe { CStr::from_char_ptr(bindings::rrxe_helper_ib_device_name(self.as_raw()).cast()) }
    }

    /// Sends an asynchronous event for port 1 to ib_core's consumers.
    pub(crate) fn dispatch_port_event(&self, ev: PortEvent) {
        let event = match ev {
            PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            PortEvent::Error => bindings::ib_event_type_IB_EVENT_PORT_ERR,
        };
        let mut e = bindings::ib_event {
            device: self.as_raw(),
            event,
            ..Default::default()
        };
        e.element.port_num = 1;
        // SAFETY: The device is alive; `ib_dispatch_event` copies nothing
        // past the call.
        unsafe { bindings::ib_dispatch_event(&e) };
    }

    /// Speed and width of the Ethernet link behind `port`, in IB terms.
    pub(crate) fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let mut speed: u16 = 0;
        let mut width: u8 = 0;
        // SAFETY: The device is alive; the out pointers are valid.
        let ret =
            unsafe { bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width) };
        kernel::error::to_result(ret)?;
        Ok((speed, width))
    }

    /// The RoCEv2 GID entry at `index` of port 1's table (with its VLAN
    /// device, if its net device is one), if there is one.
    pub(crate) fn gid(&self, index: u8) -> Option<SgidEntry> {
        // SAFETY: The device is alive; the call returns a referenced entry
        // or an error pointer.
        let attr = unsafe { bindings::rdma_get_gid_attr(self.as_raw(), 1, i32::from(index)) };
        if attr.is_null() || (attr as usize) >= (-4095isize) as usize {
            return None;
        }
        // SAFETY: A valid, referenced entry; read, then released once.
        let (gid, gid_type, netdev) = unsafe {
            let a = &*attr;
            let r = (a.gid.raw, a.gid_type, GidNetdev::of(attr));
            bindings::rdma_put_gid_attr(attr);
            r
        };
        let usable = gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP
            && netdev != GidNetdev::Unusable;
        usable.then_some(SgidEntry {
            gid,
            gid_type: GidType::RoceV2,
            netdev,
        })
    }

    /// Sets the node description, as `modify_device` asks.
    pub(crate) fn set_node_desc(&self, desc: &[u8; NODE_DESC_MAX]) {
        // SAFETY: The device is alive; sysfs readers of `node_desc` read it
        // racily by design, as in every C driver.
        unsafe {
            let d = core::ptr::addr_of_mut!((*self.as_raw()).node_desc);
            core::ptr::copy_nonoverlapping(desc.as_ptr(), d.cast::<u8>(), NODE_DESC_MAX);
        }
    }

    /// Drops the state (the `dealloc_driver` op).
    ///
    /// # Safety
    ///
    /// `ib` must be a live `Device<T>`; called once, after every other op.
    pub(crate) unsafe fn drop_state(ib: *mut bindings::ib_device) {
        let this = ib.cast::<Self>();
        // SAFETY: Per the caller.
        unsafe {
            core::ptr::drop_in_place(Opaque::raw_get(core::ptr::addr_of!((*this).data)));
            (*this).state.store(DATA_GONE, Ordering::Release);
        }
        // SAFETY: `dealloc_driver` runs after `device_del` (or when the
        // device was never added), so nothing follows `dev.parent` any
        // more; a non-null parent carries the reference `set_parent` took.
        unsafe {
            let dev = core::ptr::addr_of_mut!((*ib).__bindgen_anon_1.dev);
            let parent = (*dev).parent;
            if !parent.is_null() {
                (*dev).parent = core::ptr::null_mut();
                bindings::put_device(parent);
            }
        }
    }

    /// Makes the device that `ndev` sits on (a NIC's PCI or virtio device)
    /// the parent of the unregistered device `ib`, so that sysfs shows it
    /// as the RDMA device's `device` and its `net/` names `ndev`. A net
    /// device without a parent (veth) leaves it without one, as C rxe.
    ///
    /// # Safety
    ///
    /// `ib` is a `Device<T>` from `alloc`, not yet registered.
    unsafe fn set_parent(ib: NonNull<bindings::ib_device>, ndev: &NetDevice) {
        let parent = ndev.parent_device_get();
        // SAFETY: Per the caller nobody else uses the device yet; the
        // reference on `parent` is the device's until `drop_state`.
        unsafe { (*ib.as_ptr()).__bindgen_anon_1.dev.parent = parent };
    }

    /// Allocates a device, initialises `T` and installs the ops.
    ///
    /// On success the returned pointer owns ib_core's allocation reference
    /// plus one `get_device` reference for the caller.
    fn alloc(
        config: &DeviceConfig,
        init: impl PinInit<T, Error>,
    ) -> Result<NonNull<bindings::ib_device>> {
        let () = Self::ALIGN_OK;
        // SAFETY: `_ib_alloc_device` returns a zeroed allocation of at
        // least the asked size whose first member is the `ib_device`.
        let ib = unsafe { bindings::_ib_alloc_device(core::mem::size_of::<Self>()) };
        let ib = NonNull::new(ib).ok_or(ENOMEM)?;
        let this = ib.as_ptr().cast::<Self>();
        // SAFETY: `ib` is a live, initialised `struct device`.
        unsafe {
            bindings::get_device(core::ptr::addr_of_mut!((*ib.as_ptr()).__bindgen_anon_1.dev))
        };
        // SAFETY: `data` lies inside the allocation, is suitably aligned
        // (checked by `ALIGN_OK`) and never moves: it is pinned.
        let r = unsafe { init.__pinned_init(Opaque::raw_get(core::ptr::addr_of!((*this).data))) };
        if let Err(e) = r {
            // SAFETY: No ops are installed yet, so no driver callback runs;
            // this drops ib_core's reference and then ours.
            unsafe {
                bindings::ib_dealloc_device(ib.as_ptr());
                bindings::put_device(core::ptr::addr_of_mut!((*ib.as_ptr()).__bindgen_anon_1.dev));
            }
            return Err(e);
        }
        // SAFETY: `this` is valid; no other thread knows the device yet.
        unsafe {
            (*this).state.store(DATA_LIVE, Ordering::Release);
            let d = ib.as_ptr();
            (*d).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*d).phys_port_cnt = 1;
            (*d).num_comp_vectors = config.num_comp_vectors;
            (*d).local_dma_lkey = config.local_dma_lkey;
            (*d).node_guid = u64::from_ne_bytes(config.node_guid);
            let desc = config.node_desc.as_bytes_with_nul();
            let n = desc.len().min(NODE_DESC_MAX);
            core::ptr::copy_nonoverlapping(
                desc.as_ptr(),
                (*d).node_desc.as_mut_ptr().cast::<u8>(),
                n,
            );
            for &cmd in config.extra_uverbs_cmds {
                (*d).uverbs_cmd_mask |= 1u64 << cmd;
            }
            bindings::ib_set_device_ops(d, &Adapter::<T>::OPS);
            // The module and the sysfs attributes, the same for every `T`.
            let common = bindings::ib_device_ops {
                owner: this_module().as_ptr().cast(),
                device_group: &ATTR_GROUP.0,
                ..Default::default()
            };
            bindings::ib_set_device_ops(d, &common);
        }
        Ok(ib)
    }
}

/// The attributes every device adds to its sysfs directory: `parent`, the
/// name of the net device behind port 1, as C rxe shows it (tools map RDMA
/// devices to net devices with it).
struct AttrGroup(bindings::attribute_group);
struct Attr(bindings::device_attribute);
struct AttrList([*mut bindings::attribute; 2]);

// SAFETY: The attribute structures are never written after compilation;
// sysfs only reads them, from any thread.
unsafe impl Sync for AttrGroup {}
// SAFETY: See `AttrGroup`.
unsafe impl Sync for Attr {}
// SAFETY: See `AttrGroup`.
unsafe impl Sync for AttrList {}

static PARENT_ATTR: Attr = Attr(bindings::device_attribute {
    attr: bindings::attribute {
        name: c"parent".as_ptr().cast(),
        mode: 0o444,
        // SAFETY: All-zero is a valid rest of `struct attribute` (lockdep
        // keys of a static attribute are unused).
        ..unsafe { core::mem::zeroed() }
    },
    show: Some(parent_show),
    store: None,
});

static ATTRS: AttrList = AttrList([
    (&raw const PARENT_ATTR.0.attr).cast_mut(),
    core::ptr::null_mut(),
]);

static ATTR_GROUP: AttrGroup = AttrGroup(bindings::attribute_group {
    attrs: (&raw const ATTRS.0)
        .cast::<*mut bindings::attribute>()
        .cast_mut(),
    // SAFETY: All-zero is a valid rest of `struct attribute_group`: no
    // name, no visibility callback, no binary attributes.
    ..unsafe { core::mem::zeroed() }
});

/// Shows the `parent` attribute.
///
/// # Safety
///
/// Only sysfs calls this, for the attribute of `ATTR_GROUP`, with the core
/// device of a registered `ib_device` (its own or a namespace's compat
/// device) and a page-sized buffer; unregistering removes the attribute
/// and waits for running calls before any op of the device stops working.
unsafe extern "C" fn parent_show(
    dev: *mut bindings::device,
    _attr: *mut bindings::device_attribute,
    buf: *mut kernel::ffi::c_char,
) -> isize {
    // SAFETY: Per the function's contract `dev` is an `ib_core_device`'s.
    let ib = unsafe { bindings::rrxe_helper_device_to_ibdev(dev) };
    // SAFETY: The device is registered; a net device comes referenced.
    let nd = unsafe { bindings::ib_device_get_netdev(ib, 1) };
    let Some(nd) = NonNull::new(nd) else {
        return ENODEV.to_errno() as isize;
    };
    // SAFETY: We own the reference `ib_device_get_netdev` took.
    let nd: ARef<NetDevice> = unsafe { ARef::from_raw(nd.cast()) };
    let name = nd.name();
    let name = name.as_bytes();
    // SAFETY: `buf` holds a page; an interface name and a newline take at
    // most 17 bytes.
    unsafe {
        core::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), name.len());
        buf.add(name.len()).write(b'\n' as kernel::ffi::c_char);
    }
    (name.len() + 1) as isize
}

fn this_module() -> &'static ThisModule {
    &crate::THIS_MODULE
}

/// A counted reference on a registered device: while it lives the device
/// cannot finish unregistering, so its state `T` stays live.
///
/// # Invariants
///
/// `ptr` is a `Device<T>` on which this value holds one registration count
/// (`ib_device_try_get`).
pub(crate) struct DeviceRef<T: DeviceOps> {
    ptr: NonNull<Device<T>>,
}

// SAFETY: The count can be dropped from any thread; `Device<T>` is Sync.
unsafe impl<T: DeviceOps> Send for DeviceRef<T> {}
// SAFETY: Only shared access is handed out.
unsafe impl<T: DeviceOps> Sync for DeviceRef<T> {}

impl<T: DeviceOps> core::ops::Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: By the type invariant the device is registered and live.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: DeviceOps> DeviceRef<T> {
    /// Starts unregistering the device from a work item. For contexts that
    /// must not unregister synchronously (a netdev notifier holds RTNL).
    pub(crate) fn unregister_queued(self) {
        // SAFETY: We hold a registration count, as the C function requires;
        // it takes its own `get_device` for the work item.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
        // `self` drops here and gives back our count.
    }
}

impl<T: DeviceOps> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one count to give back.
        unsafe { bindings::ib_device_put(self.as_raw()) };
    }
}

/// A `get_device` reference on a device: its `ib_device` outlives this
/// value, though the driver's state in it may be gone. For what must
/// release ib_core objects that point at the device (an ODP umem's
/// release reads its device) after the device may have been removed.
pub(crate) struct DeviceMem(NonNull<bindings::ib_device>);

// SAFETY: Only a reference count, given back from any thread.
unsafe impl Send for DeviceMem {}
// SAFETY: Nothing is reached through a shared reference.
unsafe impl Sync for DeviceMem {}

impl<T: DeviceOps> Device<T> {
    /// A `get_device` reference on this device (see [`DeviceMem`]).
    pub(crate) fn hold_mem(&self) -> DeviceMem {
        let ib = self.as_raw();
        // SAFETY: The device is live (`&self`); `get_device` takes a
        // reference on its embedded `struct device`.
        unsafe { bindings::get_device(core::ptr::addr_of_mut!((*ib).__bindgen_anon_1.dev)) };
        // SAFETY: The reference just taken, on this device (`Opaque` is
        // transparent: the field's address is the `ib_device`'s).
        unsafe { DeviceMem::adopt(NonNull::from(&self.ib).cast()) }
    }
}

impl DeviceMem {
    /// Takes over a `get_device` reference the caller holds on `ib`.
    ///
    /// # Safety
    ///
    /// The caller holds one `get_device` reference on `ib` and gives it to
    /// the value.
    unsafe fn adopt(ib: NonNull<bindings::ib_device>) -> Self {
        // INVARIANT: One reference, given back on drop.
        Self(ib)
    }

    fn ptr(&self) -> NonNull<bindings::ib_device> {
        self.0
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: We hold one `get_device` reference on this device (the
        // invariant); the last one frees it (ib_core's release).
        unsafe {
            bindings::put_device(core::ptr::addr_of_mut!(
                (*self.ptr().as_ptr()).__bindgen_anon_1.dev
            ))
        };
    }
}

/// A device the registry created, with a `get_device` reference held on it
/// so that its memory outlives the entry (its state `T` may be gone).
struct Entry(DeviceMem);

impl Entry {
    fn dev(&self) -> *mut bindings::ib_device {
        self.0.ptr().as_ptr()
    }

    /// Takes a registration count if the device is registered.
    fn try_get<T: DeviceOps>(&self) -> Option<DeviceRef<T>> {
        // SAFETY: The memory is valid: the entry holds a `get_device`.
        if unsafe { bindings::rrxe_helper_ib_device_try_get(self.dev()) } {
            // INVARIANT: A registration count is held and the registry only
            // holds `Device<T>`s.
            Some(DeviceRef {
                ptr: self.0.ptr().cast(),
            })
        } else {
            None
        }
    }

    /// Whether `dealloc_driver` already dropped the state.
    fn is_gone<T: DeviceOps>(&self) -> bool {
        // SAFETY: The memory is valid: the entry holds a `get_device`.
        let state = unsafe { &(*self.dev().cast::<Device<T>>()).state };
        state.load(Ordering::Acquire) == DATA_GONE
    }
}

/// The number of possible CPUs (for completion vectors).
pub(crate) fn num_possible_cpus() -> i32 {
    // SAFETY: A plain read of a boot-time constant.
    let n = unsafe { bindings::rrxe_helper_num_possible_cpus() };
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Whether an RDMA device named `name` exists.
pub(crate) fn name_in_use(name: &CStr) -> bool {
    // SAFETY: `name` is NUL-terminated; a found device comes with a
    // registration count, given back at once.
    unsafe {
        let d = bindings::ib_device_get_by_name(
            name.as_char_ptr(),
            bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN,
        );
        if d.is_null() {
            false
        } else {
            bindings::ib_device_put(d);
            true
        }
    }
}

/// Whether a device with driver id `driver_id` that ib_core associates with
/// `ndev` exists (drivers that call `ib_device_set_netdev`, such as C rxe).
pub(crate) fn netdev_has_device(ndev: &NetDevice, driver_id: u32) -> bool {
    // SAFETY: `ndev` is alive for the call; a found device comes with a
    // registration count, given back at once.
    unsafe {
        let d = bindings::ib_device_get_by_netdev(ndev.as_ptr(), driver_id);
        if d.is_null() {
            false
        } else {
            bindings::ib_device_put(d);
            true
        }
    }
}

/// The live devices of driver `T` that this registry created.
///
/// Dropping the registry unregisters every device still registered and
/// returns only when each has been fully torn down.
///
/// Locking: `register_lock` serialises registrations (it is held across
/// `ib_register_device`, which takes RTNL, so it is never taken under
/// RTNL); `devices` is a short-held lock that the netdev notifier takes
/// under RTNL, so nothing that takes RTNL runs while it is held.
#[pin_data(PinnedDrop)]
pub(crate) struct Registry<T: DeviceOps> {
    #[pin]
    register_lock: Mutex<()>,
    /// Keyed by the device's address.
    #[pin]
    devices: Mutex<RBTree<usize, Entry>>,
    _t: PhantomData<T>,
}

impl<T: DeviceOps> Registry<T> {
    /// A new, empty registry.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            register_lock <- new_mutex!((), "rrxe::Registry::register_lock"),
            devices <- new_mutex!(RBTree::new(), "rrxe::Registry::devices"),
            _t: PhantomData,
        })
    }

    /// Creates and registers device `name` on `ndev`, with state from
    /// `init`, if `check` (run first, under the registration lock, so
    /// that concurrent registrations are checked one after the other)
    /// passes.
    ///
    /// Must not be called with locks held: registration takes RTNL.
    pub(crate) fn register(
        &self,
        name: &CStr,
        ndev: &NetDevice,
        config: &DeviceConfig,
        init: impl PinInit<T, Error>,
        check: impl FnOnce() -> Result,
    ) -> Result {
        let _serial = self.register_lock.lock();
        // Under the lock: what `check` looks for (another device on the
        // net device, the name) cannot appear before this one is added.
        check()?;
        self.prune();
        // Allocate the tree node first, so nothing can fail once the device
        // is visible.
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let ib = Device::<T>::alloc(config, init)?;
        // SAFETY: `ib` is fresh from `alloc`.
        unsafe { Device::<T>::set_parent(ib, ndev) };
        // SAFETY: `ib` is a fully set up, unregistered device; on failure
        // the C function leaves it allocated for us to free.
        let ret = unsafe {
            bindings::ib_register_device(ib.as_ptr(), name.as_char_ptr(), core::ptr::null_mut())
        };
        // SAFETY: `alloc` gave us a `get_device` reference: the entry owns
        // it from here on.
        let entry = Entry(unsafe { DeviceMem::adopt(ib) });
        if ret != 0 {
            // SAFETY: Registration failed, so this is the error unwind the
            // C API allows; `dealloc_driver` drops `T`.
            unsafe { bindings::ib_dealloc_device(ib.as_ptr()) };
            return Err(Error::from_errno(ret));
        }
        self.devices
            .lock()
            .insert(node.into_node(ib.as_ptr() as usize, entry));
        Ok(())
    }

    /// Forgets devices whose state is gone (deleted by `rdma link delete`
    /// or by their net device going away).
    fn prune(&self) {
        let mut devs = self.devices.lock();
        let mut cur = devs.cursor_front();
        while let Some(c) = cur {
            if c.current().1.is_gone::<T>() {
                let (next, node) = c.remove_current();
                drop(node);
                cur = next;
            } else {
                cur = c.move_next();
            }
        }
    }

    /// The first registered device whose state satisfies `pred`.
    pub(crate) fn find(&self, pred: impl Fn(&T) -> bool) -> Option<DeviceRef<T>> {
        let devs = self.devices.lock();
        let found = devs
            .values()
            .filter_map(|e| e.try_get::<T>())
            .find(|d| pred(d));
        found
    }
}

#[pinned_drop]
impl<T: DeviceOps> PinnedDrop for Registry<T> {
    fn drop(self: Pin<&mut Self>) {
        loop {
            let entry = {
                let mut devs = self.devices.lock();
                match devs.cursor_front() {
                    Some(c) => c.remove_current().1.to_key_value().1,
                    None => break,
                }
            };
            // The call returns once the device is unregistered, by us or by
            // a concurrent `rdma link delete` or queued unregistration (it
            // waits on the device's unregistration lock), so no op of ours
            // runs after it.
            // SAFETY: The entry keeps the memory valid; see above.
            unsafe { bindings::ib_unregister_device(entry.dev()) };
            drop(entry);
        }
    }
}

/// debugfs's `rdma_rrxe/qpn_max` (0 when not set; [`super::debugfs`]).
pub(crate) fn param_qpn_max() -> u32 {
    // SAFETY: Reads a u32 (once) that debugfs may write meanwhile.
    unsafe { bindings::rrxe_helper_param_qpn_max() }
}

/// The `rx_frags` module parameter: whether an RC SEND or WRITE packet
/// from the network keeps its page fragments (`net::rx`).
pub(crate) fn param_rx_frags() -> bool {
    // SAFETY: Reads a module parameter, as `param_zcopy`.
    unsafe { bindings::rrxe_helper_param_rx_frags() }
}

/// The `train` module parameter: the most packets of a message sent to
/// the network as one UDP GSO train (`net::tx`); below 2, none.
pub(crate) fn param_train() -> u32 {
    // SAFETY: Reads a module parameter (an atomic read of a uint that
    // sysfs may write at any time).
    unsafe { bindings::rrxe_helper_param_train() }
}

/// The `zcopy` module parameter: whether a looped-back packet's payload
/// may be attached from pinned pages instead of copied (`net::tx`).
pub(crate) fn param_zcopy() -> bool {
    // SAFETY: Reads a module parameter (an atomic read of a bool that
    // sysfs may write at any time).
    unsafe { bindings::rrxe_helper_param_zcopy() }
}
