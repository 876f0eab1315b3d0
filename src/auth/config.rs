//! The authenticator's settings.

use std::time::Duration;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

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
        let login_tokens_per_user = match raw.positive_u64("LOGIN_TOKENS_PER_USER")? {
            None => DEFAULT_LOGIN_TOKENS_PER_USER,
            Some(n) if n <= MAX_LOGIN_TOKENS_PER_USER => n,
            Some(n) => {
                return Err(invalid("LOGIN_TOKENS_PER_USER", format!("at most {MAX_LOGIN_TOKENS_PER_USER}, got {n}")));
            }
        };
        // Bounded like a named token's lifetime: a larger one overflowed (a panic at start) or
        // made an expiry past i64 milliseconds, negative, so every login token was born expired.
        let token_ttl = match raw.positive_u64("TOKEN_TTL_MINUTES")? {
            None => None,
            Some(m) if m <= MAX_TOKEN_TTL_MINUTES => Some(Duration::from_secs(m * 60)),
            Some(m) => {
                return Err(invalid(
                    "TOKEN_TTL_MINUTES",
                    format!("at most {MAX_TOKEN_TTL_MINUTES} (100 years), got {m}"),
                ));
            }
        };
        Ok(AuthConfig { token_ttl, login_tokens_per_user })
    }
}
