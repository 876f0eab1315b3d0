//! TLS termination in the service (`TLS_CERT`, `TLS_KEY`): a CA and a server certificate are
//! made with rcgen (`common::tls`); clients that trust the CA are served over HTTP/1.1, everything else
//! fails without disturbing the service.

use crate::common::Api;
use crate::common::contract::Checked;
use std::sync::Arc;
use std::time::Duration;

use crate::common::tls::{Authority, Files};
use crate::common::{Db, TestService, error_body};
use integration_service::config::Config;
use integration_service::{server, telemetry};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A guard against a hung connection, not a timing assertion.
const GUARD: Duration = Duration::from_secs(30);

/// A server certificate for loopback signed by `ca`: (certificate PEM, key PEM).
fn server_certificate(ca: &Authority) -> (String, String) {
    let leaf = ca.leaf(&["localhost", "127.0.0.1"]);
    (leaf.cert_pem, leaf.key_pem)
}

/// The service with TLS from a fresh CA, and a client that trusts that CA only.
async fn start_tls(ca: &Authority) -> TestService {
    let files = Files::new("tls");
    let (cert, key) = server_certificate(ca);
    let cert_path = files.write("server.pem", &cert);
    let key_path = files.write("server.key", &key);
    let mut svc = TestService::start(Db::Sqlite, &[("TLS_CERT", &cert_path), ("TLS_KEY", &key_path)]).await;
    assert!(svc.base.starts_with("https://127.0.0.1:"), "{}", svc.base);
    svc.client = trusting(ca);
    svc
}

fn trusting(ca: &Authority) -> reqwest::Client {
    let root = reqwest::Certificate::from_pem(ca.pem.as_bytes()).unwrap();
    reqwest::Client::builder().tls_certs_only([root]).timeout(GUARD).build().unwrap()
}

