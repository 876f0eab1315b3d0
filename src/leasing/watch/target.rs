//! Where a callback may go (SSRF): `https` only, and never to a loopback, private,
//! link-local, unique-local or otherwise non-public address (IPv4, IPv6 and IPv4 inside
//! IPv6), unless `CALLBACK_ALLOW_PRIVATE` allows both. Checked when subscribing and again on
//! the resolved addresses of every delivery, whose connection goes only to the addresses
//! checked (see [`CheckedResolver`]), so that a name that resolves elsewhere later (DNS
//! rebinding) gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Why a callback target is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the URL is not valid: {0}")]
    Invalid(String),
    #[error("the URL must use https")]
    NotHttps,
    #[error("{0} is not a public address")]
    NotPublic(IpAddr),
    #[error("{0} resolves to no public address")]
    NoPublicAddress(String),
    #[error("{0} cannot be resolved: {1}")]
    Unresolvable(String, String),
}

/// Whether an address is one a callback may reach without `CALLBACK_ALLOW_PRIVATE`.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // shared address space (RFC 6598) and the benchmarking and reserved ranges
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // IPv4 inside IPv6: mapped (::ffff:a.b.c.d) and compatible (::a.b.c.d) as that IPv4.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return is_public_v4(Ipv4Addr::from(ip.to_bits() as u32));
    }
    // Transition forms that carry an IPv4 address a relay or translator forwards to, which may
    // be a private one: refused whatever they carry. 6to4 2002::/16, Teredo 2001::/32, NAT64
    // 64:ff9b::/96 and the local-use 64:ff9b:1::/48, IPv4-translated ::ffff:0:0:0/96.
    if segments[0] == 0x2002
        || (segments[0] == 0x2001 && segments[1] == 0)
        || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
        || segments[..3] == [0x64, 0xff9b, 1]
        || segments[..6] == [0, 0, 0, 0, 0xffff, 0]
    {
        return false;
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (segments[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
}

/// A callback URL as given, checked without resolving its name: a valid absolute URL, `https`
/// (or `http` when private targets are allowed), and an address literal must be public.
pub fn check_url(raw: &str, allow_private: bool) -> Result<Url, Refusal> {
    let url = Url::parse(raw).map_err(|e| Refusal::Invalid(e.to_string()))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private => {}
        "http" => return Err(Refusal::NotHttps),
        other => return Err(Refusal::Invalid(format!("the scheme {other:?} is not https"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Invalid("credentials in the URL are not allowed".into()));
    }
    match url.host() {
        None => return Err(Refusal::Invalid("the URL has no host".into())),
        Some(Host::Ipv4(ip)) => check_address(IpAddr::V4(ip), allow_private)?,
        Some(Host::Ipv6(ip)) => check_address(IpAddr::V6(ip), allow_private)?,
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if !allow_private && (name == "localhost" || name.ends_with(".localhost")) {
                return Err(Refusal::NoPublicAddress(name));
            }
        }
    }
    Ok(url)
}

fn check_address(ip: IpAddr, allow_private: bool) -> Result<(), Refusal> {
    if allow_private || is_public(ip) { Ok(()) } else { Err(Refusal::NotPublic(ip)) }
}

/// The addresses of `host` a callback may connect to: all of them when private targets are
/// allowed, else the public ones, and a refusal when none is left.
pub async fn resolve(host: &str, allow_private: bool) -> Result<Vec<SocketAddr>, Refusal> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| Refusal::Unresolvable(host.to_string(), e.to_string()))?
        .collect();
    let allowed: Vec<SocketAddr> = addresses.into_iter().filter(|a| allow_private || is_public(a.ip())).collect();
    if allowed.is_empty() { Err(Refusal::NoPublicAddress(host.to_string())) } else { Ok(allowed) }
}

/// reqwest's resolver for deliveries: the connection goes to an address this check let
/// through, so the check and the connection see the same answer.
pub struct CheckedResolver {
    pub allow_private: bool,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses = resolve(&host, allow_private).await?;
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_https_targets_pass() {
        for refused in [
            "http://example.com/hook",
            "https://127.0.0.1/hook",
            "https://10.1.2.3/",
            "https://172.16.0.1/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/",
            "https://0.0.0.0/",
            "https://[::1]/",
            "https://[::]/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:10.0.0.1]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[64:ff9b::5db8:d70e]/",
            "https://[64:ff9b:1::a00:1]/",
            "https://[2002:a00:1::1]/",
            "https://[2002:5db8:d70e::1]/",
            "https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",
            "https://[::ffff:0:a00:1]/",
            "https://localhost/",
            "https://api.localhost/",
            "https://user:pw@example.com/",
            "ftp://example.com/",
            "not a url",
        ] {
            assert!(check_url(refused, false).is_err(), "{refused}");
        }
        for allowed in ["https://example.com/hook", "https://93.184.215.14/x", "https://[2606:4700::1111]/"] {
            assert!(check_url(allowed, false).is_ok(), "{allowed}");
        }
        assert!(check_url("http://127.0.0.1:9/hook", true).is_ok());
        assert!(check_url("ftp://127.0.0.1/", true).is_err());
    }

    #[tokio::test]
    async fn names_are_checked_on_their_resolved_addresses() {
        assert!(matches!(resolve("localhost", false).await, Err(Refusal::NoPublicAddress(_))));
        assert!(resolve("localhost", true).await.is_ok());
    }
}
