//! The one-shot request flow: up to eight actions in the seed's order, each recorded in the
//! database with its outcome and timing, so an operator can see where a flow stopped.
//!
//! create → [patch request] → [patch lessee] → wait until ReadyToSign →
//! e-signature configuration + start (mode `e_signature`) or cancel e-signature + switch to
//! paper (mode `cancel_e_signature`) → [contract as base64] → [download link].

use std::future::Future;
use std::time::Instant;

use serde_json::{Value, json};

use super::service::{LeasingError, LeasingService, WaitParams};
use crate::stop::{Stop, StopSignal};
use crate::store::{Store, StoreError, now_ms};

pub use crate::store::leasing::flows::FlowRow;
use crate::vocabulary::field_errors::FieldErrors;

/// What the caller asked the flow to do.
#[derive(Debug, Clone)]
pub struct FlowInput {
    pub request_payload: Value,
    pub e_signature_payload: Option<Value>,
    pub patch_request_payload: Option<Value>,
    pub patch_lessee_payload: Option<Value>,
    pub cancel_e_signature: bool,
    pub fetch_contract_document_base64: bool,
    pub fetch_contract_document_download_link: bool,
    pub wait: WaitParams,
}

impl FlowInput {
    pub fn mode(&self) -> &'static str {
        if self.cancel_e_signature { "cancel_e_signature" } else { "e_signature" }
    }

    /// What can be checked before the first call: the payloads' presence and shape.
    pub fn validate(&self) -> Result<(), FieldErrors> {
        let mut errors = FieldErrors::new();
        if let Err(request_errors) = super::payload::validate_create(&self.request_payload) {
            for (field, messages) in request_errors {
                errors.insert(format!("request_payload.{field}"), messages);
            }
        }
        if !self.cancel_e_signature && !self.e_signature_payload.as_ref().is_some_and(Value::is_object) {
            errors.insert(
                "e_signature_payload".into(),
                vec!["The e-signature payload is required unless cancel_e_signature is true.".into()],
            );
        }
        for (field, payload) in [
            ("patch_request_payload", &self.patch_request_payload),
            ("patch_lessee_payload", &self.patch_lessee_payload),
        ] {
            if payload.as_ref().is_some_and(|p| !p.is_object() && !p.is_null()) {
                errors.insert(field.into(), vec!["Must be a JSON object.".into()]);
            }
        }
        // The patches are checked before the flow creates anything, as the request is.
        type Check = fn(&Value) -> Result<(), FieldErrors>;
        let patches: [(&str, &Option<Value>, Check); 2] = [
            ("patch_request_payload", &self.patch_request_payload, super::payload::validate_patch),
            ("patch_lessee_payload", &self.patch_lessee_payload, super::payload::validate_lessee_patch),
        ];
        for (field, payload, check) in patches {
            if let Some(payload) = payload.as_ref().filter(|p| p.is_object())
                && let Err(patch_errors) = check(payload)
            {
                for (name, messages) in patch_errors {
                    errors.insert(format!("{field}.{name}"), messages);
                }
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

/// A flow that failed after it was recorded: the error, and where the flow stood, so that the
/// caller can find the financing request it created and the flow's record.
#[derive(Debug)]
pub struct FlowFailure {
    pub error: LeasingError,
    pub flow_id: i64,
    /// Known once the create step succeeded.
    pub financing_id: Option<String>,
    /// The action that failed, or that ran when the flow was stopped.
    pub failed_step: String,
}

impl FlowFailure {
    /// Whether a financing request exists, or may exist, at the provider: it was created, or
    /// the create was sent and its outcome is unknown (no answer in time, an unreadable
    /// answer, or the flow stopped while it ran). Otherwise the provider refused the create
    /// or was never reached, and running the flow again creates nothing twice.
    pub fn may_have_created(&self) -> bool {
        use crate::upstream::UpstreamError as E;
        let nothing_created = matches!(
            &self.error,
            LeasingError::Upstream(
                E::NotConfigured { .. }
                    | E::Unreachable { .. }
                    | E::Refused { .. }
                    | E::Throttled { .. }
                    | E::Client { .. },
            ) | LeasingError::Invalid(_)
                | LeasingError::TooManyCreates { .. }
                | LeasingError::Unavailable(_)
        );
        self.financing_id.is_some() || !nothing_created
    }
}

/// A flow of this user (another user's flows are not found).
pub async fn recorded(store: &Store, user_id: i64, flow_id: i64) -> Result<Option<FlowRow>, StoreError> {
    Ok(store.flow(flow_id).await?.filter(|flow| flow.user_id == user_id))
}

/// The flow that runs, or ran, under this user's `Idempotency-Key`.
pub async fn by_idempotency_key(store: &Store, user_id: i64, key: &str) -> Result<Option<FlowRow>, StoreError> {
    store.flow_by_idempotency_key(user_id, key).await
}

/// A failed step's recorded detail (`<error_code>: <message>`, as [`FlowRecorder`] writes it)
/// as its error code and message.
pub fn step_error(detail: &str) -> (String, String) {
    match detail.split_once(": ") {
        Some((code, message)) => (code.to_string(), message.to_string()),
        None => (String::new(), detail.to_string()),
    }
}

/// Records the steps of one flow.
pub struct FlowRecorder<'a> {
    store: &'a Store,
    pub flow_id: i64,
    /// Who runs the flow: the request it creates is watched for them.
    user_id: i64,
    position: i32,
    /// The action running now, or the last one that ran.
    action: &'static str,
}

impl<'a> FlowRecorder<'a> {
    /// Records a new flow, under the caller's `Idempotency-Key` when it sent one.
    pub async fn start(
        store: &'a Store,
        user_id: i64,
        mode: &str,
        idempotency_key: Option<&str>,
    ) -> Result<FlowRecorder<'a>, StoreError> {
        let flow_id = store.start_flow(user_id, mode, idempotency_key).await?;
        Ok(FlowRecorder { store, flow_id, user_id, position: 0, action: "create" })
    }

    /// Runs one action and records its outcome and duration.
    async fn step<F, Fut>(&mut self, action: &'static str, run: F) -> Result<Value, LeasingError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Value, LeasingError>>,
    {
        self.position += 1;
        self.action = action;
        let started_at = now_ms();
        let clock = Instant::now();
        let result = run().await;
        let duration_ms = clock.elapsed().as_millis() as i64;
        let (outcome, detail) = match &result {
            Ok(_) => ("succeeded", None),
            Err(error) => ("failed", Some(format!("{}: {error}", error.code()))),
        };
        if let Err(store_error) = self
            .store
            .record_flow_step(self.flow_id, self.position, action, outcome, started_at, duration_ms, detail.as_deref())
            .await
        {
            crate::telemetry::report_internal_error(&format!(
                "flow {} step {action} not recorded: {store_error}",
                self.flow_id
            ));
        }
        result
    }

    pub async fn finish(&self, result: &Result<Value, LeasingError>, financing_id: Option<&str>) {
        let outcome = match result {
            Ok(_) => self.store.finish_flow(self.flow_id, "succeeded", financing_id, None, None).await,
            // Stopped early: `abandoned` (the client went away) or `interrupted` (shutdown), at
            // the step it reached, with the financing request it created kept.
            Err(error @ LeasingError::Stopped(stop)) => {
                let status = match stop {
                    Stop::ClientGone => "abandoned",
                    Stop::ShuttingDown => "interrupted",
                };
                self.store
                    .finish_flow(self.flow_id, status, financing_id, Some(error.code()), Some(&error.to_string()))
                    .await
            }
            Err(error) => {
                self.store
                    .finish_flow(self.flow_id, "failed", financing_id, Some(error.code()), Some(&error.to_string()))
                    .await
            }
        };
        if let Err(store_error) = outcome {
            crate::telemetry::report_internal_error(&format!(
                "flow {} not finished in the record: {store_error}",
                self.flow_id
            ));
        }
    }
}

/// Runs the flow (its input already validated with [`FlowInput::validate`]); the answer is
/// the seed's result object.
pub async fn run(
    service: &LeasingService,
    input: &FlowInput,
    recorder: &mut FlowRecorder<'_>,
    stop: StopSignal,
) -> Result<Value, FlowFailure> {
    let mut financing_id = None;
    let store = recorder.store;
    let flow_id = recorder.flow_id;
    let mut stopping = stop.clone();
    let result = tokio::select! {
        result = run_steps(service, input, recorder, &mut financing_id, stop) => result,
        stopped = stopping.stopped() => Err(LeasingError::Stopped(stopped)),
        never = keep_lease(store, flow_id) => match never {},
    };
    recorder.finish(&result, financing_id.as_deref()).await;
    result.map_err(|error| FlowFailure { error, flow_id, financing_id, failed_step: recorder.action.to_string() })
}

/// Renews a running flow's lease three times per lease period, so that the janitor of any
/// instance can tell a flow whose process died from a slow one.
async fn keep_lease(store: &Store, flow_id: i64) -> std::convert::Infallible {
    let period = std::time::Duration::from_millis((store.work_lease_ms() / 3).max(1) as u64);
    loop {
        tokio::time::sleep(period).await;
        if let Err(error) = store.renew_flow_lease(flow_id).await {
            crate::telemetry::report_internal_error(&format!("flow {flow_id}: lease not renewed: {error}"));
        }
    }
}

fn non_empty(payload: &Option<Value>) -> Option<&Value> {
    payload.as_ref().filter(|p| p.as_object().is_some_and(|o| !o.is_empty()))
}

async fn run_steps(
    service: &LeasingService,
    input: &FlowInput,
    recorder: &mut FlowRecorder<'_>,
    financing_id: &mut Option<String>,
    mut stop: StopSignal,
) -> Result<Value, LeasingError> {
    let user_id = recorder.user_id;
    let request = recorder.step("create", || service.create(&input.request_payload, user_id)).await?;
    let id = request.get("FinancingId").and_then(Value::as_str).unwrap_or_default().to_string();
    *financing_id = Some(id.clone());
    // Named at once, so that a retry while the flow runs, and its record, can name it.
    if let Err(error) = recorder.store.note_flow_financing_id(recorder.flow_id, &id).await {
        crate::telemetry::report_internal_error(&format!("flow {}: financing id not noted: {error}", recorder.flow_id));
    }

    let patched_request = match non_empty(&input.patch_request_payload) {
        Some(patch) => Some(recorder.step("patch_request", || service.patch_request(&id, patch)).await?),
        None => None,
    };
    let patched_lessee = match non_empty(&input.patch_lessee_payload) {
        Some(patch) => Some(recorder.step("patch_lessee", || service.patch_lessee(&id, patch)).await?),
        None => None,
    };
    let latest = patched_lessee.clone().or_else(|| patched_request.clone()).unwrap_or_else(|| request.clone());
    let ready = recorder
        .step("wait_ready_to_sign", || service.wait_ready_to_sign(&id, &input.wait, Some(latest), &mut stop))
        .await?;

    let mut result = json!({
        "success": true,
        "mode": input.mode(),
        "financingId": id,
        "request": request,
        "patchedRequest": patched_request,
        "patchedLessee": patched_lessee,
        "readyRequest": ready,
    });
    if input.cancel_e_signature {
        result["cancelESignature"] = recorder.step("cancel_e_signature", || service.cancel_e_signature(&id)).await?;
        result["paperContract"] =
            recorder.step("switch_to_paper_contract", || service.switch_to_paper_contract(&id)).await?;
    } else {
        result["configuration"] =
            recorder.step("e_signature_configuration", || service.e_signature_configuration(&id)).await?;
        let payload = input.e_signature_payload.clone().unwrap_or_else(|| json!({}));
        result["eSignature"] = recorder.step("start_e_signature", || service.start_e_signature(&id, &payload)).await?;
    }
    result["contractDocumentBase64"] = if input.fetch_contract_document_base64 {
        recorder
            .step("contract_document_base64", || async { Ok(service.contract_document(&id, false).await?.0) })
            .await?
    } else {
        Value::Null
    };
    result["contractDocumentDownloadLink"] = if input.fetch_contract_document_download_link {
        recorder.step("contract_document_link", || service.contract_document_link(&id)).await?
    } else {
        Value::Null
    };
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::FlowFailure;
    use crate::leasing::service::LeasingError;
    use crate::stop::Stop;
    use crate::upstream::{System, UpstreamError};

    fn failure(error: LeasingError, financing_id: Option<&str>) -> FlowFailure {
        FlowFailure { error, flow_id: 1, financing_id: financing_id.map(str::to_string), failed_step: "create".into() }
    }

    /// A retry may run the flow again only when its create surely created nothing.
    #[test]
    fn only_a_create_refused_or_never_received_created_nothing() {
        let system = System::Leasing;
        let nothing = [
            LeasingError::Upstream(UpstreamError::refused(system, 400, "bad")),
            LeasingError::Upstream(UpstreamError::refused(system, 503, "down")),
            LeasingError::Upstream(UpstreamError::Throttled { system, retry_after: None }),
            LeasingError::Upstream(UpstreamError::Unreachable { system, detail: "refused".into() }),
            LeasingError::Upstream(UpstreamError::NotConfigured { system, setting: "LEASING_BASE_URL" }),
        ];
        for error in nothing {
            assert!(!failure(error, None).may_have_created());
        }
        let unknown = [
            LeasingError::Upstream(UpstreamError::Timeout { system }),
            LeasingError::Upstream(UpstreamError::Malformed { system, detail: "not JSON".into() }),
            LeasingError::Stopped(Stop::ClientGone),
            LeasingError::Stopped(Stop::ShuttingDown),
        ];
        for error in unknown {
            assert!(failure(error, None).may_have_created());
        }
        assert!(failure(LeasingError::Declined, Some("a1")).may_have_created());
        let refused_later = LeasingError::Upstream(UpstreamError::refused(system, 400, "no"));
        assert!(failure(refused_later, Some("a1")).may_have_created(), "a later step's refusal");
    }
}
