//! Authentication: users, passwords, personal access tokens and login throttling.
//! Free of HTTP types; `crate::api::auth` maps it to the wire.

pub mod ability;
mod config;
mod email;
pub mod last_used;
pub mod password;
pub mod token;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::store::auth::tokens::{NewToken, TokenRow};
use crate::store::{Store, StoreError, now_ms};
use crate::vocabulary::address_group::AddressGroup;
use crate::vocabulary::field_errors::FieldErrors;
use ability::{Abilities, Ability};
pub use config::AuthConfig;
pub use email::MAX_EMAIL_LEN;
use email::{normalize_email, stored_before_nfkc, validate_email};
use last_used::LastUsed;

/// Failed logins for one email from one address that are tolerated within [`THROTTLE_WINDOW`].
pub const MAX_FAILED_LOGINS: usize = 5;
/// Failed logins from one address within [`THROTTLE_WINDOW`], whatever the emails (password
/// spraying), before that address is refused.
pub const MAX_FAILED_LOGINS_PER_ADDRESS: usize = 20;
/// The longest password accepted, in characters (as the document's `maxLength` counts them):
/// argon2 hashes all of it, at most 16 KiB of UTF-8.
pub const MAX_PASSWORD_CHARS: usize = 4096;
pub const THROTTLE_WINDOW: Duration = Duration::from_secs(60);
/// A token's use is noted when its stored `last_used_at` is at least this old, and written in
/// batches ([`last_used`]), so checking a token stays a read.
const TOUCH_INTERVAL_MS: i64 = 60_000;
/// The name of every token issued by a login; no other token may take it.
pub const LOGIN_TOKEN_NAME: &str = "login";
/// The longest token name accepted.
pub const MAX_TOKEN_NAME_CHARS: usize = 100;
/// The longest lifetime a named token may be given, in days (about 100 years).
pub const MAX_TOKEN_DAYS: u64 = 36_500;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("invalid credentials")]
    InvalidCredentials,
    #[error("too many failed logins; retry after {retry_after:?}")]
    Throttled { retry_after: Duration },
    #[error("unauthenticated")]
    Unauthenticated,
    #[error("{}", crate::vocabulary::field_errors::describe(.0))]
    Invalid(FieldErrors),
    #[error("no user with email {0}")]
    UnknownUser(String),
    #[error("a user with email {0} exists")]
    DuplicateEmail(String),
    #[error("the token lacks the ability {0}")]
    MissingAbility(Ability),
    #[error("the user already has a token named {0:?}")]
    DuplicateTokenName(String),
    #[error("no token named {name:?} for {email}")]
    UnknownToken { email: String, name: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Hashing(String),
}

/// A user as shown to clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub name: String,
    pub email: String,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// An operator may subscribe to every financing request's events and cancel anyone's jobs
    /// (`user create --operator`, `user update --operator`).
    pub operator: bool,
}

impl From<crate::store::auth::users::UserRow> for User {
    fn from(row: crate::store::auth::users::UserRow) -> Self {
        User { id: row.id, name: row.name, email: row.email, created_at: row.created_at, operator: row.operator }
    }
}

/// The caller of a guarded route: the user and the token presented.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: User,
    pub token_id: i64,
    pub abilities: Abilities,
}

impl Caller {
    /// The caller, when its token holds `needed`; else [`AuthError::MissingAbility`].
    pub fn allowed(self, needed: Ability) -> Result<Caller, AuthError> {
        if self.abilities.allow(needed) { Ok(self) } else { Err(AuthError::MissingAbility(needed)) }
    }
}

/// A token as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSummary {
    pub name: String,
    pub abilities: Abilities,
    /// Epoch milliseconds.
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
}

/// A token to issue, before its secret is drawn.
struct NewTokenOf<'a> {
    user_id: i64,
    name: &'a str,
    abilities: &'a Abilities,
    created_at: i64,
    expires_at: Option<i64>,
}

