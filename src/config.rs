//! Service configuration: a TOML file overlaid by environment variables (environment wins).
//!
//! Every setting has one name, used upper-case in the environment (`DATABASE_URL`) and
//! lower-case in the TOML file (`database_url = "..."`). Values are read as plain scalars and
//! validated at start-up, so that a bad value stops it with one line naming the setting.
//!
//! Each area owns its configuration: its struct, defaults and checks (e.g.
//! [`FrontConfig::read`], [`StoreConfig::read`], [`LeasingConfig::read`]), read with the shared
//! [`Settings`]. This module gathers the values from the file and the environment and
//! assembles the areas' configurations into [`Config`].

use std::collections::BTreeMap;
use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Toml};
use serde::Deserialize;

use crate::api::support::config::ApiConfig;
use crate::auth::AuthConfig;
use crate::file_storage::{S3Config, StorageLocation};
use crate::front::config::FrontConfig;
use crate::jobs::config::JobsConfig;
use crate::leasing::watch::config::WatchConfig;
use crate::mail::MailConfig;
use crate::store::config::StoreConfig;
use crate::upstream::config::{ErpConfig, FieldReportConfig, LeasingConfig};
use crate::vocabulary::settings::{Settings, invalid};

/// Every setting name the service reads, as written in the environment.
pub const SETTING_NAMES: &[&str] = &[
    "DATABASE_URL",
    "BIND_ADDRESS",
    "DOCS_PATH",
    "TOKEN_TTL_MINUTES",
    "LOGIN_TOKENS_PER_USER",
    "STORAGE_URL",
    "MAIL_URL",
    "MAIL_FROM",
    "LEASING_BASE_URL",
    "LEASING_CLIENT_CERT",
    "LEASING_CLIENT_KEY",
    "LEASING_CA_CERT",
    "LEASING_HTTP1_ONLY",
    "LEASING_FACTORS",
    "LEASING_TIMEOUT_SECONDS",
    "FIELDREPORT_BASE_URL",
    "FIELDREPORT_USERNAME",
    "FIELDREPORT_PASSWORD",
    "FIELDREPORT_TIMEOUT_SECONDS",
    "FIELDREPORT_SYNC_OVERLAP_SECONDS",
    "ERP_BASE_URL",
    "ERP_API_KEY",
    "ERP_WEBHOOK_SECRET",
    "ERP_WEBHOOK_ALLOWLIST",
    "ERP_TIMEOUT_SECONDS",
    "ERP_CONNECT_TIMEOUT_SECONDS",
    "ERP_PULL_OVERLAP_SECONDS",
    "TRUSTED_PROXIES",
    "MISSING_INFO_TEMPLATE",
    "MISSING_INFO_MAIL_INTERVAL_SECONDS",
    "LOG_FORMAT",
    "TLS_CERT",
    "TLS_KEY",
    "METRICS_TOKEN",
    "MAX_BODY_BYTES",
    "WORK_LEASE_SECONDS",
    "HEADER_READ_TIMEOUT_SECONDS",
    "MAX_HEADER_BYTES",
    "BODY_READ_TIMEOUT_SECONDS",
    "SEND_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_ADDRESS",
    "MAX_HELD_CALLS_PER_USER",
    "MAX_EXPORTS_PER_USER",
    "LEASING_SUBSCRIPTIONS_PER_USER",
    "JOBS_ACTIVE_PER_USER",
    "JOBS_PER_MINUTE_PER_USER",
    "IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER",
    "RETAIN_JOBS_DAYS",
    "RETAIN_IDEMPOTENCY_HOURS",
    "RETAIN_DELIVERIES_DAYS",
    "RETAIN_FLOWS_DAYS",
    "RETAIN_LOGIN_FAILURES_HOURS",
    "RETAIN_FEED_REMOVALS_DAYS",
    "MAX_HELD_CALLS_PER_TOKEN",
    "S3_ENDPOINT",
    "S3_REGION",
    "S3_ACCESS_KEY_ID",
    "S3_SECRET_ACCESS_KEY",
    "S3_ALLOW_HTTP",
    "SCHEDULE",
    "LEASING_WATCH_INTERVAL_SECONDS",
    "LEASING_WATCH_GONE_SECONDS",
    "LEASING_WATCH_CONCURRENCY",
    "CALLBACK_ALLOW_PRIVATE",
    "LEASING_DELIVERY_RETRY_SECONDS",
    "LEASING_DELIVERY_BACKOFF_MILLISECONDS",
    "LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER",
    "LEASING_CREATES_PER_MINUTE_PER_USER",
];

