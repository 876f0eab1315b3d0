//! Sending a delivery again on request is limited per user.

use super::receivers::{ON_ASK, change};
use super::*;

/// A user may ask for `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` deliveries to be sent
/// again a minute: each queues one at once, and a loop of them (it was unlimited) kept the
/// deliverer sending to one user's receivers. Beyond it a retry is answered 429
/// `too_many_delivery_retries` with `Retry-After`; another user may still ask.
async fn sending_deliveries_again_is_limited_per_user(db: Db) {
    let settings = [ON_ASK, &[("LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER", "2")]].concat();
    let (svc, alice) = TestService::with_user(db, &settings).await;
    let (bob, _) = svc.bob_and_root().await;
    let receiver = Receiver::start(204).await;
    let mut deliveries = Vec::new();
    for (token, company) in [(&alice, "Alice GmbH"), (&bob, "Bob GmbH")] {
        let sub = subscribe(&svc, token, &receiver.url()).await["id"].as_str().unwrap().to_string();
        let id = create_request(&svc, token, company).await;
        change(&svc, token, &id, "ReadyToSign").await;
        let delivered = until("the change delivered", async || {
            let listed: Value = svc.get_json(token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
            listed["items"].as_array().unwrap().iter().find(|d| d["status"] == "delivered").cloned()
        })
        .await;
        deliveries.push(format!("/api/v1/leasing/subscriptions/{sub}/deliveries/{}/retry", delivered["id"]));
    }
    let (alices, bobs) = (&deliveries[0], &deliveries[1]);
    for _ in 0..2 {
        assert_eq!(svc.call(&alice, Method::POST, alices, None).await.status(), 202);
    }
    let refused = svc.call(&alice, Method::POST, alices, None).await;
    let wait = refused.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
    assert!(wait.is_some_and(|seconds| (1..=60).contains(&seconds)), "Retry-After: {wait:?}");
    let body = error_body(refused, 429).await;
    assert_eq!(body["error_code"], "too_many_delivery_retries", "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(svc.call(&bob, Method::POST, bobs, None).await.status(), 202, "another user is not held up");
    svc.stop().await;
}

on_both_databases!(sending_deliveries_again_is_limited_per_user);
