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

/// Stores a key reserved for a request: `$4` its body's hash, `$5` when.
const INSERT_KEY: &str = "INSERT INTO idempotency_keys (user_id, route, idempotency_key, request_hash, created_at) \
     VALUES ($1, $2, $3, $4, $5)";

/// A statement on one key, which a user's route and key name: they are its `$1`, `$2` and `$3`.
fn on_key(
    statement: &'static str,
    user_id: i64,
    route: &str,
    key: &str,
) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
    sqlx::query(statement).bind(user_id).bind(route).bind(key)
}

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
        let stored = on_key(
            "SELECT 1 AS stored FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idempotency_key = $3",
            user_id,
            route,
            key,
        )
        .fetch_optional(&mut *tx)
        .await?;
        if stored.is_some() {
            return Ok(NewKey::Stored);
        }
        if let Some(seconds) = rate_reached_on(&mut tx, Rated::IdempotencyKeys, user_id, per_minute).await? {
            return Ok(NewKey::RateReached(seconds));
        }
        on_key(INSERT_KEY, user_id, route, key).bind(hash).bind(now_ms()).execute(&mut *tx).await?;
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
        let inserted = on_key(INSERT_KEY, user_id, route, key).bind(hash).bind(now).execute(self.pool()).await;
        match inserted {
            Ok(_) => return Ok(KeyState::Reserved),
            Err(e) => match StoreError::from(e) {
                StoreError::Duplicate(_) => {}
                other => return Err(other),
            },
        }
        let row = on_key(
            "SELECT request_hash, status_code, response_body, created_at FROM idempotency_keys \
             WHERE user_id = $1 AND route = $2 AND idempotency_key = $3",
            user_id,
            route,
            key,
        )
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
            let taken = on_key(
                "UPDATE idempotency_keys SET created_at = $4 \
                 WHERE user_id = $1 AND route = $2 AND idempotency_key = $3 AND created_at = $5 AND completed_at IS NULL",
                user_id,
                route,
                key,
            )
            .bind(now)
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
        on_key(
            "UPDATE idempotency_keys SET status_code = $4, response_body = $5, completed_at = $6 \
             WHERE user_id = $1 AND route = $2 AND idempotency_key = $3",
            user_id,
            route,
            key,
        )
        .bind(i32::from(status))
        .bind(body)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Frees a key whose request failed, so that a retry runs again.
    pub async fn release_idempotency_key(&self, user_id: i64, route: &str, key: &str) -> Result<(), StoreError> {
        on_key(
            "DELETE FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idempotency_key = $3 AND completed_at IS NULL",
            user_id,
            route,
            key,
        )
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key through each of its states, every statement on it run once: reserved, running,
    /// abandoned and taken over, answered (no longer freed), and a running one freed.
    #[tokio::test]
    async fn a_key_is_reserved_taken_over_answered_and_freed() {
        crate::store::testing::on_both_databases(async |store| {
            let user = store.insert_user("Ada", "ada@example.com", "hash", false).await.unwrap().id;
            let reserve = |key: &'static str| store.reserve_idempotency_key(user, "route", key, "h");
            assert_eq!(reserve("k").await.unwrap(), KeyState::Reserved);
            assert_eq!(reserve("k").await.unwrap(), KeyState::InProgress);
            assert_eq!(store.reserve_idempotency_key(user, "route", "k", "other").await.unwrap(), KeyState::Mismatch);
            sqlx::query("UPDATE idempotency_keys SET created_at = $1")
                .bind(now_ms() - ABANDONED_AFTER_MS - 1)
                .execute(store.pool())
                .await
                .unwrap();
            assert_eq!(reserve("k").await.unwrap(), KeyState::Reserved, "an abandoned key is taken over");
            assert_eq!(reserve("k").await.unwrap(), KeyState::InProgress);
            store.complete_idempotency_key(user, "route", "k", 201, "{}").await.unwrap();
            let answered = KeyState::Completed { status: 201, body: "{}".into() };
            assert_eq!(reserve("k").await.unwrap(), answered);
            store.release_idempotency_key(user, "route", "k").await.unwrap();
            assert_eq!(reserve("k").await.unwrap(), answered, "an answered key stays");
            let offer = || store.reserve_new_idempotency_key(user, "route", "j", "h", 10);
            assert_eq!(offer().await.unwrap(), NewKey::Reserved);
            assert_eq!(offer().await.unwrap(), NewKey::Stored);
            store.release_idempotency_key(user, "route", "j").await.unwrap();
            assert_eq!(offer().await.unwrap(), NewKey::Reserved, "a running key is freed");
        })
        .await;
    }
}
