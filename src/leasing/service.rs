//! The leasing operations the routes offer, over the provider client.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use serde_json::{Map, Value};

use super::missing_info::MissingInfoMail;
use super::payload::{MAX_AMOUNT, MIN_AMOUNT, validate_create, validate_lessee_patch, validate_patch, with_defaults};
use super::state::{Observation, observe};
use super::watch::Watcher;
use super::watch::delivery::Deliverer;
use super::watch::poller::Poller;
use crate::file_storage::{Storage, StorageKey};
use crate::metrics::ObservationSource;
use crate::stop::{Stop, StopSignal};
use crate::store::now_ms;
use crate::upstream::leasing::{LeasingClient, body};
use crate::upstream::{UpstreamError, summarise};
use crate::vocabulary::field_errors::FieldErrors;
use crate::vocabulary::leasing_codes::LEASING_ERROR_CODES;

/// Why a leasing operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LeasingError {
    #[error("{}", crate::vocabulary::field_errors::describe(.0))]
    Invalid(FieldErrors),
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("The financing request was declined by the leasing provider; the process is aborted.")]
    Declined,
    #[error("The financing request was cancelled; the process is aborted.")]
    Cancelled,
    #[error("The leasing provider needs more information (state MissingInfo); {mail}.")]
    MissingInfo { mail: String },
    #[error("The financing request is already past signing (state {0}).")]
    PastSigning(String),
    #[error("The financing request is not ready to sign after {attempts} attempt(s); the last state was {state:?}.")]
    NotReadyToSign { state: String, attempts: u32 },
    #[error("The contract document could not be stored: {0}")]
    Storage(String),
    /// The user created `most` financing requests within the last minute, as many as they may.
    #[error(
        "You created {most} financing requests within a minute, the most a user may; retry in {retry_after_seconds} s."
    )]
    TooManyCreates { most: u64, retry_after_seconds: u64 },
    /// The database did not count the user's creates: nothing was asked of the provider.
    #[error("The financing request was not created: the database did not answer ({0}).")]
    Unavailable(String),
    /// Held work stopped early: its client went away, or the service is shutting down.
    #[error("{}", match .0 {
        Stop::ClientGone => "The client went away; the work stopped.",
        Stop::ShuttingDown => "The service is shutting down; the work stopped. Send it again.",
    })]
    Stopped(Stop),
}

impl LeasingError {
    /// Every code [`LeasingError::code`] answers (metrics count flow outcomes by them; the list
    /// is vocabulary, so that the metrics need not import the leasing area).
    pub const CODES: [&'static str; 19] = LEASING_ERROR_CODES;

    /// The `error_code` of the answer: one per cause.
    pub fn code(&self) -> &'static str {
        match self {
            LeasingError::Invalid(_) => "validation_failed",
            LeasingError::Declined => "declined",
            LeasingError::Cancelled => "cancelled",
            LeasingError::MissingInfo { .. } => "missing_info",
            LeasingError::PastSigning(_) => "already_past_signing",
            LeasingError::NotReadyToSign { .. } => "not_ready_to_sign",
            LeasingError::Storage(_) => "storage_error",
            LeasingError::TooManyCreates { .. } => "too_many_financing_requests",
            LeasingError::Unavailable(_) => "service_unavailable",
            LeasingError::Stopped(Stop::ClientGone) => "client_gone",
            LeasingError::Stopped(Stop::ShuttingDown) => "shutting_down",
            LeasingError::Upstream(e) => match e {
                UpstreamError::NotConfigured { .. } => "upstream_not_configured",
                UpstreamError::Timeout { .. } => "upstream_timeout",
                UpstreamError::Unreachable { .. } => "upstream_unavailable",
                UpstreamError::Throttled { .. } | UpstreamError::Refused { retry_after: Some(_), .. } => {
                    "upstream_busy"
                }
                UpstreamError::Refused { status, .. } if (400..500).contains(status) => "upstream_rejected",
                UpstreamError::Refused { .. } => "upstream_error",
                UpstreamError::Malformed { .. } | UpstreamError::Unnamed { .. } => "upstream_invalid_response",
                UpstreamError::Client { .. } => "upstream_client_error",
            },
        }
    }

