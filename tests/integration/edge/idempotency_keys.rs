//! No caller stores `Idempotency-Key`s faster than `IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER`:
//! beyond it a new key is 429 `too_many_idempotency_keys` with `Retry-After`, on every route
//! that takes one; a repeat of a stored key is answered as ever, a request without a key and
//! another user's keys are not held back.

use crate::common::{Api, JsonAnswer};
use serde_json::{Value, json};

use crate::common::{Db, TestService, error_body, leasing_request};

async fn create(svc: &TestService, token: &str, key: Option<&str>, company: &str) -> reqwest::Response {
    svc.post_keyed(token, "/api/v1/leasing", key, leasing_request(company)).await
}

async fn new_keys_are_rate_limited_per_user(db: Db) {
    let svc = TestService::start(db, &[("IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER", "3")]).await;
    let alice = svc.user_token().await;
    svc.create_user("bob@example.com", "bob-password-1").await;
    let bob = svc.token("bob@example.com", "bob-password-1").await;

    let mut first = None;
    for key in ["k1", "k2", "k3"] {
        let answer = create(&svc, &alice, Some(key), "Keyed GmbH").await;
        assert_eq!(answer.status(), 201, "{key}");
        let body: Value = answer.json_value().await;
        first.get_or_insert(body["data"]["FinancingId"].as_str().unwrap().to_string());
    }
    let refused = create(&svc, &alice, Some("k4"), "Keyed GmbH").await;
    let retry_after = refused.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let body = error_body(refused, 429).await;
    assert_eq!(
        (body["error_code"].as_str(), body["success"].as_bool()),
        (Some("too_many_idempotency_keys"), Some(false))
    );
    let retry_after: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=61).contains(&retry_after), "{retry_after}");

    let flow = json!({"request_payload": leasing_request("Flow GmbH"), "cancel_e_signature": true});
    let refused = svc.post_keyed(&alice, "/api/v1/leasing/leasing/request-flow", Some("flow-1"), flow).await;
    assert_eq!(error_body(refused, 429).await["error_code"], "too_many_idempotency_keys", "the flow's keys count too");

    let replay = create(&svc, &alice, Some("k1"), "Keyed GmbH").await;
    assert_eq!(replay.status(), 201, "a stored key is answered again, not counted");
    let replay: Value = replay.json_value().await;
    assert_eq!(replay["data"]["FinancingId"].as_str(), first.as_deref());
    let reused = create(&svc, &alice, Some("k2"), "Another GmbH").await;
    assert_eq!(error_body(reused, 422).await["error_code"], "idempotency_key_reused", "a stored key keeps its rules");
    assert_eq!(create(&svc, &alice, None, "Unkeyed GmbH").await.status(), 201, "no key, no rate");
    assert_eq!(create(&svc, &bob, Some("k4"), "Bob GmbH").await.status(), 201, "another user's allowance is theirs");
    svc.stop().await;
}

on_both_databases!(new_keys_are_rate_limited_per_user);
