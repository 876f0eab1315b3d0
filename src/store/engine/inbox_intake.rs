//! Webhook calls are stored in batches: the calls that arrive while a batch is being written
//! wait and go into the next one, a single transaction (group commit). Each caller still gets
//! its answer only once its own call is committed, so a `202` never stands for a call that
//! could be lost.
//!
//! `cargo xtask bench --scenario webhook-ingest` showed the calls queueing one by one for
//! SQLite's single writer, each holding it for a transaction of its own (two hand-offs to
//! sqlx's connection thread and a commit), while the CPU was not busy: a few thousand calls a
//! second. On SQLite a batch is written on a blocking thread with a connection of its own; on
//! Postgres in one transaction of the pool, so one WAL flush serves the whole batch.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, TransactionBehavior};
use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

use super::sqlite_reads::{BUSY_TIMEOUT, store_error};
use crate::store::error::StoreError;

/// The most calls written in one transaction.
const MAX_BATCH: usize = 256;
/// Calls that may wait for a batch before callers wait to queue.
const QUEUE: usize = 4096;

pub(in crate::store) const INSERT: &str = "INSERT INTO erp_webhook_inbox \
     (received_at, entity_name, entity_id, event, payload, state, attempts, next_attempt_at) \
     VALUES ($1, $2, $3, $4, $5, 'pending', 0, $1) RETURNING id";

/// A webhook call to store.
#[derive(Debug)]
pub(in crate::store) struct NewCall {
    pub received_at: i64,
    pub entity_name: String,
    pub entity_id: String,
    pub event: String,
    pub payload: String,
}

struct Pending {
    call: NewCall,
    stored: oneshot::Sender<Result<i64, StoreError>>,
}

/// Where batches are written.
enum Target {
    /// A SQLite file, with the process's write turn (see [`crate::store::Store::write_turn`]).
    Sqlite {
        connection: Connection,
        write_turns: Arc<tokio::sync::Mutex<()>>,
    },
    Postgres(AnyPool),
}

/// The queue of calls waiting to be stored, and the task that writes them.
#[derive(Debug)]
pub(in crate::store) struct InboxIntake {
    queue: mpsc::Sender<Pending>,
}

impl InboxIntake {
    /// Batches for the SQLite file at `path`.
    pub(in crate::store) fn sqlite(
        path: &Path,
        write_turns: Arc<tokio::sync::Mutex<()>>,
    ) -> Result<InboxIntake, StoreError> {
        let connection = super::pool::open_sqlite_writer(path, BUSY_TIMEOUT)?;
        Ok(Self::start(Target::Sqlite { connection, write_turns }))
    }

    /// Batches through the pool of a Postgres database.
    pub(in crate::store) fn postgres(pool: AnyPool) -> InboxIntake {
        Self::start(Target::Postgres(pool))
    }

    fn start(target: Target) -> InboxIntake {
        let (queue, calls) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(target, calls));
        InboxIntake { queue }
    }

    /// Stores one call; answers its id once the batch holding it is committed.
    pub(in crate::store) async fn store(&self, call: NewCall) -> Result<i64, StoreError> {
        let (stored, answer) = oneshot::channel();
        self.queue
            .send(Pending { call, stored })
            .await
            .map_err(|_| StoreError::Unavailable("the webhook inbox is closed".into()))?;
        answer.await.map_err(|_| StoreError::Unavailable("the webhook inbox stopped before storing the call".into()))?
    }
}

/// Writes what is queued, a batch at a time, until every sender is gone (or the SQLite
/// connection was lost with a panicked thread: the queue then closes, and callers are told
/// the inbox is unavailable).
async fn write_batches(mut target: Target, mut calls: mpsc::Receiver<Pending>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while calls.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let (new_calls, answers): (Vec<NewCall>, Vec<_>) = batch.drain(..).map(|p| (p.call, p.stored)).unzip();
        let (stored, next) = write(target, new_calls).await;
        match stored {
            Ok(ids) => {
                for (answer, id) in answers.into_iter().zip(ids) {
                    let _ = answer.send(Ok(id));
                }
            }
            Err(error) => {
                for answer in answers {
                    let _ = answer.send(Err(error.clone()));
                }
            }
        }
        match next {
            Some(next) => target = next,
            None => return,
        }
    }
}

