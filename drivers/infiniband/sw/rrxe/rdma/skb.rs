// SPDX-License-Identifier: GPL-2.0

//! Socket buffers: an owned [`SkBuff`] (freed as dropped when dropped,
//! or [`SkBuff::consume`]d once used), the
//! accessors the RoCE transmit and receive paths need, and an
//! [`SkbQueue`] of them.
//!
//! All byte access is bounds checked against the buffer's linear part;
//! bytes in page fragments are copied out through a [`Src`]. A looped-back
//! packet's payload may be page fragments of a user MR's pinned pages
//! (`Umem::attach`), its pad and trailer from the module's [`ZeroPage`].

use super::bindings;
use super::netdev::NetDevice;
use super::task::QpTask;
use crate::proto::parse::Found;
use core::ops::Range;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::types::Opaque;

/// The stamp's generation of a packet from the network, with no gate
/// ([`SkBuff::mark_from_wire`]); a gate's generations never reach it.
const FROM_WIRE: u64 = u64::MAX;

/// `ETH_P_IP`.
pub(crate) const ETH_P_IP: u16 = bindings::ETH_P_IP as u16;
/// `ETH_P_IPV6`.
pub(crate) const ETH_P_IPV6: u16 = bindings::ETH_P_IPV6 as u16;

/// An owned socket buffer.
///
/// # Invariants
///
/// `ptr` is a live `sk_buff` this value owns (one reference).
pub(crate) struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
}

// SAFETY: An owned skb may be handed between threads.
unsafe impl Send for SkBuff {}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the reference.
        unsafe { bindings::rrxe_helper_kfree_skb(self.ptr.as_ptr()) };
    }
}

impl SkBuff {
    /// Takes ownership of `skb`.
    ///
    /// # Safety
    ///
    /// `skb` must be a live sk_buff whose reference the caller gives up.
    pub(crate) unsafe fn from_raw(skb: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(skb).map(|ptr| Self { ptr })
    }

    /// Frees a packet that was used (`consume_skb`). Dropping an `SkBuff`
    /// frees it as dropped (`kfree_skb`), which drop monitors and the
    /// `skb:kfree_skb` tracepoint count: that is for packets refused.
    pub(crate) fn consume(self) {
        let p = self.into_raw();
        // SAFETY: `into_raw` gave up the reference we owned.
        unsafe { bindings::rrxe_helper_consume_skb(p) };
    }

    /// Gives up ownership.
    pub(crate) fn into_raw(self) -> *mut bindings::sk_buff {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }

    /// A new buffer with room for `size` bytes after `headroom` bytes of
    /// headroom (`GFP_ATOMIC`).
    pub(crate) fn alloc(size: usize, headroom: usize) -> Result<Self> {
        let size = u32::try_from(size).map_err(|_| EINVAL)?;
        let headroom = u32::try_from(headroom).map_err(|_| EINVAL)?;
        // SAFETY: Plain allocation.
        let p = unsafe { bindings::rrxe_helper_alloc_skb(size, headroom) };
        // INVARIANT: A new skb we own, or null.
        NonNull::new(p).map(|ptr| Self { ptr }).ok_or(ENOMEM)
    }

    fn raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    /// A clone sharing the data (read-only use), or `None` without memory.
    pub(crate) fn clone_atomic(&self) -> Option<Self> {
        // SAFETY: The skb is live; the clone is a new skb we own.
        let c = unsafe { bindings::skb_clone(self.raw(), kernel::bindings::GFP_ATOMIC) };
        NonNull::new(c).map(|ptr| Self { ptr })
    }

    /// A full copy (its own data, headroom and header offsets), or `None`
    /// without memory.
    pub(crate) fn copy_atomic(&self) -> Option<Self> {
        // SAFETY: The skb is live; the copy is a new skb we own.
        let c = unsafe { bindings::skb_copy(self.raw(), kernel::bindings::GFP_ATOMIC) };
        NonNull::new(c).map(|ptr| Self { ptr })
    }

