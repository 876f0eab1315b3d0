//! The mail settings: `MAIL_URL` and `MAIL_FROM`.

use lettre::message::Mailbox;
use secrecy::SecretString;

use super::error::MailError;
use super::target::MailTarget;
use crate::vocabulary::settings::{ConfigError, Settings, invalid};

/// The sender when `MAIL_FROM` is not set.
pub const DEFAULT_MAIL_FROM: &str = "integration-service <integration-service@localhost>";

/// The mail settings: where mail goes and who sends it.
#[derive(Debug, Clone)]
pub struct MailConfig {
    /// `MAIL_URL`, checked with [`MailTarget::parse`]; secret, as it may hold the SMTP password.
    pub url: Option<SecretString>,
    /// `MAIL_FROM`, default [`DEFAULT_MAIL_FROM`].
    pub from: Mailbox,
}

impl MailConfig {
    /// Reads and checks `MAIL_URL` and `MAIL_FROM`.
    pub fn read(raw: &Settings) -> Result<MailConfig, ConfigError> {
        match MailTarget::parse(raw.get("MAIL_URL")) {
            Ok(_) => {}
            Err(MailError::Config(reason)) => return Err(invalid("MAIL_URL", reason)),
            Err(other) => return Err(invalid("MAIL_URL", other.to_string())),
        }
        let from_raw = raw.string_or("MAIL_FROM", DEFAULT_MAIL_FROM);
        let from = parse_mailbox(&from_raw).map_err(|_| {
            invalid("MAIL_FROM", format!("{from_raw:?} is not a mailbox like `Name <user@example.com>`"))
        })?;
        Ok(MailConfig { url: raw.secret("MAIL_URL"), from })
    }
}

/// Parses a `MAIL_FROM` value: a mailbox such as `Name <user@example.com>` or `user@example.com`.
pub fn parse_mailbox(value: &str) -> Result<Mailbox, MailError> {
    value.trim().parse::<Mailbox>().map_err(|_| MailError::Address(value.to_string()))
}
