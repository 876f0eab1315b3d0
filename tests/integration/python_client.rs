//! Consumers generate their own clients from `spec/openapi.json`. Here, as one would:
//! openapi-python-client (pinned in `xtask/python/`, installed by `cargo xtask test`) generates
//! a client from the committed document with no warning (`--fail-on-warning`: an operation or
//! schema it cannot read is a failure, not a silently missing method), and
//! `python_client/drive.py` uses it against the service and the simulators: login, a leasing
//! create and read, a field-report create, patch and delete, and the companies read back with
//! cursors.

use std::process::Command;

use serde_json::Value;

use crate::common::{Db, EMAIL, PASSWORD, TestService};

const DOCUMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json");
const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/integration/python_client/drive.py");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Generates the client into `dir/integration_service_client`.
fn generate(dir: &std::path::Path) {
    // No formatting hooks: ruff would only restyle the output.
    let config = dir.join("config.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let generated = Command::new("openapi-python-client")
        .args(["generate", "--meta", "none", "--fail-on-warning", "--path", DOCUMENT, "--output-path"])
        .arg(dir.join("integration_service_client"))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("openapi-python-client runs (cargo xtask test installs it into target/test-tools/venv)");
    let output = format!("{}{}", text(&generated.stdout), text(&generated.stderr));
    assert!(generated.status.success(), "openapi-python-client failed:\n{output}");
    assert!(!output.to_lowercase().contains("warning"), "openapi-python-client warned:\n{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_logs_in_leases_and_writes_records() {
    let dir = std::env::temp_dir().join(format!("integration-service-python-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    generate(&dir);
    let svc = TestService::start(Db::Sqlite, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;

    let (base, path) = (svc.base.clone(), dir.clone());
    let driven = tokio::task::spawn_blocking(move || {
        Command::new("python3").arg(DRIVER).args([&base, EMAIL, PASSWORD]).env("PYTHONPATH", &path).output()
    })
    .await
    .unwrap()
    .expect("python3 runs");
    assert!(driven.status.success(), "drive.py failed:\n{}{}", text(&driven.stdout), text(&driven.stderr));
    let seen: Value = serde_json::from_slice(&driven.stdout).expect("drive.py prints one JSON object");

    assert_eq!(seen["token_type"], "Bearer");
    let leasing = &seen["leasing"];
    assert!(leasing["created"].as_str().is_some_and(|id| !id.is_empty()), "{seen}");
    assert_eq!(leasing["shown"], leasing["created"]);
    assert_eq!(leasing["company"], "Python GmbH");
    let fieldreport = &seen["fieldreport"];
    assert_eq!(fieldreport["created"], "Python Bikes GmbH");
    assert_eq!(
        (fieldreport["patched"].clone(), fieldreport["version"].clone()),
        ("Python Cycles GmbH".into(), 2.into())
    );
    // Version 1 again, after the patch made it 2: refused as stale.
    assert_eq!(fieldreport["stale"], 409);
    assert_eq!(fieldreport["shown"], "Python Cycles GmbH");
    assert_eq!((fieldreport["deleted"].clone(), fieldreport["gone"].clone()), (204.into(), 404.into()));
    // The set read back by key, a page at a time with the typed cursor: each record once.
    let read_back = &seen["read_back"];
    assert_eq!(read_back["read"], read_back["written"], "{seen}");
    svc.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
