//! The `login_failures` table: failed logins per email (a digest of it) and source address,
//! for throttling.
//! Kept in the database so that several instances sharing it throttle together.

use crate::store::{Store, StoreError};

impl Store {
    /// Records a failure, forgets every failure older than `forget_before`, and returns the
    /// new failure's id.
    pub async fn record_login_failure(
        &self,
        email: &str,
        address: &str,
        at: i64,
        forget_before: i64,
    ) -> Result<i64, StoreError> {
        let id = sqlx::query_scalar("INSERT INTO login_failures (email, address, at) VALUES ($1, $2, $3) RETURNING id")
            .bind(email)
            .bind(address)
            .bind(at)
            .fetch_one(self.pool())
            .await?;
        sqlx::query("DELETE FROM login_failures WHERE at < $1").bind(forget_before).execute(self.pool()).await?;
        Ok(id)
    }

    /// Forgets one failure (an attempt recorded, then refused unverified).
    pub async fn forget_login_failure(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM login_failures WHERE id = $1").bind(id).execute(self.pool()).await?;
        Ok(())
    }

    /// Times of the failures from `address` since `since` recorded before the failure
    /// `before_id`, of `email` when one is given (else whatever the email), newest first, at
    /// most `limit` of them.
    pub async fn recent_login_failures(
        &self,
        email: Option<&str>,
        address: &str,
        since: i64,
        before_id: i64,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT at FROM login_failures WHERE ($1 IS NULL OR email = $1) AND address = $2 AND at > $3
             AND id < $4 ORDER BY at DESC LIMIT $5",
        )
        .bind(email)
        .bind(address)
        .bind(since)
        .bind(before_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// Forgets the failures of this email and address (after a successful login).
    pub async fn clear_login_failures(&self, email: &str, address: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM login_failures WHERE email = $1 AND address = $2")
            .bind(email)
            .bind(address)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
