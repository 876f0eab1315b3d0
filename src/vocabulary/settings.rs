//! Reading settings: the raw values by name and the error that names a bad one. Each area reads
//! its own settings with these (e.g. `crate::upstream::config::LeasingConfig::read`);
//! `crate::config` gathers the values from the file and the environment and assembles the areas'
//! configurations.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ipnet::IpNet;
use secrecy::SecretString;
use url::Url;

/// A bad or unreadable setting; its `Display` is the one line printed before exiting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration error: {setting}: {reason}")]
    Invalid { setting: &'static str, reason: String },
    #[error("configuration error: {0}")]
    Source(String),
}

/// The error for a bad value of `setting`.
pub fn invalid(setting: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { setting, reason: reason.into() }
}

/// The raw settings, keyed by their upper-case name, before validation.
pub struct Settings(BTreeMap<String, String>);

impl Settings {
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Self(values)
    }

    /// The value, trimmed; `None` when unset or blank.
    pub fn get(&self, name: &'static str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    pub fn string_or(&self, name: &'static str, default: &str) -> String {
        self.get(name).unwrap_or(default).to_string()
    }

    /// A secret setting; its value is registered for [`super::redaction::scrub`], so that no
    /// upstream's echo of it reaches an answer or a log. Of a URL (`MAIL_URL`), only what is
    /// secret in it is registered, its password (and `user:password`), percent-encoded as written
    /// and decoded as sent: the rest (the server's address) names where something went, which
    /// answers and logs may say.
    pub fn secret(&self, name: &'static str) -> Option<SecretString> {
        self.get(name).map(|v| {
            match Url::parse(v) {
                Ok(url) if url.has_host() => {
                    if let Some(password) = url.password() {
                        // As written, and as sent: the server is given the decoded text.
                        let decoded = |text| percent_encoding::percent_decode_str(text).decode_utf8_lossy();
                        for (user, password) in
                            [(url.username().into(), password.into()), (decoded(url.username()), decoded(password))]
                        {
                            super::redaction::register(&password);
                            super::redaction::register(&format!("{user}:{password}"));
                        }
                    }
                }
                _ => super::redaction::register(v),
            }
            SecretString::from(v.to_string())
        })
    }

    pub fn path(&self, name: &'static str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }

    /// An `http://` or `https://` URL.
    pub fn url(&self, name: &'static str) -> Result<Option<Url>, ConfigError> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        let url = Url::parse(raw).map_err(|e| invalid(name, format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(name, "must be an http:// or https:// URL"));
        }
        Ok(Some(url))
    }

    pub fn bool_or(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        Ok(self.bool(name)?.unwrap_or(default))
    }

    pub fn bool(&self, name: &'static str) -> Result<Option<bool>, ConfigError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(None),
            Some("true" | "1" | "yes" | "on") => Ok(Some(true)),
            Some("false" | "0" | "no" | "off") => Ok(Some(false)),
            Some(other) => Err(invalid(name, format!("expected true or false, got {other:?}"))),
        }
    }

    pub fn positive_u64(&self, name: &'static str) -> Result<Option<u64>, ConfigError> {
        let Some(raw) = self.get(name) else { return Ok(None) };
        match raw.parse::<u64>() {
            Ok(0) | Err(_) => Err(invalid(name, format!("expected a positive whole number, got {raw:?}"))),
            Ok(n) => Ok(Some(n)),
        }
    }

    /// A positive whole number of at most `most`: a larger one is refused by name, as it would
    /// overflow a time or a count further on (a panic, or a lease or horizon gone negative).
    pub fn positive_at_most(&self, name: &'static str, most: u64) -> Result<Option<u64>, ConfigError> {
        match self.positive_u64(name)? {
            Some(n) if n > most => Err(invalid(name, format!("at most {most}, got {n}"))),
            other => Ok(other),
        }
    }

    /// A span of whole seconds, 0 to a day (86,400).
    pub fn seconds_or(
        &self,
        name: &'static str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, ConfigError> {
        let Some(raw) = self.get(name) else { return Ok(default) };
        match raw.trim().parse::<u64>() {
            Ok(seconds) if seconds <= 86_400 => Ok(std::time::Duration::from_secs(seconds)),
            _ => Err(invalid(name, format!("expected whole seconds from 0 to 86400, got {raw:?}"))),
        }
    }

    /// A comma-separated list of IP addresses and CIDR networks.
    pub fn networks(&self, name: &'static str) -> Result<Vec<IpNet>, ConfigError> {
        let Some(raw) = self.get(name) else { return Ok(Vec::new()) };
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| {
                item.parse::<IpNet>()
                    .or_else(|_| item.parse::<std::net::IpAddr>().map(IpNet::from))
                    .map_err(|_| invalid(name, format!("{item:?} is not an IP address or CIDR network")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A URL spells its password percent-encoded; the server is sent, and may echo, the
    /// decoded one.
    #[test]
    fn a_url_password_is_scrubbed_as_sent_too() {
        let values =
            BTreeMap::from([("MAIL_URL".to_string(), "smtp://ops%40acme:s3cret%2Fpass%25@mail.example:587".into())]);
        Settings::new(values).secret("MAIL_URL").unwrap();
        let echoed = "535 5.7.8 login ops@acme:s3cret/pass% refused, s3cret%2Fpass%25 too";
        assert_eq!(super::super::redaction::scrub(echoed), "535 5.7.8 login *** refused, *** too");
    }
}
