//! SQLite: the batches of a sync, written on a thread of their own by a connection of their
//! own, whose triggers are off.
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
//! The writes are done by a thread of their own, one after another in the order they were
//! asked for, each holding the process's write turn (see [`crate::store::Store::write_turn`]) until
//! it ends. A write asked for while another runs waits in the thread's queue and starts the
//! moment the other ends: no task has to wake first to take the turn, and no blocking thread
//! to be found and scheduled (`cargo xtask bench --scenario sync`, 95 writes of up to 2,000
//! companies: 24 ms of the sync's 0.31 s went by between a write taking the turn and its
//! thread starting it, with both cores busy reading the next pages). A write whose caller
//! stopped waiting before it started is not done; one already started ends (committed or
//! rolled back) on the thread.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, config::DbConfig, params};
use tokio::sync::oneshot;

use super::sqlite_reads::{BUSY_TIMEOUT, store_error};
use super::sync_page::{SyncedRecord, Upserted, id_ranges, last_copies_of, mirror_any_in_range};
use crate::store::error::StoreError;

const STORED_DOCUMENT: &str = "SELECT document FROM fieldreport_records \
     WHERE entity = ?1 AND LENGTH(record_id) = LENGTH(?2) AND record_id = ?2";

const INSERT: &str = "INSERT INTO fieldreport_records \
     (entity, record_id, version, external_id, document, created_at, updated_at, change_seq) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)";

/// A record with a local change waiting for a push keeps it: the push settles it against the
/// upstream's version.
const UPDATE: &str = "UPDATE fieldreport_records SET version = ?3, external_id = ?4, document = ?5, updated_at = ?6, change_seq = ?7 \
     WHERE entity = ?1 AND LENGTH(record_id) = LENGTH(?2) AND record_id = ?2 AND pending_push IS NULL";

/// What the trigger `fieldreport_records_count_inserted` (migration 0010) does per record.
const COUNT_INSERTED: &str = "INSERT INTO fieldreport_record_counts (entity, records) VALUES (?1, ?2) \
     ON CONFLICT (entity) DO UPDATE SET records = records + excluded.records";

/// The last change number of a set (see [`crate::store::feed`]).
const LAST_CHANGE: &str = "SELECT last_seq FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = ?1";

const SET_LAST_CHANGE: &str = "INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('fieldreport', ?1, ?2) \
     ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = excluded.last_seq";

type Outcomes = Result<Vec<Upserted>, StoreError>;

/// One page to write, and where its outcome goes.
struct Job {
    entity: String,
    records: Arc<Vec<SyncedRecord>>,
    last_copies: Vec<bool>,
    now: i64,
    outcome: oneshot::Sender<Outcomes>,
}

/// The sync's writer of one SQLite database file.
pub(in crate::store) struct SqliteSyncWrites {
    path: PathBuf,
    write_turns: Arc<tokio::sync::Mutex<()>>,
    /// The queue of the writing thread; started at the first write, and again after a write
    /// that panicked ended it.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
}

