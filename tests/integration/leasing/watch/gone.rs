//! A watched request the provider no longer has (404 or 410 at every read): it is read at
//! doubling intervals for `LEASING_WATCH_GONE_SECONDS`, then no more.

use super::*;

/// The provider answers 404 for a watched request at every read: once it has said so for
/// `LEASING_WATCH_GONE_SECONDS`, the watch ends (no next read); it was read hourly for ever.
async fn a_request_the_provider_no_longer_has_stops_being_read(db: Db) {
    let settings = [FAST, &[("LEASING_WATCH_GONE_SECONDS", "1")]].concat();
    let (svc, token) = TestService::with_user(db, &settings).await;
    let id = create_request(&svc, &token, "ACME GmbH").await;
    let rule = json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 404, "times": 100_000});
    svc.leasing_fault(rule).await;
    let store = svc.store().clone();
    let watch = until("two failed reads", async || store.watch(&id).await.unwrap().filter(|w| w.failures >= 2)).await;
    assert_eq!(watch.next_poll_at, None, "gone for longer than LEASING_WATCH_GONE_SECONDS: read no more: {watch:?}");
    assert!(!watch.terminal, "its state is what was last read: {watch:?}");
    svc.stop().await;
}

on_both_databases!(a_request_the_provider_no_longer_has_stops_being_read);
