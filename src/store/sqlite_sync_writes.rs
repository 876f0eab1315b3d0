//! SQLite: the batches of a sync, written on a blocking thread by a connection of their own,
//! whose triggers are off.
//!
//! Storing was a SQLite sync's whole critical path: its writes held SQLite's one write turn
//! back to back, and the store loop waited for them 85% of the time. Each record written ran
//! two row triggers (migrations 0010 and 0014): the record count's upsert, and the check
//! whether the `ExternalId` column needs filling in. In SQLite alone (Python's `sqlite3`, the
//! mirror's shape, 100,000 of the bench's documents) they were a sixth of the insert's time.
//! This connection does their work itself, once per batch instead of once per record:
//! - it adds the batch's new records to the set's count (`fieldreport_record_counts`);
//! - it writes each record's `ExternalId` column with its document (as every write of the
//!   service does), so there is nothing to fill in.
//!
//! The other triggers of the mirror do not concern a sync's writes: the count's on delete,
//! and the one that keeps a record in its set (a sync never deletes a record or moves it).
//! The test `the_sync_writer_does_the_work_of_every_trigger_of_the_mirror` lists the mirror's
//! triggers: a new one must be done here too.
//!
//! The records are written one statement each, prepared once per connection: sqlx's
//! multi-row `INSERT` was sent, with each of its parameters, to sqlx's connection thread, and
//! SQLite built the rows of its `VALUES` before inserting them.
//!
//! Writes take the process's write turn (see [`super::Store::write_turn`]) before the
//! connection, and hold it until they end, so one connection serves them all. A write whose
//! caller stops waiting still ends (committed or rolled back) on its thread.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, config::DbConfig, params};

use super::StoreError;
use super::fieldreport::{SyncedRecord, Upserted, id_ranges, last_copies_of, mirror_any_in_range};
use super::sqlite_reads::{BUSY_TIMEOUT, open_file, store_error};

const STORED_DOCUMENT: &str = "SELECT document FROM fieldreport_records \
     WHERE entity = ?1 AND LENGTH(record_id) = LENGTH(?2) AND record_id = ?2";

const INSERT: &str = "INSERT INTO fieldreport_records \
     (entity, record_id, version, external_id, document, created_at, updated_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)";

const UPDATE: &str = "UPDATE fieldreport_records SET version = ?3, external_id = ?4, document = ?5, updated_at = ?6 \
     WHERE entity = ?1 AND LENGTH(record_id) = LENGTH(?2) AND record_id = ?2";

/// The statements above on one record, with values for their parameters (for the test that
/// checks each finds its record through the record index).
#[cfg(test)]
pub(super) fn statements_by_record() -> Vec<(&'static str, super::TestValues)> {
    vec![
        (STORED_DOCUMENT, |query| query.bind("companies").bind("12")),
        (UPDATE, |query| query.bind("companies").bind("12").bind(2_i64).bind("e").bind("{}").bind(1_i64)),
    ]
}

/// What the trigger `fieldreport_records_count_inserted` (migration 0010) does per record.
const COUNT_INSERTED: &str = "INSERT INTO fieldreport_record_counts (entity, records) VALUES (?1, ?2) \
     ON CONFLICT (entity) DO UPDATE SET records = records + excluded.records";

/// The sync's writer of one SQLite database file.
pub(super) struct SqliteSyncWrites {
    path: PathBuf,
    write_turns: Arc<tokio::sync::Mutex<()>>,
    /// Opened at the first write; taken out while a write runs.
    idle: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for SqliteSyncWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSyncWrites").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteSyncWrites {
    pub(super) fn new(path: &Path, write_turns: Arc<tokio::sync::Mutex<()>>) -> SqliteSyncWrites {
        SqliteSyncWrites { path: path.to_path_buf(), write_turns, idle: Mutex::new(None) }
    }

