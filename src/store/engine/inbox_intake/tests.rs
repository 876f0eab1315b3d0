use sqlx::Row;

/// Calls stored at once share batches; each caller gets the id of its own call, with every
/// field as sent (text that needs escaping included).
#[tokio::test]
async fn concurrent_calls_each_get_the_id_of_their_own_row() {
    crate::store::testing::on_both_databases(async |store| {
        let stored = futures::future::join_all((0..300).map(|n| async move {
            let entity_name = format!("entity{n}");
            let entity_id = format!("{n}-\"quoted\" \\ ü");
            let event = ["created", "updated", "deleted"][n % 3];
            let payload = serde_json::json!({"n": n, "text": "line\nbreak"});
            let before = crate::store::now_ms();
            let id = store.inbox_store(&entity_name, &entity_id, event, &payload).await.unwrap();
            (id, before, (entity_name, entity_id, event.to_string(), payload.to_string()))
        }))
        .await;
        let ids: std::collections::HashSet<i64> = stored.iter().map(|(id, _, _)| *id).collect();
        assert_eq!(ids.len(), stored.len(), "an id per call on {:?}", store.dialect());
        for (id, before, sent) in &stored {
            let row = sqlx::query(
                "SELECT entity_name, entity_id, event, payload, state, attempts, received_at, next_attempt_at \
                 FROM erp_webhook_inbox WHERE id = $1",
            )
            .bind(id)
            .fetch_one(store.pool())
            .await
            .unwrap();
            let found: (String, String, String, String) =
                (row.get("entity_name"), row.get("entity_id"), row.get("event"), row.get("payload"));
            assert_eq!(&found, sent, "{:?}", store.dialect());
            let (state, attempts): (String, i64) = (row.get("state"), row.get("attempts"));
            assert_eq!((state.as_str(), attempts), ("pending", 0));
            let (received_at, next_attempt_at): (i64, i64) = (row.get("received_at"), row.get("next_attempt_at"));
            assert!(received_at >= *before && received_at <= crate::store::now_ms(), "{received_at}");
            assert_eq!(next_attempt_at, received_at, "due at once");
        }
    })
    .await;
}