    /// Makes the packet independent of its sender: its bytes linear
    /// (copied out of page fragments under their sender's gate, see
    /// [`Src`]) and its owner let go (the owner's destructor runs now: a
    /// looped-back packet then holds its sending QP no more). `false` if
    /// the sender revoked the fragments, or memory ran out: then drop it.
    pub(crate) fn detach(&mut self) -> bool {
        if self.nr_frags() != 0 {
            let raw = self.raw();
            let linear = || {
                // SAFETY: The skb is ours and live (borrowed mutably
                // here); linearising moves its bytes, not the sender's
                // gate it is stamped with (`zc_stamp`'s borrow).
                if unsafe { bindings::rrxe_helper_skb_linearize(raw) } == 0 {
                    Ok(())
                } else {
                    Err(ENOMEM)
                }
            };
            let ok = match self.zc_stamp() {
                (Some(task), epoch) => task.zc_read(epoch, linear).is_ok(),
                (None, _) => linear().is_ok(),
            };
            if !ok {
                return false;
            }
        }
        // SAFETY: The skb is ours; `skb_orphan` runs the owner's
        // destructor once and clears it (and the socket) after.
        unsafe { bindings::rrxe_helper_skb_orphan(self.raw()) };
        true
    }

    /// Makes the first `n` bytes (or all, if fewer) linear; `false` if out
    /// of memory.
    pub(crate) fn pull_linear(&mut self, n: usize) -> bool {
        let n = n.min(self.len()) as u32;
        // SAFETY: The skb is ours.
        unsafe { bindings::rrxe_helper_pskb_may_pull(self.raw(), n) }
    }

    /// Marks a packet the stack handed up from the network: its page
    /// fragments, if any, are the stack's (a NIC's receive buffers, or a
    /// local sender's pages spliced into its datagram, which their owner
    /// may write meanwhile), never a user MR's pages this driver lent
    /// out, so they are read without a sender's gate ([`Src`]). Every
    /// read of them is a copy (`memcpy`, `skb_copy_bits`,
    /// `__skb_checksum`): nothing holds a Rust reference to their bytes.
    ///
    /// Only for a packet from the network (never one this driver built,
    /// whose fragments may be a user's pages).
    pub(crate) fn mark_from_wire(&mut self) {
        // SAFETY: The skb is ours; `cb` has at least 20 bytes (checked at
        // build time in the helper); the stack is done with it (the UDP
        // tunnel's receive hands it over).
        unsafe {
            let cb = bindings::rrxe_helper_skb_cb(self.raw());
            core::ptr::write_unaligned(cb.cast::<usize>(), 0);
            core::ptr::write_unaligned(cb.add(8).cast::<u64>(), FROM_WIRE);
            // No parse has found anything yet ([`Self::found`]): the
            // stack's bytes there are gone.
            core::ptr::write_unaligned(cb.add(16).cast::<u32>(), 0);
        }
    }

    /// Keeps with the packet what its checks found (`cb` bytes 16 to 19;
    /// the first 16 hold its origin: [`Self::mark_from_wire`],
    /// [`Self::set_zc_stamp`]), for its consumer to see its headers
    /// again without a parse ([`Self::found`]).
    pub(crate) fn set_found(&mut self, f: Found) {
        // SAFETY: The skb is ours; `cb` has at least 20 bytes (checked at
        // build time in the helper).
        unsafe {
            let cb = bindings::rrxe_helper_skb_cb(self.raw());
            core::ptr::write_unaligned(cb.add(16).cast::<u32>(), f.to_word());
        }
    }

    /// What [`Self::set_found`] kept; `None` for a packet that was given
    /// none: one built here (its `cb` is zeroed) or from the network
    /// (cleared by [`Self::mark_from_wire`]).
    pub(crate) fn found(&self) -> Option<Found> {
        // SAFETY: The skb is live; 4 bytes of `cb` are read.
        let w = unsafe {
            let cb = bindings::rrxe_helper_skb_cb(self.raw());
            core::ptr::read_unaligned(cb.add(16).cast::<u32>())
        };
        Found::from_word(w)
    }

    /// Continues the ICRC's CRC-32 `crc` over the `len` bytes at `off`
    /// (from `data`), linear or in page fragments of a packet from the
    /// network ([`SkBuff::mark_from_wire`]).
    pub(crate) fn crc32_wire(&self, off: usize, len: usize, crc: u32) -> Result<u32> {
        if !self.wire_readable() {
            return Err(EFAULT);
        }
        let (Ok(off), Ok(len)) = (u32::try_from(off), u32::try_from(len)) else {
            return Err(EFAULT);
        };
        let mut c = crc;
        // SAFETY: The skb is live (borrowed); the helper checks the range
        // and only reads the bytes (the stack's own pages).
        kernel::error::to_result(unsafe {
            bindings::rrxe_helper_skb_crc32(self.raw(), off, len, &mut c)
        })?;
        Ok(c)
    }

