//! What the scrape reads from the database and the pool, and its families: the queue depths,
//! the pool's usage and the record cache's lookups.

use std::time::{SystemTime, UNIX_EPOCH};

use super::exposition::Exposition;
use super::{mirror, watch};
use crate::store::Store;
use crate::store::erp::InboxDepths;

/// What the scrape reads from the database and the pool.
#[derive(Debug, Clone, Default)]
pub struct DatabaseGauges {
    /// Webhook calls `pending` and `failed`, and when the oldest pending one arrived; `None`
    /// when the query failed.
    pub inbox: Option<InboxDepths>,
    /// Field-report records waiting to be pushed, per entity; `None` when the query failed.
    pub pending_push: Option<Vec<(String, i64)>>,
    pub pool_connections: u32,
    pub pool_idle: usize,
    pub pool_max: u32,
    /// Field-report record and page lookups answered from memory and from the database;
    /// `None` where nothing is cached (an in-memory SQLite database).
    pub record_cache_lookups: Option<(u64, u64)>,
    /// When each job kind and target last succeeded (epoch ms); `None` when the query failed.
    pub job_last_successes: Option<Vec<(String, String, i64)>>,
    /// The leasing watcher's requests and deliveries; `None` when a query failed.
    pub watch: Option<watch::WatchGauges>,
    /// The field-report mirror's records and last syncs per set; `None` when a query failed.
    pub mirror: Option<mirror::MirrorGauges>,
}

impl DatabaseGauges {
    /// Reads the pool first (the scrape's own queries would show as a busy connection), then
    /// the queue depths. A failed query is logged and its family left out, so the in-memory
    /// metrics are served even while the database is down.
    pub async fn read(store: &Store) -> DatabaseGauges {
        let pool = store.pool();
        let mut gauges = DatabaseGauges {
            pool_connections: pool.size(),
            pool_idle: pool.num_idle(),
            pool_max: pool.options().get_max_connections(),
            record_cache_lookups: store.record_cache_lookups(),
            ..Default::default()
        };
        match store.inbox_depths().await {
            Ok(depths) => gauges.inbox = Some(depths),
            Err(error) => crate::telemetry::report_internal_error(&format!("metrics: webhook inbox depth: {error}")),
        }
        match store.mirror_pending_push_counts().await {
            Ok(counts) => gauges.pending_push = Some(counts),
            Err(error) => {
                crate::telemetry::report_internal_error(&format!("metrics: field-report push queue: {error}"))
            }
        }
        match store.job_last_successes().await {
            Ok(successes) => gauges.job_last_successes = Some(successes),
            Err(error) => crate::telemetry::report_internal_error(&format!("metrics: job successes: {error}")),
        }
        match (store.watch_counts().await, store.delivery_depths().await) {
            (Ok(watched), Ok((deliveries, oldest_pending))) => {
                gauges.watch = Some(watch::WatchGauges { watched, deliveries, oldest_pending })
            }
            (Err(error), _) | (_, Err(error)) => {
                crate::telemetry::report_internal_error(&format!("metrics: leasing watch: {error}"))
            }
        }
        match (store.mirror_counts().await, store.last_syncs().await) {
            (Ok(records), Ok(last_syncs)) => gauges.mirror = Some(mirror::MirrorGauges { records, last_syncs }),
            (Err(error), _) | (_, Err(error)) => {
                crate::telemetry::report_internal_error(&format!("metrics: field-report mirror: {error}"))
            }
        }
        gauges
    }

    /// Whether every database read of the scrape answered.
    pub fn database_answered(&self) -> bool {
        self.inbox.is_some()
            && self.pending_push.is_some()
            && self.job_last_successes.is_some()
            && self.watch.is_some()
            && self.mirror.is_some()
    }
}

pub(super) fn render_database(out: &mut Exposition, database: &DatabaseGauges) {
    let name = "integration_service_database_up";
    out.family(name, "gauge", "1 when every database read of this scrape answered, else 0.");
    out.sample(name, &[], u8::from(database.database_answered()));
    if let Some(inbox) = database.inbox {
        let name = "integration_service_erp_webhook_inbox_calls";
        out.family(
            name,
            "gauge",
            "ERP webhook calls in the inbox: pending (to be processed or retried) and failed (given up).",
        );
        out.sample(name, &[("state", "pending")], inbox.pending);
        out.sample(name, &[("state", "failed")], inbox.failed);
        let name = "integration_service_erp_webhook_inbox_oldest_pending_age_seconds";
        out.family(
            name,
            "gauge",
            "Seconds since the oldest pending ERP webhook call (not yet processed, or waiting for a retry) was received; 0 when none is pending.",
        );
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
        let age_ms = inbox.oldest_pending_received_at.map_or(0, |received| (now_ms - received).max(0));
        out.sample(name, &[], age_ms as f64 / 1000.0);
    }
    if let Some(counts) = &database.pending_push {
        let name = "integration_service_fieldreport_pending_push_records";
        out.family(
            name,
            "gauge",
            "Field-report records written locally without forwarding and not yet pushed, by entity.",
        );
        let count_of = |entity: &str| counts.iter().find(|(e, _)| e == entity).map_or(0, |(_, n)| *n);
        for entity in generated::fieldreport::entity_names() {
            out.sample(name, &[("entity", entity)], count_of(entity));
        }
        // Rows of entities the registry no longer lists still wait in the queue.
        for (entity, count) in counts.iter().filter(|(e, _)| generated::fieldreport::by_route(e).is_none()) {
            out.sample(name, &[("entity", entity)], count);
        }
    }
    if let Some((hits, misses)) = database.record_cache_lookups {
        let name = "integration_service_fieldreport_record_cache_lookups_total";
        out.family(
            name,
            "counter",
            "Reads of a field-report record or page answered from memory (hit) or from the database (miss), since start.",
        );
        out.sample(name, &[("result", "hit")], hits);
        out.sample(name, &[("result", "miss")], misses);
    }
    let gauges = [
        (
            "integration_service_db_pool_connections",
            "Open database connections (idle and in use).",
            database.pool_connections as u64,
        ),
        ("integration_service_db_pool_idle_connections", "Idle database connections.", database.pool_idle as u64),
        ("integration_service_db_pool_max_connections", "The pool's connection limit.", database.pool_max as u64),
    ];
    for (name, help, value) in gauges {
        out.family(name, "gauge", help);
        out.sample(name, &[], value);
    }
}
