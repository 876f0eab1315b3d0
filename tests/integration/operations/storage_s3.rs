//! `STORAGE_URL=s3://<bucket>/<prefix>` against a real S3-compatible server on loopback: PyPI's
//! moto in server mode (`python3 -m moto.server`). The service stores a contract PDF and a
//! missing-info mail; the test reads the objects back from moto over plain HTTP and compares
//! them with what the service answered. Without moto the tests fail, saying how to install it
//! ([`MOTO_VERSION`]).

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Db, TestService, error_body, leasing_request};
use base64::Engine;
use serde_json::Value;
use sha2::Digest;
use tokio::process::{Child, Command};

/// The moto release the tests are run with (`cargo xtask test` installs the same).
const MOTO_VERSION: &str = "5.2.1";

const ACCESS_KEY_ID: &str = "AKIDSTORAGETEST";
const SECRET_ACCESS_KEY: &str = "storage-test-secret-key-0123456789";

/// moto serving the S3 API on a loopback port; killed on drop.
struct Moto {
    port: u16,
    _child: Child,
}

impl Moto {
    async fn start() -> Moto {
        // A port the operating system just handed out; moto binds it right after.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log_path = std::env::temp_dir().join(format!("integration-service-moto-{}.log", uuid::Uuid::new_v4()));
        let log = std::fs::File::create(&log_path).expect("create the moto log file");
        let mut child = Command::new("python3")
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run python3 for the test S3 server ({e}); {}", install_hint()));
        for _ in 0..300 {
            if let Some(status) = child.try_wait().unwrap() {
                let output = std::fs::read_to_string(&log_path).unwrap_or_default();
                if output.contains("No module named") {
                    panic!(
                        "the S3 tests need the Python package moto with its server: {} ({})",
                        install_hint(),
                        output.trim()
                    );
                }
                panic!("the test S3 server (moto) exited with {status}: {}", output.trim());
            }
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Moto { port, _child: child };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the test S3 server (moto) does not accept connections on port {port}: {}", log_file(&log_path));
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket over the S3 API (`PUT /<bucket>`).
    async fn create_bucket(&self, bucket: &str) {
        let response = reqwest::Client::new().put(format!("{}/{bucket}", self.endpoint())).checked().await.unwrap();
        assert_eq!(response.status(), 200, "create bucket {bucket}: {}", response.text().await.unwrap());
    }

    /// An S3 request as an authenticated client makes it. moto checks no signatures, but
    /// answers an anonymous read of a private object with 403.
    fn request(&self, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().get(format!("{}{path}", self.endpoint())).header(
            "authorization",
            format!(
                "AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
            ),
        )
    }

    /// The object's bytes, read straight from moto.
    async fn object(&self, bucket: &str, key: &str) -> Vec<u8> {
        let response = self.request(&format!("/{bucket}/{key}")).checked().await.unwrap();
        assert_eq!(response.status(), 200, "GET {key}");
        response.bytes().await.unwrap().to_vec()
    }

    /// Every key in the bucket (ListObjectsV2), sorted.
    async fn keys(&self, bucket: &str) -> Vec<String> {
        let response = self.request(&format!("/{bucket}?list-type=2")).checked().await.unwrap();
        assert_eq!(response.status(), 200);
        let listing = response.text().await.unwrap();
        let mut keys: Vec<String> = listing
            .split("<Key>")
            .skip(1)
            .map(|rest| rest.split_once("</Key>").expect("a closed Key element").0.to_string())
            .collect();
        keys.sort();
        keys
    }
}

fn install_hint() -> String {
    format!(
        "run the suite with `cargo xtask test`, which installs it (xtask/python/requirements-test.txt: moto[server]=={MOTO_VERSION})"
    )
}

fn log_file(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default().trim().to_string()
}

/// The service's settings for this bucket and prefix on moto.
fn s3_settings(moto: &Moto, storage_url: &str) -> Vec<(String, String)> {
    vec![
        ("STORAGE_URL".into(), storage_url.into()),
        ("S3_ENDPOINT".into(), moto.endpoint()),
        ("S3_REGION".into(), "us-east-1".into()),
        ("S3_ACCESS_KEY_ID".into(), ACCESS_KEY_ID.into()),
        ("S3_SECRET_ACCESS_KEY".into(), SECRET_ACCESS_KEY.into()),
        ("S3_ALLOW_HTTP".into(), "true".into()),
    ]
}

async fn start_service(db: Db, settings: &[(String, String)]) -> TestService {
    let settings: Vec<(&str, &str)> = settings.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    TestService::start(db, &settings).await
}

/// Creates a financing request and brings it to a printed paper contract.
async fn contract_ready(svc: &TestService, token: &str) -> String {
    let created = svc.post(token, "/api/v1/leasing", leasing_request("ACME GmbH")).await;
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["data"]["FinancingId"].as_str().unwrap().to_string();
    let wait = svc.get(token, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?sleep_milliseconds=0")).await;
    assert_eq!(wait.status(), 200);
    let paper =
        svc.call(token, reqwest::Method::PUT, &format!("/api/v1/leasing/{id}/switch-to-paper-contract"), None).await;
    assert_eq!(paper.status(), 200);
    id
}

async fn contract_pdf_and_mail_land_under_the_prefix(db: Db) {
    let moto = Moto::start().await;
    moto.create_bucket("contracts").await;
    let svc = start_service(db, &s3_settings(&moto, "s3://contracts/integration/test")).await;
    let token = svc.user_token().await;

    let id = contract_ready(&svc, &token).await;
    let response = svc.get(&token, &format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=true")).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json_value().await;
    assert_eq!(answer["stored"]["path"], format!("contracts/{id}.pdf"));

    // The object sits under the prefix, byte for byte the document the service answered.
    let object = moto.object("contracts", &format!("integration/test/contracts/{id}.pdf")).await;
    assert!(object.starts_with(b"%PDF-"));
    let answered =
        base64::engine::general_purpose::STANDARD.decode(answer["data"]["Content"].as_str().unwrap()).unwrap();
    assert_eq!(object, answered);
    assert_eq!(answer["stored"]["bytes"], object.len());
    let digest: String = sha2::Sha256::digest(&object).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(answer["stored"]["sha256"], digest);

    // The missing-info mail is kept in the same storage, under the same prefix.
    let created = svc.post(&token, "/api/v1/leasing", leasing_request("Needs More [missing-info]")).await;
    let missing = created.json::<Value>().await.unwrap()["data"]["FinancingId"].as_str().unwrap().to_string();
    let wait = svc.get(&token, &format!("/api/v1/leasing/{missing}/wait-ready-to-sign?sleep_milliseconds=0")).await;
    let body = error_body(wait, 500).await;
    assert_eq!(body["error_code"], "missing_info");

    let keys = moto.keys("contracts").await;
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_eq!(keys[0], format!("integration/test/contracts/{id}.pdf"));
    assert!(keys[1].starts_with("integration/test/mail/") && keys[1].ends_with(".eml"), "{keys:?}");
    let mail = String::from_utf8(moto.object("contracts", &keys[1]).await).unwrap();
    assert!(mail.contains("To: lessee@example.com") && mail.contains(&missing), "{mail}");
    svc.stop().await;
}

on_both_databases!(contract_pdf_and_mail_land_under_the_prefix);

/// A bucket that does not exist: storing answers `storage_error`, the service keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_bucket_is_a_storage_error_not_a_crash() {
    let moto = Moto::start().await;
    let svc = start_service(Db::Sqlite, &s3_settings(&moto, "s3://no-such-bucket/x")).await;
    let token = svc.user_token().await;
    let id = contract_ready(&svc, &token).await;
    let path = format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=true");
    let body = error_body(svc.get(&token, &path).await, 500).await;
    assert_eq!(body["success"], false);
    assert_eq!(body["error_code"], "storage_error");
    let message = body["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "The contract document could not be stored: storage failed: writing contracts/{id}.pdf: the bucket does not exist"
        )
    );
    assert!(!message.contains(SECRET_ACCESS_KEY), "{message}");

    // Still serving, and without the PDF the same call works.
    let health = svc.client.get(svc.url("/healthz")).checked().await.unwrap();
    assert_eq!(health.status(), 200);
    let path = format!("/api/v1/leasing/{id}/contractdocument/base64");
    assert_eq!(svc.get(&token, &path).await.status(), 200);
    svc.stop().await;
}

/// A plain-http endpoint without S3_ALLOW_HTTP stops the start with one line naming the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_endpoint_needs_allow_http() {
    let (database_url, _) = crate::common::fresh_database(Db::Sqlite).await;
    let settings = [
        ("DATABASE_URL", database_url.as_str()),
        ("BIND_ADDRESS", "127.0.0.1:0"),
        ("STORAGE_URL", "s3://contracts/x"),
        ("S3_ENDPOINT", "http://127.0.0.1:9"),
        ("S3_ACCESS_KEY_ID", ACCESS_KEY_ID),
        ("S3_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY),
    ];
    let config = integration_service::config::Config::load_with(None, &settings).expect("the settings are valid");
    let log = integration_service::telemetry::discard();
    let error =
        integration_service::server::start(&config, &log).await.err().expect("the start is refused").to_string();
    assert!(error.starts_with("STORAGE_URL: ") && error.contains("S3_ALLOW_HTTP"), "{error}");
    assert!(!error.contains('\n') && !error.contains(SECRET_ACCESS_KEY), "{error}");
}