    /// The wait the provider asked for when it refused with one (a 429, a 5xx with
    /// `Retry-After`).
    pub fn upstream_wait(&self) -> Option<Duration> {
        match self {
            LeasingError::Upstream(error) => error.retry_after(),
            _ => None,
        }
    }

    fn invalid(field: &str, message: impl Into<String>) -> LeasingError {
        LeasingError::Invalid(FieldErrors::from([(field.to_string(), vec![message.into()])]))
    }
}

/// How long and how often to wait for `ReadyToSign`, and the mail context.
#[derive(Debug, Clone)]
pub struct WaitParams {
    pub max_attempts: u32,
    pub sleep: Duration,
    pub technician_appointment_date: Option<String>,
    pub technician_appointment_time: Option<String>,
}

pub const MAX_SLEEP_MILLISECONDS: u64 = 60_000;

impl WaitParams {
    /// Checks the bounds: `max_attempts` 1..=100, `sleep_milliseconds` 0..=60000.
    pub fn new(
        max_attempts: Option<i64>,
        sleep_milliseconds: Option<i64>,
        technician_appointment_date: Option<String>,
        technician_appointment_time: Option<String>,
    ) -> Result<WaitParams, FieldErrors> {
        let mut errors = FieldErrors::new();
        let attempts = max_attempts.unwrap_or(10);
        if !(1..=100).contains(&attempts) {
            errors.insert("max_attempts".into(), vec!["max_attempts must be between 1 and 100.".into()]);
        }
        let sleep = sleep_milliseconds.unwrap_or(1000);
        if !(0..=MAX_SLEEP_MILLISECONDS as i64).contains(&sleep) {
            errors.insert("sleep_milliseconds".into(), vec!["sleep_milliseconds must be between 0 and 60000.".into()]);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(WaitParams {
            max_attempts: attempts as u32,
            sleep: Duration::from_millis(sleep as u64),
            technician_appointment_date,
            technician_appointment_time,
        })
    }
}

/// A contract PDF saved to storage.
#[derive(Debug, Clone)]
pub struct StoredContract {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Checks a financing id from a URL: letters, digits and `-`, at most 64 characters. Nothing
/// else reaches the provider or a storage key.
pub fn financing_id(raw: &str) -> Result<&str, LeasingError> {
    let valid = !raw.is_empty() && raw.len() <= 64 && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if valid {
        Ok(raw)
    } else {
        Err(LeasingError::invalid(
            "financingId",
            "The financing id may hold only letters, digits and -, at most 64 characters.",
        ))
    }
}

fn state_of(request: &Value) -> String {
    request.get("State").and_then(Value::as_str).unwrap_or_default().to_string()
}

fn bad_body(e: crate::upstream::leasing::BodyError) -> LeasingError {
    LeasingError::invalid(&e.field, e.message)
}

pub struct LeasingService {
    client: Result<LeasingClient, UpstreamError>,
    storage: Storage,
    missing_info: MissingInfoMail,
    /// Records the states this service reads, and watches the requests it creates.
    watcher: Watcher,
}

impl LeasingService {
    pub fn new(
        client: Result<LeasingClient, UpstreamError>,
        storage: Storage,
        missing_info: MissingInfoMail,
        watcher: Watcher,
    ) -> Self {
        LeasingService { client, storage, missing_info, watcher }
    }

    pub fn watcher(&self) -> &Watcher {
        &self.watcher
    }

    /// The watcher's background tasks: its deliverer, and its poller (over this service's
    /// provider client) when the provider is configured.
    pub fn watch_tasks(&self, log: &slog::Logger) -> (Deliverer, Option<Poller>) {
        let deliverer = self.watcher.deliverer(log.new(slog::o!("task" => "deliver")));
        let poller = match &self.client {
            Ok(client) => Some(self.watcher.poller(client.clone(), log.new(slog::o!("task" => "poll")))),
            Err(error) => {
                slog::info!(log, "leasing requests are not watched"; "reason" => %error);
                None
            }
        };
        (deliverer, poller)
    }

