//! Text from outside the service (an upstream's error message) that holds line breaks and
//! other control characters must not start lines of its own in the service's log: in the text
//! format a reader could not tell a forged line from the service's own. The JSON format must
//! keep one record a line too, for readers that split lines the Unicode way as well.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::process::Instance;
use crate::common::{Db, add_fault, leasing_request};
use serde_json::json;

/// What the upstream's error message tries to make the log show as a line of its own.
const FORGED: &str = "FAKE level=ERROR user=root msg=forged";

/// The service, run in `format`, meets a leasing-provider error whose message holds a line
/// break, a carriage return and a terminal escape; its whole log once it has stopped.
async fn log_after_a_forging_upstream(format: &str) -> String {
    let (mut instance, sandboxes, _store) = Instance::start(Db::Sqlite, &[("LOG_FORMAT", format)]).await;
    let token = instance.token().await;
    let message = format!("Database offline\n{FORGED}\r\n{FORGED}\u{1b}[2K\u{0085}{FORGED}");
    let rule = json!({"path_prefix": "/", "status": 500, "times": 10, "body": json!({"Message": message}).to_string()});
    add_fault(&instance.client, &sandboxes.leasing_base_url(), rule).await;
    let answer = instance
        .client
        .post(instance.url("/api/v1/leasing"))
        .bearer_auth(&token)
        .json(&leasing_request("ACME GmbH"))
        .checked()
        .await
        .unwrap();
    assert_eq!(answer.status(), 500, "the provider's refusal is answered as a failure");
    // Stopped first: the log is written by a background thread and complete only then.
    instance.terminate();
    let log = instance.log();
    instance.stop(&[&token]).await;
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_text_cannot_forge_text_log_lines() {
    let log = log_after_a_forging_upstream("text").await;
    assert!(log.contains(FORGED), "the upstream's message reached the log: {log}");
    for line in log.lines() {
        assert!(!line.starts_with("FAKE"), "a forged line in the text log: {line:?}");
        assert!(!line.chars().any(char::is_control), "a control character in the text log: {line:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_text_cannot_forge_json_log_lines() {
    let log = log_after_a_forging_upstream("json").await;
    assert!(log.contains(FORGED), "the upstream's message reached the log: {log}");
    for line in log.lines() {
        let record: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a line of the JSON log is no record ({e}): {line:?}"));
        assert!(record["msg"].as_str().is_some(), "a record without its message: {line}");
        assert!(!line.chars().any(char::is_control), "a control character in the JSON log: {line:?}");
    }
}
