//! The sqlx pool of either database, and the session settings of every connection the store
//! opens (the pool's and those of the writers beside it).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, AnyPool, Connection, Executor};

use super::sqlite_reads::open_file;
use super::{checkpoints, failures};
use crate::store::dialect::Dialect;
use crate::store::error::StoreError;

/// Opens the pool on `url` with at most `max_connections`; connections of an in-memory
/// database are never closed for age (the database would go with them).
pub(super) async fn open(
    url: &str,
    dialect: Dialect,
    max_connections: u32,
    in_memory: bool,
) -> Result<(AnyPool, AnyConnectOptions), StoreError> {
    let options = AnyConnectOptions::from_str(url).map_err(|e| StoreError::Unavailable(e.to_string()))?;
    let (idle_timeout, max_lifetime) =
        if in_memory { (None, None) } else { (Some(Duration::from_secs(600)), Some(Duration::from_secs(1800))) };
    let pool = AnyPoolOptions::new()
        .max_connections(max_connections)
        .idle_timeout(idle_timeout)
        .max_lifetime(max_lifetime)
        .acquire_timeout(Duration::from_secs(5))
        // sqlx tests every connection when it comes back; testing it again on the way out
        // doubled the round trips of every statement. Only a connection that sat idle long
        // enough for the server to have dropped it, or that was open when a connection
        // last failed, is tested first.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if failures::needs_test(meta.idle_for, meta.age) {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .after_connect(move |conn, _meta| Box::pin(prepare_connection(conn, dialect)))
        .connect_with(options.clone())
        .await;
    match pool {
        Ok(pool) => Ok((pool, options)),
        // The pool retries a connection that fails (a refused one, a file that is not a
        // database) until its time-out and then says only that it timed out.
        Err(sqlx::Error::PoolTimedOut) => Err(first_connection_error(&options, dialect).await),
        Err(error) => Err(error.into()),
    }
}

/// Why a connection to `options` cannot be opened and prepared, found with one attempt of our
/// own after the pool timed out. sqlx's errors name neither the URL nor its password.
async fn first_connection_error(options: &AnyConnectOptions, dialect: Dialect) -> StoreError {
    let attempt = async {
        let mut conn = AnyConnection::connect_with(options).await?;
        prepare_connection(&mut conn, dialect).await?;
        conn.close().await
    };
    match tokio::time::timeout(Duration::from_secs(5), attempt).await {
        Ok(Err(error)) => StoreError::Unavailable(format!("cannot open a connection: {error}")),
        Ok(Ok(())) => StoreError::Unavailable("no connection was free within 5 s".to_string()),
        Err(_) => StoreError::Unavailable("no connection was opened within 5 s".to_string()),
    }
}

/// The session settings of every Postgres connection of the service's (this pool's and
/// [`super::sync_writers`]'): it tells other instances of its mirror writes itself, after each
/// commit, and writes each record's `ExternalId` column with its document; the triggers that
/// do these for other sessions skip its own (see migrations 0012 and 0014).
pub(super) const POSTGRES_SESSION_SETTINGS: &str = "SELECT set_config('integration_service.notifies_changes', 'on', false), \
            set_config('integration_service.writes_external_id', 'on', false)";

/// The page size of SQLite files the store creates. A sync's writer spends a third of its time
/// writing log frames; larger pages mean fewer frames and headers for the same rows (see
/// bench/HISTORY.md, "SQLite page size"). An existing file keeps its size: the setting only
/// takes effect before the first table is written (docs/operations.md shows the VACUUM that
/// converts one).
pub(super) const SQLITE_PAGE_SIZE: u32 = 16_384;

/// The session settings of every SQLite connection of the store's that writes (the pool's, the
/// webhook intake's, the sync's writer) to a file of `page_size` bytes a page: commits leave
/// the log's checkpoints to the store's thread (see [`super::checkpoints`]).
pub(super) fn sqlite_write_settings(page_size: u32) -> String {
    format!("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; {}", checkpoints::connection_setting(page_size))
}

/// A writing connection of our own (beside the pool) to the SQLite file at `path`, with the
/// store's session settings.
pub(super) fn open_sqlite_writer(path: &Path, busy_timeout: Duration) -> Result<rusqlite::Connection, StoreError> {
    let connection = open_file(path, busy_timeout, "")?;
    let page_size: u32 = connection
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .map_err(|e| StoreError::Unavailable(format!("cannot read the page size of {}: {e}", path.display())))?;
    connection
        .execute_batch(&sqlite_write_settings(page_size))
        .map_err(|e| StoreError::Unavailable(format!("cannot prepare {}: {e}", path.display())))?;
    Ok(connection)
}

/// The session settings of every new connection. The page size comes first: it only counts
/// while the file is still empty, and switching to the write-ahead log writes its header.
pub(super) async fn prepare_connection(conn: &mut AnyConnection, dialect: Dialect) -> Result<(), sqlx::Error> {
    match dialect {
        Dialect::Sqlite => {
            let settings = format!(
                "PRAGMA page_size = {SQLITE_PAGE_SIZE}; PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;"
            );
            conn.execute(sqlx::AssertSqlSafe(settings)).await?;
            let page_size: i64 = sqlx::query_scalar("PRAGMA page_size").fetch_one(&mut *conn).await?;
            let page_size = u32::try_from(page_size).unwrap_or(SQLITE_PAGE_SIZE);
            conn.execute(sqlx::AssertSqlSafe(sqlite_write_settings(page_size))).await?;
        }
        Dialect::Postgres => {
            conn.execute(POSTGRES_SESSION_SETTINGS).await?;
        }
    }
    Ok(())
}

