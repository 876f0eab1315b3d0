//! An upstream that asks for a wait (`503 Service Unavailable` with `Retry-After`, as in
//! maintenance) on a read, a sync or a pull: the caller is told to wait as long (503
//! `upstream_busy` with that `Retry-After`, at most an hour), as for a write or a 429, and the
//! mirror is as before.

use crate::common::{Api, Db, TestService, add_fault, clear_faults};
use serde_json::{Value, json};

/// The status, the `Retry-After` and the body of an answer.
async fn answered(response: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let wait = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    (status, wait, response.json().await.unwrap())
}

/// 503 `upstream_busy` with `Retry-After: wait`, the message naming the upstream.
async fn assert_busy(response: reqwest::Response, wait: &str, system: &str, call: &str) {
    let (status, retry_after, body) = answered(response).await;
    assert_eq!(
        (status, retry_after.as_deref(), body["error_code"].as_str()),
        (503, Some(wait), Some("upstream_busy")),
        "{call}: {body}"
    );
    assert!(body["message"].as_str().unwrap().contains(system), "{call}: {body}");
}

/// A rule answering every call under `path_prefix` 503 with `Retry-After: seconds`.
fn maintenance(path_prefix: &str, seconds: u64) -> Value {
    json!({"path_prefix": path_prefix, "status": 503, "retry_after_seconds": seconds, "times": 100})
}

/// A field-report sync and an ERP pull and refresh of a record (a read by id) met a 503 with
/// `Retry-After`, and were answered 502 `upstream_error` without the wait. Each is answered 503
/// `upstream_busy` with the wait; one over an hour is answered as an hour. Once the upstreams
/// are back, the same calls succeed.
async fn a_wait_asked_for_on_a_read_or_a_sync_is_answered(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 3).await;
    let erp = svc.erp_host().to_string();
    add_fault(&svc.client, &svc.fieldreport, maintenance("/odata/Companies", 120)).await;
    add_fault(&svc.client, &erp, maintenance("/webapp/api/v1/customer", 120)).await;
    let sync = "/api/v1/fieldreport/sync/companies";
    assert_busy(svc.get(&token, sync).await, "120", "field-report", "sync").await;
    assert_busy(svc.get(&token, "/api/v1/erp/setup/customer").await, "120", "ERP", "pull").await;
    assert_busy(svc.get(&token, "/api/v1/erp/update/customer/1").await, "120", "ERP", "refresh").await;
    clear_faults(&svc.client, &erp).await;
    add_fault(&svc.client, &erp, maintenance("/webapp/api/v1/customer", 86_400)).await;
    assert_busy(svc.get(&token, "/api/v1/erp/setup/customer").await, "3600", "ERP", "a wait of a day").await;

    clear_faults(&svc.client, &svc.fieldreport).await;
    clear_faults(&svc.client, &erp).await;
    let (status, _, synced) = answered(svc.get(&token, sync).await).await;
    assert_eq!((status, synced["data"][0]["inserted"].clone()), (200, json!(3)), "{synced}");
    let (status, _, pulled) = answered(svc.get(&token, "/api/v1/erp/setup/customer").await).await;
    assert_eq!(status, 200, "{pulled}");
    svc.stop().await;
}

/// The leasing provider in maintenance (503 with `Retry-After`) or over its limit (429): a
/// leasing route keeps the seed's 500 `{success: false}` but names `upstream_busy` and passes
/// the wait on in `Retry-After` (at most an hour; a 429 without one, a second). The 503 was
/// answered `upstream_error` without the wait, the 429 `upstream_busy` without any.
async fn a_wait_the_leasing_provider_asks_for_is_passed_on(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let read = "/api/v1/leasing/a1b2c3d4-0000-4000-8000-000000000001";
    for (rule, wait) in [
        (maintenance("/basic/v1/requests", 120), "120"),
        (maintenance("/basic/v1/requests", 86_400), "3600"),
        (json!({"path_prefix": "/basic/v1/requests", "status": 429, "times": 100}), "1"),
    ] {
        svc.leasing_fault(rule.clone()).await;
        let (status, retry_after, body) = answered(svc.get(&token, read).await).await;
        assert_eq!(
            (status, retry_after.as_deref(), body["error_code"].as_str(), body["success"].as_bool()),
            (500, Some(wait), Some("upstream_busy"), Some(false)),
            "{rule}: {body}"
        );
        clear_faults(&svc.client, &svc.leasing).await;
    }
    svc.stop().await;
}

on_both_databases!(a_wait_asked_for_on_a_read_or_a_sync_is_answered, a_wait_the_leasing_provider_asks_for_is_passed_on);
