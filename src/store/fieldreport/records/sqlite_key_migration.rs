use sqlx::Row;

use crate::store::DatabaseUrl;
use crate::store::Store;

const RECORDS: &str = "SELECT rowid, entity, record_id, version, document, pending_push, external_id \
     FROM fieldreport_records ORDER BY rowid";

/// Migration 0017 copies the SQLite mirror into a table without a primary key: every row
/// (rowid included), the counts, the triggers and the indexes come through, and the new
/// index keeps an id unique within its set.
#[tokio::test]
async fn rebuilding_the_sqlite_mirror_keeps_its_records_counts_and_triggers() {
    let dir = std::env::temp_dir().join(format!("mirror-key-{}", uuid::Uuid::new_v4()));
    let store = Store::connect(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
    let mut before = sqlx::migrate!("migrations/sqlite");
    before.migrations = before.migrations.iter().filter(|m| m.version < 17).cloned().collect::<Vec<_>>().into();
    before.run(store.pool()).await.unwrap();
    for (entity, id, pending, external) in [
        ("companies", "7", None, Some("erp-7")),
        ("companies", "12", Some("update"), None),
        ("contacts", "7", Some("create"), Some("x")),
    ] {
        sqlx::query(
            "INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at, external_id) \
             VALUES ($1, $2, 1, $3, $4, 1, 1, $5)",
        )
        .bind(entity)
        .bind(id)
        .bind(format!(r#"{{"Id":"{id}"}}"#))
        .bind(pending)
        .bind(external)
        .execute(store.pool())
        .await
        .unwrap();
    }
    let rows = |store: Store| async move {
        let rows = sqlx::query(RECORDS).fetch_all(store.pool()).await.unwrap();
        rows.iter()
            .map(|r| {
                let text = |column: &str| r.try_get::<Option<String>, _>(column).unwrap();
                (
                    r.get::<i64, _>("rowid"),
                    text("entity"),
                    text("record_id"),
                    r.get::<i64, _>("version"),
                    text("document"),
                    text("pending_push"),
                    text("external_id"),
                )
            })
            .collect::<Vec<_>>()
    };
    let old = rows(store.clone()).await;
    let counts = |store: Store| async move { store.mirror_counts().await.unwrap() };
    let old_counts = counts(store.clone()).await;
    assert!(old_counts.contains(&("companies".to_string(), 2)), "{old_counts:?}");
    store.migrate().await.unwrap();
    assert_eq!(rows(store.clone()).await, old);
    assert_eq!(counts(store.clone()).await, old_counts);
    let objects: Vec<String> = sqlx::query_scalar(
        "SELECT type || ' ' || name FROM sqlite_master WHERE tbl_name = 'fieldreport_records' ORDER BY type, name",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(
        objects,
        [
            // migration 0029's, with its feed triggers below
            "index fieldreport_records_changes",
            "index fieldreport_records_external_id",
            "index fieldreport_records_key",
            "index fieldreport_records_pending_push",
            "table fieldreport_records",
            "trigger fieldreport_records_count_deleted",
            "trigger fieldreport_records_count_inserted",
            "trigger fieldreport_records_feed_deleted",
            "trigger fieldreport_records_feed_inserted",
            "trigger fieldreport_records_feed_renamed",
            "trigger fieldreport_records_feed_updated",
            "trigger fieldreport_records_fill_external_id_inserted",
            "trigger fieldreport_records_fill_external_id_updated",
            "trigger fieldreport_records_keep_entity",
        ]
    );
    let again = sqlx::query(
        "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
         VALUES ('companies', '12', 1, '{}', 1, 1)",
    )
    .execute(store.pool())
    .await;
    assert!(again.unwrap_err().to_string().contains("UNIQUE"), "one record per id and set");
    // The triggers run on the new table: counting, and filling in `ExternalId`.
    sqlx::query(
        r#"INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at)
           VALUES ('companies', '13', 1, '{"ExternalId":"erp-13"}', 1, 1)"#,
    )
    .execute(store.pool())
    .await
    .unwrap();
    assert!(counts(store.clone()).await.contains(&("companies".to_string(), 3)));
    let filled: Option<String> =
        sqlx::query_scalar("SELECT external_id FROM fieldreport_records WHERE record_id = '13'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(filled.as_deref(), Some("erp-13"));
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}
