//! `Idempotency-Key` on POSTs that create something at an upstream: a retry with the same key
//! and body gets the first answer back and creates nothing new; the same key with another
//! body is refused with 422. Keys belong to the user and the route.

use std::future::Future;

use dropshot::ErrorStatusCode;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ApiError;
use crate::store::Store;
use crate::store::idempotency::KeyState;

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

/// Runs `work` once per key; repeats replay the stored answer.
pub async fn once<T, F, Fut>(
    store: &Store,
    user_id: i64,
    route: &str,
    key: Option<String>,
    body: &Value,
    work: F,
) -> Result<T, ApiError>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let Some(key) = key else { return work().await };
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        let errors = [("Idempotency-Key".to_string(), vec!["Up to 255 printable characters.".to_string()])].into();
        return Err(ApiError::validation(errors).leasing());
    }
    match store.reserve_idempotency_key(user_id, route, &key, &hash(body)).await? {
        KeyState::Reserved => {}
        KeyState::Mismatch => {
            return Err(ApiError::new(
                ErrorStatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "This Idempotency-Key was used with a different request body.",
            )
            .leasing());
        }
        KeyState::InProgress => {
            return Err(ApiError::new(
                ErrorStatusCode::CONFLICT,
                "idempotency_key_in_progress",
                "A request with this Idempotency-Key is still running; retry later.",
            )
            .leasing());
        }
        KeyState::Completed { body, .. } => {
            return serde_json::from_str(&body).map_err(ApiError::internal);
        }
    }
    match work().await {
        Ok(answer) => {
            let stored = serde_json::to_string(&answer).map_err(ApiError::internal)?;
            store.complete_idempotency_key(user_id, route, &key, 200, &stored).await?;
            Ok(answer)
        }
        Err(error) => {
            store.release_idempotency_key(user_id, route, &key).await?;
            Err(error)
        }
    }
}