    /// Copies the bytes at `off` (from `data`) of a packet from the
    /// network into `dst`, linear or not.
    pub(crate) fn copy_wire(&self, off: usize, dst: &mut [u8]) -> Result {
        if !self.wire_readable() {
            return Err(EFAULT);
        }
        let (Ok(off), Ok(n)) = (u32::try_from(off), u32::try_from(dst.len())) else {
            return Err(EFAULT);
        };
        // SAFETY: The skb is live; `dst` is valid for `n` bytes; the helper
        // checks the range.
        kernel::error::to_result(unsafe {
            bindings::rrxe_helper_skb_copy_bits(self.raw(), off, dst.as_mut_ptr().cast(), n)
        })
    }

    /// Whether every byte may be read without a gate: linear, or from the
    /// network.
    fn wire_readable(&self) -> bool {
        self.nr_frags() == 0 || matches!(self.zc_stamp(), (None, FROM_WIRE))
    }

    /// Moves all data into the linear area; `false` if out of memory.
    pub(crate) fn linearize(&mut self) -> bool {
        // SAFETY: The skb is ours.
        unsafe { bindings::rrxe_helper_skb_linearize(self.raw()) == 0 }
    }

    /// Bytes in the buffer (linear and paged).
    pub(crate) fn len(&self) -> usize {
        // SAFETY: The skb is live.
        unsafe { bindings::rrxe_helper_skb_len(self.raw()) as usize }
    }

    /// Bytes in the linear part.
    pub(crate) fn headlen(&self) -> usize {
        // SAFETY: The skb is live.
        unsafe { bindings::rrxe_helper_skb_headlen(self.raw()) as usize }
    }

    /// The linear part, from `data`.
    pub(crate) fn data(&self) -> &[u8] {
        // SAFETY: `data` is valid for `headlen` bytes while we own the skb
        // and no `&mut` exists (we hold `&self`).
        unsafe {
            core::slice::from_raw_parts(bindings::rrxe_helper_skb_data(self.raw()), self.headlen())
        }
    }

