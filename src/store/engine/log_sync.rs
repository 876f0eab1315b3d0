//! SQLite: the write-ahead log made durable on demand. The store's connections commit with
//! `synchronous = NORMAL`, which writes a transaction's pages to the log and does not sync it:
//! a crash of the process loses nothing, a crash of the machine may lose the last commits. A
//! change feed must not answer such a commit (a consumer past its numbers would skip the
//! changes that take them again), so it syncs the log first ([`LogSync::sync`]).
//!
//! The log is synced through a descriptor of our own: on Linux (as on the other systems the
//! service runs on) `fdatasync` writes out every page of the file that any descriptor wrote,
//! as PostgreSQL's checkpointer relies on too. Everything a reader saw is then on disk: a
//! committed transaction's pages are written to the log before its commit returns, and pages
//! read from the database file came there by a checkpoint, which in this mode syncs the log
//! before it copies it and the file before the log starts over (SQLite's `walCheckpoint`); a
//! log that is gone was checkpointed whole and removed by the last connection. It takes no
//! lock of SQLite's and holds up no writer; a log with nothing new costs one system call.

use std::path::{Path, PathBuf};

use crate::store::error::StoreError;

/// The write-ahead log of one SQLite file.
#[derive(Debug)]
pub(in crate::store) struct LogSync {
    /// `<database>-wal`, with every link resolved: the log SQLite writes beside the file.
    log: PathBuf,
}

impl LogSync {
    /// The log of the database file at `database` (which exists). SQLite writes the log beside
    /// the file a link names, so the path is resolved as it resolves it.
    pub(in crate::store) fn new(database: &Path) -> LogSync {
        let database = std::fs::canonicalize(database)
            .or_else(|_| std::path::absolute(database))
            .unwrap_or_else(|_| database.to_path_buf());
        let mut log = database.into_os_string();
        log.push("-wal");
        LogSync { log: PathBuf::from(log) }
    }

    /// Returns once every commit made before the call is on disk. The log is opened each time:
    /// SQLite removes it when its last connection closes, and makes another after.
    pub(in crate::store) async fn sync(&self) -> Result<(), StoreError> {
        let log = self.log.clone();
        let synced = tokio::task::spawn_blocking(move || match std::fs::File::open(&log) {
            Ok(file) => file.sync_data(),
            // Checkpointed whole (and the database file synced) before it was removed.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(error),
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("syncing the SQLite log stopped: {error}")))?;
        synced.map_err(|error| StoreError::Unavailable(format!("cannot sync {}: {error}", self.log.display())))
    }

    /// The log's path.
    #[cfg(test)]
    pub(in crate::store) fn path(&self) -> &Path {
        &self.log
    }
}

#[cfg(test)]
mod tests;
