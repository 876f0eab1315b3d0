//! Caps on open client connections, in total and per client address: a client that opens
//! connections without end (slow bodies, idle sockets) is refused before it can exhaust the
//! process's file descriptors. A refused connection is closed at once and counted.
//!
//! The address is the TCP peer's, counted by its [`AddressGroup`] (an IPv6 peer's /64): behind
//! a proxy or load balancer every client shares the proxy's, so `MAX_CONNECTIONS_PER_ADDRESS`
//! must allow for the proxy's own connections.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::metrics::{ConnectionRefusal, Metrics};
use crate::vocabulary::address_group::AddressGroup;

pub struct ConnectionLimits {
    total: usize,
    per_address: usize,
    open: Mutex<Open>,
    metrics: Arc<Metrics>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_address: HashMap<AddressGroup, usize>,
}

/// An admitted connection; its place is given back when it is dropped.
pub struct Admitted {
    limits: Arc<ConnectionLimits>,
    address: AddressGroup,
}

impl ConnectionLimits {
    pub fn new(total: usize, per_address: usize, metrics: Arc<Metrics>) -> Arc<ConnectionLimits> {
        Arc::new(ConnectionLimits { total, per_address, open: Mutex::default(), metrics })
    }

    /// Admits a connection from `address`, or says which cap it would exceed (and counts it).
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Result<Admitted, ConnectionRefusal> {
        let address = AddressGroup::of(address);
        let mut open = self.open.lock().expect("connection counts");
        let from_address = open.by_address.get(&address).copied().unwrap_or(0);
        let refusal = if open.total >= self.total {
            Some(ConnectionRefusal::Total)
        } else if from_address >= self.per_address {
            Some(ConnectionRefusal::PerAddress)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            drop(open);
            self.metrics.connection_refused(refusal);
            return Err(refusal);
        }
        open.total += 1;
        open.by_address.insert(address, from_address + 1);
        self.metrics.connection_opened();
        Ok(Admitted { limits: self.clone(), address })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().expect("connection counts");
        open.total -= 1;
        if let Some(count) = open.by_address.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.by_address.remove(&self.address);
            }
        }
        drop(open);
        self.limits.metrics.connection_closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> Arc<Metrics> {
        Arc::new(Metrics::new(crate::metrics::operations::OperationMatcher::new(
            &serde_json::json!({"paths": {}}),
            &[],
        )))
    }

    #[test]
    fn caps_hold_per_address_and_in_total_and_places_come_back() {
        let limits = ConnectionLimits::new(3, 2, metrics());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = limits.admit(a).unwrap();
        let _second = limits.admit(a).unwrap();
        assert!(matches!(limits.admit(a), Err(ConnectionRefusal::PerAddress)));
        let _third = limits.admit(b).unwrap();
        assert!(matches!(limits.admit(b), Err(ConnectionRefusal::Total)));
        drop(first);
        assert!(limits.admit(a).is_ok(), "a closed connection gives its place back");
    }

    /// One IPv6 client holds a /64: its addresses share one allowance.
    #[test]
    fn the_addresses_of_one_ipv6_slash_64_share_the_per_address_cap() {
        let limits = ConnectionLimits::new(10, 2, metrics());
        let _first = limits.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        let _second = limits.admit("2001:db8:1:2::2".parse().unwrap()).unwrap();
        let third = limits.admit("2001:db8:1:2:ffff::3".parse().unwrap());
        assert!(matches!(third, Err(ConnectionRefusal::PerAddress)));
        assert!(limits.admit("2001:db8:1:3::1".parse().unwrap()).is_ok(), "another /64 has its own");
    }
}
