//! Consumers generate their own clients from `spec/openapi.json`. Here, as one would:
//! openapi-python-client (pinned in `xtask/python/`, installed by `cargo xtask test`) generates
//! a client from the committed document with no warning (`--fail-on-warning`: an operation or
//! schema it cannot read is a failure, not a silently missing method), and
//! `python_client/drive.py` uses it against the service and the simulators: login, a leasing
//! create and read, a field-report create, patch and delete, and the companies read back with
//! cursors. `python_client/round_trip.py` sends a record of every field-report entity set back
//! to its update routes as the client read it, and `python_client/errors.py` provokes the
//! error answers the service can give and checks that the strict client reads each one.

use crate::common::Api;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{Db, EMAIL, PASSWORD, TestService};

const DOCUMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json");
/// The drivers: the folder beside this file, of its name.
fn drivers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(file!()).with_extension("")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The client, generated once for the tests of this module into a folder of its own (on
/// `PYTHONPATH` for the drivers); the folder is left in the temporary directory.
fn generated() -> &'static Path {
    static GENERATED: OnceLock<PathBuf> = OnceLock::new();
    GENERATED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("integration-service-python-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        generate(&dir);
        dir
    })
}

/// Runs `driver` with the client on `PYTHONPATH` and these arguments after
/// `BASE_URL EMAIL PASSWORD`, off the test's runtime, and reads the one JSON object it prints.
async fn drive(svc: &TestService, driver: &str, more: &[&str]) -> Value {
    let path = tokio::task::spawn_blocking(|| generated().to_path_buf()).await.unwrap();
    let mut command = Command::new("python3");
    command.arg(drivers().join(driver)).args([&svc.base, EMAIL, PASSWORD]).args(more).env("PYTHONPATH", path);
    let driven = tokio::task::spawn_blocking(move || command.output()).await.unwrap().expect("python3 runs");
    let printed = format!("{}{}", text(&driven.stdout), text(&driven.stderr));
    assert!(driven.status.success(), "{driver} failed:\n{printed}");
    serde_json::from_slice(&driven.stdout)
        .unwrap_or_else(|e| panic!("{driver} prints one JSON object ({e}):\n{printed}"))
}

/// Generates the client into `dir/integration_service_client`.
fn generate(dir: &std::path::Path) {
    // No formatting hooks: ruff would only restyle the output. The exports' NDJSON read as
    // bytes, as docs/clients.md tells consumers.
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "post_hooks: []\ncontent_type_overrides:\n  application/x-ndjson: application/octet-stream\n",
    )
    .unwrap();
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
    let svc = TestService::start(Db::Sqlite, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let seen = drive(&svc, "drive.py", &[]).await;

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
    let mut written: Vec<&str> =
        read_back["written"].as_array().unwrap().iter().map(|id| id.as_str().unwrap()).collect();
    written.sort();
    assert_eq!(read_back["copied"], serde_json::json!(written), "the copy from the change feed: {seen}");
    svc.stop().await;
}

/// Every mirrored entity set (the service's registry): a record read through the generated
/// client goes back to its PUT and PATCH routes as it was read, `Version` included, and is
/// accepted; what each answers, and the record read again, is the record read, but for the
/// `Version` counted up and the upstream's `DateModified` stamp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entity_read_by_the_python_client_goes_back_to_its_update_routes() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let entities: Vec<Value> = generated::fieldreport::ENTITIES
        .iter()
        .map(|entity| serde_json::json!({"route": entity.route, "set": entity.set}))
        .collect();
    assert_eq!(entities.len(), 15);
    for entity in generated::fieldreport::ENTITIES {
        // Generated records: with every navigation property, expanded.
        svc.seed(entity.set, 1).await;
    }
    let synced = svc.get(&token, "/api/v1/fieldreport/sync").await;
    assert_eq!(synced.status(), 200, "{}", synced.text().await.unwrap());

    let seen = drive(&svc, "round_trip.py", &[&Value::from(entities.clone()).to_string()]).await;
    let without = |record: &Value, fields: &[&str]| {
        let mut record = record.clone();
        for field in fields {
            record.as_object_mut().unwrap().remove(*field);
        }
        record
    };
    let stamps = ["Version", "DateModified"];
    for entity in &entities {
        let set = entity["set"].as_str().unwrap();
        let trip = &seen[set];
        let version = |name: &str| trip[name]["Version"].as_i64().unwrap_or_else(|| panic!("{set} {name}: {trip}"));
        assert_eq!(
            (version("put"), version("again"), version("patch")),
            (version("read") + 1, version("read") + 1, version("read") + 2),
            "{set}: {trip}"
        );
        let read = without(&trip["read"], &stamps);
        assert!(read.as_object().unwrap().len() > 2, "{set}: a generated record has fields: {trip}");
        for name in ["put", "again", "patch"] {
            assert_eq!(without(&trip[name], &stamps), read, "{set}: {name} differs from the record read");
        }
    }
    svc.stop().await;
}

/// Answers the service gives that no handler's error type names: the front's and dropshot's
/// own (`error_code` filled in from the status). The front's 408 (a body sent too slowly) and
/// 431 (a head over `MAX_HEADER_BYTES`) are left out: a generated client sends neither.
const FRONT_ANSWERS: &[(u16, &str)] = &[(400, "bad_request"), (413, "payload_too_large")];