/// Users, tokens and throttling over the store.
#[derive(Clone)]
pub struct Authenticator {
    store: Store,
    config: AuthConfig,
    /// Verified when the email is unknown, so that both failures take the same time.
    dummy_hash: Arc<str>,
    /// Token uses noted, written every few seconds ([`Authenticator::last_use_writer`]).
    last_used: Arc<LastUsed>,
}

/// Email and password within their limits, checked before either is used or stored. Counted in
/// characters, as the login body's `maxLength` in the document: a client's validator and the
/// service agree on what is too long. (An email longer than 254 bytes is refused at creation,
/// so a login with one is answered 401, not 422.)
fn check_lengths(email: &str, password: &str, errors: &mut FieldErrors) {
    if email.chars().count() > MAX_EMAIL_LEN {
        errors
            .entry("email".into())
            .or_default()
            .push(format!("The email may not be longer than {MAX_EMAIL_LEN} characters."));
    }
    if password.chars().count() > MAX_PASSWORD_CHARS {
        errors
            .entry("password".into())
            .or_default()
            .push(format!("The password may not be longer than {MAX_PASSWORD_CHARS} characters."));
    }
}

/// Password hashes computed at once, across all requests: each takes 19 MiB and a core for
/// its duration, so a burst of logins waits its turn instead of growing memory without bound
/// (`cargo xtask bench --scenario login` saw 1.2 GB without this cap).
fn hashing_turns() -> &'static Semaphore {
    static TURNS: OnceLock<Semaphore> = OnceLock::new();
    TURNS.get_or_init(|| Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get())))
}

/// Runs one password hash on the blocking pool, when it is its turn.
async fn hashing<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, AuthError> {
    let _turn = hashing_turns().acquire().await.map_err(|e| AuthError::Hashing(e.to_string()))?;
    tokio::task::spawn_blocking(work).await.map_err(|e| AuthError::Hashing(e.to_string()))
}

async fn hash_blocking(password: String) -> Result<String, AuthError> {
    hashing(move || password::hash(&password)).await?.map_err(AuthError::Hashing)
}

async fn verify_blocking(password: String, hash: Arc<str>) -> Result<bool, AuthError> {
    hashing(move || password::verify(&password, &hash)).await
}

impl Authenticator {
    pub fn new(store: Store, config: AuthConfig) -> Result<Self, AuthError> {
        let dummy_hash = password::hash("not a real password").map_err(AuthError::Hashing)?;
        Ok(Self { store, config, dummy_hash: dummy_hash.into(), last_used: Arc::default() })
    }

    /// Checks email and password and issues a new token `<id>|<secret>`.
    ///
    /// Unknown email and wrong password fail alike, in the same time. After
    /// [`MAX_FAILED_LOGINS`] failures for one email from one address within
    /// [`THROTTLE_WINDOW`], or [`MAX_FAILED_LOGINS_PER_ADDRESS`] from one address whatever the
    /// emails, every attempt (even with the right password) is refused until the oldest of
    /// them leaves the window. An address is counted by its [`AddressGroup`] (an IPv6
    /// address's /64).
    pub async fn login(&self, email: &str, password: &str, address: AddressGroup) -> Result<String, AuthError> {
        let mut errors = FieldErrors::new();
        if email.trim().is_empty() {
            errors.entry("email".into()).or_default().push("The email field is required.".into());
        }
        if password.is_empty() {
            errors.entry("password".into()).or_default().push("The password field is required.".into());
        }
        check_lengths(email, password, &mut errors);
        if !errors.is_empty() {
            return Err(AuthError::Invalid(errors));
        }
        let email = normalize_email(email);
        // Failures are kept by a digest of the email: a fixed size, whatever was sent.
        let email_key = crate::digest::sha256_hex(email.as_bytes());
        let address = &address.to_string();
        let now = now_ms();
        // Recorded as a failure before the password is verified, then checked against the
        // failures recorded before it: guesses sent at once would all pass a check made before
        // any of them is recorded. One over a limit forgets its row, so a throttled burst
        // stores nothing.
        let since = now - THROTTLE_WINDOW.as_millis() as i64;
        let attempt = self.store.record_login_failure(&email_key, address, now, since).await?;
        if let Some(retry_after) = self.throttled(&email_key, address, now, attempt).await? {
            self.store.forget_login_failure(attempt).await?;
            return Err(AuthError::Throttled { retry_after });
        }

        let user = self.store.user_by_email(&email).await?;
        let hash: Arc<str> = match &user {
            Some(user) => user.password_hash.as_str().into(),
            None => self.dummy_hash.clone(),
        };
        let verified = verify_blocking(password.to_string(), hash).await?;
        let Some(user) = user.filter(|_| verified) else {
            return Err(AuthError::InvalidCredentials);
        };
        self.store.clear_login_failures(&email_key, address).await?;
        self.issue_token(user.id).await
    }