    /// Stores one page of a sync in one transaction (see [`super::Store::mirror_upsert_page`]):
    /// each record that is the last copy of its id in the page inserted, or updated where its
    /// document's text changed.
    pub(super) async fn write_page(
        &self,
        entity: &str,
        records: Arc<Vec<SyncedRecord>>,
        last_copies: Vec<bool>,
        now: i64,
    ) -> Result<Vec<Upserted>, StoreError> {
        let turn = self.write_turns.clone().lock_owned().await;
        let mut connection = match self.idle.lock().expect("sync writer lock").take() {
            Some(connection) => connection,
            None => self.connect()?,
        };
        let entity = entity.to_string();
        let written = tokio::task::spawn_blocking(move || {
            let outcomes = write_page(&mut connection, &entity, &records, &last_copies, now);
            drop(turn);
            (outcomes, connection)
        })
        .await
        .map_err(|e| StoreError::Query(format!("a sync's write ended abnormally: {e}")))?;
        let (outcomes, connection) = written;
        *self.idle.lock().expect("sync writer lock") = Some(connection);
        outcomes.map_err(store_error)
    }

    /// Closes the connection kept for the next write (a write in flight keeps its own).
    pub(super) fn close(&self) {
        drop(self.idle.lock().expect("sync writer lock").take());
    }

    /// The writer's connection: the store's session settings, and no triggers.
    fn connect(&self) -> Result<Connection, StoreError> {
        let connection = open_file(&self.path, BUSY_TIMEOUT, &super::sqlite_write_settings())?;
        connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false).map_err(store_error)?;
        Ok(connection)
    }
}

/// The page in one write transaction. The stored copies are looked up only when the set may
/// hold one of the page's records (see [`may_hold_any_of`]).
fn write_page(
    connection: &mut Connection,
    entity: &str,
    records: &[SyncedRecord],
    last_copies: &[bool],
    now: i64,
) -> rusqlite::Result<Vec<Upserted>> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let look = may_hold_any_of(&tx, entity, &last_copies_of(records, last_copies))?;
    let mut outcomes = Vec::with_capacity(records.len());
    let mut inserted: i64 = 0;
    {
        let mut stored_document = tx.prepare_cached(STORED_DOCUMENT)?;
        let mut insert = tx.prepare_cached(INSERT)?;
        let mut update = tx.prepare_cached(UPDATE)?;
        for (record, &last) in records.iter().zip(last_copies) {
            if !last {
                outcomes.push(Upserted::Unchanged);
                continue;
            }
            let text = record.document.get();
            let values = params![entity, record.id, record.version, record.external_id, text, now];
            // Whether the stored copy's text is this one; `None` when there is none.
            let same = if look {
                stored_document
                    .query_row(params![entity, record.id], |row| Ok(row.get_ref(0)?.as_str()? == text))
                    .optional()?
            } else {
                None
            };
            outcomes.push(match same {
                None => {
                    insert.execute(values)?;
                    inserted += 1;
                    Upserted::Inserted
                }
                Some(true) => Upserted::Unchanged,
                Some(false) => {
                    update.execute(values)?;
                    Upserted::Updated
                }
            });
        }
    }
    if inserted > 0 {
        tx.execute(COUNT_INSERTED, params![entity, inserted])?;
    }
    tx.commit()?;
    Ok(outcomes)
}

/// SQLite's side of `fieldreport::may_hold_any_of`: whether the set holds a record within the
/// range of the ids of any one length of `records`.
fn may_hold_any_of(tx: &rusqlite::Transaction<'_>, entity: &str, records: &[&SyncedRecord]) -> rusqlite::Result<bool> {
    let Some(ranges) = id_ranges(records) else { return Ok(true) };
    let mut any_in_range = tx.prepare_cached(mirror_any_in_range(super::Dialect::Sqlite))?;
    for (length, (least, greatest)) in ranges {
        if any_in_range.exists(params![entity, length as i64, least, greatest])? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseUrl;
    use crate::store::Store;

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
                // every write of the service writes the ExternalId column with its document
                "fieldreport_records_fill_external_id_inserted",
                "fieldreport_records_fill_external_id_updated",
                // a sync never moves a record to another set
                "fieldreport_records_keep_entity",
            ]
        );
        let writes = store.sqlite_sync_writes.clone().expect("a file database has a sync writer");
        let connection = writes.connect().unwrap();
        assert!(!connection.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER).unwrap(), "triggers are off");
        drop(connection);
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
}
