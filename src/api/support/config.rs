//! The API's own settings: who may read the metrics, how many calls and exports one user may
//! hold, and how many new `Idempotency-Key`s one user may store within a minute.

use secrecy::SecretString;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The bearer token `/metrics` asks for (`METRICS_TOKEN`); open without it.
    pub metrics_token: Option<SecretString>,
    /// Waits and flows held at once per user on one instance (`MAX_HELD_CALLS_PER_USER`, or
    /// its former name `MAX_HELD_CALLS_PER_TOKEN`; default 200); more are answered 429.
    pub max_held_calls_per_user: usize,
    /// Exports streaming at once per user on one instance (`MAX_EXPORTS_PER_USER`, default 4);
    /// more are answered 429.
    pub max_exports_per_user: usize,
    /// New `Idempotency-Key`s one user may store within a minute
    /// (`IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER`, default 120); more are answered 429.
    pub idempotency_keys_per_minute_per_user: u64,
}

impl ApiConfig {
    pub fn read(raw: &Settings) -> Result<ApiConfig, ConfigError> {
        let held = match raw.positive_u64("MAX_HELD_CALLS_PER_USER")? {
            Some(held) => held,
            None => raw.positive_u64("MAX_HELD_CALLS_PER_TOKEN")?.unwrap_or(200),
        };
        Ok(ApiConfig {
            metrics_token: raw.secret("METRICS_TOKEN"),
            max_held_calls_per_user: usize::try_from(held)
                .map_err(|_| invalid("MAX_HELD_CALLS_PER_USER", "too large"))?,
            max_exports_per_user: usize::try_from(raw.positive_u64("MAX_EXPORTS_PER_USER")?.unwrap_or(4))
                .map_err(|_| invalid("MAX_EXPORTS_PER_USER", "too large"))?,
            idempotency_keys_per_minute_per_user: raw
                .positive_u64("IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER")?
                .unwrap_or(120),
        })
    }
}
