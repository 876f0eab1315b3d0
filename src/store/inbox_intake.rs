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

use super::StoreError;
use super::sqlite_reads::{BUSY_TIMEOUT, open_file, store_error};

/// The most calls written in one transaction.
const MAX_BATCH: usize = 256;
/// Calls that may wait for a batch before callers wait to queue.
const QUEUE: usize = 4096;

pub(super) const INSERT: &str = "INSERT INTO erp_webhook_inbox \
     (received_at, entity_name, entity_id, event, payload, state, attempts, next_attempt_at) \
     VALUES ($1, $2, $3, $4, $5, 'pending', 0, $1) RETURNING id";

/// A webhook call to store.
#[derive(Debug)]
pub(super) struct NewCall {
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
    /// A SQLite file, with the process's write turn (see [`super::Store::write_turn`]).
    Sqlite {
        connection: Connection,
        write_turns: Arc<tokio::sync::Mutex<()>>,
    },
    Postgres(AnyPool),
}

/// The queue of calls waiting to be stored, and the task that writes them.
#[derive(Debug)]
pub(super) struct InboxIntake {
    queue: mpsc::Sender<Pending>,
}

impl InboxIntake {
    /// Batches for the SQLite file at `path`.
    pub(super) fn sqlite(path: &Path, write_turns: Arc<tokio::sync::Mutex<()>>) -> Result<InboxIntake, StoreError> {
        let settings = format!(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; {}",
            super::checkpoints::connection_setting()
        );
        let connection = open_file(path, BUSY_TIMEOUT, &settings)?;
        Ok(Self::start(Target::Sqlite { connection, write_turns }))
    }

    /// Batches through the pool of a Postgres database.
    pub(super) fn postgres(pool: AnyPool) -> InboxIntake {
        Self::start(Target::Postgres(pool))
    }

    fn start(target: Target) -> InboxIntake {
        let (queue, calls) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(target, calls));
        InboxIntake { queue }
    }

    /// Stores one call; answers its id once the batch holding it is committed.
    pub(super) async fn store(&self, call: NewCall) -> Result<i64, StoreError> {
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

/// Takes the batch's ids from the table's sequence, then inserts every call in one statement
/// (one round trip and one commit for the batch; the ids are known before the insert, so
/// which id is whose does not depend on the order of `RETURNING`).
async fn write_postgres(pool: &AnyPool, calls: &[NewCall]) -> Result<Vec<i64>, StoreError> {
    let mut connection = pool.acquire().await?;
    let ids: Vec<i64> = sqlx::query_scalar(
        "SELECT nextval(pg_get_serial_sequence('erp_webhook_inbox', 'id')) FROM generate_series(1, $1)",
    )
    .bind(calls.len() as i64)
    .fetch_all(&mut *connection)
    .await?;
    let rows = (0..calls.len())
        .map(|n| {
            let p = n * 6;
            format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, 'pending', 0, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 2
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut insert = sqlx::query(sql!(
        "INSERT INTO erp_webhook_inbox \
         (id, received_at, entity_name, entity_id, event, payload, state, attempts, next_attempt_at) VALUES {rows}"
    ));
    for (id, call) in ids.iter().zip(calls) {
        insert = insert
            .bind(*id)
            .bind(call.received_at)
            .bind(call.entity_name.as_str())
            .bind(call.entity_id.as_str())
            .bind(call.event.as_str())
            .bind(call.payload.as_str());
    }
    insert.execute(&mut *connection).await?;
    Ok(ids)
}