/// The file path and the query of a SQLite URL.
fn sqlite_url_parts(url: &str) -> (&str, &str) {
    let rest = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    rest.split_once('?').unwrap_or((rest, ""))
}

/// The database file of a SQLite URL (percent-decoded, as sqlx reads it).
pub(in crate::store) fn sqlite_file(url: &str) -> std::path::PathBuf {
    let path = sqlite_url_parts(url).0;
    std::path::PathBuf::from(percent_encoding::percent_decode_str(path).decode_utf8_lossy().as_ref())
}

/// Adds `mode=rwc` (create if missing) and creates the parent folder of a file database, and
/// the file itself when it is missing: readable by its owner only, as it holds password hashes
/// and secrets (SQLite gives its `-wal` and `-shm` files the database file's mode). A file that
/// exists keeps the mode its operator gave it.
pub(super) fn sqlite_url_creating_file(url: &str) -> Result<String, StoreError> {
    let (path, query) = sqlite_url_parts(url);
    let mode = query.split('&').find_map(|kv| kv.strip_prefix("mode="));
    if path.is_empty() {
        // SQLite would give each connection a temporary database of its own.
        return Err(StoreError::Unavailable(
            "the URL names no database file (sqlite:///path/to/file.db, or sqlite::memory:)".to_string(),
        ));
    }
    if path != ":memory:" {
        let file = sqlite_file(url);
        if file.is_dir() {
            return Err(StoreError::Unavailable(format!("{} is a folder, not a database file", file.display())));
        }
        refuse_unfinished_restore(&file)?;
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::Unavailable(format!("cannot create {}: {e}", parent.display())))?;
        }
        if mode.is_none_or(|mode| mode == "rwc") {
            create_owner_only(&file)?;
        }
    }
    if mode.is_some() {
        return Ok(url.to_string());
    }
    let sep = if query.is_empty() { "?" } else { "&" };
    Ok(format!("{url}{sep}mode=rwc"))
}

/// A database missing beside `<file>.restoring`: a restore stopped after setting the
/// replaced database aside and before moving the restored copy into place (or stopped while
/// copying on a new host, or runs now). Starting would create a new, empty database there and
/// serve it; the restore, run again, finishes.
fn refuse_unfinished_restore(file: &Path) -> Result<(), StoreError> {
    let restoring = restoring_copy(file);
    if file.exists() || !restoring.is_file() {
        return Ok(());
    }
    Err(StoreError::Unavailable(format!(
        "{} is missing and {} is left of a restore that did not finish (or runs now): run the restore again",
        file.display(),
        restoring.display()
    )))
}

/// Where `restore` copies a backup before moving it into the place of the database `file`.
pub(in crate::store) fn restoring_copy(file: &Path) -> std::path::PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(".restoring");
    name.into()
}

/// Creates `file` empty with mode 0600 unless it exists (SQLite takes an empty file as a new
/// database).
fn create_owner_only(file: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Unavailable(format!("cannot create {}: {e}", file.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::{sqlite_file, sqlite_url_creating_file};

    #[test]
    fn sqlite_urls_get_create_mode_once() {
        let dir = std::env::temp_dir().join(format!("store-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/db.sqlite", dir.display());
        assert_eq!(sqlite_url_creating_file(&url).unwrap(), format!("{url}?mode=rwc"));
        assert!(dir.is_dir());
        assert_eq!(sqlite_url_creating_file("sqlite::memory:?mode=ro").unwrap(), "sqlite::memory:?mode=ro");
        assert_eq!(sqlite_file(&format!("{url}?mode=rwc")), dir.join("db.sqlite"));
        assert_eq!(sqlite_file("sqlite:data/service.db"), std::path::Path::new("data/service.db"));
        // No file, or a folder, is no database.
        assert!(sqlite_url_creating_file("sqlite://").unwrap_err().to_string().contains("names no database file"));
        let folder = sqlite_url_creating_file(&format!("sqlite://{}", dir.display())).unwrap_err();
        assert!(folder.to_string().contains("is a folder"), "{folder}");
    }

    /// A restore stopped between its renames leaves no database and the restored copy beside
    /// it: a start refuses to make a new, empty database in its place.
    #[test]
    fn a_restore_that_did_not_finish_is_not_replaced_by_an_empty_database() {
        let dir = std::env::temp_dir().join(format!("store-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("db.sqlite.restoring"), b"the restored copy").unwrap();
        let refused = sqlite_url_creating_file(&format!("sqlite://{}/db.sqlite", dir.display())).unwrap_err();
        assert!(refused.to_string().contains("run the restore again"), "{refused}");
        assert!(!dir.join("db.sqlite").exists(), "no empty database was made");
        // Beside a database that is there, a restore's copy is one under way: no reason to refuse.
        std::fs::write(dir.join("other.db"), b"").unwrap();
        std::fs::write(dir.join("other.db.restoring"), b"").unwrap();
        sqlite_url_creating_file(&format!("sqlite://{}/other.db", dir.display())).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_new_database_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("store-{}", uuid::Uuid::new_v4()));
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        sqlite_url_creating_file(&format!("sqlite://{}/new%20one.db", dir.display())).unwrap();
        assert_eq!(mode(&dir.join("new one.db")), 0o600);
        // A file that exists keeps its mode.
        let existing = dir.join("existing.db");
        std::fs::write(&existing, b"").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o640)).unwrap();
        sqlite_url_creating_file(&format!("sqlite://{}", existing.display())).unwrap();
        assert_eq!(mode(&existing), 0o640);
        // A read-only URL creates nothing.
        sqlite_url_creating_file(&format!("sqlite://{}/ro.db?mode=ro", dir.display())).unwrap();
        assert!(!dir.join("ro.db").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
