//! Service configuration: a TOML file overlaid by environment variables (environment wins).
//!
//! Every setting has one name, used upper-case in the environment (`DATABASE_URL`) and
//! lower-case in the TOML file (`database_url = "..."`). Values are read as plain scalars and
//! validated at start-up, so that a bad value stops it with one line naming the setting.
//!
//! Each area owns its configuration: its struct, defaults and checks (e.g.
//! [`LeasingConfig::read`], [`MailConfig::read`], [`S3Config::read`]), read with the shared
//! [`Settings`]. This module gathers the values from the file and the environment, reads the
//! settings of the HTTP layer itself, and assembles the areas' configurations into [`Config`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use ipnet::IpNet;
use secrecy::SecretString;
use serde::Deserialize;
use url::Url;

use crate::mail::MailConfig;
use crate::storage::{S3Config, StorageLocation};
use crate::upstream::config::{ErpConfig, FieldReportConfig, LeasingConfig};
use crate::vocabulary::settings::{Settings, invalid};

/// Every setting name the service reads, as written in the environment.
pub const SETTING_NAMES: &[&str] = &[
    "DATABASE_URL",
    "BIND_ADDRESS",
    "DOCS_PATH",
    "TOKEN_TTL_MINUTES",
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
    "ERP_BASE_URL",
    "ERP_API_KEY",
    "ERP_WEBHOOK_SECRET",
    "ERP_WEBHOOK_ALLOWLIST",
    "ERP_TIMEOUT_SECONDS",
    "ERP_CONNECT_TIMEOUT_SECONDS",
    "TRUSTED_PROXIES",
    "MISSING_INFO_TEMPLATE",
    "LOG_FORMAT",
    "TLS_CERT",
    "TLS_KEY",
    "METRICS_TOKEN",
    "MAX_BODY_BYTES",
    "WORK_LEASE_SECONDS",
    "HEADER_READ_TIMEOUT_SECONDS",
    "MAX_HEADER_BYTES",
    "BODY_READ_TIMEOUT_SECONDS",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_ADDRESS",
    "MAX_HELD_CALLS_PER_TOKEN",
    "S3_ENDPOINT",
    "S3_REGION",
    "S3_ACCESS_KEY_ID",
    "S3_SECRET_ACCESS_KEY",
    "S3_ALLOW_HTTP",
];

pub use crate::telemetry::LogFormat;
pub use crate::vocabulary::settings::ConfigError;

/// How long a crashed instance's claimed work waits by default (`WORK_LEASE_SECONDS`). The
/// store has the same default for a store not told otherwise; this module cannot read it (the
/// store imports [`DatabaseUrl`] from here), so a test in `lib.rs` keeps the two equal.
pub const DEFAULT_WORK_LEASE: Duration = Duration::from_secs(60);

/// The database the store connects to.
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

