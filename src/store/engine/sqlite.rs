//! What SQLite needs beside the pool: one writer at a time in this process (the write turn)
//! and, for a database file, the machinery that works on the file directly.

use std::sync::Arc;

use sqlx::AnyPool;

use super::checkpoints::Checkpoints;
use super::inbox_intake::InboxIntake;
use super::log_sync::LogSync;
use super::pool;
use super::record_cache::RecordCache;
use super::request_connections::RequestConnections;
use super::sqlite_changes::SqliteChanges;
use super::sqlite_reads::SqliteReads;
use super::sqlite_sync_writes::SqliteSyncWrites;
use crate::store::dialect::Dialect;
use crate::store::error::StoreError;

/// Pool connections of a database file, and the request connections among them at most.
const POOL_CONNECTIONS: u32 = 8;
const REQUEST_CONNECTIONS: usize = 4;

#[derive(Debug)]
pub(in crate::store) struct SqliteEngine {
    /// Taken before a write (see [`crate::store::Store::write_turn`]).
    pub(in crate::store) write_turns: Arc<tokio::sync::Mutex<()>>,
    /// `None` for an in-memory database, which lives and dies with the pool's one connection.
    pub(in crate::store) file: Option<SqliteFile>,
}

/// The machinery of a SQLite database file.
#[derive(Debug)]
pub(in crate::store) struct SqliteFile {
    /// For the hot path's statements (see [`super::request_connections`]).
    pub(in crate::store) request_connections: RequestConnections,
    /// The hot path's reads, run in place (see [`super::sqlite_reads`]).
    pub(in crate::store) reads: Arc<SqliteReads>,
    /// Field-report records and pages kept in memory (see [`super::record_cache`]), true
    /// while [`SqliteFile::changes`] says the file did not change.
    pub(in crate::store) record_cache: RecordCache,
    /// Whether any connection changed the file (see [`super::sqlite_changes`]).
    pub(in crate::store) changes: SqliteChanges,
    /// Webhook calls stored in batches (see [`super::inbox_intake`]).
    pub(in crate::store) inbox_intake: InboxIntake,
    /// The connection that writes a sync's batches (see [`super::sqlite_sync_writes`]).
    pub(in crate::store) sync_writes: SqliteSyncWrites,
    /// The thread that checkpoints the write-ahead log (see [`super::checkpoints`]), which
    /// stops with the last clone of the store.
    #[cfg_attr(not(test), expect(dead_code, reason = "held for its Drop"))]
    pub(in crate::store) checkpoints: Checkpoints,
    /// Syncs the write-ahead log for an answer that must not outlive a crash of the machine
    /// (see [`super::log_sync`]).
    pub(in crate::store) log_sync: LogSync,
}

impl SqliteEngine {
    /// Opens the pool (creating the file and its folder on first start) and, for a file, the
    /// machinery beside it.
    pub(super) async fn open(url: &str) -> Result<(AnyPool, SqliteEngine), StoreError> {
        let write_turns = Arc::new(tokio::sync::Mutex::new(()));
        if url.contains(":memory:") {
            let (pool, _) = pool::open(url, Dialect::Sqlite, 1, true).await?;
            return Ok((pool, SqliteEngine { write_turns, file: None }));
        }
        let url = pool::sqlite_url_creating_file(url)?;
        let (pool, options) = pool::open(&url, Dialect::Sqlite, POOL_CONNECTIONS, false).await?;
        let request_connections = RequestConnections::new(options, Dialect::Sqlite, REQUEST_CONNECTIONS);
        let path = pool::sqlite_file(&url);
        let inbox_intake = InboxIntake::sqlite(&path, write_turns.clone())?;
        let checkpoints = Checkpoints::start(&path)?;
        let sync_writes = SqliteSyncWrites::new(&path, write_turns.clone());
        let changes = SqliteChanges::open(&path)?;
        let record_cache = RecordCache::default();
        record_cache.set_listening(true);
        let log_sync = LogSync::new(&path);
        let reads = Arc::new(SqliteReads::open(path)?);
        let file = SqliteFile {
            request_connections,
            reads,
            record_cache,
            changes,
            inbox_intake,
            sync_writes,
            checkpoints,
            log_sync,
        };
        Ok((pool, SqliteEngine { write_turns, file: Some(file) }))
    }

    pub(super) async fn close(&self) {
        if let Some(file) = &self.file {
            file.request_connections.close().await;
            file.sync_writes.close();
        }
    }
}
