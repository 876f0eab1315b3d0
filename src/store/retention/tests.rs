use super::*;

#[tokio::test]
async fn history_older_than_its_retention_goes_and_work_in_progress_stays() {
    crate::store::testing::on_both_databases(async |store| {
        let old = now_ms() - 40 * 24 * 3_600_000;
        let ended = store.job_enqueue("fieldreport.sync", "tags", false, Some(1)).await.unwrap().unwrap();
        store.job_cancel(ended.id).await.unwrap();
        let queued = store.job_enqueue("fieldreport.sync", "users", false, Some(1)).await.unwrap().unwrap();
        for statement in [
            "UPDATE jobs SET created_at = $1, finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE $1 END",
            "INSERT INTO idempotency_keys (user_id, route, idempotency_key, request_hash, created_at) \
             VALUES (1, 'leasing.create', 'old', 'h', $1)",
            "INSERT INTO login_failures (email, address, at) VALUES ('e', 'a', $1)",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(statement)).bind(old).execute(store.pool()).await.unwrap();
        }
        let fresh = "INSERT INTO idempotency_keys (user_id, route, idempotency_key, request_hash, created_at) \
                     VALUES (1, 'leasing.create', 'new', 'h', $1)";
        sqlx::query(fresh).bind(now_ms()).execute(store.pool()).await.unwrap();

        let pruned = store.prune(&Retention::default()).await.unwrap();
        let by_table: std::collections::BTreeMap<_, _> = PRUNED_TABLES.iter().zip(pruned).collect();
        assert_eq!(
            (by_table[&"jobs"], by_table[&"idempotency_keys"], by_table[&"login_failures"]),
            (1, 1, 1),
            "{by_table:?}"
        );
        assert!(store.job(ended.id).await.unwrap().is_none());
        assert!(store.job(queued.id).await.unwrap().is_some(), "a queued job stays whatever its age");
        assert_eq!(store.prune(&Retention::default()).await.unwrap(), [0; PRUNED_TABLES.len()]);
    })
    .await;
}
