//! TLS termination in the front (`TLS_CERT`, `TLS_KEY`): rustls with the aws-lc-rs provider
//! that reqwest and lettre already bring, offering only HTTP/1.1 by ALPN (the front speaks
//! HTTP/1.1). The certificate and key are read once at start; a file that cannot be used stops
//! the start with an error naming its setting.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("{setting}: cannot read {path}: {source}")]
    Unreadable { setting: &'static str, path: String, source: std::io::Error },
    #[error("TLS_CERT: {path} holds no PEM certificate")]
    NoCertificate { path: String },
    #[error("TLS_KEY: {path} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey { path: String },
    #[error("TLS_KEY: the private key does not belong to the certificate in TLS_CERT")]
    KeyMismatch,
    #[error("TLS_KEY: the key cannot be used with the certificate in TLS_CERT: {0}")]
    Rejected(rustls::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("the TLS handshake did not finish within {0:?}")]
    TimedOut(Duration),
    #[error("TLS handshake failed: {0}")]
    Failed(std::io::Error),
}

/// Turns accepted TCP connections into TLS streams.
pub struct TlsTerminator {
    acceptor: TlsAcceptor,
}

impl TlsTerminator {
    /// Reads the PEM certificate chain (leaf first) and private key.
    pub fn from_pem_files(cert_path: &Path, key_path: &Path) -> Result<TlsTerminator, TlsSetupError> {
        let read = |setting: &'static str, path: &Path| {
            std::fs::read(path).map_err(|source| TlsSetupError::Unreadable {
                setting,
                path: path.display().to_string(),
                source,
            })
        };
        let cert_pem = read("TLS_CERT", cert_path)?;
        let key_pem = read("TLS_KEY", key_path)?;
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(&cert_pem).filter_map(Result::ok).collect();
        if certs.is_empty() {
            return Err(TlsSetupError::NoCertificate { path: cert_path.display().to_string() });
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|_| TlsSetupError::NoKey { path: key_path.display().to_string() })?;

        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Rejected)?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|error| match error {
                rustls::Error::InconsistentKeys(_) => TlsSetupError::KeyMismatch,
                other => TlsSetupError::Rejected(other),
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsTerminator { acceptor: TlsAcceptor::from(Arc::new(config)) })
    }

    /// The server side of the handshake, given at most `timeout` (a client that stalls must
    /// not hold a connection open, just as one that sends its headers too slowly).
    pub async fn handshake(
        &self,
        stream: TcpStream,
        timeout: Duration,
    ) -> Result<TlsStream<TcpStream>, HandshakeError> {
        match tokio::time::timeout(timeout, self.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(error)) => Err(HandshakeError::Failed(error)),
            Err(_) => Err(HandshakeError::TimedOut(timeout)),
        }
    }
}
