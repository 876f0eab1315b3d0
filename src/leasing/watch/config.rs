//! The watcher's settings: how often a watched request is read, how many reads run at once,
//! which callback addresses are allowed, how long a delivery is retried, how often a user may
//! ask for one to be sent again, how many requests a user may create, and how long a request the provider does not have is read.

use std::time::Duration;

use crate::vocabulary::settings::{ConfigError, Settings};

/// The most `LEASING_WATCH_CONCURRENCY` may be: reads at once, each a call to the provider.
pub const MAX_CONCURRENCY: usize = 1000;
/// The most `LEASING_WATCH_INTERVAL_SECONDS` may be: a day.
pub const MAX_INTERVAL_SECONDS: u64 = 86_400;
/// The most `LEASING_DELIVERY_RETRY_SECONDS` may be: a year.
pub const MAX_RETRY_SECONDS: u64 = 365 * 86_400;
/// The most `LEASING_DELIVERY_BACKOFF_MILLISECONDS` may be: an hour, the longest back-off.
pub const MAX_BACKOFF_MILLISECONDS: u64 = 3_600_000;
/// The most `LEASING_WATCH_GONE_SECONDS` may be: a year.
pub const MAX_GONE_SECONDS: u64 = 365 * 86_400;
/// The most `LEASING_SUBSCRIPTIONS_PER_USER` may be.
pub const MAX_SUBSCRIPTIONS_PER_USER: u64 = 100_000;
/// The most `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` may be.
pub const MAX_RETRIES_PER_MINUTE_PER_USER: u64 = 100_000;
/// The most `LEASING_CREATES_PER_MINUTE_PER_USER` may be.
pub const MAX_CREATES_PER_MINUTE_PER_USER: u64 = 100_000;

#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Between two reads of a watched request (`LEASING_WATCH_INTERVAL_SECONDS`, default 300),
    /// plus up to a fifth of it as jitter.
    pub interval: Duration,
    /// Provider reads at a time (`LEASING_WATCH_CONCURRENCY`, default 8).
    pub concurrency: usize,
    /// Allows `http` and loopback, private, link-local and unique-local callback addresses
    /// (`CALLBACK_ALLOW_PRIVATE`, default false; `serve --sandbox` sets it).
    pub allow_private: bool,
    /// How long a failing delivery is retried (`LEASING_DELIVERY_RETRY_SECONDS`, default 24 h).
    pub retry_horizon: Duration,
    /// The first retry's delay, doubled for each further one up to an hour
    /// (`LEASING_DELIVERY_BACKOFF_MILLISECONDS`, default 5000).
    pub first_retry: Duration,
    /// Subscriptions one user may have (`LEASING_SUBSCRIPTIONS_PER_USER`, default 100).
    pub subscriptions_per_user: u64,
    /// Deliveries one user may ask to send again within a minute
    /// (`LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER`, default 60).
    pub retries_per_minute_per_user: u64,
    /// Financing requests one user may create within a minute, by the create route or a
    /// one-shot flow (`LEASING_CREATES_PER_MINUTE_PER_USER`, default 60): each is a request at
    /// the provider, watched here.
    pub creates_per_minute_per_user: u64,
    /// How long a request the provider answers 404 or 410 for is still read
    /// (`LEASING_WATCH_GONE_SECONDS`, default 7 days).
    pub gone_after: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            interval: Duration::from_secs(300),
            concurrency: 8,
            allow_private: false,
            retry_horizon: Duration::from_secs(24 * 3600),
            first_retry: Duration::from_secs(5),
            subscriptions_per_user: 100,
            retries_per_minute_per_user: 60,
            creates_per_minute_per_user: 60,
            gone_after: Duration::from_secs(7 * 86_400),
        }
    }
}

impl WatchConfig {
    pub fn read(raw: &Settings) -> Result<WatchConfig, ConfigError> {
        let defaults = WatchConfig::default();
        Ok(WatchConfig {
            interval: raw
                .positive_at_most("LEASING_WATCH_INTERVAL_SECONDS", MAX_INTERVAL_SECONDS)?
                .map_or(defaults.interval, Duration::from_secs),
            // The poller claims four times as many: a larger value overflowed there.
            concurrency: raw
                .positive_at_most("LEASING_WATCH_CONCURRENCY", MAX_CONCURRENCY as u64)?
                .map_or(defaults.concurrency, |n| n as usize),
            allow_private: raw.bool_or("CALLBACK_ALLOW_PRIVATE", false)?,
            // Larger ones overflowed a delivery's horizon and back-off in milliseconds.
            retry_horizon: raw
                .positive_at_most("LEASING_DELIVERY_RETRY_SECONDS", MAX_RETRY_SECONDS)?
                .map_or(defaults.retry_horizon, Duration::from_secs),
            first_retry: raw
                .positive_at_most("LEASING_DELIVERY_BACKOFF_MILLISECONDS", MAX_BACKOFF_MILLISECONDS)?
                .map_or(defaults.first_retry, Duration::from_millis),
            subscriptions_per_user: raw
                .positive_at_most("LEASING_SUBSCRIPTIONS_PER_USER", MAX_SUBSCRIPTIONS_PER_USER)?
                .unwrap_or(defaults.subscriptions_per_user),
            retries_per_minute_per_user: raw
                .positive_at_most("LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER", MAX_RETRIES_PER_MINUTE_PER_USER)?
                .unwrap_or(defaults.retries_per_minute_per_user),
            creates_per_minute_per_user: raw
                .positive_at_most("LEASING_CREATES_PER_MINUTE_PER_USER", MAX_CREATES_PER_MINUTE_PER_USER)?
                .unwrap_or(defaults.creates_per_minute_per_user),
            gone_after: raw
                .positive_at_most("LEASING_WATCH_GONE_SECONDS", MAX_GONE_SECONDS)?
                .map_or(defaults.gone_after, Duration::from_secs),
        })
    }
}
