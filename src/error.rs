//! The one place where domain errors become HTTP answers.
//!
//! Every error body is JSON with `message`, `error_code` and `request_id`. Handlers leave
//! `request_id` empty; the front (`crate::front`) stamps the id of the request into every error
//! body, including the ones dropshot writes itself (unknown route, bad JSON), so that the body
//! and the `x-request-id` header always agree.

use dropshot::{ErrorStatusCode, HttpError, HttpResponseError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::AuthError;
use crate::erp::ErpError;
use crate::erp::webhook::WebhookRefusal;
use crate::feed::FeedError;
use crate::fieldreport::service::FieldReportError;
use crate::jobs::JobError;
use crate::leasing::flow::FlowFailure;
use crate::leasing::service::LeasingError;
use crate::leasing::watch::WatchError;
use crate::store::StoreError;
use crate::telemetry;
use crate::upstream::UpstreamError;
use crate::vocabulary::retry_after;

/// Validation messages per field name (in `vocabulary`: the areas name it without this module).
pub use crate::vocabulary::field_errors::FieldErrors;

/// The `Retry-After` of a 503 `service_unavailable`: a busy database is back within seconds.
const UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 2;

/// Error information from a response.
// Deserialised only to answer a stored failure again (an `Idempotency-Key` retry), with the
// status stored beside it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ApiError {
    #[serde(skip, default = "ApiError::unknown_status")]
    status: ErrorStatusCode,
    /// What went wrong, for humans.
    pub message: String,
    /// A stable, machine-readable code (snake_case), e.g. `unauthenticated`, `validation_failed`.
    pub error_code: String,
    /// The id of the request, as in the `x-request-id` header; quote it when reporting a problem.
    pub request_id: String,
    /// Present (and `false`) on leasing routes, which keep the `{success, message}` shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Validation failures: messages per field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<FieldErrors>,
    /// On 429 and 503: seconds until a new attempt may succeed (also sent as `Retry-After`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// Where a one-shot leasing flow stood; documented with that operation only
    /// (`api::support::openapi`), not in the schema every operation shares.
    #[serde(flatten)]
    #[schemars(skip)]
    pub flow: Option<FlowPosition>,
}

/// Where a one-shot leasing flow stood when it answered an error: its record, the financing
/// request it created (null before the create succeeded) and the action it stopped at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowPosition {
    #[serde(rename = "financingId")]
    pub financing_id: Option<String>,
    #[serde(rename = "flowId")]
    pub flow_id: i64,
    /// Absent while the flow still runs.
    #[serde(rename = "failedStep", default, skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<String>,
}

impl ApiError {
    /// An error answer; its message never carries a secret of the configuration (see
    /// [`crate::vocabulary::redaction`]).
    pub fn new(status: ErrorStatusCode, error_code: &str, message: impl Into<String>) -> Self {
        Self::echoing(status, error_code, crate::vocabulary::redaction::scrub(&message.into()))
    }