    /// Starts watching a request created elsewhere (or created here: then it is watched
    /// already): reads its state now, which also proves that the provider knows it. The
    /// events of a request first watched here go to `user_id`'s subscriptions.
    /// The request `id` as the provider answers it now, and when it was asked: what a watch
    /// starts from ([`crate::leasing::watch::Watcher::start`], whose failures are the store's,
    /// not a contract's).
    pub async fn read_to_watch(&self, id: &str) -> Result<(Value, i64), LeasingError> {
        let id = financing_id(id)?;
        let read_at = now_ms();
        Ok((self.client()?.get(id).await?, read_at))
    }

    pub fn is_configured(&self) -> bool {
        !matches!(self.client, Err(UpstreamError::NotConfigured { .. }))
    }

    fn client(&self) -> Result<&LeasingClient, LeasingError> {
        self.client.as_ref().map_err(|e| LeasingError::Upstream(e.clone()))
    }

    /// Validates and creates a request. The answer is the submitted request completed with
    /// what the provider returned (`FinancingId`, `State`, ...), missing fields defaulted. It
    /// is watched for `user_id`: its events go to that user's subscriptions.
    pub async fn create(&self, payload: &Value, user_id: i64) -> Result<Value, LeasingError> {
        validate_create(payload).map_err(LeasingError::Invalid)?;
        let request = body(payload).map_err(bad_body)?;
        if let Some(seconds) = self.create_turn(user_id, true).await? {
            return Err(self.too_many_creates(seconds));
        }
        let read_at = now_ms();
        let created = self.client()?.create(&request).await?;
        // Without an id the routes can name, the answer is no created request (a proxy's page,
        // a redirect followed to another resource): it is neither watched nor answered as one.
        let id = created.get("FinancingId").and_then(Value::as_str).filter(|id| financing_id(id).is_ok());
        let id = id.ok_or_else(|| UpstreamError::Malformed {
            system: crate::upstream::System::Leasing,
            detail: match created.get("FinancingId") {
                None | Some(Value::Null) => "the answer to a create has no FinancingId".to_string(),
                Some(other) => format!("the answer to a create has FinancingId {}", summarise(&other.to_string())),
            },
        })?;
        // The request exists at the provider now: a failure to watch it is reported, and does
        // not turn the creation into an error a client would repeat; it stays its creator's.
        self.watcher.start_created(id, &created, read_at, user_id).await;
        let mut data = payload.as_object().cloned().unwrap_or_default();
        if let Value::Object(answer) = created {
            data.extend(answer.into_iter().filter(|(_, v)| !v.is_null()));
        }
        Ok(with_defaults(Value::Object(data)))
    }

    /// Whether `user_id` may create a financing request now (a flow asks before it records
    /// itself; its create step takes the turn).
    pub async fn may_create(&self, user_id: i64) -> Result<(), LeasingError> {
        match self.create_turn(user_id, false).await? {
            Some(seconds) => Err(self.too_many_creates(seconds)),
            None => Ok(()),
        }
    }

    async fn create_turn(&self, user_id: i64, take: bool) -> Result<Option<u64>, LeasingError> {
        self.watcher.create_turn(user_id, take).await.map_err(|error| LeasingError::Unavailable(error.to_string()))
    }

    fn too_many_creates(&self, retry_after_seconds: u64) -> LeasingError {
        LeasingError::TooManyCreates { most: self.watcher.creates_per_minute(), retry_after_seconds }
    }

    pub async fn show(&self, id: &str) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        self.recorded(id, self.client()?.get(id)).await
    }

    /// The request as `call` (a read or a change of it) answers it, its state recorded as
    /// read when the call started.
    async fn recorded(
        &self,
        id: &str,
        call: impl Future<Output = Result<Value, UpstreamError>>,
    ) -> Result<Value, LeasingError> {
        let read_at = now_ms();
        let request = call.await?;
        self.watcher.observe(ObservationSource::Read, id, &request, read_at).await;
        Ok(with_defaults(request))
    }

    /// Reads a request's state for a wait, and records it.
    async fn read_for_wait(&self, client: &LeasingClient, id: &str) -> Result<Value, LeasingError> {
        let read_at = now_ms();
        let request = Box::pin(client.get(id)).await?;
        Box::pin(self.watcher.observe(ObservationSource::Wait, id, &request, read_at)).await;
        Ok(with_defaults(request))
    }

