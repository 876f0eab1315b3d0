//! Receivers that answer something other than a plain 2xx or failure: 410 Gone, a
//! `Retry-After`, a failing delivery that holds the next ones of its request, and one user's
//! receivers that hold every call while another user's events are due.

use integration_service::leasing::watch::delivery::CONCURRENCY;

use crate::common::add_fault;

use super::states::answering_as;
use super::*;

/// A service whose watcher reads only when asked (a route's read), retrying soon.
pub(super) const ON_ASK: &[(&str, &str)] =
    &[("CALLBACK_ALLOW_PRIVATE", "true"), ("LEASING_DELIVERY_BACKOFF_MILLISECONDS", "100")];

/// Makes the provider answer `state` for `id` and reads it through a route: one change.
pub(super) async fn change(svc: &TestService, token: &str, id: &str, state: &str) {
    svc.leasing_fault(answering_as(id, id, state, 1000)).await;
    let shown: Value = svc.get_json(token, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(shown["meta"]["state"], state, "{shown}");
    crate::common::clear_faults(&svc.client, &svc.leasing).await;
}

/// A subscription's deliveries once `done` holds for them.
async fn deliveries_when(svc: &TestService, token: &str, sub: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    until("the deliveries as expected", async || {
        let listed: Value = svc.get_json(token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
        let items = listed["items"].as_array().unwrap().clone();
        done(&items).then_some(items)
    })
    .await
}

/// A receiver answering 410 Gone says its endpoint is gone (Standard Webhooks): the
/// subscription is disabled at once and its delivery failed, not retried for a day; another
/// subscription gets the change all the same.
async fn a_receiver_answering_410_is_disabled(db: Db) {
    let (svc, token) = TestService::with_user(db, ON_ASK).await;
    let (gone, other) = (Receiver::start(410).await, Receiver::start(204).await);
    let sub = subscribe(&svc, &token, &gone.url()).await["id"].as_str().unwrap().to_string();
    subscribe(&svc, &token, &other.url()).await;
    let id = create_request(&svc, &token, "ACME GmbH").await;
    change(&svc, &token, &id, "ReadyToSign").await;
    let tried =
        deliveries_when(&svc, &token, &sub, |items| items.iter().any(|d| d["attempts"].as_i64() >= Some(1))).await;
    let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}")).await;
    assert_eq!(shown["status"], "disabled", "a 410 disables the subscription: {shown} {tried:?}");
    assert_eq!(tried[0]["status"], "failed", "{tried:?}");
    assert_eq!(tried[0]["last_status_code"], 410, "{tried:?}");
    until("the other subscription's delivery", async || (!other.delivered().is_empty()).then_some(())).await;
    assert_eq!(gone.calls().len(), 1, "nothing more is sent to a gone endpoint");
    svc.stop().await;
}

/// The wait until a delivery's next attempt, in seconds.
fn wait_seconds(delivery: &Value) -> i64 {
    let next = delivery["next_attempt_at"].as_str().unwrap_or_else(|| panic!("a retry is due: {delivery}"));
    let next = chrono::DateTime::parse_from_rfc3339(next).unwrap();
    next.timestamp() - chrono::Utc::now().timestamp()
}

/// A receiver's `Retry-After` on a 429 or 503 sets the next attempt of that delivery (the
/// back-off here is 100 ms), up to an hour however long it asks for.
async fn a_receivers_retry_after_is_honoured_up_to_an_hour(db: Db) {
    let (svc, token) = TestService::with_user(db, ON_ASK).await;
    let (busy, down) = (Receiver::start(204).await, Receiver::start(204).await);
    for (receiver, status, seconds) in [(&busy, 429, 120), (&down, 503, 86_400)] {
        let rule = json!({"path_prefix": "/hooks", "status": status, "retry_after_seconds": seconds, "times": 1000});
        add_fault(&svc.client, &format!("http://{}", receiver.address), rule).await;
    }
    let busy_sub = subscribe(&svc, &token, &busy.url()).await["id"].as_str().unwrap().to_string();
    let down_sub = subscribe(&svc, &token, &down.url()).await["id"].as_str().unwrap().to_string();
    let id = create_request(&svc, &token, "ACME GmbH").await;
    change(&svc, &token, &id, "ReadyToSign").await;
    let tried = |items: &[Value]| items.iter().any(|d| d["attempts"].as_i64() >= Some(1));
    let busy_tried = deliveries_when(&svc, &token, &busy_sub, tried).await;
    let down_tried = deliveries_when(&svc, &token, &down_sub, tried).await;
    let (busy_wait, down_wait) = (wait_seconds(&busy_tried[0]), wait_seconds(&down_tried[0]));
    assert!((60..=180).contains(&busy_wait), "429 Retry-After: 120 honoured: next attempt in {busy_wait} s");
    assert!((1800..=3700).contains(&down_wait), "503 Retry-After: 86400 bounded to an hour: in {down_wait} s");
    svc.stop().await;
}

/// A delivery held behind an older failing one of the same request gets its own retry
/// window from when it is next in line: it was timed from its event, so once the older one
/// had failed for the whole window, the held one was failed after a single attempt.
async fn a_held_delivery_gets_its_own_window(db: Db) {
    let settings = [ON_ASK, &[("LEASING_DELIVERY_RETRY_SECONDS", "3")]].concat();
    let (svc, token) = TestService::with_user(db, &settings).await;
    let receiver = Receiver::start(204).await;
    // Slow failures: the held delivery is reached well after its own event's window began.
    let rule = json!({"path_prefix": "/hooks", "status": 503, "delay_ms": 1000, "times": 100_000});
    add_fault(&svc.client, &format!("http://{}", receiver.address), rule).await;
    let sub = subscribe(&svc, &token, &receiver.url()).await["id"].as_str().unwrap().to_string();
    let id = create_request(&svc, &token, "ACME GmbH").await;
    change(&svc, &token, &id, "ReadyToSign").await;
    change(&svc, &token, &id, "Declined").await;
    let ended =
        deliveries_when(&svc, &token, &sub, |items| items.len() == 2 && items.iter().all(|d| d["status"] == "failed"))
            .await;
    for delivery in &ended {
        let attempts = delivery["attempts"].as_i64().unwrap();
        assert!(attempts >= 2, "each delivery is retried within its own window: {ended:?}");
    }
    svc.stop().await;
}

/// One user's backlog does not hold back another user's deliveries: the deliverer takes due
/// deliveries by turns of their subscriptions' owners, so that while a user's receivers hold
/// every call (until the time-out), another user's event still goes out. Taken by age alone,
/// a backlog of one user filled every batch and every sending slot, and other users' events
/// waited behind all of it. A third user's held call keeps the deliverer busy while both
/// users' changes are recorded, so that one claim finds them all due.
async fn one_users_backlog_does_not_hold_back_anothers_deliveries(db: Db) {
    let (svc, noisy) = TestService::with_user(db, ON_ASK).await;
    let (quiet, blocker) = svc.bob_and_root().await;
    let (backlog, other, held) = (Receiver::start(0).await, Receiver::start(204).await, Receiver::start(0).await);
    let subscriptions = CONCURRENCY + 4;
    for _ in 0..subscriptions {
        subscribe(&svc, &noisy, &backlog.url()).await;
    }
    subscribe(&svc, &quiet, &other.url()).await;
    subscribe(&svc, &blocker, &held.url()).await;
    let busy = create_request(&svc, &blocker, "Busy GmbH").await;
    change(&svc, &blocker, &busy, "ReadyToSign").await;
    until("the deliverer busy with a held call", async || (!held.calls().is_empty()).then_some(())).await;
    // Recorded while the deliverer waits: the noisy user's changes first, then the other's.
    let noisy_request = create_request(&svc, &noisy, "Noisy GmbH").await;
    change(&svc, &noisy, &noisy_request, "ReadyToSign").await;
    let quiet_request = create_request(&svc, &quiet, "Quiet GmbH").await;
    change(&svc, &quiet, &quiet_request, "ReadyToSign").await;
    held.answer(204);
    until("the noisy user's receivers hold as many calls as are sent at a time", async || {
        (backlog.calls().len() >= CONCURRENCY).then_some(())
    })
    .await;
    let (holding, delivered) = (backlog.calls().len(), other.delivered());
    assert!(
        delivered.iter().any(|call| call.event()["data"]["financingId"] == quiet_request.as_str()),
        "another user's event waited behind one user's backlog: the noisy user's receivers hold {holding} calls \
         ({subscriptions} due), the other user's receiver got {} calls",
        delivered.len()
    );
    assert_eq!(holding, CONCURRENCY, "the backlog is still being sent: {CONCURRENCY} at a time");
    backlog.answer(204);
    svc.stop().await;
}

on_both_databases!(
    a_receiver_answering_410_is_disabled,
    a_receivers_retry_after_is_honoured_up_to_an_hour,
    a_held_delivery_gets_its_own_window,
    one_users_backlog_does_not_hold_back_anothers_deliveries,
);
