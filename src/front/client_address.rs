//! Who is calling: the direct peer, or the client named in `X-Forwarded-For` when the peer is
//! a trusted proxy.

use std::net::IpAddr;

use http::HeaderMap;
use ipnet::IpNet;

/// The client address of a request from `peer`. `X-Forwarded-For` is read right to left and
/// only while each hop is trusted, so a client cannot spoof an address by prepending entries.
pub fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = peer.to_canonical();
    if !is_trusted(peer, trusted) {
        return peer;
    }
    let mut client = peer;
    let hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for hop in hops.iter().rev() {
        let Ok(addr) = hop.parse::<IpAddr>() else { break };
        client = addr.to_canonical();
        if !is_trusted(client, trusted) {
            break;
        }
    }
    client
}

fn is_trusted(addr: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().unwrap());
        h
    }

    #[test]
    fn untrusted_peer_cannot_claim_an_address() {
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(resolve(peer, &headers("10.0.0.1"), &[]), peer);
    }

    #[test]
    fn trusted_proxy_chain_is_walked_right_to_left() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: IpAddr = "10.1.1.1".parse().unwrap();
        // The client prepended a fake entry; the first untrusted hop from the right wins.
        let h = headers("1.2.3.4, 198.51.100.7, 10.2.2.2");
        assert_eq!(resolve(proxy, &h, &trusted), "198.51.100.7".parse::<IpAddr>().unwrap());
        assert_eq!(resolve(proxy, &HeaderMap::new(), &trusted), proxy);
    }

    #[test]
    fn several_headers_ipv6_and_mapped_addresses() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap(), "fd00::/8".parse().unwrap()];
        // A dual-stack socket reports an IPv4 peer as ::ffff:127.0.0.1; it is still trusted.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let mut h = headers("2001:db8::1, fd00::2");
        h.append("x-forwarded-for", "fd00::3".parse().unwrap());
        assert_eq!(resolve(mapped, &h, &trusted), "2001:db8::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn an_unreadable_hop_ends_the_walk_at_the_last_trusted_address() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: IpAddr = "10.1.1.1".parse().unwrap();
        assert_eq!(resolve(proxy, &headers("198.51.100.7, unknown"), &trusted), proxy);
        assert_eq!(resolve(proxy, &headers("198.51.100.7:4711"), &trusted), proxy);
    }
}
