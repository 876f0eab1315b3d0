use super::*;
use crate::store::DatabaseUrl;
use crate::store::Store;

/// A database locked by another connection answers "busy" at once; the read then waits on
/// a blocking thread and gets its answer once the lock is gone. (A rollback-journal file:
/// in WAL mode, which the store uses, a writer never locks readers out.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_refused_as_busy_waits_for_the_lock_aside() {
    let dir = std::env::temp_dir().join(format!("reads-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db.sqlite");
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7);").unwrap();
    let reads = Arc::new(SqliteReads::open(path).unwrap());

    holder.execute_batch("BEGIN EXCLUSIVE; INSERT INTO t VALUES (8);").unwrap();
    let direct = reads.connect().unwrap();
    let refused = direct.query_row("SELECT SUM(n) FROM t", [], |row| row.get::<_, i64>(0)).unwrap_err();
    assert!(is_busy(&refused), "{refused}");

    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.execute_batch("COMMIT;").unwrap();
    });
    let sum = reads.run(|c| c.query_row("SELECT SUM(n) FROM t", [], |row| row.get::<_, i64>(0))).await;
    assert_eq!(sum.unwrap(), 15, "the read waited for the commit");
    releaser.join().unwrap();

    let again = reads.run(|c| c.query_row("SELECT 41 + 1", [], |row| row.get::<_, i64>(0))).await;
    assert_eq!(again.unwrap(), 42, "the connection that waited is fit for the next read");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn read_connections_refuse_to_write() {
    let dir = std::env::temp_dir().join(format!("reads-{}", uuid::Uuid::new_v4()));
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
    let reads = store.engine.sqlite_reads().expect("a file database reads in place").clone();
    let written = reads.run(|c| c.execute("DELETE FROM users", [])).await;
    assert!(matches!(written, Err(StoreError::Query(ref m)) if m.contains("readonly")), "{written:?}");
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
