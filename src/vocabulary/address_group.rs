//! The unit every per-address limit counts in (login throttling, connection caps): an IPv4
//! address, or an IPv6 address's /64. One IPv6 client is usually given a whole /64 (RFC 6177)
//! and may send from any of its 2^64 addresses, so counting exact IPv6 addresses would give it
//! that many budgets. An IPv4-mapped IPv6 address counts as its IPv4 address.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// The group a client address counts in; shown as the IPv4 address or the `/64` network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressGroup(IpAddr);

/// The length of the IPv6 prefix one client is assumed to hold.
pub const IPV6_CLIENT_PREFIX: u8 = 64;

impl AddressGroup {
    pub fn of(address: IpAddr) -> AddressGroup {
        match address.to_canonical() {
            IpAddr::V4(v4) => AddressGroup(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let [a, b, c, d, ..] = v6.segments();
                AddressGroup(IpAddr::V6(Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0)))
            }
        }
    }
}

impl fmt::Display for AddressGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/{IPV6_CLIENT_PREFIX}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(address: &str) -> AddressGroup {
        AddressGroup::of(address.parse().unwrap())
    }

    #[test]
    fn an_ipv6_slash_64_is_one_group_and_ipv4_stays_exact() {
        assert_eq!(group("2001:db8:1:2::1"), group("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(group("2001:db8:1:2::1"), group("2001:db8:1:3::1"));
        assert_eq!(group("2001:db8:1:2:aaaa::9").to_string(), "2001:db8:1:2::/64");
        assert_ne!(group("198.51.100.7"), group("198.51.100.8"));
        assert_eq!(group("::ffff:198.51.100.7"), group("198.51.100.7"));
        assert_eq!(group("::ffff:198.51.100.7").to_string(), "198.51.100.7");
    }
}
