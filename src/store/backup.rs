//! Backups of the SQLite database file and their restore.
//!
//! A backup is taken while the service runs and writes: `VACUUM INTO` copies the database as
//! of one read transaction (a consistent snapshot that holds up no writer: the file is in WAL
//! mode) into a new file beside the target, which is checked and then renamed into place, so a
//! file at the target's name is always a whole backup. That new file is locked while it is
//! written: a second backup to the same name is refused rather than removing it. A restore
//! copies a checked backup over the database file, but only when no process has that file
//! open: a running service or command holds a shared lock on it as long as it has a
//! connection, and a connection that asks for the exclusive lock is refused at once. The file
//! it replaces is kept beside it, and the copy takes that file's owner and mode, so that a
//! restore run as root leaves a database the service's user can open.
//!
//! Postgres is backed up with its own tools (`pg_dump`, `pg_restore`); the commands are in
//! docs/operations.md, "Backups", and the error below names them.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::DatabaseUrl;
use super::engine;

/// Why a backup or a restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(
        "DATABASE_URL is a Postgres database: back it up with `pg_dump --format=custom --file=PATH \"$DATABASE_URL\"` \
         and restore it into an empty database with `pg_restore --no-owner --exit-on-error --single-transaction \
         --dbname=\"$DATABASE_URL\" PATH` (docs/operations.md, \"Backups\")"
    )]
    Postgres,
    #[error("DATABASE_URL is an in-memory database: there is nothing to back up or restore")]
    InMemory,
    #[error("there is no database at {0}")]
    NoDatabase(PathBuf),
    #[error("{0} exists already: a backup never overwrites a file; choose another name")]
    TargetExists(PathBuf),
    #[error("{0} is being written by another backup or restore that is under way: wait for it to end")]
    UnderWay(PathBuf),
    #[error(
        "the database {0} is in use: a running service or command has it open; stop every instance and command \
         that uses it, then restore again"
    )]
    InUse(PathBuf),
    #[error("{path} is not a backup of this service's database: {reason}")]
    NotABackup { path: PathBuf, reason: String },
    #[error(
        "{path} was taken by a newer release (it has migration {backup}, this release knows up to {known}): \
         restore it with that release"
    )]
    NewerRelease { path: PathBuf, backup: i64, known: i64 },
    #[error(
        "the restored {path} cannot get the owner of the database it replaces (uid {uid}, gid {gid}): {error}; \
         restore as root or as that user"
    )]
    Owner { path: PathBuf, uid: u32, gid: u32, error: std::io::Error },
    // The causes are not `source`s: the message says them already, and the command line
    // prints an error with its sources, which would say them twice.
    #[error("{path}: {error}")]
    File { path: PathBuf, error: std::io::Error },
    #[error("{path}: SQLite: {error}")]
    Sqlite { path: PathBuf, error: rusqlite::Error },
}

/// What a backup wrote.
#[derive(Debug)]
pub struct Backup {
    pub path: PathBuf,
    pub bytes: u64,
    /// The newest migration the copied database had.
    pub migration: i64,
}

/// What a restore did.
#[derive(Debug)]
pub struct Restore {
    pub database: PathBuf,
    /// The newest migration of the backup; `serve` and `migrate` apply newer ones.
    pub migration: i64,
    /// The newest migration this release knows.
    pub known: i64,
    /// Where the database the restore replaced was moved, if there was one.
    pub set_aside: Option<PathBuf>,
    /// Why the change feed's numbers of the replaced database could not be carried forward
    /// (it could not be read: the restore goes on, as over a damaged database it must).
    pub feed_not_carried: Option<String>,
}