    pub async fn patch_request(&self, id: &str, patch: &Value) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        validate_patch(patch).map_err(LeasingError::Invalid)?;
        let patch = body(patch).map_err(bad_body)?;
        self.recorded(id, self.client()?.patch_request(id, &patch)).await
    }

    pub async fn patch_lessee(&self, id: &str, patch: &Value) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        validate_lessee_patch(patch).map_err(LeasingError::Invalid)?;
        let patch = body(patch).map_err(bad_body)?;
        self.recorded(id, self.client()?.patch_lessee(id, &patch)).await
    }

    /// Waits until the request is `ReadyToSign`, following the seed's table. `known` is a
    /// state already observed (e.g. from create); without it the first read counts as one
    /// observation. Then up to `max_attempts` further reads, `sleep` apart; a sleep ends the
    /// wait early when `stop` fires (the client went away, the service is stopping).
    pub async fn wait_ready_to_sign(
        &self,
        id: &str,
        params: &WaitParams,
        known: Option<Value>,
        stop: &mut StopSignal,
    ) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        let client = self.client()?;
        // Thousands of these calls may wait at once: the reads are boxed and the last read
        // is let go during the sleep, so that a waiting call holds little more than its timer
        // (`cargo xtask bench --scenario waiting-flows` measures the service's memory).
        let mut request = match known {
            Some(request) => request,
            None => Box::pin(self.read_for_wait(client, id)).await?,
        };
        let mut attempts = 0;
        loop {
            match observe(&state_of(&request)) {
                Observation::Ready => return Ok(request),
                Observation::MissingInfo => {
                    let appointment =
                        [params.technician_appointment_date.as_deref(), params.technician_appointment_time.as_deref()];
                    let mail = Box::pin(self.missing_info.send(id, &request, appointment)).await;
                    return Err(LeasingError::MissingInfo { mail });
                }
                Observation::Declined => return Err(LeasingError::Declined),
                Observation::Cancelled => return Err(LeasingError::Cancelled),
                Observation::PastSigning(state) => return Err(LeasingError::PastSigning(state)),
                Observation::Pending(state) if attempts >= params.max_attempts => {
                    return Err(LeasingError::NotReadyToSign { state, attempts });
                }
                Observation::Pending(_) => {
                    drop(std::mem::take(&mut request));
                    tokio::select! {
                        _ = tokio::time::sleep(params.sleep) => {}
                        stopped = stop.stopped() => return Err(LeasingError::Stopped(stopped)),
                    }
                    attempts += 1;
                    request = Box::pin(self.read_for_wait(client, id)).await?;
                }
            }
        }
    }

    pub async fn e_signature_configuration(&self, id: &str) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        Ok(self.client()?.e_signature_configuration(id).await?)
    }

    pub async fn start_e_signature(&self, id: &str, payload: &Value) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        let payload = body(payload).map_err(bad_body)?;
        Ok(self.client()?.start_e_signature(id, &payload).await?)
    }

    pub async fn cancel_e_signature(&self, id: &str) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        Ok(self.client()?.cancel_e_signature(id).await?)
    }

    pub async fn switch_to_paper_contract(&self, id: &str) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        Ok(self.client()?.switch_to_paper_contract(id).await?)
    }

    /// The contract as `{Content: <base64 PDF>, ...}`; with `store`, also saved at
    /// `contracts/<financingId>.pdf`.
    pub async fn contract_document(
        &self,
        id: &str,
        store: bool,
    ) -> Result<(Value, Option<StoredContract>), LeasingError> {
        let id = financing_id(id)?;
        let document = self.client()?.contract_document(id).await?;
        if !store {
            return Ok((document, None));
        }
        let content = document.get("Content").and_then(Value::as_str).unwrap_or_default();
        let pdf = base64::engine::general_purpose::STANDARD.decode(content.trim()).map_err(|e| {
            LeasingError::Upstream(UpstreamError::Malformed {
                system: crate::upstream::System::Leasing,
                detail: format!("contract Content is not base64: {e}"),
            })
        })?;
        let key = StorageKey::new(&format!("contracts/{id}.pdf")).map_err(|e| LeasingError::Storage(e.to_string()))?;
        let stored =
            self.storage.put(&key, Bytes::from(pdf)).await.map_err(|e| LeasingError::Storage(e.to_string()))?;
        Ok((document, Some(StoredContract { path: stored.path, bytes: stored.bytes, sha256: stored.sha256 })))
    }

    pub async fn contract_document_link(&self, id: &str) -> Result<Value, LeasingError> {
        let id = financing_id(id)?;
        Ok(self.client()?.contract_document_link(id).await?)
    }

    /// The provider's calculation for a validated body.
    pub async fn calculate(&self, payload: &Value) -> Result<Value, LeasingError> {
        let mut errors = FieldErrors::new();
        let object = payload.as_object().cloned().unwrap_or_else(Map::new);
        if !object
            .get("FinancingAmount")
            .and_then(Value::as_f64)
            .is_some_and(|a| (MIN_AMOUNT..=MAX_AMOUNT).contains(&a))
        {
            errors.insert(
                "FinancingAmount".into(),
                vec!["The financing amount must be a number from 0.01 to 1000000000000.".into()],
            );
        }
        if let Some(period) = object.get("Period").filter(|p| !p.is_null())
            && period.as_u64().is_none_or(|p| p == 0 || p > i32::MAX as u64)
        {
            errors.insert("Period".into(), vec!["The period must be a whole number of months greater than 0.".into()]);
        }
        if !errors.is_empty() {
            return Err(LeasingError::Invalid(errors));
        }
        let request = body(payload).map_err(bad_body)?;
        Ok(self.client()?.calculate(&request).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn financing_ids_are_checked_before_use() {
        assert!(financing_id("0b5e8a4c-1d2f-4a7b-9c3e-5f6a7b8c9d0e").is_ok());
        for bad in ["", "../x", "a/b", "a b", "x.pdf", &"a".repeat(65)] {
            assert!(matches!(financing_id(bad), Err(LeasingError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn every_code_is_listed() {
        use crate::upstream::System;
        let system = System::Leasing;
        let errors = [
            LeasingError::Invalid(FieldErrors::new()),
            LeasingError::Declined,
            LeasingError::Cancelled,
            LeasingError::MissingInfo { mail: String::new() },
            LeasingError::PastSigning(String::new()),
            LeasingError::NotReadyToSign { state: String::new(), attempts: 1 },
            LeasingError::Storage(String::new()),
            LeasingError::TooManyCreates { most: 1, retry_after_seconds: 1 },
            LeasingError::Unavailable(String::new()),
            UpstreamError::NotConfigured { system, setting: "X" }.into(),
            UpstreamError::Timeout { system }.into(),
            UpstreamError::Unreachable { system, detail: String::new() }.into(),
            UpstreamError::Throttled { system, retry_after: None }.into(),
            UpstreamError::refused(system, 404, "").into(),
            UpstreamError::refused(system, 503, "").into(),
            UpstreamError::Malformed { system, detail: String::new() }.into(),
            UpstreamError::Client { system, detail: String::new() }.into(),
            LeasingError::Stopped(Stop::ClientGone),
            LeasingError::Stopped(Stop::ShuttingDown),
        ];
        let codes: Vec<&str> = errors.iter().map(LeasingError::code).collect();
        assert_eq!(codes, LeasingError::CODES, "CODES lists each code once, in this order");
    }

    #[test]
    fn wait_bounds() {
        assert!(WaitParams::new(None, None, None, None).is_ok());
        let defaults = WaitParams::new(None, None, None, None).unwrap();
        assert_eq!((defaults.max_attempts, defaults.sleep), (10, Duration::from_secs(1)));
        assert!(WaitParams::new(Some(0), None, None, None).unwrap_err().contains_key("max_attempts"));
        assert!(WaitParams::new(Some(101), None, None, None).unwrap_err().contains_key("max_attempts"));
        assert!(WaitParams::new(None, Some(-1), None, None).unwrap_err().contains_key("sleep_milliseconds"));
        assert!(WaitParams::new(None, Some(60_001), None, None).unwrap_err().contains_key("sleep_milliseconds"));
        assert!(WaitParams::new(Some(100), Some(60_000), None, None).is_ok());
    }
}
