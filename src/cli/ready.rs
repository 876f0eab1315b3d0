//! `ready`: asks a service on this host whether it is ready (`GET /readyz`), for a container's
//! health check where no curl is at hand. Exit 0 when it answers 200, 1 otherwise.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The readiness URL of a service listening on `bind`: an unspecified address (all
/// interfaces) is asked on loopback.
pub(super) fn readiness_url(bind: SocketAddr) -> String {
    let host = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), bind.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), bind.port()),
        _ => bind,
    };
    format!("http://{host}/readyz")
}

pub(super) async fn ready(url: &str) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    // The error's chain says why (`Connection refused`); the command line prints every cause.
    let status = client.get(url).send().await.map_err(|e| anyhow::Error::new(e).context(url.to_string()))?.status();
    anyhow::ensure!(status == reqwest::StatusCode::OK, "{url} answered {status}");
    println!("ready: {url} answered {status}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::readiness_url;

    #[test]
    fn every_interface_is_asked_on_loopback() {
        assert_eq!(readiness_url("0.0.0.0:8080".parse().unwrap()), "http://127.0.0.1:8080/readyz");
        assert_eq!(readiness_url("[::]:9000".parse().unwrap()), "http://[::1]:9000/readyz");
        assert_eq!(readiness_url("10.0.0.5:8080".parse().unwrap()), "http://10.0.0.5:8080/readyz");
    }
}