/// Copies the database of `url` into a new file `to`, while other processes read and write it.
pub fn backup(url: &DatabaseUrl, to: &Path) -> Result<Backup, BackupError> {
    let database = database_file(url)?;
    if !database.is_file() {
        return Err(BackupError::NoDatabase(database));
    }
    if to.exists() {
        return Err(BackupError::TargetExists(to.to_path_buf()));
    }
    let partial = beside(to, ".partial");
    let _claim = claim(&partial, to)?;
    // Again once the partial file is ours: a backup to the same name may have ended meanwhile.
    if to.exists() {
        let _ = std::fs::remove_file(&partial);
        return Err(BackupError::TargetExists(to.to_path_buf()));
    }
    // Every failure from here on removes the partial file, opening the database included.
    let copied = copy_into(&database, OpenFlags::SQLITE_OPEN_READ_WRITE, &partial, to)
        .and_then(|()| check(&partial))
        .and_then(|migration| sync_file(&partial).map(|()| migration));
    let migration = match copied {
        Ok(migration) => migration,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    rename(&partial, to)?;
    let bytes = std::fs::metadata(to).map_err(|error| BackupError::File { path: to.to_path_buf(), error })?.len();
    Ok(Backup { path: to.to_path_buf(), bytes, migration })
}

/// Copies `database` (with its write-ahead log), opened with `flags`, into the new empty file
/// `partial` (`to` once checked) by `VACUUM INTO`.
fn copy_into(database: &Path, flags: OpenFlags, partial: &Path, to: &Path) -> Result<(), BackupError> {
    let sqlite = |error| BackupError::Sqlite { path: database.to_path_buf(), error };
    let connection = Connection::open_with_flags(database, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(sqlite)?;
    connection.busy_timeout(std::time::Duration::from_secs(30)).map_err(sqlite)?;
    connection
        .execute("VACUUM INTO ?1", [partial.to_string_lossy().as_ref()])
        // A full disk is the backup's: the database is only read.
        .map_err(|error| match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => BackupError::Sqlite { path: to.to_path_buf(), error },
            _ => sqlite(error),
        })
        .map(drop)
}

/// Replaces the database of `url` with the backup `from`, refusing while anyone has the
/// database open. The database it replaces is renamed to `<file>.before-restore-<time>` (or,
/// when an earlier restore took that name, a free one beside it).
pub fn restore(url: &DatabaseUrl, from: &Path) -> Result<Restore, BackupError> {
    let database = database_file(url)?;
    if !from.is_file() {
        return Err(BackupError::NoDatabase(from.to_path_buf()));
    }
    let migration = check(from)?;
    let known = known_migration();
    if migration > known {
        return Err(BackupError::NewerRelease { path: from.to_path_buf(), backup: migration, known });
    }
    // On a new host the database's folder is not there yet; `serve` would make it too.
    if let Some(folder) = database.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|error| BackupError::File { path: folder.to_path_buf(), error })?;
    }
    let partial = engine::restoring_copy(&database);
    let _claim = claim(&partial, &partial)?;
    // Copied through SQLite, as checked: with the write-ahead log a copy of a database may
    // have beside it (a snapshot of a volume), which a copy of the file alone would lose.
    let mut feed_not_carried = None;
    let copied = copy_into(from, OpenFlags::SQLITE_OPEN_READ_ONLY, &partial, &database)
        .and_then(|()| begin_feed_history(&partial))
        .and_then(|()| carry_feed_forward(&database, &partial))
        .map(|not_carried| feed_not_carried = not_carried)
        .and_then(|()| owned_as_replaced(&partial, &database))
        .and_then(|()| sync_file(&partial))
        .and_then(|()| set_aside(&database));
    let set_aside = match copied {
        Ok(set_aside) => set_aside,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    rename(&partial, &database)?;
    Ok(Restore { database, migration, known, set_aside, feed_not_carried })
}

/// Carries the change feed's numbers of the `replaced` database (when there is one) into the
/// restored `copy`. A consumer may follow a set to a position the replaced database answered
/// after the backup was taken: its copy holds changes the restored database lacks, and the
/// restored database would number other changes with the same numbers again, so that the
/// position would be followed and the copy silently differ from the mirror. Each set whose
/// numbers the replaced database took further than the backup goes on after them, with every
/// position up to them refused (410 `cursor_expired`, as for removals no longer kept): its
/// consumers copy it again. A database older than the feed (migration 0029) has nothing to
/// carry. A replaced database that cannot be read is no reason to refuse the restore (a damaged
/// one is what a restore is for): the answer says why nothing was carried.
fn carry_feed_forward(replaced: &Path, copy: &Path) -> Result<Option<String>, BackupError> {
    if !replaced.is_file() {
        return Ok(None);
    }
    let answered = match feed_numbers(replaced) {
        Ok(answered) => answered,
        Err(error) => return Ok(Some(error.to_string())),
    };
    let new = Connection::open(copy).map_err(|error| BackupError::Sqlite { path: copy.to_path_buf(), error })?;
    let carried = (|| -> rusqlite::Result<()> {
        if !has_feed(&new)? {
            return Ok(());
        }
        for (mirror, entity, last) in answered {
            new.execute(
                "INSERT INTO mirror_feed (mirror, entity, last_seq, expired_through) VALUES (?1, ?2, ?3 + 1, ?3 + 1) \
                 ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = excluded.last_seq, \
                 expired_through = excluded.expired_through WHERE mirror_feed.last_seq < ?3",
                rusqlite::params![mirror, entity, last],
            )?;
        }
        Ok(())
    })();
    carried.map_err(|error| BackupError::Sqlite { path: copy.to_path_buf(), error })?;
    Ok(None)
}