    /// The linear part, writable.
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: As `data`, exclusively (we hold `&mut self`); a buffer
        // this driver built is not shared (no clone exists).
        unsafe {
            core::slice::from_raw_parts_mut(
                bindings::rrxe_helper_skb_data(self.raw()),
                self.headlen(),
            )
        }
    }

    /// Appends `n` bytes to the linear part and returns them.
    pub(crate) fn put(&mut self, n: usize) -> Result<&mut [u8]> {
        // SAFETY: The skb is live.
        let room = unsafe { bindings::rrxe_helper_skb_tailroom(self.raw()) };
        if n > usize::try_from(room).unwrap_or(0) {
            return Err(ENOSPC);
        }
        // SAFETY: There is tailroom for `n` bytes; the returned area is
        // `n` bytes long and ours.
        unsafe {
            let p = bindings::rrxe_helper_skb_put(self.raw(), n as u32);
            Ok(core::slice::from_raw_parts_mut(p, n))
        }
    }

    /// Prepends `n` bytes and returns them.
    pub(crate) fn push(&mut self, n: usize) -> Result<&mut [u8]> {
        // SAFETY: The skb is live.
        let room = unsafe { bindings::rrxe_helper_skb_headroom(self.raw()) } as usize;
        if n > room {
            return Err(ENOSPC);
        }
        // SAFETY: There is headroom for `n` bytes; the returned area is
        // `n` bytes long and ours.
        unsafe {
            let p = bindings::rrxe_helper_skb_push(self.raw(), n as u32);
            Ok(core::slice::from_raw_parts_mut(p, n))
        }
    }

    /// Removes `n` bytes from the front.
    pub(crate) fn pull(&mut self, n: usize) -> Result {
        if n > self.headlen() {
            return Err(EINVAL);
        }
        // SAFETY: `n` bytes are in the linear part.
        unsafe { bindings::rrxe_helper_skb_pull(self.raw(), n as u32) };
        Ok(())
    }

    /// The bytes from the network header up to `data` (the IP header of a
    /// received packet, before the UDP header at `data`).
    pub(crate) fn network_header(&self) -> Result<&[u8]> {
        // SAFETY: The skb is live.
        let off = unsafe { bindings::rrxe_helper_skb_network_offset(self.raw()) };
        if off >= 0 {
            return Err(EINVAL);
        }
        let n = off.unsigned_abs() as usize;
        // SAFETY: A negative network offset means the network header lies
        // `n` bytes before `data` inside the head buffer, valid while we
        // own the skb.
        unsafe {
            let p = bindings::rrxe_helper_skb_data(self.raw()).sub(n);
            Ok(core::slice::from_raw_parts(p, n))
        }
    }

    /// At intake: the address of the net device whose RDMA device takes
    /// the packet, a VLAN device's real device, else the one it arrived
    /// on (an identity for lookups, never dereferenced by callers). A
    /// packet from a VLAN device keeps its VLAN ID ([`Self::vlan_id`]).
    pub(crate) fn intake_dev_id(&mut self) -> usize {
        // SAFETY: The skb is ours, just received: the device it arrived on
        // is alive for the call.
        unsafe { bindings::rrxe_helper_skb_intake_dev(self.raw()) as usize }
    }

    /// Whether a received packet (its network header set) was sent to an
    /// address of the net device it arrived on, or to a multicast group.
    pub(crate) fn dst_is_own(&self) -> bool {
        // SAFETY: The skb is live, its network header set; the device it
        // arrived on is alive while we process it (softirq, under RCU).
        unsafe { bindings::rrxe_helper_skb_dst_is_own(self.raw()) }
    }

    /// The VLAN ID the packet came with (or, looped back, was sent
    /// with), if any.
    pub(crate) fn vlan_id(&self) -> Option<u16> {
        // SAFETY: The skb is live; only its own fields are read.
        let id = unsafe { bindings::rrxe_helper_skb_vlan_id(self.raw()) };
        u16::try_from(id).ok()
    }

    /// Marks a packet that stays in this host (loopback) as sent on VLAN
    /// `vid`.
    pub(crate) fn set_vlan_id(&mut self, vid: u16) {
        // SAFETY: The skb is ours; only its own fields are written.
        unsafe { bindings::rrxe_helper_skb_set_vlan_id(self.raw(), vid) };
    }

    /// Binds the packet to `ndev` for transmit.
    pub(crate) fn set_dev(&mut self, ndev: &NetDevice) {
        // SAFETY: The skb is ours; the device outlives the transmit (the
        // RDMA device holds it, and the stack takes its own references).
        unsafe { bindings::rrxe_helper_skb_set_dev(self.raw(), ndev.as_ptr()) };
    }

    /// The protocol (`ETH_P_*`, host order).
    pub(crate) fn protocol(&self) -> u16 {
        // SAFETY: The skb is live.
        unsafe { bindings::rrxe_helper_skb_protocol(self.raw()) }
    }

    /// Sets the protocol (`ETH_P_*`, host order).
    pub(crate) fn set_protocol(&mut self, p: u16) {
        // SAFETY: The skb is ours.
        unsafe { bindings::rrxe_helper_skb_set_protocol(self.raw(), p) };
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::sk_buff {
        self.raw()
    }

    /// Appends `len` bytes at `off` of `page` as a page fragment, with a
    /// page reference of its own; `false` if no slot is left, the range
    /// is empty or not inside the page, or the page is part of a large
    /// folio (which the reference would hold whole). Only a looped-back
    /// packet gets fragments (`net::tx`): its ICRC is not computed.
    ///
    /// # Safety
    ///
    /// `page` must be a live page for the call.
    pub(super) unsafe fn add_page(
        &mut self,
        page: NonNull<bindings::page>,
        off: usize,
        len: usize,
    ) -> bool {
        let (Ok(off), Ok(len)) = (u32::try_from(off), u32::try_from(len)) else {
            return false;
        };
        // SAFETY: The skb is ours, not shared; the page is live (the
        // caller's contract) and gets its own reference; the helper
        // checks the range against the page and the slot count.
        unsafe { bindings::rrxe_helper_skb_add_page(self.raw(), page.as_ptr(), off, len) }
    }

    /// Appends `len` new bytes as a page fragment from this CPU's page
    /// fragment cache and returns them (their content is undefined until
    /// written); `ENOMEM` if there is no slot or no memory. A train's
    /// packets go there (`net::tx`).
    pub(crate) fn add_chunk(&mut self, len: usize) -> Result<&mut [u8]> {
        let n = u32::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: The skb is ours, not shared, and not yet in the stack.
        let p = unsafe { bindings::rrxe_helper_skb_add_chunk(self.raw(), n) };
        if p.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: The helper returned `len` bytes of a page fragment that
        // the skb alone holds (a reference on its page) and that nothing
        // else writes or reads until the skb is sent; the slice borrows
        // the skb mutably, so it ends before the skb can be handed on.
        Ok(unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
    }

    /// Makes the buffer (IP header at `data`, `iplen` bytes, then the UDP
    /// header; all its bytes in place) a UDP GSO train of `segs` segments
    /// of `mss` bytes of UDP payload, the last one possibly shorter: the
    /// stack, or the NIC, cuts it into one datagram per segment, each with
    /// its own IP and UDP lengths (and IPv4 identification) and a UDP
    /// checksum.
    pub(crate) fn set_udp_gso(
        &mut self,
        iplen: usize,
        mss: usize,
        segs: usize,
        v6: bool,
    ) -> Result {
        let (Ok(iplen), Ok(mss), Ok(segs)) = (
            u32::try_from(iplen),
            u32::try_from(mss),
            u32::try_from(segs),
        ) else {
            return Err(EINVAL);
        };
        if self.headlen() < iplen as usize + 8 || mss == 0 || segs < 2 {
            return Err(EINVAL);
        }
        // SAFETY: The skb is ours; its linear part holds the IP and UDP
        // headers the helper reads and writes (checked above).
        unsafe { bindings::rrxe_helper_skb_set_udp_gso(self.raw(), iplen, mss, segs, v6) };
        Ok(())
    }

    /// Whether the buffer has page fragments.
    pub(crate) fn nr_frags(&self) -> usize {
        // SAFETY: The skb is live; only its shared info is read.
        unsafe { bindings::rrxe_helper_skb_nr_frags(self.raw()) as usize }
    }

    /// Stamps a packet whose payload is in page fragments of `task`'s QP's
    /// memory with the QP's gate and its generation `epoch` (in `cb`: the
    /// packet never enters the stack; see [`Src`]).
    ///
    /// # Safety
    ///
    /// The skb must hold a reference on the QP embedding `task` until it
    /// is freed (`Qp::own_skb`).
    pub(super) unsafe fn set_zc_stamp(&mut self, task: &QpTask, epoch: u64) {
        let p = task as *const QpTask as usize;
        // SAFETY: The skb is ours; `cb` has at least 20 bytes (checked at
        // build time in the helper).
        unsafe {
            let cb = bindings::rrxe_helper_skb_cb(self.raw());
            core::ptr::write_unaligned(cb.cast::<usize>(), p);
            core::ptr::write_unaligned(cb.add(8).cast::<u64>(), epoch);
        }
    }

    /// The stamp of [`Self::set_zc_stamp`]: the gate, or `None` if the
    /// packet has none, and the generation.
    fn zc_stamp(&self) -> (Option<&QpTask>, u64) {
        // SAFETY: The skb is live; 16 bytes of `cb` are read.
        let (p, epoch) = unsafe {
            let cb = bindings::rrxe_helper_skb_cb(self.raw());
            (
                core::ptr::read_unaligned(cb.cast::<usize>()),
                core::ptr::read_unaligned(cb.add(8).cast::<u64>()),
            )
        };
        // Only a packet with page fragments is asked. `net::tx` makes one,
        // stamping it (`set_zc_stamp`) with the gate of the QP it holds
        // until it is freed; a packet built here is zeroed (null: no gate);
        // one from the network is marked as it comes in, before anything
        // reads its stamp (`mark_from_wire`: null, no gate).
        // SAFETY: So `p` is null or a live task; the skb is borrowed, so
        // not freed.
        (unsafe { (p as *const QpTask).as_ref() }, epoch)
    }

    /// Whether a packet's bytes may be read: no page fragments, or a
    /// stamp its sender did not revoke (`QpTask::zc_revoke`).
    pub(crate) fn zc_readable(&self) -> bool {
        if self.nr_frags() == 0 {
            return true;
        }
        match self.zc_stamp() {
            (Some(task), epoch) => task.zc_read(epoch, || Ok(())).is_ok(),
            (None, epoch) => epoch == FROM_WIRE,
        }
    }

    /// Appends `n` zero bytes (at most a page) as a page fragment of the
    /// module's [`ZeroPage`]: a looped-back packet's pad and trailer after
    /// a payload in page fragments.
    pub(crate) fn add_zeros(&mut self, n: usize) -> Result {
        let p = NonNull::new(ZERO_PAGE.load(Ordering::Acquire)).ok_or(ENOMEM)?;
        // SAFETY: The zero page lives while the module does, and nothing
        // builds a packet once it is gone (`ZeroPage` goes last).
        if unsafe { self.add_page(p, 0, n) } {
            Ok(())
        } else {
            Err(ENOSPC)
        }
    }
}

/// Bytes to copy from: a slice, or a range of a socket buffer (its linear
/// part and its page fragments).
#[derive(Clone, Copy)]
pub(crate) struct Src<'a>(SrcKind<'a>);

