// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 over UDP: tunnel sockets on port 4791 that hand received
//! datagrams to a handler, routes, and the IP transmit of a built packet.

use super::attrs::Vlan;
use super::bindings;
use super::netdev::NetDevice;
use super::skb::SkBuff;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The RoCEv2 UDP port.
pub(crate) const ROCE_V2_PORT: u16 = 4791;

/// Receives the datagrams of a [`UdpTunnel`]: called in softirq context,
/// with `data` at the UDP header and the IP header before it.
pub(crate) trait EncapHandler: Send + Sync + 'static {
    /// Takes one datagram.
    fn recv(&self, skb: SkBuff);
}

/// A kernel UDP socket bound to port 4791 of a network namespace whose
/// datagrams go to `H` (a UDP tunnel socket). Closed when dropped.
///
/// # Invariants
///
/// `sock` is an open tunnel socket whose `sk_user_data` points at
/// `*handler`, which the value keeps alive until the socket is released.
pub(crate) struct UdpTunnel<H: EncapHandler> {
    sock: NonNull<bindings::socket>,
    handler: Arc<H>,
    ipv6: bool,
}

// SAFETY: The socket is only used through thread-safe kernel calls.
unsafe impl<H: EncapHandler> Send for UdpTunnel<H> {}
// SAFETY: See `Send`.
unsafe impl<H: EncapHandler> Sync for UdpTunnel<H> {}

impl<H: EncapHandler> UdpTunnel<H> {
    /// Opens the IPv4 (or IPv6-only) port 4791 of `ndev`'s namespace.
    /// `EADDRINUSE` if another socket (C `rdma_rxe`) has it.
    pub(crate) fn open(ndev: &NetDevice, ipv6: bool, handler: Arc<H>) -> Result<Self> {
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        let ud = (&*handler as *const H).cast_mut().cast();
        // SAFETY: `ndev` is alive, so its namespace is; the handler
        // outlives the socket (released in `drop` before the Arc goes).
        let ret = unsafe {
            bindings::rrxe_helper_udp_tunnel_open(
                bindings::rrxe_helper_dev_net(ndev.as_ptr()),
                ipv6,
                ROCE_V2_PORT,
                Some(Self::encap_rcv),
                ud,
                &mut sock,
            )
        };
        kernel::error::to_result(ret)?;
        let sock = NonNull::new(sock).ok_or(EINVAL)?;
        // INVARIANT: Open with `sk_user_data` = the handler.
        Ok(Self {
            sock,
            handler,
            ipv6,
        })
    }

    fn sk(&self) -> *mut bindings::sock {
        // SAFETY: The socket is open.
        unsafe { bindings::rrxe_helper_socket_sk(self.sock.as_ptr()) }
    }

    /// # Safety
    ///
    /// Only the UDP tunnel layer calls this, under RCU, with the socket this
    /// type set up and an skb whose ownership it passes to us.
    unsafe extern "C" fn encap_rcv(
        sk: *mut bindings::sock,
        skb: *mut bindings::sk_buff,
    ) -> kernel::ffi::c_int {
        // SAFETY: The UDP layer passes its socket and an skb it gives us.
        let Some(skb) = (unsafe { SkBuff::from_raw(skb) }) else {
            return 0;
        };
        // SAFETY: Called under RCU by the UDP receive path; the user data
        // is our handler until release, which waits for RCU readers.
        let h = unsafe { bindings::rrxe_helper_sk_user_data(sk) }.cast::<H>();
        if h.is_null() {
            drop(skb);
            return 0;
        }
        // SAFETY: See above: `h` is live for the call.
        unsafe { (*h).recv(skb) };
        0
    }

    /// Looks up the route of a packet from `saddr` to `daddr` out of
    /// `ndev`, or, with `vlan`, out of that VLAN device on `ndev`: a
    /// route out of any other device is refused.
    pub(crate) fn route(
        &self,
        ndev: &NetDevice,
        vlan: Option<Vlan>,
        saddr: &[u8; 16],
        daddr: &[u8; 16],
    ) -> Result<Route> {
        let oif = match vlan {
            Some(v) => v.ifindex,
            // SAFETY: `ndev` is alive.
            None => unsafe { bindings::rrxe_helper_netdev_ifindex(ndev.as_ptr()) },
        };
        let mut cookie = 0u32;
        let dst = if self.ipv6 {
            // SAFETY: The socket is open; the addresses are 16 bytes; the
            // cookie is a local.
            unsafe {
                bindings::rrxe_helper_route6(
                    self.sk(),
                    oif,
                    saddr.as_ptr().cast(),
                    daddr.as_ptr().cast(),
                    &mut cookie,
                )
            }
        } else {
            let s = u32::from_ne_bytes([saddr[12], saddr[13], saddr[14], saddr[15]]);
            let d = u32::from_ne_bytes([daddr[12], daddr[13], daddr[14], daddr[15]]);
            // SAFETY: `ndev` is alive, so its namespace is.
            unsafe {
                bindings::rrxe_helper_route4(
                    bindings::rrxe_helper_dev_net(ndev.as_ptr()),
                    oif,
                    s,
                    d,
                )
            }
        };
        // INVARIANT: A route we hold one reference on.
        let route = NonNull::new(dst)
            .map(|dst| Route { dst, cookie })
            .ok_or_else(super::error::ehostunreach)?;
        if let Some(v) = vlan {
            let (dst, nd) = (route.dst.as_ptr(), ndev.as_ptr());
            // SAFETY: We hold a reference on the route; `ndev` is alive.
            if !unsafe { bindings::rrxe_helper_dst_is_vlan(dst, nd, v.ifindex, v.id) } {
                // (Dropping the route releases it.)
                return Err(super::error::ehostunreach());
            }
        }
        Ok(route)
    }

