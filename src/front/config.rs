//! The front's settings: where it listens, with which certificate, what it believes of a
//! client, and the limits it holds every request and connection to.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

/// How the front serves HTTP.
#[derive(Debug, Clone)]
pub struct FrontConfig {
    /// The one address the service listens on (`BIND_ADDRESS`, default `127.0.0.1:8080`).
    pub bind_address: SocketAddr,
    /// Where the API reference is served, without slashes (`DOCS_PATH`, default `docs`).
    pub docs_path: String,
    /// Proxies whose `X-Forwarded-For` is believed (`TRUSTED_PROXIES`).
    pub trusted_proxies: Vec<IpNet>,
    /// The certificate chain and key the front terminates TLS with (`TLS_CERT`, `TLS_KEY`).
    pub tls: Option<TlsFiles>,
    /// The largest request body (`MAX_BODY_BYTES`, default 1 MiB); a larger one is answered 413.
    pub max_body_bytes: usize,
    /// How long a client may take to send its request headers (`HEADER_READ_TIMEOUT_SECONDS`,
    /// default 10 s); a slower one is disconnected.
    pub header_read_timeout: Duration,
    /// The largest request head, the request line and every header together
    /// (`MAX_HEADER_BYTES`, default 16 KiB); a larger one is answered 431.
    pub max_header_bytes: usize,
    /// How long a client may take to send a whole request body, from the request's start
    /// (`BODY_READ_TIMEOUT_SECONDS`, default 30 s); a slower one is answered 408.
    pub body_read_timeout: Duration,
    /// How long an answer may wait for its client to take any of it (`SEND_TIMEOUT_SECONDS`,
    /// default 60 s); a client that takes none for longer is disconnected.
    pub send_timeout: Duration,
    /// Open client connections at most, in total (`MAX_CONNECTIONS`, default 10,000) and from
    /// one address (`MAX_CONNECTIONS_PER_ADDRESS`, default 500); more are refused at once.
    pub max_connections: usize,
    pub max_connections_per_address: usize,
}

/// PEM files, both existing when the configuration was read.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl FrontConfig {
    pub fn read(raw: &Settings) -> Result<FrontConfig, ConfigError> {
        let bind_raw = raw.string_or("BIND_ADDRESS", "127.0.0.1:8080");
        let bind_address = bind_raw
            .parse::<SocketAddr>()
            .map_err(|_| invalid("BIND_ADDRESS", format!("{bind_raw:?} is not an address like 127.0.0.1:8080")))?;

        let max_body_bytes = raw.positive_u64("MAX_BODY_BYTES")?.unwrap_or(1024 * 1024);
        let max_body_bytes = usize::try_from(max_body_bytes).map_err(|_| invalid("MAX_BODY_BYTES", "too large"))?;
        let header_read_timeout = Duration::from_secs(raw.positive_u64("HEADER_READ_TIMEOUT_SECONDS")?.unwrap_or(10));
        let max_header_bytes = raw.positive_u64("MAX_HEADER_BYTES")?.unwrap_or(16 * 1024);
        let max_header_bytes = usize::try_from(max_header_bytes)
            .ok()
            .filter(|bytes| (1024..=1024 * 1024).contains(bytes))
            .ok_or_else(|| invalid("MAX_HEADER_BYTES", "must be between 1024 and 1048576"))?;
        let body_read_timeout = Duration::from_secs(raw.positive_u64("BODY_READ_TIMEOUT_SECONDS")?.unwrap_or(30));
        let send_timeout = Duration::from_secs(raw.positive_u64("SEND_TIMEOUT_SECONDS")?.unwrap_or(60));
        let count = |name: &'static str, default: u64| -> Result<usize, ConfigError> {
            usize::try_from(raw.positive_u64(name)?.unwrap_or(default)).map_err(|_| invalid(name, "too large"))
        };

        Ok(FrontConfig {
            bind_address,
            docs_path: docs_path(raw)?,
            trusted_proxies: raw.networks("TRUSTED_PROXIES")?,
            tls: TlsFiles::read(raw)?,
            max_body_bytes,
            header_read_timeout,
            max_header_bytes,
            body_read_timeout,
            send_timeout,
            max_connections: count("MAX_CONNECTIONS", 10_000)?,
            max_connections_per_address: count("MAX_CONNECTIONS_PER_ADDRESS", 500)?,
        })
    }
}

/// `DOCS_PATH`: segments of letters, digits, `-`, `_`, `.`, not under `/api`.
fn docs_path(raw: &Settings) -> Result<String, ConfigError> {
    let docs_path = raw.string_or("DOCS_PATH", "docs").trim_matches('/').to_string();
    let docs_ok = !docs_path.is_empty()
        && docs_path.split('/').all(|seg| {
            !seg.is_empty()
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && seg != "."
                && seg != ".."
        })
        && docs_path != "api"
        && !docs_path.starts_with("api/");
    if !docs_ok {
        return Err(invalid("DOCS_PATH", "must be a URL path of letters, digits, - _ . (not under /api)"));
    }
    Ok(docs_path)
}

impl TlsFiles {
    /// Both files or neither (checked first); each must exist.
    fn read(raw: &Settings) -> Result<Option<TlsFiles>, ConfigError> {
        let (cert, key) = match (raw.path("TLS_CERT"), raw.path("TLS_KEY")) {
            (Some(cert), Some(key)) => (cert, key),
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(invalid("TLS_KEY", "TLS_CERT and TLS_KEY must be set together")),
            (None, Some(_)) => return Err(invalid("TLS_CERT", "TLS_CERT and TLS_KEY must be set together")),
        };
        for (name, path) in [("TLS_CERT", &cert), ("TLS_KEY", &key)] {
            if !path.is_file() {
                return Err(invalid(name, format!("file {} does not exist", path.display())));
            }
        }
        Ok(Some(TlsFiles { cert, key }))
    }
}