    /// An answer about the caller's own input (a 404 for a name it sent, a 422, dropshot's 400
    /// for an unreadable request), which may echo that input, and into which no upstream text
    /// comes: not scrubbed, since a guessed secret echoed as `***` would confirm the guess.
    fn echoing(status: ErrorStatusCode, error_code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            error_code: error_code.to_string(),
            request_id: String::new(),
            success: None,
            errors: None,
            retry_after_seconds: None,
            flow: None,
        }
    }

    fn unknown_status() -> ErrorStatusCode {
        ErrorStatusCode::INTERNAL_SERVER_ERROR
    }

    /// A stored answer read back: its body, with the status it was answered with.
    pub fn stored(status: u16, body: &str) -> Result<Self, String> {
        let mut error: ApiError = serde_json::from_str(body).map_err(|e| format!("stored error answer: {e}"))?;
        error.status = ErrorStatusCode::from_u16(status).map_err(|e| format!("stored error status {status}: {e}"))?;
        Ok(error)
    }

    pub fn unauthenticated() -> Self {
        Self::new(ErrorStatusCode::UNAUTHORIZED, "unauthenticated", "Unauthenticated.")
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::echoing(ErrorStatusCode::NOT_FOUND, "not_found", message)
    }

    /// 422 with messages per field; `message` summarises the first one.
    pub fn validation(errors: FieldErrors) -> Self {
        let message = errors
            .iter()
            .next()
            .and_then(|(field, messages)| messages.first().map(|m| format!("{field}: {m}")))
            .unwrap_or_else(|| "The given data was invalid.".to_string());
        Self {
            errors: Some(errors),
            ..Self::echoing(ErrorStatusCode::UNPROCESSABLE_ENTITY, "validation_failed", message)
        }
    }

    /// 429: the user holds as many held calls (waits, flows) here as they may.
    pub fn too_many_held_calls(most: usize) -> Self {
        let message = format!("This user already has {most} waits or flows running here; wait for one to end.");
        Self::too_many("too_many_held_calls", message, 1)
    }

    /// 429: the user has `most` exports streaming here already.
    pub fn too_many_exports(most: usize) -> Self {
        let message = format!("This user already has {most} exports streaming here; read one to its end or close it.");
        Self::too_many("too_many_exports", message, 1)
    }

    /// 429: the user stored `most` new `Idempotency-Key`s within the last minute.
    pub fn too_many_idempotency_keys(most: u64, retry_after_seconds: u64) -> Self {
        let message = format!(
            "you sent {most} new Idempotency-Keys within a minute, the most a user may; retry in {retry_after_seconds} s"
        );
        Self::too_many("too_many_idempotency_keys", message, retry_after_seconds)
    }

    pub fn too_many_attempts(retry_after_seconds: u64) -> Self {
        let message = format!("Too many failed login attempts. Try again in {retry_after_seconds} seconds.");
        Self::too_many("too_many_attempts", message, retry_after_seconds)
    }

    /// 429 `error_code` with `Retry-After`.
    fn too_many(error_code: &str, message: String, retry_after_seconds: u64) -> Self {
        Self::new(ErrorStatusCode::TOO_MANY_REQUESTS, error_code, message).retry_after(retry_after_seconds)
    }

    /// The error, with `Retry-After: seconds`.
    fn retry_after(self, seconds: u64) -> Self {
        Self { retry_after_seconds: Some(seconds), ..self }
    }

    /// A failure whose detail is for the log only; the client sees a generic message.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        telemetry::report_internal_error(&detail.to_string());
        Self::new(ErrorStatusCode::INTERNAL_SERVER_ERROR, "internal_error", "Internal server error.")
    }

    /// The database is away or busy: 503 with `Retry-After`, the request may be sent again.
    pub fn unavailable(detail: impl std::fmt::Display) -> Self {
        telemetry::report_internal_error(&detail.to_string());
        let message = "The service is temporarily unavailable.";
        Self::new(ErrorStatusCode::SERVICE_UNAVAILABLE, "service_unavailable", message)
            .retry_after(UNAVAILABLE_RETRY_AFTER_SECONDS)
    }

    /// 503 `upstream_busy` with the wait an upstream asked for, at most an hour.
    fn upstream_busy(message: String, retry_after: Option<std::time::Duration>) -> Self {
        Self::new(ErrorStatusCode::SERVICE_UNAVAILABLE, "upstream_busy", message)
            .retry_after(retry_after::relayed_seconds(retry_after))
    }

    /// Marks an error of a leasing route, which keeps the seed's `{success: false, message}`.
    pub fn leasing(mut self) -> Self {
        self.success = Some(false);
        self
    }

    pub fn status(&self) -> ErrorStatusCode {
        self.status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status.as_u16(), self.error_code, self.message)
    }
}

impl HttpResponseError for ApiError {
    fn status_code(&self) -> ErrorStatusCode {
        self.status
    }
}

/// Errors raised by dropshot itself (a body that is not valid JSON, a bad path parameter).
impl From<HttpError> for ApiError {
    fn from(error: HttpError) -> Self {
        let code =
            error.error_code.clone().unwrap_or_else(|| default_error_code(error.status_code.as_u16()).to_string());
        if error.status_code.is_server_error() {
            return Self::internal(error.internal_message);
        }
        Self::echoing(error.status_code, &code, error.external_message)
    }
}

