//! Removals of many records in one transaction (a sync's purge of the records that have a
//! tombstone, a reconcile's removal of those the upstream no longer has) while a client writes
//! one of them: both succeed. Every write of a record locks the record, then its set's feed
//! row (`mirror_feed`, numbering the change) and count; a removal that held the set's rows
//! from one statement while it waited for a record of the next one waited for a write that
//! waited for it, and Postgres failed one of the two. Both databases (SQLite lets one writer
//! in at a time, so there the writes simply follow each other).

use integration_service::store::fieldreport::records::MirrorRecord;
use serde_json::json;

use crate::common::{Db, TestService};

async fn tag(svc: &TestService, id: &str) {
    let record = MirrorRecord { id: id.into(), version: 1, document: json!({"Id": id, "Version": 1}) };
    svc.store().mirror_insert("tags", &record, None).await.unwrap();
}

/// Waits (bounded) until a statement waits for a lock that the session `holder` holds.
async fn until_blocked_by(svc: &TestService, holder: i32) {
    let waiting = "SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))";
    for _ in 0..200 {
        let n: i64 = sqlx::query_scalar(waiting).bind(holder).fetch_one(svc.store().pool()).await.unwrap();
        if n > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the removal never waited for the record");
}

/// Runs `removal` while a client's write of record `id` (`write`, one statement after the
/// record was locked, as a local delete or an update locks it) is under way: the removal
/// starts once the record is locked, and the write goes on once the removal waits for it.
async fn removal_beside_a_write<T>(
    svc: &TestService,
    db: Db,
    id: &str,
    write: &'static str,
    removal: impl std::future::Future<Output = T> + Send + 'static,
) -> T
where
    T: Send + 'static,
{
    if db == Db::Sqlite {
        let removed = removal.await;
        sqlx::query(write).bind(id).execute(svc.store().pool()).await.unwrap();
        return removed;
    }
    let mut client = svc.store().pool().begin().await.unwrap();
    let holder: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&mut *client).await.unwrap();
    sqlx::query("SELECT 1 FROM fieldreport_records WHERE entity = 'tags' AND record_id = $1 FOR UPDATE")
        .bind(id)
        .execute(&mut *client)
        .await
        .unwrap();
    let removing = tokio::spawn(removal);
    until_blocked_by(svc, holder).await;
    let written = sqlx::query(write).bind(id).execute(&mut *client).await;
    let committed = match written {
        Ok(_) => client.commit().await.map(|_| ()),
        Err(error) => Err(error),
    };
    let removed = removing.await.unwrap();
    committed.expect("the client's write");
    removed
}

/// A sync purges the records that have a tombstone (stored again while deleted) while a client
/// deletes one of them.
async fn a_purge_beside_a_local_delete_both_succeed(db: Db) {
    let (svc, _token) = TestService::with_user(db, &[]).await;
    for id in ["1", "2"] {
        tag(&svc, id).await;
        svc.store().mirror_delete_tombstoned("tags", id).await.unwrap();
        tag(&svc, id).await;
    }
    let store = svc.store().clone();
    let purge = async move { store.mirror_purge_tombstoned("tags").await };
    let delete = "DELETE FROM fieldreport_records WHERE entity = 'tags' AND record_id = $1";
    let purged = removal_beside_a_write(&svc, db, "2", delete, purge).await.expect("the purge");
    assert!(purged.contains(&"1".to_string()), "{purged:?}");
    for id in ["1", "2"] {
        assert_eq!(svc.store().mirror_get("tags", id).await.unwrap(), None, "{id}");
    }
    svc.stop().await;
}

/// A reconcile removes more records than one statement names while a client updates the last.
async fn a_reconcile_beside_an_update_both_succeed(db: Db) {
    let (svc, _token) = TestService::with_user(db, &[]).await;
    let ids: Vec<String> = (1..=1_001).map(|n| n.to_string()).collect();
    for id in &ids {
        tag(&svc, id).await;
    }
    // The upstream's ids read after every record was written.
    let read_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 + 1;
    let store = svc.store().clone();
    let remove = async move { store.mirror_remove_gone("tags", &ids, read_at).await };
    let update = "UPDATE fieldreport_records SET document = '{\"Id\": \"1001\", \"Version\": 1, \"Name\": \"b\"}', \
         updated_at = updated_at + 100000 WHERE entity = 'tags' AND record_id = $1";
    let removed = removal_beside_a_write(&svc, db, "1001", update, remove).await.expect("the reconcile");
    assert!(removed.len() >= 1_000, "{}", removed.len());
    svc.stop().await;
}

crate::on_both_databases!(a_purge_beside_a_local_delete_both_succeed, a_reconcile_beside_an_update_both_succeed);
