use super::*;

/// Disables a subscription failing since before `failing_before`.
fn disable(failing_before: i64) -> Disable<'static> {
    Disable { failing_before, why: "disabled" }
}

fn event(id: &str) -> impl FnOnce(&WatchRow) -> NewEvent + '_ {
    move |previous| NewEvent {
        id: id.to_string(),
        event_type: "leasing.state_changed",
        payload: format!("{{\"previous\":\"{}\"}}", previous.state),
        created_at: now_ms(),
    }
}

fn observed(state: &str, at: i64) -> Observed<'_> {
    Observed { financing_id: "f-1", request_id: Some("180-1"), state, terminal: state == "Declined", at }
}

/// Stores the subscription `id` of `user_id` to the state events.
async fn subscribe(store: &Store, id: &str, user_id: i64) {
    let events = vec!["leasing.state_changed".to_string()];
    let new = NewSubscription {
        id,
        url: "https://example.com/hook",
        description: None,
        events: &events,
        secret: "whsec_x",
        created_at: now_ms(),
        user_id,
        all_requests: false,
    };
    store.subscription_insert(&new, 100).await.unwrap().expect("within the bound");
}

#[tokio::test]
async fn a_change_is_recorded_once_with_a_delivery_per_subscription_in_order_per_request() {
    crate::store::testing::on_both_databases(async |store| {
        subscribe(store, "sub_1", 1).await;
        // Another user's subscription gets none of user 1's events.
        subscribe(store, "sub_2", 2).await;
        let at = now_ms();
        assert_eq!(store.watch_record(&observed("ReadyToSign", at), event("e0")).await.unwrap(), Recorded::NotWatched);
        assert!(store.watch_start(&observed("RequestToGrenke", at), at - 1, 1).await.unwrap());
        assert!(!store.watch_start(&observed("RequestToGrenke", at), at - 1, 1).await.unwrap());
        assert_eq!(
            store.watch_record(&observed("RequestToGrenke", at + 1), event("e0")).await.unwrap(),
            Recorded::Unchanged
        );
        let first = store.watch_record(&observed("ReadyToSign", at + 2), event("e1")).await.unwrap();
        assert_eq!(first, Recorded::Changed { event_id: "e1".into(), deliveries: 1 });
        // The same state again, and an older read, announce nothing.
        assert_eq!(
            store.watch_record(&observed("ReadyToSign", at + 3), event("e2")).await.unwrap(),
            Recorded::Unchanged
        );
        assert_eq!(
            store.watch_record(&observed("RequestToGrenke", at + 1), event("e2")).await.unwrap(),
            Recorded::Stale
        );
        let second = store.watch_record(&observed("Declined", at + 4), event("e3")).await.unwrap();
        assert_eq!(second, Recorded::Changed { event_id: "e3".into(), deliveries: 1 });
        let watch = store.watch("f-1").await.unwrap().unwrap();
        assert!(watch.terminal && watch.next_poll_at.is_none(), "{watch:?}");
        assert_eq!(store.watch_counts().await.unwrap(), (0, 1));

        // Only the older delivery of the request is claimable until it ends.
        let claimed = store.delivery_claim_due("a", now_ms() + 60_000, 10).await.unwrap();
        assert_eq!(claimed.iter().map(|w| w.event_id.as_str()).collect::<Vec<_>>(), ["e1"]);
        assert!(claimed[0].payload.contains("RequestToGrenke"));
        assert!(store.delivery_claim_due("b", now_ms() + 60_000, 10).await.unwrap().is_empty());
        let retry_at = now_ms() - 1;
        let failed =
            AttemptOutcome::Failed { status_code: Some(500), error: "HTTP 500", next_attempt_at: Some(retry_at) };
        assert!(!store.delivery_record(&claimed[0], "a", &failed, &disable(0)).await.unwrap());
        let again = store.delivery_claim_due("a2", now_ms() + 60_000, 10).await.unwrap();
        assert_eq!((again[0].event_id.as_str(), again[0].attempts), ("e1", 1));
        store
            .delivery_record(&again[0], "a2", &AttemptOutcome::Delivered { status_code: 204 }, &disable(0))
            .await
            .unwrap();
        let next = store.delivery_claim_due("a3", now_ms() + 60_000, 10).await.unwrap();
        assert_eq!(next.iter().map(|w| w.event_id.as_str()).collect::<Vec<_>>(), ["e3"]);

        let listed = store.deliveries_of("sub_1", 10, 0).await.unwrap();
        assert_eq!(listed.iter().map(|d| d.status.as_str()).collect::<Vec<_>>(), ["pending", "delivered"]);
        assert_eq!(listed[1].attempts, 2);
        assert_eq!(store.delivery_depths().await.unwrap().0, vec![("delivered".into(), 1), ("pending".into(), 1)]);
        let owner = Viewer { user_id: 1, operator: false };
        let other = Viewer { user_id: 2, operator: false };
        assert!(!store.subscription_delete(other, "sub_1").await.unwrap(), "not another user's");
        assert!(store.subscription(other, "sub_1").await.unwrap().is_none());
        assert!(store.subscription_delete(owner, "sub_1").await.unwrap());
        assert!(store.deliveries_of("sub_1", 10, 0).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn due_watches_are_claimed_once_until_their_lease_runs_out() {
    crate::store::testing::on_both_databases(async |store| {
        let at = now_ms();
        store.watch_start(&observed("RequestToGrenke", at), at - 1, 1).await.unwrap();
        assert_eq!(store.watch_claim_due("a", now_ms() + 60_000, 10).await.unwrap().len(), 1);
        assert!(store.watch_claim_due("b", now_ms() + 60_000, 10).await.unwrap().is_empty());
        store.watch_reschedule("f-1", "a", Some(now_ms() - 1), 0, None).await.unwrap();
        let claimed = store.watch_claim_due("b", now_ms() - 1, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        // b's lease ran out at once: c takes it over, and b can no longer reschedule it.
        assert_eq!(store.watch_claim_due("c", now_ms() + 60_000, 10).await.unwrap().len(), 1);
        store.watch_reschedule("f-1", "b", Some(now_ms() + 1_000_000), 3, None).await.unwrap();
        assert_eq!(store.watch("f-1").await.unwrap().unwrap().failures, 0);
    })
    .await;
}

/// Migration 0037 keeps one watch per request: of the spellings of one id watched before (in
/// another case; a UUID without its hyphens), the first watch stays (its owner with it) and
/// later ones go; a UUID kept without hyphens gets them, in the case it had. A watch is then found and started in
/// any case as that one.
#[tokio::test]
async fn a_request_has_one_watch_in_any_spelling() {
    crate::store::testing::on_both_databases(async |store| {
        // The table as 0036 left it, with three spellings of one id watched.
        for statement in [
            "DROP INDEX leasing_watches_one_per_request",
            "CREATE INDEX leasing_watches_financing_id_any_case ON leasing_watches (lower(financing_id))",
        ] {
            sqlx::query(statement).execute(store.pool()).await.unwrap();
        }
        let uuid = "6f1c0000-0000-4000-8000-000000000001";
        for (id, created_at, user_id) in [
            ("ABC-1", 20, 2),
            ("abc-1", 10, 1),
            ("aBc-1", 30, 3),
            ("f-2", 40, 2),
            (uuid, 10, 1),
            ("6F1C0000000040008000000000000001", 20, 2),
            ("0000000000004000800000000000000A", 50, 2),
        ] {
            sqlx::query(
                "INSERT INTO leasing_watches (financing_id, state, observed_at, created_at, user_id) \
                 VALUES ($1, 'RequestToGrenke', 1, $2, $3)",
            )
            .bind(id)
            .bind(created_at)
            .bind(user_id)
            .execute(store.pool())
            .await
            .unwrap();
        }
        let migration = match store.dialect() {
            Dialect::Sqlite => include_str!("../../../../migrations/sqlite/0037_watch_once_per_request.sql"),
            Dialect::Postgres => include_str!("../../../../migrations/postgres/0037_watch_once_per_request.sql"),
        };
        sqlx::raw_sql(migration).execute(store.pool()).await.unwrap();
        let kept: Vec<(String, i64)> =
            sqlx::query_as("SELECT financing_id, user_id FROM leasing_watches ORDER BY financing_id")
                .fetch_all(store.pool())
                .await
                .unwrap();
        let kept_ids: Vec<(&str, i64)> = kept.iter().map(|(id, user)| (id.as_str(), *user)).collect();
        assert_eq!(kept_ids, [("00000000-0000-4000-8000-00000000000A", 2), (uuid, 1), ("abc-1", 1), ("f-2", 2)]);

        let at = now_ms();
        let upper = Observed { financing_id: "ABC-1", ..observed("RequestToGrenke", at) };
        assert!(!store.watch_start(&upper, at, 3).await.unwrap(), "watched already");
        assert_eq!(store.watch("ABC-1").await.unwrap().unwrap().financing_id, "abc-1");
        assert_eq!(store.financing_request_watch("ABC-1").await.unwrap(), Some(("abc-1".to_string(), Some(1))));
        let changed = Observed { financing_id: "Abc-1", ..observed("Declined", at + 1) };
        assert!(matches!(store.watch_record(&changed, event("e1")).await.unwrap(), Recorded::Changed { .. }));
        let event_of: String = sqlx::query_scalar("SELECT financing_id FROM leasing_events WHERE id = 'e1'")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(event_of, "abc-1", "the change is the watch's");
    })
    .await;
}

/// Subscribes `sub_1` of user 1 and records a change of each of two requests; their two
/// deliveries, claimed together by `a`, and when the changes were recorded.
async fn two_claimed_together(store: &Store) -> (Vec<DeliveryWork>, i64) {
    subscribe(store, "sub_1", 1).await;
    let at = now_ms();
    for (id, event_id) in [("f-1", "e1"), ("f-2", "e2")] {
        let start = Observed { financing_id: id, ..observed("RequestToGrenke", at) };
        store.watch_start(&start, at, 1).await.unwrap();
        let change = Observed { financing_id: id, ..observed("ReadyToSign", at + 1) };
        store.watch_record(&change, event(event_id)).await.unwrap();
    }
    let claimed = store.delivery_claim_due("a", now_ms() + 60_000, 10).await.unwrap();
    assert_eq!(claimed.len(), 2, "one delivery of each request, sent together");
    (claimed, at)
}

/// A subscription disabled while several of its deliveries are in flight stays without
/// pending deliveries: the attempts that end after the disabling leave their deliveries
/// failed (they were put back to pending and retried for a day to a disabled subscription).
#[tokio::test]
async fn the_deliveries_of_a_disabled_subscription_stay_failed() {
    crate::store::testing::on_both_databases(async |store| {
        let (claimed, at) = two_claimed_together(store).await;
        let failed = AttemptOutcome::Failed { status_code: Some(503), error: "HTTP 503", next_attempt_at: Some(at) };
        // The first attempt to end disables the subscription (it has been failing long enough).
        assert!(store.delivery_record(&claimed[0], "a", &failed, &disable(now_ms() + 1)).await.unwrap());
        assert!(!store.delivery_record(&claimed[1], "a", &failed, &disable(now_ms() + 1)).await.unwrap());
        let listed = store.deliveries_of("sub_1", 10, 0).await.unwrap();
        assert_eq!(listed.iter().map(|d| d.status.as_str()).collect::<Vec<_>>(), ["failed", "failed"], "{listed:?}");
        assert!(store.delivery_claim_due("b", now_ms() + 60_000, 10).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_success_ends_a_failing_that_began_after_its_claim() {
    crate::store::testing::on_both_databases(async |store| {
        // Claimed together while the subscription was not failing; one fails, then the other
        // is delivered: the receiver answers again, so the subscription is not failing.
        let (claimed, at) = two_claimed_together(store).await;
        let failed = AttemptOutcome::Failed { status_code: Some(503), error: "HTTP 503", next_attempt_at: Some(at) };
        assert!(!store.delivery_record(&claimed[1], "a", &failed, &disable(0)).await.unwrap());
        let delivered = AttemptOutcome::Delivered { status_code: 204 };
        assert!(!store.delivery_record(&claimed[0], "a", &delivered, &disable(0)).await.unwrap());
        let owner = Viewer { user_id: 1, operator: false };
        let subscription = store.subscription(owner, "sub_1").await.unwrap().expect("subscribed");
        assert_eq!(subscription.failing_since, None, "a stale start of failing would disable it at the next failure");
    })
    .await;
}

/// Due deliveries are claimed by turns of their subscriptions' owners, and read back in those
/// turns: a claim of three while user 1 has three due (older) and user 2 one takes two of user
/// 1's and user 2's, sent second; taken by age alone, it took user 1's three, and user 2's
/// waited behind all of them.
#[tokio::test]
async fn due_deliveries_are_claimed_by_turns_of_their_owners() {
    crate::store::testing::on_both_databases(async |store| {
        for (sub, user) in [("sub_1", 1), ("sub_2", 1), ("sub_3", 1), ("sub_4", 2)] {
            subscribe(store, sub, user).await;
        }
        let at = now_ms();
        for (id, user, event_id) in [("f-1", 1, "e1"), ("f-2", 2, "e2")] {
            let start = Observed { financing_id: id, ..observed("RequestToGrenke", at) };
            store.watch_start(&start, at, user).await.unwrap();
            let change = Observed { financing_id: id, ..observed("ReadyToSign", at + 1) };
            store.watch_record(&change, event(event_id)).await.unwrap();
        }
        let first = store.delivery_claim_due("a", now_ms() + 60_000, 3).await.unwrap();
        let subscriptions: Vec<&str> = first.iter().map(|w| w.subscription_id.as_str()).collect();
        assert_eq!(subscriptions.len(), 3);
        assert_eq!(subscriptions[1], "sub_4", "user 2's in the claim, after user 1's oldest: {subscriptions:?}");
        assert_eq!(store.delivery_claim_due("b", now_ms() + 60_000, 10).await.unwrap().len(), 1);
    })
    .await;
}
