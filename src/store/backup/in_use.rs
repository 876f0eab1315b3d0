//! Whether another process has a SQLite database open, which a restore must not replace.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// Why the database may not be replaced now.
pub(super) enum Refusal {
    /// Another connection has it open.
    InUse,
    Sqlite(rusqlite::Error),
    File(std::io::Error),
}

/// Refuses when another connection has the database open: every connection of a WAL database
/// holds a shared lock on its file, so the exclusive lock is refused at once (no busy wait).
/// Closing this connection, the last one, also folds any log a crash left into the file. A
/// file SQLite cannot read (damaged, or not a database) is what a restore is for: its locks
/// are then asked of the system, and it is replaced as it is when nobody holds one.
pub(super) fn ensure_unused(database: &Path) -> Result<(), Refusal> {
    let connection =
        Connection::open_with_flags(database, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(Refusal::Sqlite)?;
    let locked = connection
        .pragma_update(None, "locking_mode", "EXCLUSIVE")
        .and_then(|()| connection.execute_batch("BEGIN EXCLUSIVE; COMMIT;"));
    match locked {
        Ok(()) => connection.close().map_err(|(_, error)| Refusal::Sqlite(error)),
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if matches!(failure.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) =>
        {
            Err(Refusal::InUse)
        }
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if matches!(failure.code, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) =>
        {
            drop(connection);
            if locked_by_anyone(database).map_err(Refusal::File)? { Err(Refusal::InUse) } else { Ok(()) }
        }
        Err(error) => Err(Refusal::Sqlite(error)),
    }
}

/// Whether any connection, of this process or another, holds one of the locks SQLite takes on
/// the database file (its unix locking: bytes from 2^30, the pending, reserved and shared
/// ones), asked as an open file description's lock would conflict with it.
fn locked_by_anyone(database: &Path) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    const PENDING_BYTE: libc::off_t = 0x4000_0000;
    const LOCK_BYTES: libc::off_t = 2 + 510;
    let file = std::fs::File::open(database)?;
    // SAFETY: a zeroed `flock` is a valid value; it is filled in below and only read after.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = PENDING_BYTE;
    lock.l_len = LOCK_BYTES;
    // SAFETY: `file` is open for the call and `lock` a valid `flock` it writes into.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &raw mut lock) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
}