#[derive(Clone, Copy)]
enum SrcKind<'a> {
    Bytes(&'a [u8]),
    /// `len` bytes from `off` (counted from `data`); inside the skb.
    Skb {
        skb: &'a SkBuff,
        off: usize,
        len: usize,
    },
}

impl<'a> Src<'a> {
    /// The bytes of a slice.
    pub(crate) fn bytes(b: &'a [u8]) -> Self {
        Self(SrcKind::Bytes(b))
    }

    /// `len` bytes of `skb` from `off` (counted from `data`), linear or
    /// not; `None` if they are not all in it.
    pub(crate) fn skb(skb: &'a SkBuff, off: usize, len: usize) -> Option<Self> {
        if off.checked_add(len)? > skb.len() {
            return None;
        }
        Some(match skb.data().get(off..off + len) {
            Some(b) => Self(SrcKind::Bytes(b)),
            None => Self(SrcKind::Skb { skb, off, len }),
        })
    }

    /// How many bytes.
    pub(crate) fn len(&self) -> usize {
        match self.0 {
            SrcKind::Bytes(b) => b.len(),
            SrcKind::Skb { len, .. } => len,
        }
    }

    /// The bytes in `r` of these.
    pub(crate) fn get(&self, r: Range<usize>) -> Option<Self> {
        match self.0 {
            SrcKind::Bytes(b) => b.get(r).map(|b| Self(SrcKind::Bytes(b))),
            SrcKind::Skb { skb, off, len } => {
                if r.start > r.end || r.end > len {
                    return None;
                }
                Some(Self(SrcKind::Skb {
                    skb,
                    off: off + r.start,
                    len: r.end - r.start,
                }))
            }
        }
    }

