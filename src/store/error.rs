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
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Io(_) | sqlx::Error::Tls(_) => {
                failures::connection_failed();
                StoreError::Unavailable(error.to_string())
            }
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => StoreError::Unavailable(error.to_string()),
            sqlx::Error::Protocol(_) => {
                failures::connection_failed();
                StoreError::Query(error.to_string())
            }
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Duplicate(db.message().to_string()),
            _ => StoreError::Query(error.to_string()),
        }
    }
}
