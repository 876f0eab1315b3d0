//! Held calls (waits and one-shot flows): abandoned ones stop polling, each user holds at most
//! `MAX_HELD_CALLS_PER_USER`, and a shutdown ends the held ones at once.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::{Db, PASSWORD, TestService, error_body, leasing_request};
use serde_json::{Value, json};
use std::time::Duration;

use super::*;

/// The value of a metrics sample, by the start of its line.
async fn metric(svc: &TestService, line_start: &str) -> f64 {
    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    metrics
        .lines()
        .find(|line| line.starts_with(line_start))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0)
}

/// Creates a financing request for `company` (a simulator marker in it picks its behaviour);
/// its id.
pub(super) async fn financing_request(svc: &TestService, token: &str, company: &str) -> String {
    let created: Value = svc.post_json(token, "/api/v1/leasing", leasing_request(company)).await;
    created["data"]["FinancingId"].as_str().unwrap().to_string()
}

/// A wait and a one-shot flow whose clients went away stop polling the provider at their next
/// sleep; the flow is recorded as `abandoned` with the financing request it created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_waits_and_flows_stop() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let id = financing_request(&svc, &token, "Patient GmbH [never-ready]").await;
    let calls = "integration_service_upstream_requests_total{system=\"leasing\",outcome=\"ok\"}";
    let wait = held(
        &svc,
        &token,
        "GET",
        &format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=100&sleep_milliseconds=200"),
        None,
    )
    .await;
    let flow_body = json!({
        "request_payload": leasing_request("Flow GmbH [never-ready]"),
        "e_signature_payload": {"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example"},
        "max_attempts": 100, "sleep_milliseconds": 200
    });
    let flow = held(&svc, &token, "POST", "/api/v1/leasing/leasing/request-flow", Some(flow_body)).await;
    // Polling: the provider is called again and again while the clients are there (waited
    // for, not timed: a loaded machine polls slower).
    let started = metric(&svc, calls).await;
    let mut polling = started;
    for _ in 0..200 {
        polling = metric(&svc, calls).await;
        if polling >= started + 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(polling >= started + 2.0, "the calls were polling: {started} then {polling}");
    drop(wait);
    drop(flow);
    // The front looks every half second; the calls stop at their next 200 ms sleep.
    let gone = "integration_service_leasing_flow_outcomes_total{flow=\"wait_ready_to_sign\",outcome=\"client_gone\"}";
    let pool = database(&svc).await;
    let last_flow = "SELECT status, financing_id FROM leasing_flows ORDER BY id DESC LIMIT 1";
    let mut flow_row: (String, Option<String>) = (String::new(), None);
    for _ in 0..200 {
        flow_row = sqlx::query_as(last_flow).fetch_one(&pool).await.unwrap();
        if metric(&svc, gone).await >= 1.0 && flow_row.0 == "abandoned" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(metric(&svc, gone).await, 1.0, "the wait ended as client_gone");
    let (status, financing_id) = flow_row;
    assert_eq!(status, "abandoned");
    assert!(financing_id.is_some(), "the financing request it created is named");
    let stopped_at = metric(&svc, calls).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(metric(&svc, calls).await, stopped_at, "no provider call after the clients left");
    svc.stop().await;
}

/// At most `MAX_HELD_CALLS_PER_USER` waits and flows per user, whatever tokens they hold (a
/// new login's token gets no new allowance); more are 429 with `Retry-After`. On shutdown,
/// held waits answer 503 `shutting_down` and flows are recorded as interrupted, so that the
/// stop does not wait for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_calls_are_capped_per_user_and_end_on_shutdown() {
    let svc = TestService::start(Db::Sqlite, &[("MAX_HELD_CALLS_PER_USER", "2")]).await;
    let token = svc.user_token().await;
    let second_login = svc.token(crate::common::EMAIL, PASSWORD).await;
    let id = financing_request(&svc, &token, "Patient GmbH [never-ready]").await;
    let path = format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=100&sleep_milliseconds=200");
    let waits: Vec<_> =
        (0..2).map(|_| tokio::spawn(svc.client.get(svc.url(&path)).bearer_auth(&token).checked())).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let third = svc.get(&second_login, &path).await;
    assert_eq!(third.status(), 429, "{:?}", third.text().await);
    assert!(third.headers().contains_key("retry-after"));
    let body = error_body(third, 429).await;
    assert_eq!((body["error_code"].as_str(), body["success"].as_bool()), (Some("too_many_held_calls"), Some(false)));
    let pool = database(&svc).await;
    svc.stop().await;
    for wait in waits {
        let answer = wait.await.unwrap().unwrap();
        let body = error_body(answer, 503).await;
        assert_eq!(body["error_code"], "shutting_down", "{body}");
    }
    drop(pool);
}