    /// How long to wait when the failures recorded from `address` within [`THROTTLE_WINDOW`]
    /// before the failure `before_id`, for `email_key` or in all, reach their limits.
    async fn throttled(
        &self,
        email_key: &str,
        address: &str,
        now: i64,
        before_id: i64,
    ) -> Result<Option<Duration>, AuthError> {
        let window_ms = THROTTLE_WINDOW.as_millis() as i64;
        let since = now - window_ms;
        let (per_email, per_address) = (MAX_FAILED_LOGINS, MAX_FAILED_LOGINS_PER_ADDRESS);
        let store = &self.store;
        let failures =
            store.recent_login_failures(Some(email_key), address, since, before_id, per_email as i64).await?;
        let from_address = store.recent_login_failures(None, address, since, before_id, per_address as i64).await?;
        for (failures, most) in [(&failures, per_email), (&from_address, per_address)] {
            if failures.len() >= most {
                let oldest_counted = failures[most - 1];
                let wait_ms = (oldest_counted + window_ms - now).max(1000);
                return Ok(Some(Duration::from_millis(wait_ms.unsigned_abs()).max(Duration::from_secs(1))));
            }
        }
        Ok(None)
    }

    /// A login token: named `login`, every ability, `TOKEN_TTL_MINUTES` to live; the user's
    /// login tokens beyond `LOGIN_TOKENS_PER_USER` (used longest ago first) are revoked.
    async fn issue_token(&self, user_id: i64) -> Result<String, AuthError> {
        let now = now_ms();
        let expires_at = self.config.token_ttl.map(|ttl| now + ttl.as_millis() as i64);
        let keep = Some(self.config.login_tokens_per_user);
        self.store_token(
            NewTokenOf { user_id, name: LOGIN_TOKEN_NAME, abilities: &Abilities::all(), created_at: now, expires_at },
            keep,
        )
        .await
    }

    /// Stores a new token; with `keep`, the user's tokens of its name beyond that many go.
    async fn store_token(&self, of: NewTokenOf<'_>, keep: Option<u64>) -> Result<String, AuthError> {
        let secret = token::new_secret();
        let token_hash = token::digest(&secret);
        let abilities = of.abilities.stored();
        let new = NewToken {
            user_id: of.user_id,
            token_hash: &token_hash,
            created_at: of.created_at,
            expires_at: of.expires_at,
            name: of.name,
            abilities: &abilities,
        };
        let id = match keep {
            Some(keep) => self.store.insert_token_keeping(&new, keep).await.map(|(id, _)| id),
            None => self.store.insert_token(&new).await,
        };
        let id = id.map_err(|e| match e {
            StoreError::Duplicate(_) => AuthError::DuplicateTokenName(of.name.to_string()),
            other => other.into(),
        })?;
        Ok(format!("{id}|{secret}"))
    }

