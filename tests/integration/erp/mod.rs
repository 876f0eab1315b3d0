//! The ERP area (`src/erp/`, `api/erp/`) against the ERP simulator: webhooks and their inbox,
//! the helper routes, and registering the webhooks from the command line. Both databases. The
//! fixtures the scenarios share are here.

mod answers;
mod attribute_races;
mod inbox;
mod pull_order;
mod pull_races;
mod routes;
mod webhook_registration;
mod webhooks;

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, add_fault, clear_faults, erp_pull_report};
use serde_json::Value;
use std::time::Duration;

const SECRET: &str = "hook-secret-123";
/// The sandbox ERP's seeded customers, contacts and articles.
const CUSTOMERS: [&str; 3] = ["5", "6", "7"];

async fn start(db: Db, extra: &[(&str, &str)]) -> (TestService, String) {
    let mut settings = guard_settings();
    settings.extend_from_slice(extra);
    let (svc, token) = TestService::with_user(db, &settings).await;
    (svc, token)
}

/// The webhook guard's settings: calls from loopback carrying [`SECRET`].
fn guard_settings() -> Vec<(&'static str, &'static str)> {
    vec![("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"), ("ERP_WEBHOOK_SECRET", SECRET)]
}

/// A call to the ERP simulator's API.
async fn erp(svc: &TestService, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let mut request = svc.erp_api(method, path);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.checked().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Changes a record at the ERP simulator (`PUT /{model}/id/{id}`, missing properties kept).
async fn erp_update(svc: &TestService, model: &str, id: &str, change: Value) -> Value {
    let path = format!("/{model}/id/{id}?ignoreMissingProperties=true");
    erp(svc, reqwest::Method::PUT, &path, Some(change)).await
}

/// The mirrored customers hold the emails given (id, email); `context` is shown on failure.
async fn assert_customer_emails(svc: &TestService, token: &str, expected: &[(&str, &str)], context: &Value) {
    for (id, email) in expected {
        let customer = svc.get_json(token, &format!("/api/v1/erp/show/customer/{id}")).await;
        assert_eq!(customer["email"], *email, "customer {id}: {context}");
    }
}

async fn erp_fault(svc: &TestService, rule: Value) {
    add_fault(&svc.client, svc.erp_host(), rule).await;
}

async fn erp_clear_faults(svc: &TestService) {
    clear_faults(&svc.client, svc.erp_host()).await;
}

/// The requests the ERP simulator has received.
async fn erp_calls(svc: &TestService) -> u64 {
    let root = svc.erp.trim_end_matches("/webapp/api/v1");
    let body: Value = svc.client.get(format!("{root}/__sandbox/calls")).json_value().await;
    body["calls"].as_u64().unwrap()
}

/// Waits until the ERP simulator has received more than `calls` requests (a call the service
/// is making, answered late, has reached it).
async fn erp_called_past(svc: &TestService, calls: u64) {
    for _ in 0..1000 {
        if erp_calls(svc).await > calls {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the ERP simulator received no more than {calls} calls");
}

fn webhook(svc: &TestService) -> reqwest::RequestBuilder {
    svc.client.post(svc.url("/api/v1/erp/webhooks")).header("X-Webhook-Secret", SECRET)
}

/// Polls the inbox until the call is in `state`; the whole overview when it is.
async fn inbox_call(svc: &TestService, token: &str, inbox_id: i64, state: &str) -> Value {
    for _ in 0..100 {
        let show = svc.get_json(token, "/api/v1/erp/show").await;
        let call = show["inbox"]["calls"].as_array().unwrap().iter().find(|c| c["id"] == inbox_id).cloned();
        if let Some(call) = call
            && call["state"] == state
        {
            return call;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("inbox call {inbox_id} never reached {state}: {}", svc.get_json(token, "/api/v1/erp/show").await["inbox"]);
}

/// Polls the inbox until the call was attempted once (or left `pending`): the call and the
/// inbox's overview as they were then.
async fn first_attempt(svc: &TestService, token: &str, inbox_id: i64) -> (Value, Value) {
    for _ in 0..100 {
        let show = svc.get_json(token, "/api/v1/erp/show").await;
        let call = show["inbox"]["calls"].as_array().unwrap().iter().find(|c| c["id"] == inbox_id).cloned().unwrap();
        if call["attempts"].as_i64() >= Some(1) || call["state"] != "pending" {
            return (call, show["inbox"].clone());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("inbox call {inbox_id} was never attempted");
}

/// [`start`], with the ERP's customer 5 brought by its update webhook (mapped to the company
/// `erp-customer-5`).
async fn start_with_customer_5(db: Db) -> (TestService, String) {
    let (svc, token) = start(db, &[]).await;
    processed(&svc, &token, &serde_json::json!({"entityName": "customer", "entityId": "5", "type": "updated"})).await;
    (svc, token)
}

/// Sends the ERP's webhook `call` and waits until the inbox has processed it: the call as the
/// inbox shows it.
async fn processed(svc: &TestService, token: &str, call: &Value) -> Value {
    let inbox_id = accepted(webhook(svc).json(call).checked().await.unwrap()).await;
    inbox_call(svc, token, inbox_id, "done").await
}

async fn accepted(response: reqwest::Response) -> i64 {
    let status = response.status();
    let body: Value = response.json_value().await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["accepted"], true);
    body["inbox_id"].as_i64().unwrap()
}
