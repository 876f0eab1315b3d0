//! The ERP webhook inbox (`erp_webhook_inbox`): calls stored, claimed with leases, retried,
//! done, pruned and counted.

use serde_json::Value;
use sqlx::Row;

use crate::store::lease::DueClaim;
use crate::store::{Dialect, Store, StoreError, now_ms};

/// One webhook call in the inbox.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct InboxItem {
    pub id: i64,
    pub received_at: i64,
    pub entity_name: String,
    pub entity_id: String,
    pub event: String,
    pub state: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub outcome: Option<String>,
}

const INBOX_COLUMNS: &str =
    "id, received_at, entity_name, entity_id, event, state, attempts, next_attempt_at, last_error, outcome";

/// Counts of the inbox by state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InboxCounts {
    pub pending: i64,
    pub done: i64,
    pub failed: i64,
}

/// What the metrics read of the inbox: the calls waiting and given up, and when (epoch ms) the
/// oldest waiting call was received (`None` while none waits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, sqlx::FromRow)]
pub struct InboxDepths {
    pub pending: i64,
    pub failed: i64,
    #[sqlx(rename = "oldest_pending")]
    pub oldest_pending_received_at: Option<i64>,
}

/// Leases up to `$3` due calls, the earliest due first (a new call is due when it arrives),
/// until `$1` (`$2`: now). The index of pending calls (`erp_webhook_inbox_pending`, migration
/// 0015) holds them in this order, so a claim reads only due calls: neither a sort of every
/// pending call nor a walk past the ones waiting for a retry. Postgres plans it so once it has
/// statistics of the inbox ([`Store::inbox_refresh_statistics`]).
/// How each database takes it: [`DueClaim`].
pub(super) fn claim_statement(dialect: Dialect) -> sqlx::AssertSqlSafe<String> {
    DueClaim {
        from: "erp_webhook_inbox",
        key: "id",
        due: "state = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until < $2) \
              ORDER BY next_attempt_at, id LIMIT $3",
        set: "lease_until = $1",
        returning: INBOX_COLUMNS,
    }
    .statement(dialect)
}

impl Store {
    /// Stores a webhook call (committed before the caller answers, in a batch with the calls
    /// that arrive meanwhile); returns its id.
    pub async fn inbox_store(
        &self,
        entity_name: &str,
        entity_id: &str,
        event: &str,
        payload: &Value,
    ) -> Result<i64, StoreError> {
        let call = crate::store::engine::inbox_intake::NewCall {
            received_at: now_ms(),
            entity_name: entity_name.to_string(),
            entity_id: entity_id.to_string(),
            event: event.to_string(),
            payload: payload.to_string(),
        };
        match self.engine.inbox_intake() {
            Some(intake) => intake.store(call).await,
            None => {
                // An in-memory database: one connection, no batches.
                Ok(sqlx::query_scalar(crate::store::engine::inbox_intake::INSERT)
                    .bind(call.received_at)
                    .bind(call.entity_name)
                    .bind(call.entity_id)
                    .bind(call.event)
                    .bind(call.payload)
                    .fetch_one(self.pool())
                    .await?)
            }
        }
    }

    /// Claims up to `limit` due calls for `lease_ms`: a call claimed by a worker that dies is
    /// taken again once its lease expires. Safe with several instances: the state is checked
    /// again by the UPDATE itself.
    pub async fn inbox_claim(&self, limit: i64, lease_ms: i64) -> Result<Vec<InboxItem>, StoreError> {
        let _turn = self.write_turn().await?;
        let now = now_ms();
        // On Postgres, planned afresh each time rather than prepared once: a plan made while
        // the inbox was small (joining the picked calls to a sequential scan of the table) was
        // kept for the connection's life and cost 12-18 ms a claim once a burst had filled it.
        let mut items = sqlx::query_as::<_, InboxItem>(claim_statement(self.dialect()))
            .persistent(self.dialect() == Dialect::Sqlite)
            .bind(now + lease_ms)
            .bind(now)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        items.sort_by_key(|i| i.id);
        Ok(items)
    }

    /// Has Postgres gather the inbox's statistics now. The worker asks for it when it meets a
    /// backlog: a burst of calls changes the table faster than autovacuum looks at it (once a
    /// minute at most), and without statistics that count the pending calls Postgres plans
    /// the claim as a sort of every one of them (10-30 ms a claim behind 30,000-70,000
    /// calls) instead of a walk of [`claim_statement`]'s index. SQLite plans it the same way
    /// either way.
    pub async fn inbox_refresh_statistics(&self) -> Result<(), StoreError> {
        if self.dialect() == Dialect::Postgres {
            sqlx::query("ANALYZE erp_webhook_inbox").execute(self.pool()).await?;
        }
        Ok(())
    }

