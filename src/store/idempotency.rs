//! The `idempotency_keys` table: a retried POST with the same key and body gets the first
//! answer back instead of doing the work again.

use sqlx::Row;

use crate::store::rates::{Rated, rate_reached_on};
use crate::store::{Store, StoreError, now_ms};

/// What a key already stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    /// The key was free and is now reserved for this request.
    Reserved,
    /// The same key came with another body.
    Mismatch,
    /// The first request with this key is still running.
    InProgress,
    /// The first request finished with this answer.
    Completed { status: u16, body: String },
}

/// What became of a key offered as new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewKey {
    /// It was not stored, and is now reserved for this request.
    Reserved,
    /// It is stored already: [`Store::reserve_idempotency_key`] says what it stands for.
    Stored,
    /// The user stored as many new keys as a minute allows; retry after these seconds.
    RateReached(u64),
}

/// A reservation older than this is taken to be abandoned (its process died); the longest
/// wait a request can ask for is 100 × 60 s.
const ABANDONED_AFTER_MS: i64 = 2 * 60 * 60 * 1000;

impl Store {
    /// Reserves `key` for a request with `hash` when it is not stored and the user stored fewer
    /// than `per_minute` keys within the last minute. Looked up, counted and stored in one
    /// transaction that holds the user ([`Store::hold_user`]): keys sent at once are counted
    /// one after the other.
    pub async fn reserve_new_idempotency_key(
        &self,
        user_id: i64,
        route: &str,
        key: &str,
        hash: &str,
        per_minute: u64,
    ) -> Result<NewKey, StoreError> {
        let mut tx = self.write_transaction().await?;
        self.hold_user(&mut tx, user_id).await?;
        let stored = sqlx::query(
            "SELECT 1 AS stored FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idempotency_key = $3",
        )
        .bind(user_id)
        .bind(route)
        .bind(key)
        .fetch_optional(&mut *tx)
        .await?;
        if stored.is_some() {
            return Ok(NewKey::Stored);
        }
        if let Some(seconds) = rate_reached_on(&mut tx, Rated::IdempotencyKeys, user_id, per_minute).await? {
            return Ok(NewKey::RateReached(seconds));
        }
        sqlx::query(
            "INSERT INTO idempotency_keys (user_id, route, idempotency_key, request_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(user_id)
        .bind(route)
        .bind(key)
        .bind(hash)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(NewKey::Reserved)
    }

    /// Reserves `key` for a request with `hash`, or says what the key already stands for.
    pub async fn reserve_idempotency_key(
        &self,
        user_id: i64,
        route: &str,
        key: &str,
        hash: &str,
    ) -> Result<KeyState, StoreError> {
        let now = now_ms();
        let inserted = sqlx::query(
            "INSERT INTO idempotency_keys (user_id, route, idempotency_key, request_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(user_id)
        .bind(route)
        .bind(key)
        .bind(hash)
        .bind(now)
        .execute(self.pool())
        .await;
        match inserted {
            Ok(_) => return Ok(KeyState::Reserved),
            Err(e) => match StoreError::from(e) {
                StoreError::Duplicate(_) => {}
                other => return Err(other),
            },
        }
        let row = sqlx::query(
            "SELECT request_hash, status_code, response_body, created_at FROM idempotency_keys \
             WHERE user_id = $1 AND route = $2 AND idempotency_key = $3",
        )
        .bind(user_id)
        .bind(route)
        .bind(key)
        .fetch_one(self.pool())
        .await?;
        let stored_hash: String = row.try_get("request_hash")?;
        if stored_hash != hash {
            return Ok(KeyState::Mismatch);
        }
        let status: Option<i32> = row.try_get("status_code")?;
        let body: Option<String> = row.try_get("response_body")?;
        if let (Some(status), Some(body)) = (status, body) {
            return Ok(KeyState::Completed { status: status as u16, body });
        }
        let created_at: i64 = row.try_get("created_at")?;
        if now - created_at > ABANDONED_AFTER_MS {
            let taken = sqlx::query(
                "UPDATE idempotency_keys SET created_at = $1 \
                 WHERE user_id = $2 AND route = $3 AND idempotency_key = $4 AND created_at = $5 AND completed_at IS NULL",
            )
            .bind(now)
            .bind(user_id)
            .bind(route)
            .bind(key)
            .bind(created_at)
            .execute(self.pool())
            .await?;
            if taken.rows_affected() == 1 {
                return Ok(KeyState::Reserved);
            }
        }
        Ok(KeyState::InProgress)
    }

    pub async fn complete_idempotency_key(
        &self,
        user_id: i64,
        route: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE idempotency_keys SET status_code = $1, response_body = $2, completed_at = $3 \
             WHERE user_id = $4 AND route = $5 AND idempotency_key = $6",
        )
        .bind(i32::from(status))
        .bind(body)
        .bind(now_ms())
        .bind(user_id)
        .bind(route)
        .bind(key)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Frees a key whose request failed, so that a retry runs again.
    pub async fn release_idempotency_key(&self, user_id: i64, route: &str, key: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idempotency_key = $3 AND completed_at IS NULL")
            .bind(user_id)
            .bind(route)
            .bind(key)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