    /// A named token for an automation, with these abilities (every ability when none is
    /// named, as Sanctum does) and, optionally, a lifetime in days. Returns `<id>|<secret>`,
    /// the only time the secret is shown.
    pub async fn create_token(
        &self,
        email: &str,
        name: &str,
        abilities: &[String],
        expires_in_days: Option<u64>,
    ) -> Result<String, AuthError> {
        let name = name.trim();
        let mut errors = FieldErrors::new();
        if name.is_empty() {
            errors.entry("name".into()).or_default().push("The name field is required.".into());
        } else if name.chars().count() > MAX_TOKEN_NAME_CHARS || name.chars().any(char::is_control) {
            errors
                .entry("name".into())
                .or_default()
                .push(format!("The name must be at most {MAX_TOKEN_NAME_CHARS} printable characters."));
        } else if name == LOGIN_TOKEN_NAME {
            errors.entry("name".into()).or_default().push("The name `login` is kept for login tokens.".into());
        }
        let mut held = Vec::new();
        for requested in abilities {
            match Ability::parse(requested.trim()) {
                Some(ability) => held.push(ability),
                None => errors
                    .entry("ability".into())
                    .or_default()
                    .push(format!("Unknown ability {requested:?}; the abilities are {}.", Ability::names())),
            }
        }
        if expires_in_days.is_some_and(|days| days == 0 || days > MAX_TOKEN_DAYS) {
            errors
                .entry("expires_in_days".into())
                .or_default()
                .push(format!("The lifetime must be between 1 and {MAX_TOKEN_DAYS} days."));
        }
        if !errors.is_empty() {
            return Err(AuthError::Invalid(errors));
        }
        let abilities = if held.is_empty() { Abilities::all() } else { Abilities::of(held) };
        let email = normalize_email(email);
        let user = self.store.user_by_email(&email).await?.ok_or_else(|| AuthError::UnknownUser(email.clone()))?;
        let now = now_ms();
        let expires_at = expires_in_days.map(|days| now + (days * 24 * 3600 * 1000) as i64);
        self.store_token(
            NewTokenOf { user_id: user.id, name, abilities: &abilities, created_at: now, expires_at },
            None,
        )
        .await
    }

    /// The tokens of a user, oldest first.
    pub async fn list_tokens(&self, email: &str) -> Result<Vec<TokenSummary>, AuthError> {
        let email = normalize_email(email);
        if self.store.user_by_email(&email).await?.is_none() {
            return Err(AuthError::UnknownUser(email));
        }
        let rows = self.store.tokens_of(&email).await?;
        Ok(rows
            .into_iter()
            .map(|TokenRow { name, abilities, created_at, last_used_at, expires_at, .. }| TokenSummary {
                name,
                abilities: Abilities::from_stored(&abilities),
                created_at,
                last_used_at,
                expires_at,
            })
            .collect())
    }

    /// Revokes the user's token of this name (`login`: every login token); returns how many
    /// were revoked.
    pub async fn revoke_named(&self, email: &str, name: &str) -> Result<u64, AuthError> {
        let email = normalize_email(email);
        if self.store.user_by_email(&email).await?.is_none() {
            return Err(AuthError::UnknownUser(email));
        }
        match self.store.delete_named_tokens(&email, name.trim()).await? {
            0 => Err(AuthError::UnknownToken { email, name: name.trim().to_string() }),
            revoked => Ok(revoked),
        }
    }

    /// Resolves a bearer token to its caller. Missing, malformed, unknown, revoked and expired
    /// tokens all give [`AuthError::Unauthenticated`].
    pub async fn authenticate(&self, bearer: &str) -> Result<Caller, AuthError> {
        let presented = token::parse(bearer).ok_or(AuthError::Unauthenticated)?;
        let owner = self.store.token_owner(presented.id).await?.ok_or(AuthError::Unauthenticated)?;
        if !token::matches(presented.secret, &owner.token_hash) {
            return Err(AuthError::Unauthenticated);
        }
        let now = now_ms();
        if owner.expires_at.is_some_and(|at| at <= now) {
            return Err(AuthError::Unauthenticated);
        }
        if owner.last_used_at.is_none_or(|at| now - at >= TOUCH_INTERVAL_MS) {
            self.last_used.note(owner.token_id, now);
        }
        Ok(Caller {
            user: User {
                id: owner.user_id,
                name: owner.name,
                email: owner.email,
                created_at: owner.created_at,
                operator: owner.operator,
            },
            token_id: owner.token_id,
            abilities: Abilities::from_stored(&owner.abilities),
        })
    }

