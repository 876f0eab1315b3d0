//! `Idempotency-Key` on POSTs that create something at an upstream: a retry with the same key
//! and body gets the first answer back and creates nothing new; the same key with another
//! body is refused with 422. Keys belong to the user and the route. A failure is kept like an
//! answer when the work may have changed something upstream ([`Failure::Final`]); otherwise
//! the key is freed and a retry does the work again. A user adds new keys at most
//! `IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER` a minute (a repeat of a stored key is not counted):
//! no caller stores keys faster than retention removes them.

use std::future::Future;

use dropshot::ErrorStatusCode;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ApiError;
use crate::store::Store;
use crate::store::idempotency::{KeyState, NewKey};

/// How many new keys one user may store within a minute
/// (`IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER`); more are answered 429 with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewKeysPerMinute(pub u64);

/// The optional `Idempotency-Key` header.
#[derive(Deserialize, JsonSchema)]
pub struct IdempotencyHeader {
    /// Any string up to 255 characters that identifies this request among the caller's
    /// retries; a repeat with the same key and body returns the first answer.
    #[serde(rename = "idempotency-key")]
    #[schemars(regex(pattern = "^[ -~]{1,255}$"))]
    pub idempotency_key: Option<String>,
}

fn hash(body: &Value) -> String {
    // serde_json's maps are ordered by key, so equal documents hash alike.
    crate::digest::sha256_hex(&serde_json::to_vec(body).expect("a JSON value serialises"))
}

/// What a request's key says about it.
pub enum Claim<T> {
    /// Do the work (the request has no key, or its key was free), then
    /// [`Reservation::finish`].
    Run(Reservation),
    /// The first request with this key and body answered this: answer it again.
    Answered(Result<T, ApiError>),
    /// The first request with this key is still running (or its process died).
    Running,
}

/// A key held for one request's work.
pub struct Reservation {
    user_id: i64,
    route: &'static str,
    key: Option<String>,
}

/// How the work of a request with a key failed.
pub enum Failure {
    /// Nothing changed upstream: the key is freed and a retry does the work again.
    Repeatable(ApiError),
    /// Something was (or may have been) done upstream: a retry gets this answer back.
    Final(ApiError),
    /// As [`Failure::Final`], but the answer's client went away without reading it: a retry
    /// gets `kept`, which says what became of the work, instead.
    FinalKeptAs { answer: ApiError, kept: ApiError },
}

impl Failure {
    fn into_error(self) -> ApiError {
        match self {
            Failure::Repeatable(error) | Failure::Final(error) | Failure::FinalKeptAs { answer: error, .. } => error,
        }
    }
}

/// Reserves the request's key, or says what the key already stands for. Checks the key's form.
pub async fn claim<T: DeserializeOwned>(
    store: &Store,
    rate: NewKeysPerMinute,
    user_id: i64,
    route: &'static str,
    key: Option<String>,
    body: &Value,
) -> Result<Claim<T>, ApiError> {
    let Some(key) = key else { return Ok(Claim::Run(Reservation { user_id, route, key: None })) };
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return Err(malformed_key());
    }
    // A new key counts against the rate; a repeat of a stored key is answered as ever.
    match store.reserve_new_idempotency_key(user_id, route, &key, &hash(body), rate.0).await? {
        NewKey::Reserved => return Ok(Claim::Run(Reservation { user_id, route, key: Some(key) })),
        NewKey::RateReached(retry_after_seconds) => {
            return Err(ApiError::too_many_idempotency_keys(rate.0, retry_after_seconds).leasing());
        }
        NewKey::Stored => {}
    }
    Ok(match store.reserve_idempotency_key(user_id, route, &key, &hash(body)).await? {
        KeyState::Reserved => Claim::Run(Reservation { user_id, route, key: Some(key) }),
        KeyState::Mismatch => return Err(reused()),
        KeyState::InProgress => Claim::Running,
        KeyState::Completed { status, body } if status < 400 => {
            Claim::Answered(serde_json::from_str(&body).map_err(ApiError::internal))
        }
        KeyState::Completed { status, body } => {
            Claim::Answered(Err(ApiError::stored(status, &body).map_err(ApiError::internal)?))
        }
    })
}

/// Every refusal of a key (for the document, `crate::api::support::answers`).
pub fn refusals() -> Vec<ApiError> {
    vec![malformed_key(), ApiError::too_many_idempotency_keys(1, 1).leasing(), reused(), in_progress()]
}

/// The answer to a key that is not 1–255 printable characters.
fn malformed_key() -> ApiError {
    let errors = [("Idempotency-Key".to_string(), vec!["Up to 255 printable characters.".to_string()])].into();
    ApiError::validation(errors).leasing()
}

/// The answer to a key sent again with another body.
fn reused() -> ApiError {
    ApiError::new(
        ErrorStatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
        "This Idempotency-Key was used with a different request body.",
    )
    .leasing()
}

/// The answer to a retry while the first request with its key runs.
pub fn in_progress() -> ApiError {
    ApiError::new(
        ErrorStatusCode::CONFLICT,
        "idempotency_key_in_progress",
        "A request with this Idempotency-Key is still running; retry later.",
    )
    .leasing()
}

impl Reservation {
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Keeps the answer for retries, or frees the key when nothing changed upstream. The
    /// answer is given even when it could not be kept: the key then stays reserved (a retry
    /// is told the request is running), so that the work is not done twice.
    pub async fn finish<T: Serialize>(self, store: &Store, result: Result<T, Failure>) -> Result<T, ApiError> {
        let Some(key) = self.key else {
            return result.map_err(Failure::into_error);
        };
        let (user_id, route) = (self.user_id, self.route);
        let kept = match &result {
            Ok(answer) => match serde_json::to_string(answer) {
                Ok(body) => store.complete_idempotency_key(user_id, route, &key, 200, &body).await,
                Err(error) => return Err(ApiError::internal(error)),
            },
            Err(Failure::Final(error) | Failure::FinalKeptAs { kept: error, .. }) => match serde_json::to_string(error)
            {
                Ok(body) => store.complete_idempotency_key(user_id, route, &key, error.status().as_u16(), &body).await,
                Err(serialising) => return Err(ApiError::internal(serialising)),
            },
            Err(Failure::Repeatable(_)) => store.release_idempotency_key(user_id, route, &key).await,
        };
        if let Err(error) = kept {
            crate::telemetry::report_internal_error(&format!("{route}: Idempotency-Key answer not kept: {error}"));
        }
        result.map_err(Failure::into_error)
    }
}

impl<T: Serialize> Claim<T> {
    /// Runs `work` when the key is this request's; a repeat gets the stored answer back. A
    /// failed attempt frees its key.
    pub async fn once<F, Fut>(self, store: &Store, work: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        match self {
            Claim::Run(reservation) => reservation.finish(store, work().await.map_err(Failure::Repeatable)).await,
            Claim::Answered(answer) => answer,
            Claim::Running => Err(in_progress()),
        }
    }
}
