//! The store's settings: which database, and how long claimed work waits for a crashed
//! instance.

use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

/// The default of `WORK_LEASE_SECONDS`.
pub const DEFAULT_WORK_LEASE: Duration = Duration::from_secs(60);

/// The database and the work lease.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `DATABASE_URL`, default `sqlite://./var/integration-service.db`.
    pub database_url: DatabaseUrl,
    /// How long a crashed instance's claimed work (sync, pull, webhook calls) waits before
    /// another run takes it over (`WORK_LEASE_SECONDS`, default 60).
    pub work_lease: Duration,
    /// How long finished history is kept (`RETAIN_*`).
    pub retention: super::retention_config::Retention,
}

impl StoreConfig {
    pub fn read(raw: &Settings) -> Result<StoreConfig, ConfigError> {
        let database_url = DatabaseUrl::new(raw.string_or("DATABASE_URL", "sqlite://./var/integration-service.db"));
        if !(database_url.is_postgres() || database_url.expose().starts_with("sqlite:")) {
            return Err(invalid("DATABASE_URL", "must start with sqlite: or postgres://"));
        }
        // A day at most: a larger one overflowed the leases' end in milliseconds.
        let work_lease =
            raw.positive_at_most("WORK_LEASE_SECONDS", 86_400)?.map(Duration::from_secs).unwrap_or(DEFAULT_WORK_LEASE);
        Ok(StoreConfig { database_url, work_lease, retention: super::retention_config::Retention::read(raw)? })
    }
}

/// The database the store connects to; its password never shows in logs or `Debug`.
#[derive(Clone)]
pub struct DatabaseUrl(SecretString);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(SecretString::from(url.into()))
    }
    pub fn expose(&self) -> &str {
        secrecy::ExposeSecret::expose_secret(&self.0)
    }
    pub fn is_postgres(&self) -> bool {
        let url = self.expose();
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }
    /// The URL with any password replaced, for logs.
    pub fn redacted(&self) -> String {
        match Url::parse(self.expose()) {
            Ok(mut url) if url.password().is_some() => {
                let _ = url.set_password(Some("********"));
                url.to_string()
            }
            _ => self.expose().to_string(),
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.redacted())
    }
}