fn port(svc: &TestService) -> u16 {
    svc.service.as_ref().unwrap().address.port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_and_a_guarded_route_over_tls() {
    let ca = Authority::new("Service Test CA");
    let svc = start_tls(&ca).await;
    svc.create_user("ada@example.com", "analytical-engine").await;
    let login = svc.login("ada@example.com", "analytical-engine").await;
    // reqwest here speaks h2 when offered; the service offers only HTTP/1.1.
    assert_eq!(login.version(), reqwest::Version::HTTP_11);
    assert_eq!(login.status(), 200);
    let token = login.json::<serde_json::Value>().await.unwrap()["access_token"].as_str().unwrap().to_string();

    let user = svc.get(&token, "/api/v1/user").await;
    assert_eq!(user.status(), 200);
    assert_eq!(user.json::<serde_json::Value>().await.unwrap()["email"], "ada@example.com");
    let anonymous = svc.client.get(svc.url("/api/v1/user")).checked().await.unwrap();
    assert_eq!(error_body(anonymous, 401).await["message"], "Unauthenticated.");
    // The other public paths work over TLS too: the document and the reference page.
    assert_eq!(svc.client.get(svc.url("/docs/openapi.json")).checked().await.unwrap().status(), 200);
    assert_eq!(svc.client.get(svc.url("/docs")).checked().await.unwrap().status(), 200);
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpn_selects_http11_even_when_the_client_prefers_h2() {
    let ca = Authority::new("Service Test CA");
    let svc = start_tls(&ca).await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(("127.0.0.1", port(&svc))).await.unwrap();
    let mut tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));

    tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(GUARD, tls.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_and_stalled_handshakes_do_not_stop_the_service() {
    let ca = Authority::new("Service Test CA");
    let svc = start_tls(&ca).await;
    let port = port(&svc);

    // A client that connects and never starts the handshake holds only its own connection.
    let stalled = TcpStream::connect(("127.0.0.1", port)).await.unwrap();

    // Plain HTTP to the TLS port: an error for the client, never an HTTP answer.
    let plain = reqwest::Client::builder().timeout(GUARD).build().unwrap();
    let refused = plain.get(format!("http://127.0.0.1:{port}/healthz")).checked().await;
    assert!(refused.is_err(), "plain HTTP got an answer: {refused:?}");
    let mut raw = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    raw.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n").await.unwrap();
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(GUARD, raw.read_to_end(&mut bytes)).await.expect("the service closes the connection");
    assert!(!bytes.starts_with(b"HTTP/"), "plain HTTP was answered: {:?}", String::from_utf8_lossy(&bytes));

    // The service keeps serving, on new connections, while the stalled one is still open.
    for _ in 0..3 {
        let health = svc.client.get(svc.url("/healthz")).checked().await.unwrap();
        assert_eq!(health.status(), 200);
    }
    let mut probe = [0u8; 1];
    match stalled.try_read(&mut probe) {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the stalled connection was closed before the others were served: {other:?}"),
    }
    let log = svc.log.text();
    assert!(log.contains("TLS handshake failed"), "{log}");

    // The header-read time limit applies to the handshake: the stalled client is cut off.
    let mut stalled = stalled;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(GUARD, stalled.read_to_end(&mut rest)).await.expect("the service cut it off");
    assert!(read.is_err() || rest.is_empty(), "{read:?} {rest:?}");
    // The connection is closed as the handshake gives up, just before the line is logged.
    let cut_off = tokio::time::Instant::now();
    while !svc.log.text().contains("did not finish within") && cut_off.elapsed() < GUARD {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(svc.log.text().contains("did not finish within"), "{}", svc.log.text());
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_do_not_trust_the_ca_are_refused() {
    let ca = Authority::new("Service Test CA");
    let svc = start_tls(&ca).await;
    // The system's roots only.
    let system = reqwest::Client::builder().timeout(GUARD).build().unwrap();
    let error = system.get(svc.url("/healthz")).checked().await.expect_err("an unknown CA is not trusted");
    assert!(error.is_connect(), "{error:?}");
    // Another CA only.
    let stranger = trusting(&Authority::new("Another CA"));
    stranger.get(svc.url("/healthz")).checked().await.expect_err("a certificate from another CA is not trusted");
    // The trusting client is still served.
    assert_eq!(svc.client.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);
    svc.stop().await;
}

/// The start error for these certificate files.
async fn start_error(cert: &str, key: &str) -> String {
    let files = Files::new("tls");
    let database_url = format!("sqlite://{}/test.db", files.0.display());
    let cert_path = files.write("cert.pem", cert);
    let key_path = files.write("key.pem", key);
    let env = [
        ("DATABASE_URL", database_url.as_str()),
        ("BIND_ADDRESS", "127.0.0.1:0"),
        ("TLS_CERT", cert_path.as_str()),
        ("TLS_KEY", key_path.as_str()),
    ];
    let config = Config::load_with(None, &env).expect("the files exist, so the configuration is valid");
    match server::start(&config, &telemetry::discard()).await {
        Ok(service) => {
            service.shutdown().await;
            panic!("the service started with unusable certificate files");
        }
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn unusable_certificate_files_stop_the_start_naming_the_setting() {
    let ca = Authority::new("Service Test CA");
    let (cert, key) = server_certificate(&ca);
    let (_, other_key) = server_certificate(&ca);

    let error = start_error("not a certificate", &key).await;
    assert!(error.starts_with("TLS_CERT:") && error.contains("no PEM certificate"), "{error}");
    // A key where the certificate belongs.
    let error = start_error(&key, &key).await;
    assert!(error.starts_with("TLS_CERT:"), "{error}");
    let error = start_error(&cert, "not a key").await;
    assert!(error.starts_with("TLS_KEY:") && error.contains("no PEM private key"), "{error}");
    let error = start_error(&cert, &other_key).await;
    assert!(error.starts_with("TLS_KEY:") && error.contains("does not belong"), "{error}");

    // A missing file is refused by the configuration already.
    let missing =
        Config::load_with(None, &[("TLS_CERT", "/nonexistent/cert.pem"), ("TLS_KEY", "/nonexistent/key.pem")])
            .expect_err("a missing file is refused");
    assert!(missing.to_string().contains("TLS_CERT"), "{missing}");
    let half = Config::load_with(None, &[("TLS_CERT", "/nonexistent/cert.pem")]).expect_err("TLS_KEY is required");
    assert!(half.to_string().contains("TLS_KEY"), "{half}");
}
