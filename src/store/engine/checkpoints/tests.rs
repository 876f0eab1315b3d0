use crate::store::DatabaseUrl;
use crate::store::Store;

/// A write of more than a thousand log pages (where a commit checkpoints by default) stays
/// in the log when it commits, and the store's thread copies it into the database file.
#[tokio::test]
// The guard is held across the commit on purpose; the thread that waits for it is not a
// task of this runtime.
#[allow(clippy::await_holding_lock)]
async fn the_log_is_checkpointed_by_the_thread_not_the_commit() {
    let dir = std::env::temp_dir().join(format!("checkpoints-{}", uuid::Uuid::new_v4()));
    let file = dir.join("db.sqlite");
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}", file.display()))).await.unwrap();
    let checkpoints = &store.engine.sqlite_file().expect("a file database is checkpointed by a thread").checkpoints;
    let autocheckpoint: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(store.pool()).await.unwrap();
    assert_eq!(autocheckpoint, i64::from(super::BACKSTOP_PAGES), "commits leave it to the thread");
    let size = || std::fs::metadata(&file).unwrap().len();
    let before = size();
    let held = checkpoints.hold();
    let mut tx = store.write_transaction().await.unwrap();
    sqlx::query("CREATE TABLE filler (n INTEGER, text TEXT)").execute(&mut *tx).await.unwrap();
    // About 6 MB: 1,500 pages of 4 KB.
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000) \
         INSERT INTO filler SELECT i, printf('%.1000c', 'x') FROM n",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(size() < before + 1_000_000, "the commit copied the log into the file: {before} -> {}", size());
    drop(held);
    let mut waited = 0;
    while size() < before + 5_000_000 {
        assert!(waited < 200, "the thread copied nothing in 20 s: {before} -> {}", size());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        waited += 1;
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
