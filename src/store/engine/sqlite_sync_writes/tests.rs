use super::*;
use crate::store::DatabaseUrl;
use crate::store::{Store, TestValues};

/// The writer's connection runs no trigger, so `write_page` does the work of each trigger
/// of the mirror that a sync's write would run, or has none to do: this list changes with
/// the migrations, and a new trigger must be looked at here.
#[tokio::test]
async fn the_sync_writer_does_the_work_of_every_trigger_of_the_mirror() {
    let dir = std::env::temp_dir().join(format!("sync-writes-{}", uuid::Uuid::new_v4()));
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
    let triggers: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'fieldreport_records' ORDER BY name",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(
        triggers,
        [
            // a sync deletes nothing
            "fieldreport_records_count_deleted",
            // COUNT_INSERTED, once per batch
            "fieldreport_records_count_inserted",
            // a sync deletes nothing, nor renames a record
            "fieldreport_records_feed_deleted",
            // each record written takes its change number from the batch's (SET_LAST_CHANGE)
            "fieldreport_records_feed_inserted",
            "fieldreport_records_feed_renamed",
            "fieldreport_records_feed_updated",
            // every write of the service writes the ExternalId column with its document
            "fieldreport_records_fill_external_id_inserted",
            "fieldreport_records_fill_external_id_updated",
            // a sync never moves a record to another set
            "fieldreport_records_keep_entity",
        ]
    );
    let writes = &store.engine.sqlite_file().expect("a file database has a sync writer").sync_writes;
    let connection = connect(&writes.path).unwrap();
    assert!(!connection.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER).unwrap(), "triggers are off");
    drop(connection);
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Writes wait for the write turn; one whose caller stopped waiting before it started is
/// not done, and the write queued after it is.
#[tokio::test]
async fn a_write_nobody_waits_for_any_more_is_not_done() {
    let dir = std::env::temp_dir().join(format!("sync-writes-{}", uuid::Uuid::new_v4()));
    let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
    let turn = store.write_turn().await.unwrap();
    let mut dropped = Box::pin(store.mirror_upsert_page("tags", vec![SyncedRecord::named("1", "dropped")]));
    assert!(futures::poll!(&mut dropped).is_pending(), "queued behind the turn held here");
    let mut kept = Box::pin(store.mirror_upsert_page("tags", vec![SyncedRecord::named("2", "kept")]));
    assert!(futures::poll!(&mut kept).is_pending());
    drop(dropped);
    drop(turn);
    assert_eq!(kept.await.unwrap(), [Upserted::Inserted]);
    assert!(store.mirror_get("tags", "1").await.unwrap().is_none(), "the dropped write was not done");
    assert_eq!(store.mirror_get("tags", "2").await.unwrap().unwrap().document["Name"], "kept");
    assert_eq!(store.mirror_counts().await.unwrap(), [("tags".to_string(), 1)]);
    store.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// An in-memory database has no file for the writer's connection: a sync says so.
#[tokio::test]
async fn an_in_memory_database_cannot_sync() {
    let store = Store::open(&DatabaseUrl::new("sqlite::memory:")).await.unwrap();
    let written = store.mirror_upsert_page("tags", vec![SyncedRecord::named("1", "a")]).await;
    assert!(matches!(written, Err(StoreError::Unavailable(ref m)) if m.contains("database file")), "{written:?}");
    store.close().await;
}

/// The writer's statements on one record, with values for their parameters (for the test that
/// checks each finds its record through the record index).
pub(in crate::store) fn statements_by_record() -> Vec<(&'static str, TestValues)> {
    vec![
        (STORED_DOCUMENT, |query| query.bind("companies").bind("12")),
        (UPDATE, |query| query.bind("companies").bind("12").bind(2_i64).bind("e").bind("{}").bind(1_i64)),
    ]
}