/// One batch in one transaction; the target comes back for the next.
async fn write(target: Target, calls: Vec<NewCall>) -> (Result<Vec<i64>, StoreError>, Option<Target>) {
    match target {
        Target::Sqlite { mut connection, write_turns } => {
            let turn = write_turns.clone().lock_owned().await;
            let written = tokio::task::spawn_blocking(move || {
                let ids = write_sqlite(&mut connection, &calls);
                drop(turn);
                (ids, connection)
            })
            .await;
            match written {
                Ok((ids, connection)) => (ids.map_err(store_error), Some(Target::Sqlite { connection, write_turns })),
                Err(error) => {
                    (Err(StoreError::Query(format!("storing webhook calls ended abnormally: {error}"))), None)
                }
            }
        }
        Target::Postgres(pool) => (write_postgres(&pool, &calls).await, Some(Target::Postgres(pool))),
    }
}

fn write_sqlite(connection: &mut Connection, calls: &[NewCall]) -> rusqlite::Result<Vec<i64>> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut ids = Vec::with_capacity(calls.len());
    {
        let mut insert = tx.prepare_cached(INSERT)?;
        for call in calls {
            let params = rusqlite::named_params! {
                "$1": call.received_at,
                "$2": call.entity_name,
                "$3": call.entity_id,
                "$4": call.event,
                "$5": call.payload,
            };
            ids.push(insert.query_row(params, |row| row.get(0))?);
        }
    }
    tx.commit()?;
    Ok(ids)
}

/// One statement for the whole batch, whatever its size: the calls go as one JSON array,
/// each row takes its id from the table's sequence, and the ids come back with each call's
/// position (which id is whose does not depend on the order rows are returned in). One round
/// trip and one commit per batch, and one prepared statement: a `VALUES` list per batch size
/// was a statement of its own for every size (256 of them, more than sqlx's cache of prepared
/// statements keeps), parsed and planned again for most batches, and it took its ids in a
/// round trip before.
const INSERT_BATCH_POSTGRES: &str = "WITH batch AS MATERIALIZED ( \
         SELECT nextval((SELECT pg_get_serial_sequence('erp_webhook_inbox', 'id'))::regclass) AS id, calls.* \
         FROM json_to_recordset($1::json) \
              AS calls (position BIGINT, received_at BIGINT, entity_name TEXT, entity_id TEXT, event TEXT, payload TEXT) \
     ), stored AS ( \
         INSERT INTO erp_webhook_inbox \
             (id, received_at, entity_name, entity_id, event, payload, state, attempts, next_attempt_at) \
         SELECT id, received_at, entity_name, entity_id, event, payload, 'pending', 0, received_at FROM batch \
     ) \
     SELECT position, id FROM batch";

/// One call as an element of [`INSERT_BATCH_POSTGRES`]'s JSON array.
#[derive(serde::Serialize)]
struct BatchRow<'a> {
    position: usize,
    received_at: i64,
    entity_name: &'a str,
    entity_id: &'a str,
    event: &'a str,
    payload: &'a str,
}

async fn write_postgres(pool: &AnyPool, calls: &[NewCall]) -> Result<Vec<i64>, StoreError> {
    let batch: Vec<BatchRow> = calls
        .iter()
        .enumerate()
        .map(|(position, call)| BatchRow {
            position,
            received_at: call.received_at,
            entity_name: &call.entity_name,
            entity_id: &call.entity_id,
            event: &call.event,
            payload: &call.payload,
        })
        .collect();
    let batch = serde_json::to_string(&batch)
        .map_err(|error| StoreError::Query(format!("writing the webhook batch as JSON: {error}")))?;
    let rows: Vec<(i64, i64)> = sqlx::query_as(INSERT_BATCH_POSTGRES).bind(batch).fetch_all(pool).await?;
    let mut ids = vec![None; calls.len()];
    for (position, id) in rows {
        if let Some(slot) = usize::try_from(position).ok().and_then(|p| ids.get_mut(p)) {
            *slot = Some(id);
        }
    }
    ids.into_iter()
        .map(|id| id.ok_or_else(|| StoreError::Query("the webhook inbox did not return an id for every call".into())))
        .collect()
}

#[cfg(test)]
mod tests;