    /// The bytes as a slice, if they are one (not in page fragments).
    pub(crate) fn as_slice(&self) -> Option<&'a [u8]> {
        match self.0 {
            SrcKind::Bytes(b) => Some(b),
            SrcKind::Skb { .. } => None,
        }
    }

    /// Copies the bytes to `dst`; `ECANCELED` if they are in page
    /// fragments their sender revoked.
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes of `self.len()` bytes. (It may
    /// overlap a fragment's bytes, a WRITE from and to the same user
    /// pages: the bytes are then what an overlapping `memcpy` leaves, as
    /// the user's own memory may be.)
    pub(super) unsafe fn copy_to(&self, dst: *mut u8) -> Result {
        match self.0 {
            SrcKind::Bytes(b) => {
                // SAFETY: Per the contract.
                unsafe { core::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len()) };
                Ok(())
            }
            SrcKind::Skb { skb, off, len } => {
                let (Ok(off), Ok(n)) = (u32::try_from(off), u32::try_from(len)) else {
                    return Err(EFAULT);
                };
                // (Fragments may be a user's pages, written meanwhile: the
                // helper copies with `memcpy`; no Rust reference to them.)
                let copy = || {
                    // SAFETY: The skb is live (borrowed); `dst` is valid for
                    // `len` bytes (the contract); the helper checks the range.
                    let r = unsafe {
                        bindings::rrxe_helper_skb_copy_bits(skb.raw(), off, dst.cast(), n)
                    };
                    kernel::error::to_result(r)
                };
                if skb.nr_frags() == 0 {
                    return copy();
                }
                // Fragments are read under their sender's gate, if it has
                // not revoked them (`QpTask::zc_revoke`).
                match skb.zc_stamp() {
                    (Some(task), epoch) => task.zc_read(epoch, copy),
                    // The NIC's pages ([`SkBuff::mark_from_wire`]).
                    (None, FROM_WIRE) => copy(),
                    (None, _) => Err(super::error::ecanceled()),
                }
            }
        }
    }
}

