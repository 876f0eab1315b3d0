//! How long finished history is kept, and its removal by age: job history, idempotency
//! answers, leasing deliveries (and the events none refers to any more), flows with their
//! steps, failed logins, and the mirrors' tombstones that the change feed answers. The janitor of every instance prunes with [`Store::prune`]; work
//! that is still going on (a queued or running job, a pending delivery, a running flow) is
//! never removed, whatever its age.

use std::time::Duration;

pub use super::retention_config::Retention;
use crate::store::{Store, StoreError, now_ms};

/// The tables the janitor prunes, as the metrics name them.
pub const PRUNED_TABLES: [&str; 7] = [
    "jobs",
    "idempotency_keys",
    "leasing_deliveries",
    "leasing_events",
    "leasing_flows",
    "login_failures",
    "mirror_removals",
];

fn before(age: Duration) -> i64 {
    now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
}

impl Store {
    /// Removes what `retention` no longer keeps; how many rows of each of [`PRUNED_TABLES`].
    pub async fn prune(&self, retention: &Retention) -> Result<[u64; PRUNED_TABLES.len()], StoreError> {
        let statements: [(&str, i64); 6] = [
            ("DELETE FROM jobs WHERE active_key IS NULL AND finished_at < $1", before(retention.jobs)),
            ("DELETE FROM idempotency_keys WHERE created_at < $1", before(retention.idempotency_keys)),
            (
                "DELETE FROM leasing_deliveries WHERE status <> 'pending' AND finished_at < $1",
                before(retention.deliveries),
            ),
            (
                "DELETE FROM leasing_events WHERE created_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM leasing_deliveries d WHERE d.event_seq = leasing_events.seq)",
                before(retention.deliveries),
            ),
            ("DELETE FROM leasing_flows WHERE status <> 'running' AND finished_at < $1", before(retention.flows)),
            ("DELETE FROM login_failures WHERE at < $1", before(retention.login_failures)),
        ];
        let mut pruned = [0; PRUNED_TABLES.len()];
        for (n, (statement, cutoff)) in statements.iter().enumerate() {
            let mut tx = self.write_transaction().await?;
            if PRUNED_TABLES[n] == "leasing_flows" {
                // The steps go with their flow (no cascade on SQLite without foreign keys).
                sqlx::query(
                    "DELETE FROM leasing_flow_steps WHERE flow_id IN \
                     (SELECT id FROM leasing_flows WHERE status <> 'running' AND finished_at < $1)",
                )
                .bind(*cutoff)
                .execute(&mut *tx)
                .await?;
            }
            let done = sqlx::query(sqlx::AssertSqlSafe(statement.to_string())).bind(*cutoff).execute(&mut *tx).await?;
            tx.commit().await?;
            pruned[n] = done.rows_affected();
        }
        // The tombstones go with a note of the newest one gone (see `Store::prune_feed_removals`),
        // and the ERP's noted absences (tombstones of records the mirror never held) with them.
        let cutoff = before(retention.feed_removals);
        let mut tx = self.write_transaction().await?;
        let absences =
            sqlx::query("DELETE FROM erp_absences WHERE noted_at < $1").bind(cutoff).execute(&mut *tx).await?;
        tx.commit().await?;
        pruned[PRUNED_TABLES.len() - 1] = self.prune_feed_removals(cutoff).await? + absences.rows_affected();
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests;
