//! The `login_failures` table: failed logins per email (a digest of it) and source address,
//! for throttling.
//! Kept in the database so that several instances sharing it throttle together.

use crate::store::{Store, StoreError};

impl Store {
    /// Records a failure and forgets every failure older than `forget_before`.
    pub async fn record_login_failure(
        &self,
        email: &str,
        address: &str,
        at: i64,
        forget_before: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO login_failures (email, address, at) VALUES ($1, $2, $3)")
            .bind(email)
            .bind(address)
            .bind(at)
            .execute(self.pool())
            .await?;
        sqlx::query("DELETE FROM login_failures WHERE at < $1").bind(forget_before).execute(self.pool()).await?;
        Ok(())
    }

    /// Times of the failures since `since`, newest first, at most `limit` of them.
    pub async fn recent_login_failures(
        &self,
        email: &str,
        address: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT at FROM login_failures WHERE email = $1 AND address = $2 AND at > $3 ORDER BY at DESC LIMIT $4",
        )
        .bind(email)
        .bind(address)
        .bind(since)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// Times of the failures from `address` since `since`, whatever the email, newest first, at
    /// most `limit` of them.
    pub async fn recent_login_failures_from(
        &self,
        address: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<i64>, StoreError> {
        Ok(sqlx::query_scalar("SELECT at FROM login_failures WHERE address = $1 AND at > $2 ORDER BY at DESC LIMIT $3")
            .bind(address)
            .bind(since)
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