/// The zeroed page of [`ZeroPage`] while it exists.
static ZERO_PAGE: AtomicPtr<bindings::page> = AtomicPtr::new(core::ptr::null_mut());

/// A zeroed page owned by the module, for [`SkBuff::add_zeros`]: a packet
/// holds a reference of its own, so the page outlives the owner's drop
/// while packets still use it.
pub(crate) struct ZeroPage(NonNull<bindings::page>);

// SAFETY: A page pointer and a reference to it; any thread may drop it.
unsafe impl Send for ZeroPage {}
// SAFETY: No access through a shared reference.
unsafe impl Sync for ZeroPage {}

impl ZeroPage {
    /// Allocates the page; one may exist at a time.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: Plain allocation.
        let p = NonNull::new(unsafe { bindings::rrxe_helper_alloc_zeroed_page() }).ok_or(ENOMEM)?;
        if ZERO_PAGE
            .compare_exchange(
                core::ptr::null_mut(),
                p.as_ptr(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: Ours, unused.
            unsafe { bindings::rrxe_helper_put_page(p.as_ptr()) };
            return Err(EBUSY);
        }
        Ok(Self(p))
    }
}

impl Drop for ZeroPage {
    fn drop(&mut self) {
        ZERO_PAGE.store(core::ptr::null_mut(), Ordering::Release);
        // SAFETY: The reference taken at allocation; packets hold their
        // own.
        unsafe { bindings::rrxe_helper_put_page(self.0.as_ptr()) };
    }
}

/// A queue of socket buffers with its own lock (`struct sk_buff_head`);
/// safe from any context. Purged when dropped. Once closed
/// ([`Self::close`]) it takes nothing more: what a closed queue is given is
/// freed at once, so nothing a dying owner never looks at again can keep
/// a buffer (and the references the buffer holds).
#[pin_data(PinnedDrop)]
pub(crate) struct SkbQueue {
    #[pin]
    q: Opaque<bindings::sk_buff_head>,
    /// Written under the queue's lock (the helpers).
    closed: AtomicBool,
    /// Takes only buffers detached from their senders ([`SkBuff::detach`],
    /// see [`Self::detach_all`]); written under the queue's lock.
    detached: AtomicBool,
    /// The most buffers the queue holds, whatever their source: packets
    /// from the network count in no sender's in-flight limit, nor do
    /// detached ones, and a consumer whose work does not run (another
    /// user's faults hold the workqueue, say) must not make the kernel
    /// keep what a peer sends it without end.
    max: u32,
}

/// Why [`SkbQueue::push`] did not queue a buffer (it was freed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue is closed (its owner is being destroyed).
    Closed,
    /// The queue holds its maximum.
    Full,
    /// It could not be detached for a detached queue: its sender revoked
    /// its fragments, or memory ran out.
    Lost,
}

// SAFETY: `sk_buff_head` operations take its internal lock.
unsafe impl Send for SkbQueue {}
// SAFETY: See `Send`.
unsafe impl Sync for SkbQueue {}

