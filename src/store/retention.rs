//! How long finished history is kept, and its removal by age: job history, idempotency
//! answers, leasing deliveries (and the events none refers to any more), flows with their
//! steps, and failed logins. The janitor of every instance prunes with [`Store::prune`]; work
//! that is still going on (a queued or running job, a pending delivery, a running flow) is
//! never removed, whatever its age.

use std::time::Duration;

use crate::store::{Store, StoreError, now_ms};
use crate::vocabulary::settings::{ConfigError, Settings};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// What each table keeps, by age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Ended jobs (`RETAIN_JOBS_DAYS`, default 30), by when they ended.
    pub jobs: Duration,
    /// Idempotency keys and their answers (`RETAIN_IDEMPOTENCY_HOURS`, default 24), by when
    /// first sent: a retry later than that runs anew.
    pub idempotency_keys: Duration,
    /// Delivered and failed deliveries (`RETAIN_DELIVERIES_DAYS`, default 30), by when they ended.
    pub deliveries: Duration,
    /// Ended one-shot flows and their steps (`RETAIN_FLOWS_DAYS`, default 30), by when they ended.
    pub flows: Duration,
    /// Failed logins (`RETAIN_LOGIN_FAILURES_HOURS`, default 24); only the last minute counts.
    pub login_failures: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            jobs: 30 * DAY,
            idempotency_keys: 24 * HOUR,
            deliveries: 30 * DAY,
            flows: 30 * DAY,
            login_failures: 24 * HOUR,
        }
    }
}

impl Retention {
    pub fn read(raw: &Settings) -> Result<Retention, ConfigError> {
        let defaults = Retention::default();
        let days = |name, default| {
            Ok::<_, ConfigError>(
                raw.positive_u64(name)?.map_or(default, |d| DAY.saturating_mul(u32::try_from(d).unwrap_or(u32::MAX))),
            )
        };
        let hours = |name, default| {
            Ok::<_, ConfigError>(
                raw.positive_u64(name)?.map_or(default, |h| HOUR.saturating_mul(u32::try_from(h).unwrap_or(u32::MAX))),
            )
        };
        Ok(Retention {
            jobs: days("RETAIN_JOBS_DAYS", defaults.jobs)?,
            idempotency_keys: hours("RETAIN_IDEMPOTENCY_HOURS", defaults.idempotency_keys)?,
            deliveries: days("RETAIN_DELIVERIES_DAYS", defaults.deliveries)?,
            flows: days("RETAIN_FLOWS_DAYS", defaults.flows)?,
            login_failures: hours("RETAIN_LOGIN_FAILURES_HOURS", defaults.login_failures)?,
        })
    }
}

/// The tables the janitor prunes, as the metrics name them.
pub const PRUNED_TABLES: [&str; 6] =
    ["jobs", "idempotency_keys", "leasing_deliveries", "leasing_events", "leasing_flows", "login_failures"];

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
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests;