/// The `error_code` of an error that did not name one, by status.
pub fn default_error_code(status: u16) -> &'static str {
    match status {
        400 => "bad_request",
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        406 => "not_acceptable",
        410 => "gone",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        422 => "validation_failed",
        429 => "too_many_requests",
        502 => "upstream_error",
        503 => "service_unavailable",
        504 => "upstream_timeout",
        s if s >= 500 => "internal_error",
        _ => "client_error",
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_) => Self::unavailable(error),
            // The client sent it (a NUL in an id, a filter or a body): the request's fault.
            StoreError::Unstorable(_) => Self::new(
                ErrorStatusCode::BAD_REQUEST,
                "bad_request",
                "The request holds a NUL character (U+0000), which the database cannot hold.",
            ),
            _ => Self::internal(error),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(error: AuthError) -> Self {
        match error {
            AuthError::InvalidCredentials => Self::new(
                ErrorStatusCode::UNAUTHORIZED,
                "invalid_credentials",
                "These credentials do not match our records.",
            ),
            AuthError::Throttled { retry_after } => Self::too_many_attempts(retry_after.as_secs().max(1)),
            AuthError::Unauthenticated => Self::unauthenticated(),
            AuthError::Invalid(errors) => Self::validation(errors),
            AuthError::UnknownUser(email) => Self::not_found(format!("no user with email {email}")),
            AuthError::DuplicateEmail(email) => {
                Self::new(ErrorStatusCode::CONFLICT, "duplicate_email", format!("a user with email {email} exists"))
            }
            AuthError::MissingAbility(ability) => Self::new(
                ErrorStatusCode::FORBIDDEN,
                "missing_ability",
                format!("This token lacks the ability `{ability}` this operation needs."),
            ),
            AuthError::DuplicateTokenName(name) => Self::new(
                ErrorStatusCode::CONFLICT,
                "duplicate_token_name",
                format!("the user already has a token named {name:?}"),
            ),
            AuthError::UnknownToken { email, name } => Self::not_found(format!("no token named {name:?} for {email}")),
            AuthError::Store(e) => e.into(),
            AuthError::Hashing(e) => Self::internal(e),
        }
    }
}

/// Every failure of a leasing route is logged and answered 500 `{success: false, message,
/// error_code}` (the seed's rule), except invalid input, which is 422 with `errors`, and a
/// create over the user's rate, 429 as every rate.
impl From<LeasingError> for ApiError {
    fn from(error: LeasingError) -> Self {
        let code = error.code();
        match error {
            LeasingError::Invalid(errors) => Self::validation(errors).leasing(),
            LeasingError::TooManyCreates { retry_after_seconds, .. } => {
                Self::too_many(code, error.to_string(), retry_after_seconds).leasing()
            }
            LeasingError::Unavailable(detail) => Self::unavailable(detail).leasing(),
            LeasingError::Stopped(stop) => {
                let status = match stop {
                    crate::stop::Stop::ShuttingDown => ErrorStatusCode::SERVICE_UNAVAILABLE,
                    // Nobody reads it: nginx's "client closed request", for the log line.
                    crate::stop::Stop::ClientGone => ErrorStatusCode::from_u16(499).expect("499 is a client error"),
                };
                Self::new(status, code, error.to_string()).leasing()
            }
            other => {
                telemetry::report_leasing_failure(code, &other.to_string());
                let wait = (code == "upstream_busy").then(|| retry_after::relayed_seconds(other.upstream_wait()));
                let error = Self::new(ErrorStatusCode::INTERNAL_SERVER_ERROR, code, other.to_string()).leasing();
                Self { retry_after_seconds: wait, ..error }
            }
        }
    }
}

/// A failed one-shot flow: the leasing answer, with where the flow stood.
impl From<FlowFailure> for ApiError {
    fn from(failure: FlowFailure) -> Self {
        // "Send it again" would create a second request once one exists; say what to do instead.
        let stopped_after_create = matches!(failure.error, LeasingError::Stopped(crate::stop::Stop::ShuttingDown))
            .then_some(failure.financing_id.as_deref())
            .flatten()
            .map(|id| {
                format!(
                    "The service is shutting down; the flow stopped at {}. Its financing request {id} exists: \
                     continue it with the request's own routes rather than running the flow again.",
                    failure.failed_step
                )
            });
        let error = Self::from(failure.error);
        let (financing_id, flow_id, failed_step) = (failure.financing_id, failure.flow_id, Some(failure.failed_step));
        let flow = Some(FlowPosition { financing_id, flow_id, failed_step });
        Self { message: stopped_after_create.unwrap_or(error.message), flow, ..error }
    }
}

