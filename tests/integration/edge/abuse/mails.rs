//! Mail a caller makes the service send: a wait that finds its financing request in
//! `MissingInfo` sends the missing-info mail to the lessee's `Email` (which the caller wrote)
//! and the template's own recipients, and keeps a copy in storage. Repeated, one request in
//! `MissingInfo` made the service send a mail per call (50 in 0.17 s against the sandbox),
//! without bound: to any address the caller chose, to the operator's archive, and a file each
//! in storage. A request's mail now leaves at most once per
//! `MISSING_INFO_MAIL_INTERVAL_SECONDS`; the waits between answer `missing_info` as before,
//! saying when it was sent.

use std::path::Path;

use crate::common::{Api, Db, TestService, error_body, leasing_request};
use serde_json::Value;

fn mails(storage: &Path) -> usize {
    std::fs::read_dir(storage.join("mail")).map(|dir| dir.count()).unwrap_or(0)
}

async fn missing_info_request(svc: &TestService, token: &str) -> String {
    let created = svc.post(token, "/api/v1/leasing", leasing_request("Needs More [missing-info]")).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    created["data"]["FinancingId"].as_str().unwrap().to_string()
}

async fn wait(svc: &TestService, token: &str, id: &str, date: &str) -> String {
    let query = format!("max_attempts=1&sleep_milliseconds=0&technician_appointment_date={date}");
    let answer = svc.get(token, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?{query}")).await;
    let body = error_body(answer, 500).await;
    assert_eq!(body["error_code"], "missing_info", "{body}");
    body["message"].as_str().unwrap().to_string()
}

async fn the_missing_info_mail_of_a_request_leaves_once_per_interval(db: Db) {
    let svc = TestService::start(db, &[("MISSING_INFO_MAIL_INTERVAL_SECONDS", "2")]).await;
    let token = svc.user_token().await;
    let id = missing_info_request(&svc, &token).await;

    let first = wait(&svc, &token, &id, "2026-12-01").await;
    assert!(first.contains("mail was sent"), "{first}");
    for n in 0..20 {
        // Another appointment is no new mail either: the caller writes it.
        let again = wait(&svc, &token, &id, &format!("2026-12-{:02}", n % 28 + 1)).await;
        assert!(again.contains("was already sent at"), "{again}");
    }
    assert_eq!(mails(&svc.storage_dir), 1, "one mail for 21 waits on one request");

    // Another request has a mail of its own.
    let other = missing_info_request(&svc, &token).await;
    assert!(wait(&svc, &token, &other, "2026-12-01").await.contains("mail was sent"));
    assert_eq!(mails(&svc.storage_dir), 2);

    // Once the interval has passed, the first request's mail leaves again.
    let mut sent_again = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if wait(&svc, &token, &id, "2026-12-02").await.contains("mail was sent") {
            sent_again = true;
            break;
        }
    }
    assert!(sent_again, "the mail leaves again after the interval");
    assert_eq!(mails(&svc.storage_dir), 3);
    svc.stop().await;
}

on_both_databases!(the_missing_info_mail_of_a_request_leaves_once_per_interval);
