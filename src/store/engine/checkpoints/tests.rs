use crate::store::DatabaseUrl;
use crate::store::Store;
use crate::store::engine::pool::SQLITE_PAGE_SIZE;

/// A write of more than a thousand log pages (where a commit checkpoints by default) stays
/// in the log when it commits, and the store's thread copies it into the database file. A new
/// file has the store's page size, and the backstop is counted in its pages.
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
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size").fetch_one(store.pool()).await.unwrap();
    assert_eq!(page_size, i64::from(SQLITE_PAGE_SIZE), "a new file has the store's page size");
    assert_eq!(autocheckpoint, (64 << 20) / page_size, "commits leave it to the thread up to 64 MB of log");
    let size = || std::fs::metadata(&file).unwrap().len();
    let before = size();
    let held = checkpoints.hold();
    let mut tx = store.write_transaction().await.unwrap();
    sqlx::query("CREATE TABLE filler (n INTEGER, text TEXT)").execute(&mut *tx).await.unwrap();
    // About 20 MB: 1,250 pages of 16 KB.
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) \
         INSERT INTO filler SELECT i, printf('%.1000c', 'x') FROM n",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(size() < before + 1_000_000, "the commit copied the log into the file: {before} -> {}", size());
    drop(held);
    let mut waited = 0;
    while size() < before + 18_000_000 {
        assert!(waited < 200, "the thread copied nothing in 20 s: {before} -> {}", size());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        waited += 1;
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A file created before the store chose its page size keeps its own, and its backstop is
/// still 64 MB of log (counted in its pages).
#[tokio::test]
async fn an_existing_file_keeps_its_page_size() {
    let dir = std::env::temp_dir().join(format!("checkpoints-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("db.sqlite");
    let existing = rusqlite::Connection::open(&file).unwrap();
    existing.execute_batch("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER);").unwrap();
    drop(existing);
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}", file.display()))).await.unwrap();
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size").fetch_one(store.pool()).await.unwrap();
    let autocheckpoint: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(store.pool()).await.unwrap();
    assert_eq!((page_size, autocheckpoint), (4096, 16_384));
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