/// The answers `errors.py` does not provoke, and why: none of them can be caused by a client
/// on loopback against the sandbox without reaching around the service.
const NOT_PROVOKED: &[(u16, &str, &str)] = &[
    (500, "internal_error", "a failed query or an internal fault: no request causes one (a bug)"),
    (
        503,
        "service_unavailable",
        "the database not answering: a client cannot stop it (tests/integration/operations/database_outage.rs does)",
    ),
    (503, "shutting_down", "only while the service shuts down, which a client cannot start"),
    (503, "interrupted", "only while the service shuts down, which a client cannot start"),
    (503, "upstream_not_configured", "the sandbox configures every upstream system"),
    (500, "upstream_not_configured", "the sandbox configures every upstream system"),
    (500, "upstream_client_error", "the service failing to build its own request to the provider (a bug)"),
    (500, "storage_error", "the service's own document storage failing underneath it"),
    (409, "job_active", "a race: needs a job still running when the same one is queued again"),
    (429, "too_many_active_jobs", "a race: needs JOBS_ACTIVE_PER_USER jobs still running at once"),
    (
        429,
        "too_many_held_calls",
        "needs MAX_HELD_CALLS_PER_USER calls held at once (tests/integration/edge/abuse/held_calls.rs does)",
    ),
    (
        429,
        "too_many_delivery_retries",
        "needs a delivery to send again, which needs a recorded change (tests/integration/leasing/watch/retries.rs does)",
    ),
    (
        429,
        "too_many_exports",
        "needs MAX_EXPORTS_PER_USER exports left unread at once (tests/integration/edge/abuse/exports.rs does)",
    ),
    (
        409,
        "idempotency_key_in_progress",
        "a race: needs the first request with the key still running (tests/integration/leasing/flow.rs does)",
    ),
    (
        504,
        "upstream_outcome_unknown",
        "a forwarded write whose answer is lost after the upstream applied it: a race with the time-out",
    ),
    (
        504,
        "upstream_unavailable",
        "a forwarded write that timed out and was found not applied: a race with the time-out",
    ),
];

/// Every answer the service can give (every variant of every handler's error type, through the
/// service's one mapping, and the front's own) reaches a strict generated client, which reads
/// it into the typed model of that status with its `error_code`; the answers not provoked are
/// named in [`NOT_PROVOKED`] with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_answer_reaches_a_strict_python_client_typed() {
    let secret = "a webhook secret";
    let svc = TestService::start(
        Db::Sqlite,
        &[
            ("FIELDREPORT_TIMEOUT_SECONDS", "1"),
            ("LEASING_TIMEOUT_SECONDS", "1"),
            ("LEASING_SUBSCRIPTIONS_PER_USER", "1"),
            ("CALLBACK_ALLOW_PRIVATE", "true"),
            ("JOBS_PER_MINUTE_PER_USER", "2"),
            ("IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER", "2"),
            ("LEASING_CREATES_PER_MINUTE_PER_USER", "20"),
            ("TRUSTED_PROXIES", "127.0.0.1/32"),
            ("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"),
            ("ERP_WEBHOOK_SECRET", secret),
        ],
    )
    .await;
    svc.create_user(EMAIL, PASSWORD).await;
    let auth = integration_service::auth::Authenticator::new(
        svc.store().clone(),
        integration_service::auth::AuthConfig::default(),
    )
    .unwrap();
    let reader = auth.create_token(EMAIL, "reader", &["fieldreport:read".to_string()], None).await.unwrap();
    svc.create_user("other@example.com", "another long passphrase").await;
    let other = svc.token("other@example.com", "another long passphrase").await;
    svc.remember_secret(&reader);
    let more =
        serde_json::json!({"reader": reader, "other": other, "fieldreport": svc.fieldreport, "leasing": svc.leasing});
    let seen = drive(&svc, "errors.py", &[&more.to_string()]).await;

    let failures = seen["failures"].as_array().unwrap();
    let report: Vec<String> = failures
        .iter()
        .map(|f| {
            format!("{} {} on {}:\n{}", f["status"], f["code"], f["operation"], f["error"].as_str().unwrap_or_default())
        })
        .collect();
    assert!(failures.is_empty(), "the strict client did not read these answers:\n{}", report.join("\n"));
    let provoked: std::collections::BTreeSet<(u16, String)> = seen["seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["status"].as_u64().unwrap() as u16, s["code"].as_str().unwrap().to_string()))
        .collect();
    let mut every = integration_service::api::support::answers::every_answer();
    every.extend(FRONT_ANSWERS.iter().map(|(status, code)| (*status, code.to_string())));
    let not_provoked: std::collections::BTreeSet<(u16, String)> =
        NOT_PROVOKED.iter().map(|(status, code, _)| (*status, code.to_string())).collect();
    let missing: Vec<_> = every.iter().filter(|a| !provoked.contains(*a) && !not_provoked.contains(*a)).collect();
    assert!(
        missing.is_empty(),
        "answers the service can give, neither provoked nor named as not provoked: {missing:?}"
    );
    let stale: Vec<_> = not_provoked.iter().filter(|a| !every.contains(*a) || provoked.contains(*a)).collect();
    assert!(stale.is_empty(), "named as not provoked, but provoked or not an answer of the service: {stale:?}");
    svc.stop().await;
}
