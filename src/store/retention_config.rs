//! The retention settings (`RETAIN_*`): how long finished history is kept before
//! [`super::retention`] removes it. A file of its own, importing no store code, so that the
//! store's configuration can read it.

use std::time::Duration;

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
    /// The mirrors' tombstones of removed records, which the change feed answers
    /// (`RETAIN_FEED_REMOVALS_DAYS`, default 30), by when removed: a consumer of the feed that
    /// stays behind longer copies its set again.
    pub feed_removals: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            jobs: 30 * DAY,
            idempotency_keys: 24 * HOUR,
            deliveries: 30 * DAY,
            flows: 30 * DAY,
            login_failures: 24 * HOUR,
            feed_removals: 30 * DAY,
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
            feed_removals: days("RETAIN_FEED_REMOVALS_DAYS", defaults.feed_removals)?,
        })
    }
}