/// Gives the restored `copy` a feed history of its own (migration 0038): it numbers its
/// changes again after the backup's, so a position answered by any other database, the one it
/// replaces included (or by none, on a new host), is refused whatever its number.
fn begin_feed_history(copy: &Path) -> Result<(), BackupError> {
    let sqlite = |error| BackupError::Sqlite { path: copy.to_path_buf(), error };
    let new = Connection::open(copy).map_err(sqlite)?;
    let has_history: bool = new
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mirror_feed_history'",
            [],
            |row| row.get::<_, i64>(0).map(|n| n > 0),
        )
        .map_err(sqlite)?;
    if has_history {
        new.execute(
            "UPDATE mirror_feed_history SET legacy_positions = 0, \
             generation = 100000 + (generation - 100000 + 1 + abs(random() % 899999)) % 900000",
            [],
        )
        .map_err(sqlite)?;
    }
    Ok(())
}

/// The last number of each set's change feed in the database at `path`; none when it is older
/// than the feed.
fn feed_numbers(path: &Path) -> rusqlite::Result<Vec<(String, String, i64)>> {
    let connection = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    if !has_feed(&connection)? {
        return Ok(Vec::new());
    }
    let mut statement = connection.prepare("SELECT mirror, entity, last_seq FROM mirror_feed")?;
    statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect()
}

/// Whether the database has the change feed's table (migration 0029 and later).
fn has_feed(connection: &Connection) -> rusqlite::Result<bool> {
    connection.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'mirror_feed'",
        [],
        |row| row.get::<_, i64>(0).map(|n| n > 0),
    )
}

/// Gives the restored copy the owner and mode of the database it replaces, or the owner of the
/// database's folder when there is none: a restore run as root for a service that runs as
/// another user must leave a file that user can open (the copy is root's, with the backup's
/// mode 0600).
fn owned_as_replaced(copy: &Path, database: &Path) -> Result<(), BackupError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    fn file(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
        move |error| BackupError::File { path: path.to_path_buf(), error }
    }
    let (owner, mode) = match std::fs::metadata(database) {
        Ok(replaced) => {
            let mode = replaced.permissions().mode() & 0o7777;
            (replaced, Some(mode))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let folder = database.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            (std::fs::metadata(folder).map_err(file(folder))?, None)
        }
        Err(error) => return Err(file(database)(error)),
    };
    let current = std::fs::metadata(copy).map_err(file(copy))?;
    let (uid, gid) = (owner.uid(), owner.gid());
    if (current.uid(), current.gid()) != (uid, gid) {
        std::os::unix::fs::chown(copy, Some(uid), Some(gid)).map_err(|error| BackupError::Owner {
            path: database.to_path_buf(),
            uid,
            gid,
            error,
        })?;
    }
    if let Some(mode) = mode {
        std::fs::set_permissions(copy, std::fs::Permissions::from_mode(mode)).map_err(file(copy))?;
    }
    Ok(())
}

/// The file of a SQLite `DATABASE_URL`.
fn database_file(url: &DatabaseUrl) -> Result<PathBuf, BackupError> {
    if url.is_postgres() {
        return Err(BackupError::Postgres);
    }
    if url.expose().contains(":memory:") {
        return Err(BackupError::InMemory);
    }
    Ok(engine::sqlite_file(url.expose()))
}

/// Checks that `path` is a whole SQLite database with the service's migrations, and answers
/// its newest migration.
fn check(path: &Path) -> Result<i64, BackupError> {
    let not_a_backup = |reason: String| BackupError::NotABackup { path: path.to_path_buf(), reason };
    let connection =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| not_a_backup(e.to_string()))?;
    let verdict: String =
        connection.query_row("PRAGMA quick_check", [], |row| row.get(0)).map_err(|e| not_a_backup(e.to_string()))?;
    if verdict != "ok" {
        return Err(not_a_backup(format!("the integrity check says {verdict}")));
    }
    let applied = (|| -> rusqlite::Result<Vec<(i64, Vec<u8>)>> {
        let mut rows = connection.prepare("SELECT version, checksum FROM _sqlx_migrations WHERE success")?;
        rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
    })()
    .map_err(|e| not_a_backup(format!("no migrations table ({e})")))?;
    own_migrations(&applied).map_err(not_a_backup)
}

/// The newest of the `applied` migrations (version, checksum), once they are this service's:
/// its first migration and, up to the newest this release knows, each one as this release has
/// it (`serve` refuses any other; newer ones are a newer release's, see [`restore`]).
fn own_migrations(applied: &[(i64, Vec<u8>)]) -> Result<i64, String> {
    let ours = sqlx::migrate!("migrations/sqlite");
    let first = ours.iter().map(|m| m.version).min().unwrap_or(0);
    if !applied.iter().any(|(version, _)| *version == first) {
        return Err(format!("it lacks this service's first migration ({first})"));
    }
    for (version, checksum) in applied.iter().filter(|(version, _)| *version <= known_migration()) {
        if !ours.iter().any(|m| m.version == *version && *m.checksum == **checksum) {
            return Err(format!("its migration {version} is not this service's"));
        }
    }
    Ok(applied.iter().map(|(version, _)| *version).max().unwrap_or(first))
}

