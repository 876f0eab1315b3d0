//! The store's one error type.

use super::engine::failures;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("unique constraint violated: {0}")]
    Duplicate(String),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("database error: {0}")]
    Query(String),
    /// A value the database cannot hold: a NUL character (U+0000) in a text bound on Postgres
    /// (`character_not_in_repertoire`, 22021), from a path, query or body (SQLite's text
    /// holds it).
    #[error("a text the database cannot hold: {0}")]
    Unstorable(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            // A protocol error is a stream that ended or garbled mid-message, most often a
            // connection closed while it was opened: sqlx asks for TLS first and reads the
            // silence of a closed socket as the answer `0x00`. A new connection may succeed.
            sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => {
                failures::connection_failed();
                StoreError::Unavailable(error.to_string())
            }
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => StoreError::Unavailable(error.to_string()),
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Duplicate(db.message().to_string()),
            // The server ended the session (a restart, a failover, `pg_terminate_backend`): the
            // connections open now are tested before their next use, as after an I/O failure.
            sqlx::Error::Database(db) if db.code().is_some_and(|code| is_session_ended(&code)) => {
                failures::connection_failed();
                StoreError::Unavailable(format!("the database ended the session: {}", db.message()))
            }
            sqlx::Error::Database(db) if db.code().as_deref() == Some("22021") => {
                StoreError::Unstorable(db.message().to_string())
            }
            sqlx::Error::Database(db) if db.code().is_some_and(|code| is_busy(&code)) => {
                StoreError::Unavailable(format!("the database is busy: {}", db.message()))
            }
            _ => StoreError::Query(error.to_string()),
        }
    }
}

/// Whether a database error code says the database is busy, not wrong: SQLite's `BUSY` and
/// `LOCKED` (with their extended codes, at most four digits: the primary code is the low
/// byte), Postgres'
/// `lock_not_available` (55P03), `query_canceled` by a statement time-out (57014) and
/// `read_only_sql_transaction` (25006). Such a statement may succeed when sent again.
fn is_busy(code: &str) -> bool {
    // A SQLSTATE has five characters, digits too ("25006"); SQLite's codes have at most four.
    if code.len() == 5 {
        matches!(code, "55P03" | "57014" | "25006")
    } else {
        code.parse::<i32>().is_ok_and(|sqlite| matches!(sqlite & 0xff, 5 | 6))
    }
}

/// Whether a Postgres error code says the server ended the session or refuses sessions for
/// now: the connection exceptions (class 08) and `admin_shutdown` (57P01), `crash_shutdown`
/// (57P02) and `cannot_connect_now` (57P03). A new session may succeed.
fn is_session_ended(code: &str) -> bool {
    code.len() == 5 && (code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ended_sessions_are_told_from_other_errors() {
        for ended in ["57P01", "57P02", "57P03", "08006", "08003"] {
            assert!(super::is_session_ended(ended), "{ended}");
        }
        for other in ["57014", "25006", "23505", "5", "0800"] {
            assert!(!super::is_session_ended(other), "{other}");
        }
    }

    #[test]
    fn busy_and_locked_codes_are_told_from_others() {
        for busy in ["5", "6", "261", "517", "262", "55P03", "57014", "25006"] {
            assert!(super::is_busy(busy), "{busy}");
        }
        for other in ["1", "19", "2067", "23505", "42P01"] {
            assert!(!super::is_busy(other), "{other}");
        }
    }
}
