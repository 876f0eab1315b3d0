use super::*;
use crate::store::Store;

/// A folder of its own for one test, and the URL of a database file in it.
fn scratch() -> (PathBuf, DatabaseUrl) {
    let dir = std::env::temp_dir().join(format!("integration-service-backup-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = DatabaseUrl::new(format!("sqlite://{}/service.db", dir.display()));
    (dir, url)
}

/// A store on a new database of [`scratch`] with one user written before any backup.
async fn store_with_a_user() -> (PathBuf, DatabaseUrl, Store) {
    let (dir, url) = scratch();
    let store = Store::open(&url).await.unwrap();
    store.insert_user("Before", "before@example.com", "hash", false).await.unwrap();
    (dir, url, store)
}

/// Restores `copy` once the closed store's connections have let go of the database (the
/// store's SQLite connections outside the pool close on their own threads).
async fn restore_once_let_go(url: &DatabaseUrl, copy: &Path) -> Restore {
    let started = std::time::Instant::now();
    loop {
        match restore(url, copy) {
            Err(BackupError::InUse(_)) if started.elapsed() < std::time::Duration::from_secs(30) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            other => return other.unwrap(),
        }
    }
}

async fn user_emails(store: &Store) -> Vec<String> {
    let mut emails: Vec<String> = store.list_users().await.unwrap().into_iter().map(|u| u.email).collect();
    emails.sort();
    emails
}

#[tokio::test]
async fn a_backup_of_a_database_in_use_restores_once_it_is_no_longer_in_use() {
    let (dir, url, store) = store_with_a_user().await;

    // Taken while the store has the database open, as a running service has.
    let copy = dir.join("copy.db");
    let backup = backup(&url, &copy).unwrap();
    assert_eq!(backup.migration, known_migration());
    assert!(backup.bytes > 0 && copy.is_file());
    assert!(!beside(&copy, ".partial").exists());
    assert!(matches!(super::backup(&url, &copy), Err(BackupError::TargetExists(_))), "never overwrites");

    store.insert_user("After", "after@example.com", "hash", false).await.unwrap();
    let refused = restore(&url, &copy).unwrap_err();
    assert!(matches!(refused, BackupError::InUse(_)), "{refused}");
    assert!(refused.to_string().contains("is in use"), "{refused}");
    store.close().await;
    drop(store);

    // The store's own threads (the checkpoints') let go of the file at their next turn.
    let restored = restore_once_let_go(&url, &copy).await;
    let set_aside = restored.set_aside.expect("the replaced database is kept");
    assert!(set_aside.is_file());
    assert!(!engine::restoring_copy(&restored.database).exists());
    let store = Store::open(&url).await.unwrap();
    assert_eq!(user_emails(&store).await, ["before@example.com"]);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_backup_of_an_older_release_is_migrated_forward_when_the_service_opens_it() {
    let (dir, url) = scratch();
    let known = known_migration();
    let store = Store::connect(&url).await.unwrap();
    sqlx::migrate!("migrations/sqlite").run_to(known - 1, store.pool()).await.unwrap();
    store.close().await;
    drop(store);
    let copy = dir.join("old.db");
    assert_eq!(backup(&url, &copy).unwrap().migration, known - 1);

    std::fs::remove_file(engine::sqlite_file(url.expose())).unwrap();
    let restored = restore(&url, &copy).unwrap();
    assert_eq!((restored.migration, restored.known, restored.set_aside), (known - 1, known, None));
    let store = Store::open(&url).await.unwrap();
    let newest: i64 =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations").fetch_one(store.pool()).await.unwrap();
    assert_eq!(newest, known);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_is_not_a_backup_is_refused_and_postgres_is_named() {
    let (dir, url) = scratch();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a database").unwrap();
    assert!(matches!(restore(&url, &text), Err(BackupError::NotABackup { .. })));
    assert!(matches!(restore(&url, &dir.join("missing.db")), Err(BackupError::NoDatabase(_))));
    assert!(matches!(backup(&url, &dir.join("copy.db")), Err(BackupError::NoDatabase(_))));
    let postgres = DatabaseUrl::new("postgres://user:secret@db/integration");
    let refused = backup(&postgres, &dir.join("copy.db")).unwrap_err();
    assert!(refused.to_string().contains("pg_dump --format=custom"), "{refused}");
    assert!(!refused.to_string().contains("secret"));
    assert!(matches!(backup(&DatabaseUrl::new("sqlite::memory:"), &text), Err(BackupError::InMemory)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two backups to one name at once: the second is refused at once and leaves the first one's
/// file alone, and the first ends whole. The first is held in its copy by a connection that
/// keeps the database locked, as a long copy of a large database would last.
#[tokio::test]
async fn a_second_backup_to_the_same_name_leaves_the_first_alone() {
    let (dir, url, store) = store_with_a_user().await;
    // A database of the service's that no store has open (the store's threads let go of theirs
    // only at their next turn).
    let source = dir.join("source.db");
    backup(&url, &source).unwrap();
    store.close().await;
    let url = DatabaseUrl::new(format!("sqlite://{}", source.display()));
    let holder = Connection::open(&source).unwrap();
    holder.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
    holder.pragma_update(None, "locking_mode", "EXCLUSIVE").unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE; COMMIT;").unwrap();

    let copy = dir.join("copy.db");
    let partial = beside(&copy, ".partial");
    let first = std::thread::spawn({
        let (url, copy) = (url.clone(), copy.clone());
        move || backup(&url, &copy)
    });
    let started = std::time::Instant::now();
    while !partial.exists() && !first.is_finished() && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(partial.exists(), "the first backup is under way");
    let under_way = std::fs::metadata(&partial).unwrap();

    let second = backup(&url, &copy);
    assert!(matches!(second, Err(BackupError::UnderWay(_))), "{second:?}");
    let still = std::fs::metadata(&partial).expect("the first backup's file is still there");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(still.ino(), under_way.ino(), "the first backup's file was replaced");

    drop(holder);
    let first = first.join().unwrap().expect("the first backup ends whole");
    assert_eq!(first.migration, known_migration());
    assert_eq!(check(&copy).unwrap(), known_migration());
    assert!(!partial.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A partial file that a backup left when it was stopped (no process holds it) does not stand
/// in the way of the next backup to the same name.
#[test]
fn a_partial_file_left_by_a_stopped_backup_is_replaced() {
    let (dir, url) = scratch();
    let database = engine::sqlite_file(url.expose());
    let connection = Connection::open(&database).unwrap();
    connection.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    drop(connection);
    let copy = dir.join("copy.db");
    std::fs::write(beside(&copy, ".partial"), b"what a stopped backup wrote").unwrap();
    // Not a database of the service's: the backup is refused by its check, after the copy.
    let refused = backup(&url, &copy).unwrap_err();
    assert!(matches!(refused, BackupError::NotABackup { .. }), "{refused}");
    assert!(!beside(&copy, ".partial").exists() && !copy.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

async fn tag(store: &Store, id: &str) {
    let record = crate::store::fieldreport::records::MirrorRecord {
        id: id.into(),
        version: 1,
        document: serde_json::json!({"Id": id, "Version": 1}),
    };
    store.mirror_insert("tags", &record, None).await.unwrap();
}

/// A consumer that followed the change feed past the backup's last change holds changes the
/// restored database does not have: its position is refused (410) even once the restored
/// database has numbered as many changes again, for other records.
#[tokio::test]
async fn a_feed_position_answered_after_the_backup_is_refused_after_a_restore() {
    use crate::store::feed::Mirror;
    let (dir, url, store) = store_with_a_user().await;
    tag(&store, "1").await;
    let copy = dir.join("copy.db");
    backup(&url, &copy).unwrap();
    for id in ["2", "3", "4"] {
        tag(&store, id).await;
    }
    let followed = store.feed_changes(Mirror::FieldReport, "tags", 0, 100).await.unwrap();
    assert_eq!(followed.len(), 4);
    let since = followed.last().unwrap().seq;
    store.close().await;
    drop(store);
    restore_once_let_go(&url, &copy).await;
    let store = Store::open(&url).await.unwrap();
    for id in ["5", "6", "7", "8"] {
        tag(&store, id).await;
    }
    // The feed refuses a position before `expired_through` or after `last_seq` (`crate::feed`).
    let feed = store.feed_position(Mirror::FieldReport, "tags").await.unwrap();
    assert!(since < feed.expired_through || since > feed.last_seq, "{since} is followed in {feed:?}");
    // A new copy is followed from the position its export starts at.
    tag(&store, "9").await;
    let after = store.feed_changes(Mirror::FieldReport, "tags", feed.last_seq, 100).await.unwrap();
    assert_eq!(after.iter().map(|change| change.id.as_str()).collect::<Vec<_>>(), ["9"]);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A damaged database is what a restore is for: when the feed of the database it replaces
/// cannot be read, the restore still replaces it, and says that the feed's numbers were not
/// carried forward.
#[tokio::test]
async fn a_feed_that_cannot_be_read_is_replaced_and_said_not_carried() {
    let (dir, url, store) = store_with_a_user().await;
    let copy = dir.join("copy.db");
    backup(&url, &copy).unwrap();
    // The damage: the feed's table no longer has the column its numbers are read from.
    sqlx::query("ALTER TABLE mirror_feed RENAME COLUMN last_seq TO lost").execute(store.pool()).await.unwrap();
    store.close().await;
    drop(store);
    let restored = restore_once_let_go(&url, &copy).await;
    assert!(restored.feed_not_carried.is_some_and(|reason| reason.contains("last_seq")));
    let store = Store::open(&url).await.unwrap();
    assert_eq!(user_emails(&store).await, ["before@example.com"]);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Overwrites the header of the database file open as `file` so that SQLite no longer reads
/// it as one.
fn damage(file: &mut std::fs::File) {
    use std::io::Write;
    file.write_all(b"damaged damaged damaged damaged!").unwrap();
}

fn for_writing(database: &Path) -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open(database).unwrap()
}

/// A folder of its own with a backup (`copy.db`) of a database with one user, whose store is
/// closed.
async fn backup_of_a_user() -> (PathBuf, PathBuf) {
    let (dir, url, store) = store_with_a_user().await;
    let copy = dir.join("copy.db");
    backup(&url, &copy).unwrap();
    store.close().await;
    (dir, copy)
}

/// A folder of its own with a database that no process has open, made from the backup `copy`.
fn copied(copy: &Path) -> (PathBuf, DatabaseUrl, PathBuf) {
    let (dir, url) = scratch();
    let database = engine::sqlite_file(url.expose());
    std::fs::copy(copy, &database).unwrap();
    (dir, url, database)
}

/// A database SQLite can no longer read is what a restore is for: once no process has it
/// open, it is set aside as it is and replaced.
#[tokio::test]
async fn a_database_sqlite_cannot_read_is_set_aside_and_replaced() {
    let (dir, copy) = backup_of_a_user().await;
    let (damaged_dir, damaged_url, database) = copied(&copy);
    damage(&mut for_writing(&database));
    let damaged = std::fs::read(&database).unwrap();

    let restored = restore(&damaged_url, &copy).unwrap();
    let set_aside = restored.set_aside.expect("the damaged database is kept");
    assert_eq!(std::fs::read(&set_aside).unwrap(), damaged, "kept as it was");
    assert!(restored.feed_not_carried.is_some());
    let store = Store::open(&damaged_url).await.unwrap();
    assert_eq!(user_emails(&store).await, ["before@example.com"]);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&damaged_dir);
}

/// A process that has the database open keeps it from being replaced, even once SQLite can no
/// longer read the file (a service that opened it before the damage still holds its lock).
#[tokio::test]
async fn a_database_sqlite_cannot_read_is_not_replaced_while_in_use() {
    let (dir, copy) = backup_of_a_user().await;
    let (damaged_dir, damaged_url, database) = copied(&copy);
    // Open before the holder's locks and kept open: closing a file releases every lock this
    // process holds on it, the holder's too (another process's, as a service's, stay).
    let mut writer = for_writing(&database);
    // Opened in WAL mode, as the service has it, before the damage, and held.
    let holder = Connection::open(&database).unwrap();
    holder.pragma_update(None, "journal_mode", "WAL").unwrap();
    holder.query_row("SELECT count(*) FROM _sqlx_migrations", [], |row| row.get::<_, i64>(0)).unwrap();
    damage(&mut writer);

    let refused = restore(&damaged_url, &copy).unwrap_err();
    assert!(matches!(refused, BackupError::InUse(_)), "{refused}");
    assert!(std::fs::read(&database).unwrap().starts_with(b"damaged"), "left in place");
    drop((holder, writer));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&damaged_dir);
}
