//! Financing requests a caller makes the service create: each is a request at the provider,
//! a watch here with its events, and for a one-shot flow its record and steps. Unlimited, one
//! token created 400 flows in 26 s (a row each in four tables, and 400 requests at the
//! provider). A user now creates at most `LEASING_CREATES_PER_MINUTE_PER_USER` a minute, by
//! the create route and flows together; beyond it both answer 429
//! `too_many_financing_requests` with `Retry-After`, before the provider is asked and before
//! a flow is recorded. Another user's allowance is theirs. A turn the database cannot count
//! is no turn: both answer 503 and nothing reaches the provider (the rate once failed open,
//! so that a caller created without bound while the database refused the count).

use serde_json::json;

use super::database;
use crate::common::{Api, Db, TestService, error_body, execute, leasing_request};

const FLOW: &str = "/api/v1/leasing/leasing/request-flow";

async fn refused_with_its_wait(answer: reqwest::Response) -> serde_json::Value {
    let retry_after = answer.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let body = error_body(answer, 429).await;
    assert_eq!(
        (body["error_code"].as_str(), body["success"].as_bool()),
        (Some("too_many_financing_requests"), Some(false)),
        "{body}"
    );
    let retry_after: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=61).contains(&retry_after), "{retry_after}");
    body
}

async fn financing_requests_are_created_at_a_rate_per_user(db: Db) {
    let svc = TestService::start(db, &[("LEASING_CREATES_PER_MINUTE_PER_USER", "2")]).await;
    let alice = svc.user_token().await;
    svc.create_user("bob@example.com", "bob-password-1").await;
    let bob = svc.token("bob@example.com", "bob-password-1").await;

    assert_eq!(svc.post(&alice, "/api/v1/leasing", leasing_request("One GmbH")).await.status(), 201);
    let flow = json!({"request_payload": leasing_request("Two GmbH"), "cancel_e_signature": true});
    assert_eq!(svc.post(&alice, FLOW, flow.clone()).await.status(), 200, "a flow's create takes a turn too");

    let asked = svc.provider_request_count().await;
    refused_with_its_wait(svc.post(&alice, "/api/v1/leasing", leasing_request("Three GmbH")).await).await;
    let flow_refused = refused_with_its_wait(svc.post(&alice, FLOW, flow.clone()).await).await;
    assert!(flow_refused.get("flowId").is_none(), "a refused flow is not recorded: {flow_refused}");
    assert_eq!(svc.provider_request_count().await, asked, "nothing reached the provider");

    // Invalid input is told as such, whatever the rate.
    let invalid = svc.post(&alice, "/api/v1/leasing", json!({})).await;
    assert_eq!(error_body(invalid, 422).await["error_code"], "validation_failed");
    assert_eq!(svc.post(&bob, "/api/v1/leasing", leasing_request("Bob GmbH")).await.status(), 201, "bob's own turns");
    svc.stop().await;
}

async fn unavailable(answer: reqwest::Response) -> serde_json::Value {
    let retry_after = answer.headers().contains_key("retry-after");
    let body = error_body(answer, 503).await;
    assert_eq!(body["error_code"], "service_unavailable", "{body}");
    assert!(retry_after, "Retry-After: {body}");
    body
}

async fn a_create_whose_turn_cannot_be_counted_is_refused(db: Db) {
    let svc = TestService::start(db, &[("LEASING_CREATES_PER_MINUTE_PER_USER", "1")]).await;
    let alice = svc.user_token().await;
    let pool = database(&svc).await;
    // The count fails as it would on any database error: its rows are out of reach.
    execute(&pool, "ALTER TABLE leasing_creates RENAME TO leasing_creates_away").await;

    let asked = svc.provider_request_count().await;
    for name in ["One GmbH", "Two GmbH", "Three GmbH"] {
        unavailable(svc.post(&alice, "/api/v1/leasing", leasing_request(name)).await).await;
    }
    let flow = json!({"request_payload": leasing_request("Four GmbH"), "cancel_e_signature": true});
    let refused = unavailable(svc.post(&alice, FLOW, flow).await).await;
    assert!(refused.get("flowId").is_none(), "a refused flow is not recorded: {refused}");
    assert_eq!(svc.provider_request_count().await, asked, "nothing reached the provider");

    execute(&pool, "ALTER TABLE leasing_creates_away RENAME TO leasing_creates").await;
    assert_eq!(svc.post(&alice, "/api/v1/leasing", leasing_request("Five GmbH")).await.status(), 201);
    refused_with_its_wait(svc.post(&alice, "/api/v1/leasing", leasing_request("Six GmbH")).await).await;
    svc.stop().await;
}

on_both_databases!(financing_requests_are_created_at_a_rate_per_user, a_create_whose_turn_cannot_be_counted_is_refused);
