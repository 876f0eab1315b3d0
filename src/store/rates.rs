//! The per-user rates of rows a caller writes: a user's rows of the last minute, counted from
//! the table they land in, so that no caller writes rows faster than retention removes them
//! (`JOBS_PER_MINUTE_PER_USER`, `IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER`,
//! `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER`, `LEASING_CREATES_PER_MINUTE_PER_USER`).
//! Counting the rows
//! themselves holds across instances and restarts, and needs no state of its own.

use sqlx::{AnyConnection, Row};

use crate::store::{Store, StoreError, now_ms};

/// The window of every rate.
pub(crate) const WINDOW_MS: i64 = 60_000;

/// The rows a rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rated {
    /// Jobs queued by the user (`jobs.created_by`).
    Jobs,
    /// `Idempotency-Key`s stored for the user (`idempotency_keys.user_id`).
    IdempotencyKeys,
    /// Deliveries the user asked to send again (`leasing_delivery_retries.user_id`).
    DeliveryRetries,
    /// Financing requests the user asked to create (`leasing_creates.user_id`).
    LeasingCreates,
}

impl Rated {
    /// The table of the rows and the column naming their user; each table has an index on
    /// (user, `created_at`) (migrations 0028, 0040 and 0042).
    fn rows(self) -> (&'static str, &'static str) {
        match self {
            Rated::Jobs => ("jobs", "created_by"),
            Rated::IdempotencyKeys => ("idempotency_keys", "user_id"),
            Rated::DeliveryRetries => ("leasing_delivery_retries", "user_id"),
            Rated::LeasingCreates => ("leasing_creates", "user_id"),
        }
    }

    /// The newest rows of a user (`$1`) since a moment (`$2`), newest first, at most `$3`.
    fn statement(self) -> sqlx::AssertSqlSafe<String> {
        let (table, user) = self.rows();
        sql!("SELECT created_at FROM {table} WHERE {user} = $1 AND created_at > $2 ORDER BY created_at DESC LIMIT $3")
    }

    /// Whether the rows are kept for counting alone (a turn's row; not jobs or keys, which are
    /// rows of their own kind).
    fn kept_for_counting(self) -> bool {
        matches!(self, Rated::DeliveryRetries | Rated::LeasingCreates)
    }
}

impl Store {
    /// `Some(seconds)` when `user_id` wrote `per_minute` rows of `rated` within the last
    /// minute: the seconds until the oldest of them leaves the window (at least 1). `None`
    /// while the user may write another.
    pub async fn rate_reached(&self, rated: Rated, user_id: i64, per_minute: u64) -> Result<Option<u64>, StoreError> {
        let mut connection = self.pool().acquire().await?;
        rate_reached_on(&mut connection, rated, user_id, per_minute).await
    }

    /// Takes one of `user_id`'s `per_minute` turns of `rated` (see [`take_turn_on`]), in a
    /// transaction of its own: requests sent at once take turns one after the other.
    pub async fn take_turn(&self, rated: Rated, user_id: i64, per_minute: u64) -> Result<Option<u64>, StoreError> {
        let mut tx = self.write_transaction().await?;
        self.hold_user(&mut tx, user_id).await?;
        if let Some(seconds) = take_turn_on(&mut tx, rated, user_id, per_minute).await? {
            return Ok(Some(seconds));
        }
        tx.commit().await?;
        Ok(None)
    }
}

/// Takes one of `user_id`'s `per_minute` turns of a rate whose rows are kept for counting
/// alone, on `connection` (a write transaction holding the user, see `Store::hold_user`):
/// `Some(seconds)` when none is left (and nothing is written), else the turn's row is added and
/// the user's rows older than the window go.
pub(crate) async fn take_turn_on(
    connection: &mut AnyConnection,
    rated: Rated,
    user_id: i64,
    per_minute: u64,
) -> Result<Option<u64>, StoreError> {
    assert!(rated.kept_for_counting(), "{rated:?}: its rows are not a rate's turns");
    if let Some(seconds) = rate_reached_on(connection, rated, user_id, per_minute).await? {
        return Ok(Some(seconds));
    }
    let (table, _) = rated.rows();
    let now = now_ms();
    let delete = sql!("DELETE FROM {table} WHERE user_id = $1 AND created_at <= $2");
    sqlx::query(delete).bind(user_id).bind(now - WINDOW_MS).execute(&mut *connection).await?;
    let insert = sql!("INSERT INTO {table} (user_id, created_at) VALUES ($1, $2)");
    sqlx::query(insert).bind(user_id).bind(now).execute(&mut *connection).await?;
    Ok(None)
}

/// As [`Store::rate_reached`], read on `connection` (a transaction that writes the next row).
pub(crate) async fn rate_reached_on(
    connection: &mut AnyConnection,
    rated: Rated,
    user_id: i64,
    per_minute: u64,
) -> Result<Option<u64>, StoreError> {
    let window_start = now_ms() - WINDOW_MS;
    let rows = sqlx::query(rated.statement())
        .bind(user_id)
        .bind(window_start)
        .bind(i64::try_from(per_minute).unwrap_or(i64::MAX))
        .fetch_all(&mut *connection)
        .await?;
    if (rows.len() as u64) < per_minute {
        return Ok(None);
    }
    let Some(oldest) = rows.last() else { return Ok(None) };
    let oldest: i64 = oldest.try_get("created_at")?;
    Ok(Some(retry_after_seconds(oldest, window_start)))
}

/// Whole seconds until a row written at `oldest` is older than the window that starts at
/// `window_start`, rounded up, at least 1.
fn retry_after_seconds(oldest: i64, window_start: i64) -> u64 {
    ((oldest - window_start).max(0) / 1000 + 1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_until_the_oldest_row_leaves_the_window() {
        assert_eq!(retry_after_seconds(1_000, 1_000), 1, "leaving now: still one second");
        assert_eq!(retry_after_seconds(13_500, 1_000), 13);
        assert_eq!(retry_after_seconds(61_000, 1_000), 61);
    }

    #[tokio::test]
    async fn a_rate_counts_only_the_users_rows_of_the_last_minute() {
        crate::store::testing::on_both_databases(async |store| {
            for key in ["a", "b"] {
                // Two rows of user 7 (what the key became is the idempotency store's to test).
                store.reserve_idempotency_key(7, "r", key, "h").await.unwrap();
            }
            assert_eq!(store.rate_reached(Rated::IdempotencyKeys, 7, 3).await.unwrap(), None);
            let wait = store.rate_reached(Rated::IdempotencyKeys, 7, 2).await.unwrap();
            assert!(wait.is_some_and(|s| (1..=61).contains(&s)), "{wait:?}");
            assert_eq!(store.rate_reached(Rated::IdempotencyKeys, 8, 1).await.unwrap(), None, "another user's rows");
            assert_eq!(store.rate_reached(Rated::Jobs, 7, 1).await.unwrap(), None, "another table's rows");
            store.job_enqueue("fieldreport.sync", "tags", false, Some(7)).await.unwrap().unwrap();
            assert!(store.rate_reached(Rated::Jobs, 7, 1).await.unwrap().is_some());
        })
        .await;
    }
}