/// The subscriptions' errors (leasing routes: `success: false` is added by the front).
impl From<WatchError> for ApiError {
    fn from(error: WatchError) -> Self {
        match error {
            WatchError::Invalid(errors) => Self::validation(errors).leasing(),
            WatchError::SubscriptionNotFound(_) | WatchError::DeliveryNotFound(_) | WatchError::RequestNotFound(_) => {
                Self::not_found(error.to_string()).leasing()
            }
            WatchError::TooManySubscriptions(_) => {
                Self::new(ErrorStatusCode::CONFLICT, "too_many_subscriptions", error.to_string()).leasing()
            }
            WatchError::TooManyRetries { retry_after_seconds, .. } => {
                Self::too_many("too_many_delivery_retries", error.to_string(), retry_after_seconds).leasing()
            }
            WatchError::Store(e) => ApiError::from(e).leasing(),
        }
    }
}

/// An upstream failure outside the leasing routes: 502 when it refused or failed (409 when it
/// reports a version conflict), 504 on a time-out, 503 when it is not configured or asked for a
/// wait (`upstream_busy`: a 429, a 5xx with `Retry-After`, to any call).
impl From<UpstreamError> for ApiError {
    fn from(error: UpstreamError) -> Self {
        let message = error.to_string();
        match error {
            UpstreamError::NotConfigured { .. } => {
                Self::new(ErrorStatusCode::SERVICE_UNAVAILABLE, "upstream_not_configured", message)
            }
            UpstreamError::Timeout { .. } => Self::new(ErrorStatusCode::GATEWAY_TIMEOUT, "upstream_timeout", message),
            UpstreamError::Refused { status: 409, .. } => {
                Self::new(ErrorStatusCode::CONFLICT, "upstream_conflict", message)
            }
            UpstreamError::Refused { retry_after: Some(wait), .. } => Self::upstream_busy(message, Some(wait)),
            UpstreamError::Refused { .. } => Self::new(ErrorStatusCode::BAD_GATEWAY, "upstream_error", message),
            UpstreamError::Throttled { retry_after, .. } => Self::upstream_busy(message, retry_after),
            UpstreamError::Unreachable { .. } => {
                Self::new(ErrorStatusCode::BAD_GATEWAY, "upstream_unavailable", message)
            }
            UpstreamError::Malformed { .. } | UpstreamError::Unnamed { .. } => {
                Self::new(ErrorStatusCode::BAD_GATEWAY, "upstream_invalid_response", message)
            }
            UpstreamError::Client { .. } => Self::internal(message),
        }
    }
}

impl From<ErpError> for ApiError {
    fn from(error: ErpError) -> Self {
        match error {
            ErpError::UnknownModel(_) | ErpError::NotFound { .. } => Self::not_found(error.to_string()),
            ErpError::Invalid { field, message } => Self::validation(FieldErrors::from([(field, vec![message])])),
            ErpError::Busy(message) => Self::new(ErrorStatusCode::CONFLICT, "conflict", message),
            ErpError::Webhook(refusal) => match refusal {
                WebhookRefusal::Forbidden => {
                    Self::new(ErrorStatusCode::FORBIDDEN, "forbidden_source", refusal.to_string())
                }
                WebhookRefusal::BadSecret => {
                    Self::new(ErrorStatusCode::UNAUTHORIZED, "invalid_webhook_secret", refusal.to_string())
                }
                WebhookRefusal::Invalid(message) => {
                    Self::validation(FieldErrors::from([("body".to_string(), vec![message])]))
                }
            },
            ErpError::Upstream(e) => e.into(),
            ErpError::FieldReport(e) => e.into(),
            ErpError::Store(e) => e.into(),
        }
    }
}