    /// Sets the IP metadata and route of `skb` (IP header at `data`) as
    /// `send` would, without sending: for the ICRC, which covers the IPv4
    /// identification that this sets. `segs`: the datagrams `skb` becomes
    /// (a train's segments: IPv4 takes an identification for each; 1 for
    /// a packet).
    pub(crate) fn prepare(&self, skb: &mut SkBuff, route: &Route, segs: u32) {
        // SAFETY: As in `send`.
        unsafe {
            if self.ipv6 {
                bindings::rrxe_helper_skb_prepare_ipv6(skb.as_raw(), route.dst.as_ptr());
            } else {
                bindings::rrxe_helper_skb_prepare_ipv4(skb.as_raw(), route.dst.as_ptr(), segs);
            }
        }
    }

    /// Sets the IP metadata of `skb` (IP header at `data`) for a packet
    /// that `ndev`'s own receive path takes (loopback): no route needed.
    pub(crate) fn prepare_local(&self, skb: &mut SkBuff, ndev: &NetDevice) {
        // SAFETY: The skb is ours with its IP header at `data`; `ndev` is
        // alive.
        unsafe { bindings::rrxe_helper_skb_prepare_local(skb.as_raw(), ndev.as_ptr(), self.ipv6) };
    }

    /// Sends a packet that [`Self::prepare`] already set up.
    pub(crate) fn send_prepared(&self, skb: SkBuff) -> Result {
        // SAFETY: The stack takes over the skb whatever the result.
        let r = unsafe {
            if self.ipv6 {
                bindings::rrxe_helper_ip6_local_out(skb.into_raw(), self.sk())
            } else {
                bindings::rrxe_helper_ip_local_out(skb.into_raw(), self.sk())
            }
        };
        if r < 0 {
            Err(Error::from_errno(r))
        } else {
            Ok(())
        }
    }

    /// The socket, as the owner of transmitted buffers.
    pub(crate) fn owner_sk(&self) -> *mut bindings::sock {
        self.sk()
    }
}

impl<H: EncapHandler> Drop for UdpTunnel<H> {
    fn drop(&mut self) {
        // SAFETY: The socket is open; release clears the user data and
        // waits for RCU readers (running `encap_rcv`s) before closing.
        unsafe { bindings::udp_tunnel_sock_release(self.sock.as_ptr()) };
        let _ = &self.handler;
    }
}

/// A route (`struct dst_entry`), released when dropped.
///
/// # Invariants
///
/// `dst` is a route this value holds one reference on.
pub(crate) struct Route {
    dst: NonNull<bindings::dst_entry>,
    /// What `dst_check` compares (IPv6: the routing tree's serial number
    /// at the lookup; IPv4 keeps its generation in the route).
    cookie: u32,
}

impl Route {
    /// Whether the route still holds: false once a route, address or
    /// device change made it obsolete. A route kept across packets is
    /// checked before each use, as a connected socket checks its cached
    /// one.
    pub(crate) fn valid(&self) -> bool {
        // SAFETY: By the type invariant we hold a reference.
        unsafe { bindings::rrxe_helper_dst_valid(self.dst.as_ptr(), self.cookie) }
    }

    /// Whether the route's device takes a packet train without a pass
    /// over its bytes (it gathers page fragments and checksums IPv6 if
    /// `v6`, else IPv4, in hardware): `net::tx` sends trains only then.
    pub(crate) fn can_train(&self, v6: bool) -> bool {
        // SAFETY: By the type invariant we hold a reference; the helper
        // reads the device's feature word.
        unsafe { bindings::rrxe_helper_dst_can_train(self.dst.as_ptr(), v6) }
    }
}

// SAFETY: A `dst_entry` reference may be used and released from any
// thread; the route is read-only to us.
unsafe impl Send for Route {}

impl Drop for Route {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold a reference.
        unsafe { bindings::rrxe_helper_dst_release(self.dst.as_ptr()) };
    }
}

/// Link-layer headroom a packet for `ndev` needs.
pub(crate) fn ll_headroom(ndev: &NetDevice) -> usize {
    // SAFETY: `ndev` is alive.
    unsafe { bindings::rrxe_helper_ll_reserved(ndev.as_ptr()) as usize }
}