impl std::fmt::Debug for SqliteSyncWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSyncWrites").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteSyncWrites {
    pub(in crate::store) fn new(path: &Path, write_turns: Arc<tokio::sync::Mutex<()>>) -> SqliteSyncWrites {
        SqliteSyncWrites { path: path.to_path_buf(), write_turns, queue: Mutex::new(None) }
    }

    /// Stores one page of a sync in one transaction (see [`crate::store::Store::mirror_upsert_page`]):
    /// each record that is the last copy of its id in the page inserted, or updated where its
    /// document's text changed.
    pub(in crate::store) async fn write_page(
        &self,
        entity: &str,
        records: Arc<Vec<SyncedRecord>>,
        last_copies: Vec<bool>,
        now: i64,
    ) -> Outcomes {
        let (outcome, written) = oneshot::channel();
        self.queue(Job { entity: entity.to_string(), records, last_copies, now, outcome })?;
        written.await.map_err(|_| StoreError::Query("a sync's write ended abnormally".into()))?
    }

    /// Puts `job` in the writing thread's queue, starting the thread when there is none.
    fn queue(&self, job: Job) -> Result<(), StoreError> {
        let mut queue = self.queue.lock().expect("sync writer queue");
        let job = match queue.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return Ok(()),
                // The thread ended (a write panicked): the job comes back, for a new one.
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let sender = self.start_thread()?;
        sender.send(job).map_err(|_| StoreError::Query("the sync's writing thread ended at its start".into()))?;
        *queue = Some(sender);
        Ok(())
    }

    /// Starts the thread that writes the jobs of its queue, one after another; it ends once
    /// the queue is dropped and empty.
    fn start_thread(&self) -> Result<mpsc::Sender<Job>, StoreError> {
        let (sender, jobs) = mpsc::channel::<Job>();
        let (path, write_turns) = (self.path.clone(), self.write_turns.clone());
        std::thread::Builder::new()
            .name("sqlite-sync-writes".into())
            .spawn(move || {
                // Opened at the first job; again after a failure to open it.
                let mut connection = None;
                for job in jobs {
                    if job.outcome.is_closed() {
                        continue;
                    }
                    let _turn = write_turns.blocking_lock();
                    // The caller may have stopped waiting while the turn was taken elsewhere.
                    if job.outcome.is_closed() {
                        continue;
                    }
                    let outcomes = match &mut connection {
                        Some(connection) => write_job(connection, &job),
                        None => connect(&path).and_then(|opened| write_job(connection.insert(opened), &job)),
                    };
                    // Nobody waits for it any more: the sync stopped while it was written.
                    let _ = job.outcome.send(outcomes);
                }
            })
            .map_err(|e| StoreError::Unavailable(format!("cannot start the sync's writing thread: {e}")))?;
        Ok(sender)
    }

    /// Lets the writing thread end, with its connection, once the writes in its queue are done.
    pub(in crate::store) fn close(&self) {
        drop(self.queue.lock().expect("sync writer queue").take());
    }
}

/// The writer's connection: the store's session settings, and no triggers.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    let connection = super::pool::open_sqlite_writer(path, BUSY_TIMEOUT)?;
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false).map_err(store_error)?;
    Ok(connection)
}

fn write_job(connection: &mut Connection, job: &Job) -> Outcomes {
    write_page(connection, &job.entity, &job.records, &job.last_copies, job.now).map_err(store_error)
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
    // The set's change numbers go on from its last (the connection runs no triggers, which
    // number the other writes; migration 0029): SQLite writes one transaction at a time.
    let mut seq: i64 = tx.query_row(LAST_CHANGE, params![entity], |row| row.get(0)).optional()?.unwrap_or(0);
    let first_seq = seq;
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
            let values = params![entity, record.id, record.version, record.external_id, text, now, seq + 1];
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
                    seq += 1;
                    Upserted::Inserted
                }
                Some(true) => Upserted::Unchanged,
                Some(false) if update.execute(values)? == 1 => {
                    seq += 1;
                    Upserted::Updated
                }
                Some(false) => Upserted::Unchanged,
            });
        }
    }
    if inserted > 0 {
        tx.execute(COUNT_INSERTED, params![entity, inserted])?;
    }
    if seq > first_seq {
        tx.execute(SET_LAST_CHANGE, params![entity, seq])?;
    }
    tx.commit()?;
    Ok(outcomes)
}

/// SQLite's side of `fieldreport::may_hold_any_of`: whether the set holds a record within the
/// range of the ids of any one length of `records`.
fn may_hold_any_of(tx: &rusqlite::Transaction<'_>, entity: &str, records: &[&SyncedRecord]) -> rusqlite::Result<bool> {
    let Some(ranges) = id_ranges(records) else { return Ok(true) };
    let mut any_in_range = tx.prepare_cached(mirror_any_in_range(crate::store::dialect::Dialect::Sqlite))?;
    for (length, (least, greatest)) in ranges {
        if any_in_range.exists(params![entity, length as i64, least, greatest])? {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
pub(in crate::store) mod tests;
