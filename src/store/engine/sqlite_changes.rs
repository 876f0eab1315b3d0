//! Whether a SQLite database file changed, by any connection of any process, since this
//! instance last asked: what lets the record cache ([`super::record_cache`]) serve SQLite too.
//!
//! Postgres tells every instance of a change (`LISTEN`); SQLite tells no one, and other
//! processes may write the same file (the CLI's workers, a second instance, a statement run by
//! hand). SQLite's `PRAGMA data_version` answers a different number on a connection whenever
//! another connection committed since that connection last asked. One connection of our own
//! asks before every cache lookup; when the number moved, everything cached is forgotten
//! before the lookup. The pragma opens a read transaction on the write-ahead log's index and
//! reads no page, so it costs far less than the read it spares (`cargo xtask bench --scenario
//! list`, bench/HISTORY.md).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::Connection;

use super::sqlite_reads::open_file;
use crate::store::error::StoreError;

/// The connection that asks, with the number it answered last.
pub(in crate::store) struct SqliteChanges {
    watch: Mutex<(Connection, Option<i64>)>,
}

impl std::fmt::Debug for SqliteChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteChanges")
    }
}

impl SqliteChanges {
    pub(in crate::store) fn open(path: &Path) -> Result<SqliteChanges, StoreError> {
        let connection = open_file(path, Duration::ZERO, "PRAGMA query_only = ON;")?;
        Ok(SqliteChanges { watch: Mutex::new((connection, None)) })
    }

    /// `Some(true)` when another connection committed since the last call (and on the first
    /// call), `Some(false)` when nothing did, `None` when SQLite cannot tell now (the file is
    /// locked in exclusive mode, for one): then nothing read may be trusted to stay true.
    pub(in crate::store) fn changed(&self) -> Option<bool> {
        // The pair is replaced whole or not at all, so a poisoned lock is taken as it is.
        let mut watch = self.watch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (connection, seen) = &mut *watch;
        let version = connection
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get::<_, i64>(0)));
        match version {
            Ok(version) => Some(seen.replace(version) != Some(version)),
            Err(_) => {
                *seen = None;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_by_any_other_connection_is_seen_once() {
        let dir = std::env::temp_dir().join(format!("changes-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("changes.db");
        let writer = Connection::open(&path).unwrap();
        writer.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);").unwrap();
        let changes = SqliteChanges::open(&path).unwrap();
        assert_eq!(changes.changed(), Some(true), "the first call knows nothing before it");
        assert_eq!(changes.changed(), Some(false));
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert_eq!(changes.changed(), Some(true));
        assert_eq!(changes.changed(), Some(false));
        let other = Connection::open(&path).unwrap();
        other.execute("INSERT INTO t VALUES (2)", []).unwrap();
        assert_eq!(changes.changed(), Some(true));
        other.execute_batch("BEGIN; INSERT INTO t VALUES (3); ROLLBACK;").unwrap();
        assert_eq!(changes.changed(), Some(false), "a rollback changes nothing");
        drop((writer, other, changes));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
