//! The leasing client against a loopback TLS server that, like the real provider, requires a
//! client certificate from its own CA, serves a chain ending at that CA, and offers h2 in ALPN
//! while speaking only HTTP/1.1. The certificates come from the test CA of `common::tls`.

use std::sync::Arc;
use std::time::Duration;

use crate::common::tls::{Authority, Files};
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use integration_service::config::Config;
use integration_service::upstream::UpstreamError;
use integration_service::upstream::leasing::LeasingClient;
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpListener;

/// Serves `GET /basic/v1/requests/{id}` over TLS with client authentication; HTTP/1.1 only.
async fn provider(ca: &Authority) -> u16 {
    let server = ca.leaf(&["localhost"]);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![server.cert_der, ca.der.clone()], server.key_der)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let service = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let id = req.uri().path().rsplit('/').next().unwrap_or_default().to_string();
                    let body = serde_json::json!({"FinancingId": id, "State": "ReadyToSign", "RequestId": "180-1"})
                        .to_string();
                    Ok::<_, std::convert::Infallible>(
                        http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                            .unwrap(),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    port
}

fn client(port: u16, settings: &[(&str, &str)]) -> Result<LeasingClient, UpstreamError> {
    let base = format!("https://localhost:{port}");
    let mut env = vec![("LEASING_BASE_URL", base.as_str()), ("LEASING_TIMEOUT_SECONDS", "5")];
    env.extend_from_slice(settings);
    let config = Config::load_with(None, &env).unwrap();
    LeasingClient::from_config(&config.leasing)
}

#[tokio::test]
async fn mutual_tls_with_the_providers_ca_over_http1() {
    let files = Files::new("leasing-mtls");
    let ca = Authority::new("Provider Test CA");
    let port = provider(&ca).await;
    let identity = ca.leaf(&["integration-service"]);
    let ca_path = files.write("ca.pem", &ca.pem);
    let cert_path = files.write("client.pem", &identity.cert_pem);
    let key_path = files.write("client.key", &identity.key_pem);
    let (cert, key, ca_file) = (cert_path.as_str(), key_path.as_str(), ca_path.as_str());

    // The right identity and trust root: the call goes through (on HTTP/1.1, though h2 is offered).
    let leasing =
        client(port, &[("LEASING_CLIENT_CERT", cert), ("LEASING_CLIENT_KEY", key), ("LEASING_CA_CERT", ca_file)])
            .unwrap();
    let request = tokio::time::timeout(Duration::from_secs(20), leasing.get("abc-123")).await.unwrap().unwrap();
    assert_eq!(request["FinancingId"], "abc-123");
    assert_eq!(request["State"], "ReadyToSign");

    // The provider offers h2 but speaks only HTTP/1.1: a client that accepts h2 fails, which
    // is why LEASING_HTTP1_ONLY defaults to true.
    let h2 = client(
        port,
        &[
            ("LEASING_CLIENT_CERT", cert),
            ("LEASING_CLIENT_KEY", key),
            ("LEASING_CA_CERT", ca_file),
            ("LEASING_HTTP1_ONLY", "false"),
        ],
    )
    .unwrap();
    assert!(h2.get("abc-123").await.is_err(), "an h2 client must fail against this server");

    // Without a client certificate the server refuses the handshake.
    let anonymous = client(port, &[("LEASING_CA_CERT", ca_file)]).unwrap();
    let refused = anonymous.get("abc-123").await.unwrap_err();
    assert!(matches!(refused, UpstreamError::Unreachable { .. }), "{refused:?}");

    // A certificate from another CA is refused too.
    let stranger = Authority::new("Someone Else");
    let other = stranger.leaf(&["intruder"]);
    let other_cert = files.write("other.pem", &other.cert_pem);
    let other_key = files.write("other.key", &other.key_pem);
    let intruder = client(
        port,
        &[
            ("LEASING_CLIENT_CERT", other_cert.as_str()),
            ("LEASING_CLIENT_KEY", other_key.as_str()),
            ("LEASING_CA_CERT", ca_file),
        ],
    )
    .unwrap();
    assert!(intruder.get("abc-123").await.is_err());

    // Without the provider's CA the client does not trust the server.
    let untrusting = client(port, &[("LEASING_CLIENT_CERT", cert), ("LEASING_CLIENT_KEY", key)]).unwrap();
    assert!(untrusting.get("abc-123").await.is_err());

    // A key file that is not PEM is a configuration error naming the setting.
    let garbage = files.write("garbage.key", "not a key");
    let error = client(port, &[("LEASING_CLIENT_CERT", cert), ("LEASING_CLIENT_KEY", garbage.as_str())]).err().unwrap();
    assert!(error.to_string().contains("LEASING_CLIENT_CERT/LEASING_CLIENT_KEY"), "{error}");
}