impl SkbQueue {
    /// An empty queue, holding at most `max` buffers.
    pub(crate) fn new(max: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            q <- Opaque::ffi_init(|q| {
                // SAFETY: `q` is valid for writes.
                unsafe { bindings::rrxe_helper_skb_queue_head_init(q) }
            }),
            closed: AtomicBool::new(false),
            detached: AtomicBool::new(false),
            max,
        })
    }

    /// Appends `skb`; if the queue is closed or full, frees it and says
    /// which. A detached queue detaches it first.
    pub(crate) fn push(&self, skb: SkBuff) -> core::result::Result<(), Refused> {
        self.add(skb, false)
    }

    /// Gives back `skb`, which [`Self::pop`] took, at the head: its
    /// consumer will take it first again (it could not use it yet). No
    /// bound applies (it was counted in the queue's); a closed queue frees
    /// it.
    pub(crate) fn push_front(&self, skb: SkBuff) -> core::result::Result<(), Refused> {
        self.add(skb, true)
    }

    fn add(&self, skb: SkBuff, head: bool) -> core::result::Result<(), Refused> {
        let raw = skb.into_raw();
        let mut why = Refused::Closed;
        for _ in 0..2 {
            // SAFETY: The queue is initialised; `closed` and `detached`
            // are its flags; when queued the queue takes over the skb.
            let r = unsafe {
                bindings::rrxe_helper_skb_queue_add(
                    self.q.get(),
                    self.closed.as_ptr(),
                    self.detached.as_ptr(),
                    raw,
                    self.max,
                    head,
                )
            };
            match r as u32 {
                bindings::RRXE_QUEUED => return Ok(()),
                bindings::RRXE_OWNED => {
                    // SAFETY: Not queued: still ours, from `into_raw`.
                    let Some(mut skb) = (unsafe { SkBuff::from_raw(raw) }) else {
                        return Err(Refused::Lost);
                    };
                    if !skb.detach() {
                        return Err(Refused::Lost);
                    }
                    // (Detached now: the next try takes it.)
                    let _ = skb.into_raw();
                }
                bindings::RRXE_FULL => {
                    why = Refused::Full;
                    break;
                }
                _ => break,
            }
        }
        // SAFETY: Not queued: the skb is still ours, from `into_raw`.
        drop(unsafe { SkBuff::from_raw(raw) });
        Err(why)
    }

    /// From now on, takes only buffers detached from their senders, and
    /// detaches those it holds (keeping their order; one whose sender
    /// revoked its fragments is dropped). For a consumer that may wait on
    /// something a user controls while buffers wait here: a queued
    /// looped-back packet holds its sending QP, whose destroy would wait
    /// too. Not concurrently with itself.
    pub(crate) fn detach_all(&self) {
        if self.detached.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: The queue is initialised; `detached` is its flag;
        // `detach_one` is called outside the queue's lock, on buffers the
        // helper took out of the queue (ours until it returns).
        unsafe {
            bindings::rrxe_helper_skb_queue_detach(
                self.q.get(),
                self.detached.as_ptr(),
                Some(detach_one),
            )
        };
    }

    /// Closes the queue for good and frees what it holds.
    pub(crate) fn close(&self) {
        // SAFETY: The queue is initialised; `closed` is its flag.
        unsafe { bindings::rrxe_helper_skb_queue_close(self.q.get(), self.closed.as_ptr()) };
    }

    /// Takes the first buffer. An empty queue is seen without its lock: a
    /// buffer queued meanwhile is for the next look (whoever queues it
    /// wakes the consumer afterwards).
    pub(crate) fn pop(&self) -> Option<SkBuff> {
        if self.len() == 0 {
            return None;
        }
        // SAFETY: The queue is initialised; a dequeued skb is ours.
        unsafe { SkBuff::from_raw(bindings::skb_dequeue(self.q.get())) }
    }

    /// The number of queued buffers (a snapshot, without the lock).
    pub(crate) fn len(&self) -> usize {
        // SAFETY: The queue is initialised; `skb_queue_len_lockless` reads
        // the count once (READ_ONCE), a snapshot.
        unsafe { bindings::rrxe_helper_skb_queue_len(self.q.get()) as usize }
    }

    /// Frees every queued buffer.
    pub(crate) fn purge(&self) {
        // SAFETY: The queue is initialised.
        unsafe { bindings::rrxe_helper_skb_queue_purge(self.q.get()) };
    }
}

/// `rrxe_helper_skb_queue_detach`'s callback: detaches one buffer.
///
/// # Safety
///
/// `skb` is a live buffer the caller owns, and keeps owning after.
unsafe extern "C" fn detach_one(skb: *mut bindings::sk_buff) -> bool {
    // SAFETY: Per this function's contract; the buffer is lent, so the
    // wrapper must not free it (`into_raw` below gives it back).
    let Some(mut b) = (unsafe { SkBuff::from_raw(skb) }) else {
        return false;
    };
    let ok = b.detach();
    let _ = b.into_raw();
    ok
}

#[pinned_drop]
impl PinnedDrop for SkbQueue {
    fn drop(self: Pin<&mut Self>) {
        self.purge();
    }
}
