//! The settings of the three upstream clients, each with its defaults and checks. A file of its
//! own, which imports none of the clients, so that `crate::config` can assemble them without
//! importing the clients (and through them the metrics and the store, which imports
//! `crate::config`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use secrecy::SecretString;
use url::Url;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

/// Settings of the leasing provider client.
#[derive(Debug, Clone)]
pub struct LeasingConfig {
    pub base_url: Option<Url>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub ca_cert: Option<PathBuf>,
    pub http1_only: bool,
    /// Time-out of one provider call (`LEASING_TIMEOUT_SECONDS`, default 30).
    pub timeout: Duration,
    /// Inverse-calculation factor per period in months (`LEASING_FACTORS`).
    pub factors: BTreeMap<u32, rust_decimal::Decimal>,
}

impl LeasingConfig {
    /// Reads the `LEASING_*` settings.
    pub fn read(raw: &Settings) -> Result<LeasingConfig, ConfigError> {
        let leasing = LeasingConfig {
            base_url: raw.url("LEASING_BASE_URL")?,
            client_cert: raw.path("LEASING_CLIENT_CERT"),
            client_key: raw.path("LEASING_CLIENT_KEY"),
            ca_cert: raw.path("LEASING_CA_CERT"),
            http1_only: raw.bool_or("LEASING_HTTP1_ONLY", true)?,
            timeout: Duration::from_secs(raw.positive_u64("LEASING_TIMEOUT_SECONDS")?.unwrap_or(30)),
            factors: factors(raw, "LEASING_FACTORS")?,
        };
        if leasing.client_cert.is_some() != leasing.client_key.is_some() {
            let missing = if leasing.client_cert.is_some() { "LEASING_CLIENT_KEY" } else { "LEASING_CLIENT_CERT" };
            return Err(invalid(missing, "LEASING_CLIENT_CERT and LEASING_CLIENT_KEY must be set together"));
        }
        Ok(leasing)
    }
}

/// Factors of the inverse lease calculation: 84 months → 1.47 from the specification; 48, 60
/// and 72 months are our defaults. `LEASING_FACTORS` replaces the whole table.
pub const DEFAULT_LEASING_FACTORS: &str = "48=2.31,60=1.91,72=1.64,84=1.47";

fn factors(settings: &Settings, name: &'static str) -> Result<BTreeMap<u32, rust_decimal::Decimal>, ConfigError> {
    let raw = settings.get(name).unwrap_or(DEFAULT_LEASING_FACTORS);
    let mut factors = BTreeMap::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || invalid(name, format!("{item:?} is not <months>=<factor>, e.g. 84=1.47"));
        let (period, factor) = item.split_once('=').ok_or_else(bad)?;
        let period: u32 = period.trim().parse().map_err(|_| bad())?;
        let factor: rust_decimal::Decimal = factor.trim().parse().map_err(|_| bad())?;
        if period == 0 || factor <= rust_decimal::Decimal::ZERO {
            return Err(bad());
        }
        factors.insert(period, factor);
    }
    if factors.is_empty() {
        return Err(invalid(name, "names no period"));
    }
    Ok(factors)
}

/// Settings of the field-report upstream client.
#[derive(Debug, Clone)]
pub struct FieldReportConfig {
    pub base_url: Option<Url>,
    pub username: Option<String>,
    pub password: Option<SecretString>,
    /// Time-out of one call (`FIELDREPORT_TIMEOUT_SECONDS`, default 30).
    pub timeout: Duration,
    /// How far before its cursor an incremental sync starts (`FIELDREPORT_SYNC_OVERLAP_SECONDS`,
    /// default [`DEFAULT_SYNC_OVERLAP`]).
    pub sync_overlap: Duration,
}

/// The default overlap of incremental syncs and pulls: five minutes, longer than an upstream
/// transaction or a sync is expected to run (docs/configuration.md says why).
pub const DEFAULT_SYNC_OVERLAP: Duration = Duration::from_secs(300);

impl FieldReportConfig {
    /// Reads the `FIELDREPORT_*` settings.
    pub fn read(raw: &Settings) -> Result<FieldReportConfig, ConfigError> {
        Ok(FieldReportConfig {
            base_url: raw.url("FIELDREPORT_BASE_URL")?,
            username: raw.get("FIELDREPORT_USERNAME").map(str::to_string),
            password: raw.secret("FIELDREPORT_PASSWORD"),
            timeout: Duration::from_secs(raw.positive_u64("FIELDREPORT_TIMEOUT_SECONDS")?.unwrap_or(30)),
            sync_overlap: raw.seconds_or("FIELDREPORT_SYNC_OVERLAP_SECONDS", DEFAULT_SYNC_OVERLAP)?,
        })
    }
}

/// The time-out of one ERP call unless set: the ERP queues a tenant's requests over its
/// concurrency limit for up to about 30 s before it answers 429 (../shared/upstream/FACTS.md).
/// A call has to outlast that queue to get the answer, or the 429 and the wait it asks for,
/// rather than time out and be sent again into the same queue.
pub const DEFAULT_ERP_TIMEOUT: Duration = Duration::from_secs(60);

/// How often one financing request's missing-info mail may leave unless set: an hour.
pub const DEFAULT_MISSING_INFO_MAIL_INTERVAL: Duration = Duration::from_secs(3600);

/// Settings of the ERP client and webhook receiver.
#[derive(Debug, Clone)]
pub struct ErpConfig {
    pub base_url: Option<Url>,
    pub api_key: Option<SecretString>,
    pub webhook_secret: Option<SecretString>,
    pub webhook_allowlist: Vec<IpNet>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub missing_info_template: String,
    /// How often one financing request's missing-info mail may leave
    /// (`MISSING_INFO_MAIL_INTERVAL_SECONDS`, default an hour).
    pub missing_info_mail_interval: Duration,
    /// How far before its cursor an incremental pull starts (`ERP_PULL_OVERLAP_SECONDS`,
    /// default [`DEFAULT_SYNC_OVERLAP`]).
    pub pull_overlap: Duration,
}

impl ErpConfig {
    /// Reads the `ERP_*` settings and the missing-info mail's (`MISSING_INFO_*`).
    pub fn read(raw: &Settings) -> Result<ErpConfig, ConfigError> {
        Ok(ErpConfig {
            base_url: raw.url("ERP_BASE_URL")?,
            api_key: raw.secret("ERP_API_KEY"),
            webhook_secret: raw.secret("ERP_WEBHOOK_SECRET"),
            webhook_allowlist: raw.networks("ERP_WEBHOOK_ALLOWLIST")?,
            timeout: raw.positive_u64("ERP_TIMEOUT_SECONDS")?.map_or(DEFAULT_ERP_TIMEOUT, Duration::from_secs),
            connect_timeout: Duration::from_secs(raw.positive_u64("ERP_CONNECT_TIMEOUT_SECONDS")?.unwrap_or(10)),
            missing_info_template: raw.string_or("MISSING_INFO_TEMPLATE", "leasing-missing-info"),
            missing_info_mail_interval: raw
                .positive_at_most("MISSING_INFO_MAIL_INTERVAL_SECONDS", 7 * 24 * 3600)?
                .map_or(DEFAULT_MISSING_INFO_MAIL_INTERVAL, Duration::from_secs),
            pull_overlap: raw.seconds_or("ERP_PULL_OVERLAP_SECONDS", DEFAULT_SYNC_OVERLAP)?,
        })
    }
}