    /// The background task that writes the token uses noted here (see [`last_used`]).
    pub fn last_use_writer(&self, log: slog::Logger) -> last_used::LastUseWriter {
        last_used::LastUseWriter { last_used: self.last_used.clone(), store: self.store.clone(), log }
    }

    /// Revokes one token (logout).
    pub async fn revoke(&self, token_id: i64) -> Result<(), AuthError> {
        Ok(self.store.delete_token(token_id).await?)
    }

    /// Revokes every token of a user; returns how many were revoked.
    pub async fn revoke_all(&self, email: &str) -> Result<u64, AuthError> {
        let email = normalize_email(email);
        if self.store.user_by_email(&email).await?.is_none() {
            return Err(AuthError::UnknownUser(email));
        }
        Ok(self.store.delete_tokens_of(&email).await?)
    }

    pub async fn create_user(
        &self,
        email: &str,
        name: Option<&str>,
        password: &str,
        operator: bool,
    ) -> Result<User, AuthError> {
        let email = normalize_email(email);
        let mut errors = FieldErrors::new();
        validate_email(&email, &mut errors);
        if password.chars().count() < 8 {
            errors.entry("password".into()).or_default().push("The password must be at least 8 characters.".into());
        }
        check_lengths(&email, password, &mut errors);
        if !errors.is_empty() {
            return Err(AuthError::Invalid(errors));
        }
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_string());
        let hash = hash_blocking(password.to_string()).await?;
        let row = self.store.insert_user(&name, &email, &hash, operator).await.map_err(|e| match e {
            StoreError::Duplicate(_) => AuthError::DuplicateEmail(email.clone()),
            other => other.into(),
        })?;
        Ok(User::from(row))
    }

    pub async fn list_users(&self) -> Result<Vec<User>, AuthError> {
        Ok(self.store.list_users().await?.into_iter().map(User::from).collect())
    }

    /// Makes a user an operator, or no longer one.
    pub async fn set_operator(&self, email: &str, operator: bool) -> Result<User, AuthError> {
        let email = normalize_email(email);
        self.store.set_operator(&email, operator).await?.map(User::from).ok_or(AuthError::UnknownUser(email))
    }

    /// Deletes the user of this email. The email as stored is tried first, so that of two
    /// users whose emails look alike ([`Self::normalize_stored_emails`]) the one named is
    /// deleted, not the one its normalized form names.
    pub async fn delete_user(&self, email: &str) -> Result<(), AuthError> {
        let (stored, normalized) = (stored_before_nfkc(email), normalize_email(email));
        if self.store.delete_user(&stored).await?
            || (normalized != stored && self.store.delete_user(&normalized).await?)
        {
            Ok(())
        } else {
            Err(AuthError::UnknownUser(normalized))
        }
    }

    /// Brings every email stored before emails were compared in NFKC (`email.rs`) to its
    /// normalized form, so that its user logs in as before. One whose normalized form is
    /// another user's email is left as it was (logged): those two users' emails look alike,
    /// and the operator decides which stays. Runs at every start; a read of the users table
    /// when there is nothing to do.
    pub async fn normalize_stored_emails(&self) -> Result<(), AuthError> {
        for user in self.store.list_users().await? {
            let normalized = normalize_email(&user.email);
            if normalized != user.email && !self.store.change_user_email(user.id, &normalized).await? {
                let other = self.store.user_by_email(&normalized).await?.map(|other| other.id);
                crate::telemetry::report_email_left_as_stored(user.id, other);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
