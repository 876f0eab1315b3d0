//! A subscription changed while its deliveries are claimed but not yet sent: the deliverer
//! claims a batch and sends [`CONCURRENCY`] at a time, so a delivery of the batch may leave
//! after its subscription's secret was rotated, or after it was deleted.

use integration_service::leasing::watch::delivery::CONCURRENCY;

use super::states::answering_as;
use super::*;

/// Subscriptions claimed in one batch: one more than are sent at a time.
const SUBSCRIPTIONS: usize = CONCURRENCY + 1;

/// A service whose deliverer holds one batch of a change's deliveries, `CONCURRENCY` of them
/// held by the receiver and one claimed behind them: the service, its user's token, the
/// receiver, and the subscriptions (id, secret).
async fn a_batch_held(db: Db) -> (TestService, String, Receiver, Vec<(String, String)>) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let receiver = Receiver::start(0).await;
    let mut subscriptions = Vec::new();
    for _ in 0..SUBSCRIPTIONS {
        let created = subscribe(&svc, &token, &receiver.url()).await;
        subscriptions.push((created["id"].as_str().unwrap().to_string(), created["secret"].as_str().unwrap().into()));
    }
    let id = create_request(&svc, &token, "ACME GmbH").await;
    svc.leasing_fault(answering_as(&id, &id, "ReadyToSign", 1000)).await;
    let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(shown["meta"]["state"], "ReadyToSign", "{shown}");
    // One change, a delivery per subscription, all claimed at once: as many as are sent at a
    // time reach the receiver, which holds them; the last waits for one of them.
    until("the receiver holds as many calls as are sent at a time", async || {
        (receiver.calls().len() >= CONCURRENCY).then_some(())
    })
    .await;
    assert_eq!(receiver.calls().len(), CONCURRENCY, "the batch is sent {CONCURRENCY} at a time");
    (svc, token, receiver, subscriptions)
}

/// A delivery sent after a rotation is signed with the new secret (and the old one beside
/// it): it was signed with the secrets read when it was claimed, before the rotation, so a
/// receiver that had taken the new secret refused it.
async fn a_delivery_sent_after_a_rotation_is_signed_with_the_new_secret(db: Db) {
    let (svc, token, receiver, subscriptions) = a_batch_held(db).await;
    let mut new_secrets = Vec::new();
    for (sub, _) in &subscriptions {
        let path = format!("/api/v1/leasing/subscriptions/{sub}/rotate-secret");
        let rotated: Value = svc.call(&token, Method::POST, &path, None).await.json_value().await;
        let secret = rotated["secret"].as_str().unwrap().to_string();
        svc.remember_secret(&secret);
        new_secrets.push(secret);
    }
    let before = receiver.calls().len();
    receiver.answer(204);
    let after = until("the delivery claimed behind the held ones sent", async || {
        let calls = receiver.calls();
        (calls.len() > before).then(|| calls[before..].to_vec())
    })
    .await;
    for call in &after {
        assert!(
            new_secrets.iter().any(|secret| verified(secret, call)),
            "sent after the rotation, signed without the new secret: {}",
            call.signature
        );
        assert!(subscriptions.iter().any(|(_, old)| verified(old, call)), "the old secret signs beside it");
    }
    svc.stop().await;
}

/// A delivery whose subscription was deleted before it was sent is not sent ("its pending
/// deliveries are not sent"): it was, to the URL of a subscription that no longer exists.
async fn a_delivery_of_a_deleted_subscription_is_not_sent(db: Db) {
    let (svc, token, receiver, subscriptions) = a_batch_held(db).await;
    for (sub, _) in &subscriptions {
        let deleted = svc.delete(&token, &format!("/api/v1/leasing/subscriptions/{sub}")).await;
        assert_eq!(deleted.status(), 204);
    }
    receiver.answer(204);
    // The deliverer works one batch at a time: once a later change reached another receiver,
    // the held batch is done.
    let later = Receiver::start(204).await;
    subscribe(&svc, &token, &later.url()).await;
    let id = create_request(&svc, &token, "Beta GmbH").await;
    svc.leasing_fault(answering_as(&id, &id, "Declined", 1000)).await;
    svc.get(&token, &format!("/api/v1/leasing/{id}")).await;
    until("a later change delivered", async || (!later.delivered().is_empty()).then_some(())).await;
    assert_eq!(receiver.calls().len(), CONCURRENCY, "only the calls sent before the deletion reached the receiver");
    svc.stop().await;
}

on_both_databases!(
    a_delivery_sent_after_a_rotation_is_signed_with_the_new_secret,
    a_delivery_of_a_deleted_subscription_is_not_sent,
);