pub use crate::telemetry::LogFormat;
pub use crate::vocabulary::settings::ConfigError;

/// The validated configuration of one service process: each area's own.
#[derive(Debug, Clone)]
pub struct Config {
    /// The database and the work lease.
    pub store: StoreConfig,
    /// Where and how HTTP is served.
    pub front: FrontConfig,
    /// The metrics token and the held-call limit.
    pub api: ApiConfig,
    /// Token lifetime.
    pub auth: AuthConfig,
    /// Where files go (`STORAGE_URL`).
    pub storage: StorageLocation,
    pub s3: S3Config,
    /// Where mail goes and who sends it (`MAIL_URL`, `MAIL_FROM`).
    pub mail: MailConfig,
    pub leasing: LeasingConfig,
    pub fieldreport: FieldReportConfig,
    pub erp: ErpConfig,
    /// Jobs queued at intervals (`SCHEDULE`).
    pub jobs: JobsConfig,
    /// The leasing state watcher and its deliveries.
    pub watch: WatchConfig,
    pub log_format: LogFormat,
}

/// A setting read from TOML or the environment as a plain string, whatever scalar it was
/// written as (`port = 8080` and `PORT=8080` both arrive as "8080").
#[derive(Debug, Clone)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_char<E>(self, v: char) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Config {
    /// Loads the configuration from an optional TOML file and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut settings = Self::settings_of(Self::file_figment(file)?)?;
        settings.extend(Self::environment()?);
        Self::validate(Settings::new(settings))
    }

    /// The settings of the process environment, each taken as written. (figment's `Env`
    /// parses values: `0042` became `42`, `1.50` became `1.5`, quotes went, and bytes that are
    /// not UTF-8 were replaced, so a password or token changed without a word.)
    fn environment() -> Result<BTreeMap<String, String>, ConfigError> {
        let mut settings = BTreeMap::new();
        for &name in SETTING_NAMES {
            if let Some(value) = std::env::var_os(name) {
                let value = value.into_string().map_err(|_| invalid(name, "is not valid UTF-8"))?;
                settings.insert(name.to_string(), value);
            }
        }
        Ok(settings)
    }

    /// Loads the configuration from an optional TOML file and explicit variables in place of
    /// the process environment (used by tests, which must not touch the shared environment).
    pub fn load_with(file: Option<&Path>, env: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let mut settings = Self::settings_of(Self::file_figment(file)?)?;
        for (name, value) in env {
            settings.insert(name.to_ascii_uppercase(), value.to_string());
        }
        Self::validate(Settings::new(settings))
    }

    fn file_figment(file: Option<&Path>) -> Result<Figment, ConfigError> {
        let figment = Figment::new();
        let Some(path) = file else { return Ok(figment) };
        if !path.is_file() {
            return Err(ConfigError::Source(format!("config file {} does not exist", path.display())));
        }
        Ok(figment.merge(Toml::file_exact(path)))
    }

    fn settings_of(figment: Figment) -> Result<BTreeMap<String, String>, ConfigError> {
        let raw: BTreeMap<String, Scalar> =
            figment.extract().map_err(|e| ConfigError::Source(e.to_string().replace('\n', " ")))?;
        let mut settings = BTreeMap::new();
        for (key, Scalar(value)) in raw {
            let name = key.to_ascii_uppercase();
            if !SETTING_NAMES.contains(&name.as_str()) {
                return Err(ConfigError::Source(format!("unknown setting {key:?}")));
            }
            settings.insert(name, value);
        }
        Ok(settings)
    }

    /// Checks the settings and assembles the areas' configurations, each read by its area.
    fn validate(raw: Settings) -> Result<Self, ConfigError> {
        Ok(Config {
            store: StoreConfig::read(&raw)?,
            front: FrontConfig::read(&raw)?,
            api: ApiConfig::read(&raw)?,
            auth: AuthConfig::read(&raw)?,
            storage: StorageLocation::read(&raw)?,
            s3: S3Config::read(&raw)?,
            mail: MailConfig::read(&raw)?,
            leasing: LeasingConfig::read(&raw)?,
            fieldreport: FieldReportConfig::read(&raw)?,
            erp: ErpConfig::read(&raw)?,
            jobs: JobsConfig::read(&raw)?,
            watch: WatchConfig::read(&raw)?,
            log_format: LogFormat::read(&raw)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use url::Url;

    use super::*;

    #[test]
    fn defaults_need_no_settings() {
        let config = Config::load_with(None, &[]).unwrap();
        assert_eq!(config.front.bind_address.to_string(), "127.0.0.1:8080");
        assert_eq!(config.front.docs_path, "docs");
        assert_eq!(config.front.max_body_bytes, 1024 * 1024);
        assert_eq!(config.front.header_read_timeout, Duration::from_secs(10));
        assert!(config.auth.token_ttl.is_none());
        assert!(config.erp.timeout > Duration::from_secs(30), "an ERP call outlasts the ERP's queue");
        assert!(!config.store.database_url.is_postgres());
    }

    #[test]
    fn environment_wins_over_file() {
        let dir = std::env::temp_dir().join(format!("cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        std::fs::write(&file, "bind_address = \"127.0.0.1:9000\"\ntoken_ttl_minutes = 5\nmax_body_bytes = 2048\n")
            .unwrap();
        let config = Config::load_with(Some(&file), &[("BIND_ADDRESS", "127.0.0.1:9001")]).unwrap();
        assert_eq!(config.front.bind_address.to_string(), "127.0.0.1:9001");
        assert_eq!(config.auth.token_ttl, Some(Duration::from_secs(300)));
        assert_eq!(config.front.max_body_bytes, 2048);
    }

    #[test]
    fn bad_values_name_the_setting() {
        let cases: &[(&str, &str)] = &[
            ("BIND_ADDRESS", "nowhere"),
            ("TOKEN_TTL_MINUTES", "-3"),
            // Past the i64 milliseconds of an expiry (tokens born expired), and past u64 seconds.
            ("TOKEN_TTL_MINUTES", "200000000000000"),
            ("TOKEN_TTL_MINUTES", "18446744073709551615"),
            ("LEASING_WATCH_CONCURRENCY", "18446744073709551615"),
            ("LOGIN_TOKENS_PER_USER", "0"),
            ("LOGIN_TOKENS_PER_USER", "10001"),
            ("WORK_LEASE_SECONDS", "86401"),
            ("LEASING_WATCH_INTERVAL_SECONDS", "86401"),
            ("LEASING_WATCH_GONE_SECONDS", "31536001"),
            ("LEASING_DELIVERY_RETRY_SECONDS", "18446744073709551615"),
            ("LEASING_DELIVERY_BACKOFF_MILLISECONDS", "3600001"),
            ("LEASING_SUBSCRIPTIONS_PER_USER", "100001"),
            ("MAX_BODY_BYTES", "lots"),
            ("LOG_FORMAT", "xml"),
            ("ERP_WEBHOOK_ALLOWLIST", "10.0.0.0/8,not-an-ip"),
            ("TRUSTED_PROXIES", "10.0.0.0/33"),
            ("LEASING_BASE_URL", "ftp://x"),
            ("DATABASE_URL", "mysql://x"),
            ("DOCS_PATH", "../etc"),
            ("LEASING_HTTP1_ONLY", "maybe"),
            ("LEASING_FACTORS", "84=abc"),
            ("LEASING_FACTORS", "0=1.2"),
            ("MAIL_URL", "sendmail://localhost"),
            ("MAIL_URL", "localhost:25"),
            ("MAIL_URL", "smtp://"),
            ("MAIL_URL", "smtp://host?tls=maybe"),
            ("MAIL_URL", "smtps://host?tls=required"),
            ("MAIL_URL", "smtp://host/path"),
            ("MAIL_URL", "smtp://host?port=2"),
            ("MAIL_URL", "smtp://host:99999"),
            ("MAIL_FROM", "not a mailbox"),
            ("MAIL_FROM", "Name <no-at-sign>"),
            ("STORAGE_URL", "ftp://host/x"),
            ("STORAGE_URL", "s3://"),
            ("STORAGE_URL", "s3://Bucket/x"),
            ("STORAGE_URL", "s3://bucket/../x"),
            ("STORAGE_URL", "s3://key:secret@bucket"),
            ("STORAGE_URL", "s3://bucket?endpoint=http://x"),
            ("S3_ENDPOINT", "minio:9000"),
            ("S3_REGION", "eu central"),
            ("S3_ALLOW_HTTP", "perhaps"),
        ];
        for (name, value) in cases {
            let err = Config::load_with(None, &[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(&format!("configuration error: {name}:")), "{err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        let config = Config::load_with(
            None,
            &[
                ("DATABASE_URL", "postgres://app:hunter2@db/app"),
                ("ERP_API_KEY", "erp-key-123"),
                ("FIELDREPORT_PASSWORD", "fr-pass-456"),
                ("ERP_WEBHOOK_SECRET", "hook-789"),
                ("METRICS_TOKEN", "metrics-000"),
                ("MAIL_URL", "smtps://mailer:smtp-pw-321@mail.example.com"),
                ("S3_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                ("S3_SECRET_ACCESS_KEY", "s3-secret-654"),
            ],
        )
        .unwrap();
        let debug = format!("{config:?}");
        for secret in
            ["hunter2", "erp-key-123", "fr-pass-456", "hook-789", "metrics-000", "smtp-pw-321", "s3-secret-654"]
        {
            assert!(!debug.contains(secret), "{secret} leaked in {debug}");
        }
        assert!(config.store.database_url.is_postgres());
    }

    #[test]
    fn storage_settings() {
        let config = Config::load_with(None, &[]).unwrap();
        assert_eq!(config.storage, crate::file_storage::StorageLocation::Folder("./var/storage".into()));
        let config = Config::load_with(
            None,
            &[
                ("STORAGE_URL", "s3://contracts-eu/integration/prod"),
                ("S3_ENDPOINT", "http://127.0.0.1:9000"),
                ("S3_REGION", "eu-central-1"),
                ("S3_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                ("S3_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
                ("S3_ALLOW_HTTP", "true"),
            ],
        )
        .unwrap();
        let crate::file_storage::StorageLocation::S3 { bucket, prefix } = &config.storage else { panic!("s3") };
        assert_eq!(bucket, "contracts-eu");
        assert_eq!(prefix.as_ref().map(|p| p.as_str()), Some("integration/prod"));
        assert_eq!(config.s3.endpoint.as_ref().map(Url::as_str), Some("http://127.0.0.1:9000/"));
        assert_eq!(config.s3.region.as_deref(), Some("eu-central-1"));
        assert_eq!(config.s3.allow_http, Some(true));
        assert!(!format!("{config:?}").contains("wJalrXUtnFEMI"));
        // The key pair goes together; the error names the half that is missing.
        let err = Config::load_with(None, &[("S3_ACCESS_KEY_ID", "AKIDEXAMPLE")]).unwrap_err().to_string();
        assert!(err.starts_with("configuration error: S3_SECRET_ACCESS_KEY:"), "{err}");
        let err = Config::load_with(None, &[("S3_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")]).unwrap_err().to_string();
        assert!(err.starts_with("configuration error: S3_ACCESS_KEY_ID:"), "{err}");
        assert!(!err.contains("wJalrXUtnFEMI"), "{err}");
    }

    /// docs/deployment.md's sample environment file loads, and docs/configuration.md documents
    /// exactly the settings the service reads: one table row per name of [`SETTING_NAMES`], no
    /// row for a name it does not read. No other page has a row for a setting (one place each).
    #[test]
    fn the_documentation_describes_exactly_the_settings_read() {
        const DEPLOYMENT: &str = include_str!("../docs/deployment.md");
        const CONFIGURATION: &str = include_str!("../docs/configuration.md");
        let start = DEPLOYMENT
            .find("# /etc/integration-service/env\n")
            .expect("docs/deployment.md has the sample environment file");
        let block = &DEPLOYMENT[start..];
        let block = &block[..block.find("```").expect("the block ends")];
        let settings: Vec<(&str, &str)> = block
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| line.split_once('=').unwrap_or_else(|| panic!("not NAME=value: {line}")))
            .collect();
        assert!(settings.len() > 10);
        let config = Config::load_with(None, &settings).unwrap_or_else(|e| panic!("{e}"));
        assert!(config.store.database_url.is_postgres());
        assert!(matches!(config.storage, crate::file_storage::StorageLocation::S3 { .. }));

        /// The names in backticks that open a table row: `| `NAME` | …`.
        fn rows(page: &str) -> Vec<&str> {
            page.lines()
                .filter_map(|line| line.trim_start().strip_prefix("| `"))
                .filter_map(|rest| rest.split_once('`').map(|(name, _)| name))
                .filter(|name| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                })
                .collect()
        }
        let mut documented = rows(CONFIGURATION);
        documented.sort_unstable();
        let mut read: Vec<&str> = SETTING_NAMES.to_vec();
        read.sort_unstable();
        assert_eq!(documented, read, "docs/configuration.md's rows against SETTING_NAMES");
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        for entry in std::fs::read_dir(&docs).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == "configuration.md") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let elsewhere: Vec<&str> = rows(&text).into_iter().filter(|name| SETTING_NAMES.contains(name)).collect();
            assert!(
                elsewhere.is_empty(),
                "{} documents {elsewhere:?} again; they belong to docs/configuration.md",
                path.display()
            );
        }
    }

    #[test]
    fn mail_settings() {
        let config = Config::load_with(None, &[]).unwrap();
        assert_eq!(config.mail.from.to_string(), crate::mail::DEFAULT_MAIL_FROM);
        assert!(config.mail.url.is_none());
        for url in [
            "file://./var/mail",
            "smtp://127.0.0.1:2525",
            "smtp://user:p%40ss@relay.example.com?tls=required",
            "smtp://relay.example.com?tls=opportunistic",
            "smtps://user:pw@mail.example.com",
        ] {
            Config::load_with(None, &[("MAIL_URL", url)]).unwrap_or_else(|e| panic!("{url}: {e}"));
        }
        let config = Config::load_with(None, &[("MAIL_FROM", "Ops <ops@example.com>")]).unwrap();
        assert_eq!(config.mail.from.email.to_string(), "ops@example.com");
        let err = Config::load_with(None, &[("MAIL_URL", "smtp://u:secret-pw@host?tls=bad")]).unwrap_err().to_string();
        assert!(!err.contains("secret-pw"), "{err}");
        let err = Config::load_with(None, &[("MAIL_URL", "ftp://host")]).unwrap_err().to_string();
        assert_eq!(err, "configuration error: MAIL_URL: unknown scheme \"ftp\": use smtp://, smtps:// or file://");
    }

    #[test]
    fn unknown_file_setting_is_refused() {
        let dir = std::env::temp_dir().join(format!("cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        std::fs::write(&file, "bind_adress = \"127.0.0.1:9000\"\n").unwrap();
        let err = Config::load_with(Some(&file), &[]).unwrap_err().to_string();
        assert!(err.contains("bind_adress"), "{err}");
    }
}
