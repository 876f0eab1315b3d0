//! The authenticator's settings.

use std::time::Duration;

use crate::vocabulary::settings::{ConfigError, Settings};

/// Login tokens a user keeps by default (`LOGIN_TOKENS_PER_USER`).
pub const DEFAULT_LOGIN_TOKENS_PER_USER: u64 = 100;
/// The most `LOGIN_TOKENS_PER_USER` may be: a user's logins never leave more rows than this.
pub const MAX_LOGIN_TOKENS_PER_USER: u64 = 10_000;

/// The most `TOKEN_TTL_MINUTES` may be: 100 years, a named token's longest lifetime
/// (`MAX_TOKEN_DAYS`), in minutes.
pub const MAX_TOKEN_TTL_MINUTES: u64 = 36_500 * 24 * 60;

/// The authenticator's settings.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// How long a login token lives (`TOKEN_TTL_MINUTES`); unset, until it is revoked.
    pub token_ttl: Option<Duration>,
    /// How many login tokens a user keeps (`LOGIN_TOKENS_PER_USER`): a login beyond them
    /// revokes those used (else issued) longest ago, so that no caller's logins store rows
    /// without bound, expiring or not.
    pub login_tokens_per_user: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig { token_ttl: None, login_tokens_per_user: DEFAULT_LOGIN_TOKENS_PER_USER }
    }
}

impl AuthConfig {
    pub fn read(raw: &Settings) -> Result<AuthConfig, ConfigError> {
        let login_tokens_per_user = raw
            .positive_at_most("LOGIN_TOKENS_PER_USER", MAX_LOGIN_TOKENS_PER_USER)?
            .unwrap_or(DEFAULT_LOGIN_TOKENS_PER_USER);
        // Bounded like a named token's lifetime: a larger one overflowed (a panic at start) or
        // made an expiry past i64 milliseconds, negative, so every login token was born expired.
        let token_ttl =
            raw.positive_at_most("TOKEN_TTL_MINUTES", MAX_TOKEN_TTL_MINUTES)?.map(|m| Duration::from_secs(m * 60));
        Ok(AuthConfig { token_ttl, login_tokens_per_user })
    }
}