impl From<FieldReportError> for ApiError {
    fn from(error: FieldReportError) -> Self {
        match error {
            FieldReportError::Invalid(errors) => Self::validation(errors),
            FieldReportError::NotFound { .. } | FieldReportError::UnknownEntity(_) => {
                Self::not_found(error.to_string())
            }
            FieldReportError::Conflict(message) => Self::new(ErrorStatusCode::CONFLICT, "conflict", message),
            FieldReportError::NotApplied { message, retry_after: wait @ Some(_), .. } => {
                Self::upstream_busy(message, wait)
            }
            FieldReportError::NotApplied { message, timed_out, retry_after: None } => {
                let status = if timed_out { ErrorStatusCode::GATEWAY_TIMEOUT } else { ErrorStatusCode::BAD_GATEWAY };
                Self::new(status, "upstream_unavailable", message)
            }
            FieldReportError::UpstreamConflict(message) => {
                Self::new(ErrorStatusCode::CONFLICT, "upstream_conflict", message)
            }
            FieldReportError::OutcomeUnknown(message) => {
                Self::new(ErrorStatusCode::GATEWAY_TIMEOUT, "upstream_outcome_unknown", message)
            }
            FieldReportError::Interrupted => {
                Self::new(ErrorStatusCode::SERVICE_UNAVAILABLE, "interrupted", error.to_string())
            }
            FieldReportError::Upstream(e) => e.into(),
            FieldReportError::Store(e) => e.into(),
            FieldReportError::Internal(detail) => Self::internal(detail),
        }
    }
}

impl From<FeedError> for ApiError {
    fn from(error: FeedError) -> Self {
        match error {
            FeedError::Expired { .. } | FeedError::Unknown { .. } | FeedError::OtherHistory { .. } => {
                Self::new(ErrorStatusCode::GONE, "cursor_expired", error.to_string())
            }
            FeedError::Invalid(errors) => Self::validation(errors),
            FeedError::Store(e) => e.into(),
        }
    }
}

impl From<JobError> for ApiError {
    fn from(error: JobError) -> Self {
        match error {
            JobError::Invalid(errors) => Self::validation(errors),
            JobError::NotFound(_) => Self::not_found(error.to_string()),
            JobError::TooManyActive(_) => Self::too_many("too_many_active_jobs", error.to_string(), 5),
            JobError::TooFast { retry_after_seconds, .. } => {
                Self::too_many("too_many_jobs", error.to_string(), retry_after_seconds)
            }
            JobError::NotYours(_) => Self::new(ErrorStatusCode::FORBIDDEN, "not_job_owner", error.to_string()),
            JobError::Active { .. } => Self::new(ErrorStatusCode::CONFLICT, "job_active", error.to_string()),
            JobError::Ended { .. } => Self::new(ErrorStatusCode::CONFLICT, "job_ended", error.to_string()),
            JobError::Store(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiError, FlowPosition};

    /// A kept failure is answered again with the same status and body.
    #[test]
    fn a_stored_error_reads_back_as_it_was_answered() {
        let mut error =
            ApiError::new(dropshot::ErrorStatusCode::INTERNAL_SERVER_ERROR, "declined", "Declined.").leasing();
        error.flow = Some(FlowPosition {
            financing_id: Some("a1".into()),
            flow_id: 7,
            failed_step: Some("wait_ready_to_sign".into()),
        });
        let body = serde_json::to_string(&error).unwrap();
        let stored = ApiError::stored(500, &body).unwrap();
        assert_eq!(stored.status().as_u16(), 500);
        assert_eq!(serde_json::to_value(&stored).unwrap(), serde_json::to_value(&error).unwrap());
        let json = serde_json::to_value(&stored).unwrap();
        assert_eq!((json["financingId"].as_str(), json["flowId"].as_i64()), (Some("a1"), Some(7)));

        let plain = serde_json::to_string(&ApiError::not_found("no flow 7").leasing()).unwrap();
        let stored = ApiError::stored(404, &plain).unwrap();
        assert!(stored.flow.is_none(), "{plain}");
        assert_eq!(serde_json::to_string(&stored).unwrap(), plain);
    }
}
