use super::*;
use crate::store::Store;

/// A folder of its own for one test, and the URL of a database file in it.
fn scratch() -> (PathBuf, DatabaseUrl) {
    let dir = std::env::temp_dir().join(format!("integration-service-backup-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = DatabaseUrl::new(format!("sqlite://{}/service.db", dir.display()));
    (dir, url)
}

async fn user_emails(store: &Store) -> Vec<String> {
    let mut emails: Vec<String> = store.list_users().await.unwrap().into_iter().map(|u| u.email).collect();
    emails.sort();
    emails
}

#[tokio::test]
async fn a_backup_of_a_database_in_use_restores_once_it_is_no_longer_in_use() {
    let (dir, url) = scratch();
    let store = Store::open(&url).await.unwrap();
    store.insert_user("Before", "before@example.com", "hash", false).await.unwrap();

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
    let started = std::time::Instant::now();
    let restored = loop {
        match restore(&url, &copy) {
            Err(BackupError::InUse(_)) if started.elapsed() < std::time::Duration::from_secs(30) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            other => break other.unwrap(),
        }
    };
    let set_aside = restored.set_aside.expect("the replaced database is kept");
    assert!(set_aside.is_file());
    assert!(!beside(&restored.database, ".restoring").exists());
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