/// The newest migration this release applies to SQLite.
fn known_migration() -> i64 {
    sqlx::migrate!("migrations/sqlite").iter().map(|m| m.version).max().unwrap_or(0)
}

/// Moves the database aside, once no process has it open. Checking that folded any log a crash
/// left into the file, so what is left beside it is the log's index (`-shm`), which is removed;
/// a log that is still there goes with the database, under the name SQLite reads it by
/// (`<moved>-wal`).
fn set_aside(database: &Path) -> Result<Option<PathBuf>, BackupError> {
    if !database.exists() {
        return Ok(None);
    }
    in_use::ensure_unused(database).map_err(|refusal| match refusal {
        in_use::Refusal::InUse => BackupError::InUse(database.to_path_buf()),
        in_use::Refusal::Sqlite(error) => BackupError::Sqlite { path: database.to_path_buf(), error },
        in_use::Refusal::File(error) => BackupError::File { path: database.to_path_buf(), error },
    })?;
    let moved =
        free_name(beside(database, &format!(".before-restore-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))));
    // The log first: a stop between the renames never leaves it beside the restored database.
    let log = beside(database, "-wal");
    if log.exists() {
        rename(&log, &beside(&moved, "-wal"))?;
    }
    remove_if_there(&beside(database, "-shm"))?;
    rename(database, &moved)?;
    Ok(Some(moved))
}

/// `path`, or when it (or its log) is taken, as by an earlier restore in the same second, the
/// first of `path-2`, `path-3`, ... that is not: a set-aside database is never replaced.
fn free_name(path: PathBuf) -> PathBuf {
    let taken = |path: &Path| path.exists() || beside(path, "-wal").exists();
    (1..).map(|n| if n == 1 { path.clone() } else { beside(&path, &format!("-{n}")) }).find(|p| !taken(p)).unwrap()
}

/// `path` with `suffix` added to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

fn remove_if_there(path: &Path) -> Result<(), BackupError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(BackupError::File { path: path.to_path_buf(), error })
        }
        _ => Ok(()),
    }
}

/// Makes the new empty file `path` (a backup's or a restore's work in progress) this process's
/// until the answer is dropped: the file is locked, so a second backup to the same name is
/// refused instead of removing the first one's file under it, and a file left by a command
/// that stopped (its lock went with it) is replaced. A failure is named by `shown` (a backup's
/// target: its folder is the operator's).
fn claim(path: &Path, shown: &Path) -> Result<std::fs::File, BackupError> {
    let failed = |error| BackupError::File { path: shown.to_path_buf(), error };
    loop {
        let (file, created) = match create_private(path) {
            Ok(file) => (file, true),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                match std::fs::OpenOptions::new().write(true).open(path) {
                    Ok(file) => (file, false),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(error) => return Err(failed(error)),
                }
            }
            Err(error) => return Err(failed(error)),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(BackupError::UnderWay(path.to_path_buf())),
            Err(std::fs::TryLockError::Error(error)) => return Err(failed(error)),
        }
        // Between opening and locking, the file may have been found stale and replaced by
        // another command: only the file the name still leads to counts.
        if !names(path, &file).map_err(failed)? {
            continue;
        }
        if created {
            return Ok(file);
        }
        // Unlocked: what a command that stopped left. Removed while locked, so that nobody
        // else takes it for theirs meanwhile.
        remove_if_there(path)?;
    }
}

/// Whether `path` leads to the open `file`.
fn names(path: &Path, file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(named) => Ok((named.dev(), named.ino()) == (open.dev(), open.ino())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// A new empty file only its owner may read and write: VACUUM INTO fills an empty file, and a
/// backup holds password hashes, token digests and signing secrets.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

fn sync_file(path: &Path) -> Result<(), BackupError> {
    std::fs::File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|error| BackupError::File { path: path.to_path_buf(), error })
}

fn rename(from: &Path, to: &Path) -> Result<(), BackupError> {
    std::fs::rename(from, to).map_err(|error| BackupError::File { path: to.to_path_buf(), error })?;
    // The rename lasts once the folder is on disk.
    if let Some(folder) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = std::fs::File::open(folder).and_then(|f| f.sync_all());
    }
    Ok(())
}

mod in_use;

#[cfg(test)]
mod tests;