    /// Marks calls processed with a description of what was done for them (the calls of one
    /// record, processed together).
    pub async fn inbox_done(&self, ids: &[i64], outcome: &str) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _turn = self.write_turn().await?;
        let mut update = sqlx::query(sql!(
            "UPDATE erp_webhook_inbox SET state = 'done', outcome = $1, processed_at = $2, lease_until = NULL, \
                    attempts = attempts + 1, last_error = NULL WHERE id IN ({})",
            (3..3 + ids.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ")
        ))
        .bind(outcome)
        .bind(now_ms());
        for id in ids {
            update = update.bind(id);
        }
        update.execute(self.pool()).await?;
        Ok(())
    }

    /// Records a failed attempt: to be tried again at `next_attempt_at`, or given up (`failed`).
    pub async fn inbox_attempt_failed(
        &self,
        id: i64,
        error: &str,
        next_attempt_at: Option<i64>,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        let state = if next_attempt_at.is_some() { "pending" } else { "failed" };
        sqlx::query(
            "UPDATE erp_webhook_inbox SET state = $1, last_error = $2, next_attempt_at = $3, lease_until = NULL, \
                    attempts = attempts + 1 WHERE id = $4",
        )
        .bind(state)
        .bind(error)
        .bind(next_attempt_at.unwrap_or_else(now_ms))
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Gives a claimed call back without counting an attempt (the worker is stopping).
    pub async fn inbox_release(&self, id: i64) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query("UPDATE erp_webhook_inbox SET lease_until = NULL WHERE id = $1 AND state = 'pending'")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Forgets processed calls received before `before` (epoch ms); returns how many.
    pub async fn inbox_prune(&self, before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM erp_webhook_inbox WHERE state = 'done' AND received_at < $1")
            .bind(before)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    pub async fn inbox_counts(&self) -> Result<InboxCounts, StoreError> {
        let rows = sqlx::query("SELECT state, COUNT(*) AS n FROM erp_webhook_inbox GROUP BY state")
            .fetch_all(self.pool())
            .await?;
        let mut counts = InboxCounts::default();
        for row in &rows {
            let state: String = row.try_get("state")?;
            let n: i64 = row.try_get("n")?;
            match state.as_str() {
                "pending" => counts.pending = n,
                "done" => counts.done = n,
                _ => counts.failed += n,
            }
        }
        Ok(counts)
    }

    /// The calls waiting (`pending`) and given up (`failed`), without the done ones, and when
    /// the oldest waiting call arrived: each read from the partial index of its state
    /// (migration 0015), so the cost follows the calls not done, never the done ones.
    pub async fn inbox_depths(&self) -> Result<InboxDepths, StoreError> {
        Ok(sqlx::query_as::<_, InboxDepths>(
            "SELECT (SELECT COUNT(*) FROM erp_webhook_inbox WHERE state = 'pending') AS pending, \
                    (SELECT COUNT(*) FROM erp_webhook_inbox WHERE state = 'failed') AS failed, \
                    (SELECT MIN(received_at) FROM erp_webhook_inbox WHERE state = 'pending') AS oldest_pending",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// The calls not done yet: the failed ones and those due next, in id order, `limit` in
    /// all; then the `limit` newest done ones (behind a backlog, a walk of the primary key
    /// past it: this is the overview, not a hot path).
    pub async fn inbox_recent(&self, limit: i64) -> Result<Vec<InboxItem>, StoreError> {
        // Pending and failed calls each from their own index, in its order; merged here.
        let mut items = self.inbox_calls_in("pending", "next_attempt_at, id", limit).await?;
        items.extend(self.inbox_calls_in("failed", "id", limit).await?);
        items.sort_by_key(|item| item.id);
        items.truncate(limit.max(0) as usize);
        items.extend(self.inbox_calls_in("done", "id DESC", limit).await?);
        Ok(items)
    }

    /// Up to `limit` calls in `state`, in `order` (both fixed texts of [`Self::inbox_recent`];
    /// the state is written out so that SQLite can use the partial index of it).
    async fn inbox_calls_in(&self, state: &str, order: &str, limit: i64) -> Result<Vec<InboxItem>, StoreError> {
        Ok(sqlx::query_as::<_, InboxItem>(sql!(
            "SELECT {INBOX_COLUMNS} FROM erp_webhook_inbox WHERE state = '{state}' ORDER BY {order} LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// Whether a call is still waiting; for tests and the `show` route.
    pub async fn inbox_item(&self, id: i64) -> Result<Option<InboxItem>, StoreError> {
        Ok(sqlx::query_as::<_, InboxItem>(sql!("SELECT {INBOX_COLUMNS} FROM erp_webhook_inbox WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }
}
