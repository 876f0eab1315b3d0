//! SQLite reads on a request's hot path (the token check, a record, a page of records), run
//! on the thread of the request that needs them.
//!
//! sqlx runs every SQLite connection on a thread of its own: each statement is sent to that
//! thread and its rows are sent back, two thread wake-ups per statement. `cargo xtask bench
//! --scenario auth-read` showed those hand-offs (the scheduler's task switches and wake-ups)
//! taking about a quarter of the service's CPU, more than SQLite itself. These reads take
//! microseconds, so they run in place, on connections of their own kept here.
//!
//! A read never sleeps on a request's thread. In WAL mode a writer does not block readers. In
//! the rare cases where SQLite still answers "busy" (another process holds the database in
//! exclusive mode, or a WAL is being recovered), the read runs again on a blocking thread that
//! waits out the lock for as long as sqlx's connections would ([`BUSY_TIMEOUT`]). Reads that
//! may walk far (a deep page) go to a blocking thread from the start ([`SqliteReads::run_aside`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::store::error::StoreError;

/// How long a read retried on a blocking thread waits for a lock; sqlx's connections use the
/// same (`PRAGMA busy_timeout = 5000`).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle connections kept; more are opened when more reads run at once (they only can on
/// blocking threads) and closed when they come back.
const MAX_IDLE: usize = 8;

/// The read connections of one SQLite database file.
pub(in crate::store) struct SqliteReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl std::fmt::Debug for SqliteReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteReads").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteReads {
    /// Read connections to the database file at `path`, which must exist (the pool creates
    /// and migrates it first). The first connection is opened here, so that a path SQLite
    /// cannot open fails at start.
    pub(in crate::store) fn open(path: PathBuf) -> Result<SqliteReads, StoreError> {
        let reads = SqliteReads { path, idle: Mutex::new(Vec::new()) };
        let first = reads.connect()?;
        reads.give_back(first);
        Ok(reads)
    }

    /// Runs `read` on this thread; when SQLite answers "busy", again on a blocking thread that
    /// waits for the lock.
    pub(in crate::store) async fn run<T, F>(self: &Arc<Self>, read: F) -> Result<T, StoreError>
    where
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let connection = self.take()?;
        match read(&connection) {
            Err(error) if is_busy(&error) => self.run_waiting(connection, read).await,
            result => {
                self.give_back(connection);
                result.map_err(store_error)
            }
        }
    }

    /// Runs `read` on a blocking thread: for reads that may take long.
    pub(in crate::store) async fn run_aside<T, F>(self: &Arc<Self>, read: F) -> Result<T, StoreError>
    where
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let connection = self.take()?;
        self.run_waiting(connection, read).await
    }

    /// Runs `read` on a blocking thread with the busy timeout set.
    async fn run_waiting<T, F>(self: &Arc<Self>, connection: Connection, read: F) -> Result<T, StoreError>
    where
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let reads = self.clone();
        let waited = tokio::task::spawn_blocking(move || {
            connection.busy_timeout(BUSY_TIMEOUT)?;
            let result = read(&connection);
            connection.busy_timeout(Duration::ZERO)?;
            reads.give_back(connection);
            result
        })
        .await
        .map_err(|e| StoreError::Query(format!("a database read ended abnormally: {e}")))?;
        waited.map_err(store_error)
    }

    fn take(&self) -> Result<Connection, StoreError> {
        match self.idle.lock().expect("idle read connections lock").pop() {
            Some(connection) => Ok(connection),
            None => self.connect(),
        }
    }

    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.lock().expect("idle read connections lock");
        if idle.len() < MAX_IDLE {
            idle.push(connection);
        }
    }

    /// A connection that never writes and never waits for a lock (busy timeout 0).
    fn connect(&self) -> Result<Connection, StoreError> {
        open_file(&self.path, Duration::ZERO, "PRAGMA query_only = ON;")
    }
}

/// A connection of our own to the SQLite file at `path`, with this busy timeout and these
/// session settings.
pub(in crate::store) fn open_file(
    path: &Path,
    busy_timeout: Duration,
    settings: &str,
) -> Result<Connection, StoreError> {
    let open = || {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        connection.busy_timeout(busy_timeout)?;
        connection.execute_batch(settings)?;
        Ok::<_, rusqlite::Error>(connection)
    };
    open().map_err(|e| StoreError::Unavailable(format!("cannot open {}: {e}", path.display())))
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// The store's error for a failed SQLite statement.
pub(in crate::store) fn store_error(error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::NotADatabase
            | ErrorCode::SystemIoFailure
            | ErrorCode::DatabaseCorrupt,
        ) => StoreError::Unavailable(error.to_string()),
        _ => StoreError::Query(error.to_string()),
    }
}

#[cfg(test)]
mod tests;
