use crate::store::{DatabaseUrl, Store};

/// A `DATABASE_URL` that names a link to the file: SQLite writes the log beside the file
/// the link names, and that is the log synced (one beside the link is never there, and a
/// sync of none would pass for one of a log checkpointed whole).
#[tokio::test]
async fn the_log_synced_is_the_one_sqlite_writes_beside_a_linked_file() {
    let dir = std::env::temp_dir().join(format!("log-sync-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let real = dir.join("data").join("db.sqlite");
    Store::open(&DatabaseUrl::new(format!("sqlite://{}", real.display()))).await.unwrap().close().await;
    let link = dir.join("link.sqlite");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}", link.display()))).await.unwrap();
    sqlx::query("CREATE TABLE written (x INTEGER)").execute(store.pool()).await.unwrap();
    let log = store.engine.sqlite_file().unwrap().log_sync.path().to_path_buf();
    assert!(
        log.is_file(),
        "the log synced, {}, is not there; SQLite's: {:?}",
        log.display(),
        std::fs::read_dir(dir.join("data")).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>()
    );
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