/// The validated configuration of one service process.
#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: DatabaseUrl,
    pub bind_address: SocketAddr,
    pub docs_path: String,
    pub token_ttl: Option<Duration>,
    /// Where files go (`STORAGE_URL`).
    pub storage: StorageLocation,
    pub s3: S3Config,
    /// Where mail goes and who sends it (`MAIL_URL`, `MAIL_FROM`).
    pub mail: MailConfig,
    pub leasing: LeasingConfig,
    pub fieldreport: FieldReportConfig,
    pub erp: ErpConfig,
    pub trusted_proxies: Vec<IpNet>,
    pub log_format: LogFormat,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub metrics_token: Option<SecretString>,
    pub max_body_bytes: usize,
    /// How long a crashed instance's claimed work (sync, pull, webhook calls) waits before
    /// another run takes it over (`WORK_LEASE_SECONDS`, default 60).
    pub work_lease: Duration,
    /// How long a client may take to send its request headers (`HEADER_READ_TIMEOUT_SECONDS`,
    /// default 10 s); a slower one is disconnected.
    pub header_read_timeout: Duration,
    /// The largest request head, the request line and every header together
    /// (`MAX_HEADER_BYTES`, default 16 KiB); a larger one is answered 431.
    pub max_header_bytes: usize,
    /// How long a client may take to send a whole request body, from the request's start
    /// (`BODY_READ_TIMEOUT_SECONDS`, default 30 s); a slower one is answered 408.
    pub body_read_timeout: Duration,
    /// Open client connections at most, in total (`MAX_CONNECTIONS`, default 10,000) and from
    /// one address (`MAX_CONNECTIONS_PER_ADDRESS`, default 500); more are refused at once.
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    /// Waits and flows held at once per token on one instance (`MAX_HELD_CALLS_PER_TOKEN`,
    /// default 200); more are answered 429.
    pub max_held_calls_per_token: usize,
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
        let figment = Self::file_figment(file)?.merge(Env::raw().only(SETTING_NAMES));
        Self::validate(Settings::new(Self::settings_of(figment)?))
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
        let database_url = DatabaseUrl::new(raw.string_or("DATABASE_URL", "sqlite://./var/integration-service.db"));
        let db = database_url.expose();
        if !(database_url.is_postgres() || db.starts_with("sqlite:")) {
            return Err(invalid("DATABASE_URL", "must start with sqlite: or postgres://"));
        }

        let bind_raw = raw.string_or("BIND_ADDRESS", "127.0.0.1:8080");
        let bind_address = bind_raw
            .parse::<SocketAddr>()
            .map_err(|_| invalid("BIND_ADDRESS", format!("{bind_raw:?} is not an address like 127.0.0.1:8080")))?;

        let docs_path = raw.string_or("DOCS_PATH", "docs").trim_matches('/').to_string();
        let docs_ok = !docs_path.is_empty()
            && docs_path.split('/').all(|seg| {
                !seg.is_empty()
                    && seg.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    && seg != "."
                    && seg != ".."
            })
            && docs_path != "api"
            && !docs_path.starts_with("api/");
        if !docs_ok {
            return Err(invalid("DOCS_PATH", "must be a URL path of letters, digits, - _ . (not under /api)"));
        }

        let token_ttl = raw.positive_u64("TOKEN_TTL_MINUTES")?.map(|m| Duration::from_secs(m * 60));
        let max_body_bytes = raw.positive_u64("MAX_BODY_BYTES")?.unwrap_or(1024 * 1024);
        let max_body_bytes = usize::try_from(max_body_bytes).map_err(|_| invalid("MAX_BODY_BYTES", "too large"))?;
        let work_lease = raw.positive_u64("WORK_LEASE_SECONDS")?.map(Duration::from_secs).unwrap_or(DEFAULT_WORK_LEASE);
        let header_read_timeout = Duration::from_secs(raw.positive_u64("HEADER_READ_TIMEOUT_SECONDS")?.unwrap_or(10));
        let max_header_bytes = raw.positive_u64("MAX_HEADER_BYTES")?.unwrap_or(16 * 1024);
        let max_header_bytes = usize::try_from(max_header_bytes)
            .ok()
            .filter(|bytes| (1024..=1024 * 1024).contains(bytes))
            .ok_or_else(|| invalid("MAX_HEADER_BYTES", "must be between 1024 and 1048576"))?;
        let body_read_timeout = Duration::from_secs(raw.positive_u64("BODY_READ_TIMEOUT_SECONDS")?.unwrap_or(30));
        let count = |name: &'static str, default: u64| -> Result<usize, ConfigError> {
            usize::try_from(raw.positive_u64(name)?.unwrap_or(default)).map_err(|_| invalid(name, "too large"))
        };
        let max_connections = count("MAX_CONNECTIONS", 10_000)?;
        let max_connections_per_address = count("MAX_CONNECTIONS_PER_ADDRESS", 500)?;
        let max_held_calls_per_token = count("MAX_HELD_CALLS_PER_TOKEN", 200)?;

        let storage = StorageLocation::read(&raw)?;
        let s3 = S3Config::read(&raw)?;
        let mail = MailConfig::read(&raw)?;
        let log_format = LogFormat::read(&raw)?;

        let tls_cert = raw.path("TLS_CERT");
        let tls_key = raw.path("TLS_KEY");
        if tls_cert.is_some() != tls_key.is_some() {
            let missing = if tls_cert.is_some() { "TLS_KEY" } else { "TLS_CERT" };
            return Err(invalid(missing, "TLS_CERT and TLS_KEY must be set together"));
        }
        for (name, path) in [("TLS_CERT", &tls_cert), ("TLS_KEY", &tls_key)] {
            if let Some(path) = path
                && !path.is_file()
            {
                return Err(invalid(name, format!("file {} does not exist", path.display())));
            }
        }

        let leasing = LeasingConfig::read(&raw)?;
        let fieldreport = FieldReportConfig::read(&raw)?;
        let erp = ErpConfig::read(&raw)?;

        Ok(Config {
            database_url,
            bind_address,
            docs_path,
            token_ttl,
            storage,
            s3,
            mail,
            leasing,
            fieldreport,
            erp,
            trusted_proxies: raw.networks("TRUSTED_PROXIES")?,
            log_format,
            tls_cert,
            tls_key,
            metrics_token: raw.secret("METRICS_TOKEN"),
            max_body_bytes,
            work_lease,
            header_read_timeout,
            max_header_bytes,
            body_read_timeout,
            max_connections,
            max_connections_per_address,
            max_held_calls_per_token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_settings() {
        let config = Config::load_with(None, &[]).unwrap();
        assert_eq!(config.bind_address.to_string(), "127.0.0.1:8080");
        assert_eq!(config.docs_path, "docs");
        assert_eq!(config.max_body_bytes, 1024 * 1024);
        assert_eq!(config.header_read_timeout, Duration::from_secs(10));
        assert!(config.token_ttl.is_none());
        assert_eq!(config.erp.timeout, Duration::from_secs(30));
        assert!(!config.database_url.is_postgres());
    }

    #[test]
    fn environment_wins_over_file() {
        let dir = std::env::temp_dir().join(format!("cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        std::fs::write(&file, "bind_address = \"127.0.0.1:9000\"\ntoken_ttl_minutes = 5\nmax_body_bytes = 2048\n")
            .unwrap();
        let config = Config::load_with(Some(&file), &[("BIND_ADDRESS", "127.0.0.1:9001")]).unwrap();
        assert_eq!(config.bind_address.to_string(), "127.0.0.1:9001");
        assert_eq!(config.token_ttl, Some(Duration::from_secs(300)));
        assert_eq!(config.max_body_bytes, 2048);
    }

    #[test]
    fn bad_values_name_the_setting() {
        let cases: &[(&str, &str)] = &[
            ("BIND_ADDRESS", "nowhere"),
            ("TOKEN_TTL_MINUTES", "-3"),
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
        assert!(config.database_url.is_postgres());
    }

    #[test]
    fn storage_settings() {
        let config = Config::load_with(None, &[]).unwrap();
        assert_eq!(config.storage, crate::storage::StorageLocation::Folder("./var/storage".into()));
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
        let crate::storage::StorageLocation::S3 { bucket, prefix } = &config.storage else { panic!("s3") };
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
        assert!(config.database_url.is_postgres());
        assert!(matches!(config.storage, crate::storage::StorageLocation::S3 { .. }));

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
