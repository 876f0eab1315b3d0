//! The one-shot request flow (`/api/v1/leasing/leasing/request-flow`): a run, its record,
//! its health check, and the test flow that stores a contract PDF.

use dropshot::{Header, HttpResponseOk, Path, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::requests::StoredPdf;
use super::{authorize, hold};
use crate::api::ApiContext;
use crate::api::leasing::owner::{FinancingIdPath, reach};
use crate::api::leasing::schema;
use crate::api::support::documented::Documented;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::idempotency::{self, Claim, Failure, IdempotencyHeader};
use crate::error::{ApiError, FlowPosition};
use crate::leasing::flow::{self, FlowInput, FlowRecorder, FlowRow};
use crate::leasing::service::{LeasingError, WaitParams};
use crate::metrics::LeasingFlow;

/// Body of the one-shot request flow.
#[derive(Deserialize, JsonSchema)]
pub struct FlowRequest {
    /// The financing request to create (validated as on `POST /api/v1/leasing`).
    pub request_payload: Documented<schema::FinancingRequestPayload>,
    /// Required unless `cancel_e_signature` is true.
    pub e_signature_payload: Option<Documented<schema::ESignaturePayload>>,
    /// Applied after create.
    pub patch_request_payload: Option<Documented<schema::PatchRequestPayload>>,
    /// Applied after create.
    pub patch_lessee_payload: Option<Documented<schema::PatchLesseePayload>>,
    /// Selects the mode: false → `e_signature` (default), true → `cancel_e_signature`.
    #[serde(default)]
    pub cancel_e_signature: bool,
    /// Fetch the contract as base64 at the end.
    #[serde(default)]
    pub fetch_contract_document_base64: bool,
    /// Fetch a download link at the end.
    #[serde(default)]
    pub fetch_contract_document_download_link: bool,
    /// Reads of the state after create (1 to 100; default 10).
    #[schemars(range(min = 1, max = 100))]
    pub max_attempts: Option<i64>,
    /// Pause between reads in milliseconds (0 to 60000; default 1000).
    #[schemars(range(min = 0, max = 60000))]
    pub sleep_milliseconds: Option<i64>,
    /// For the missing-info mail.
    pub technician_appointment_date: Option<String>,
    /// For the missing-info mail.
    pub technician_appointment_time: Option<String>,
}

/// The flow's result: `success`, `mode`, `financingId`, `request`, `patchedRequest`,
/// `patchedLessee`, `readyRequest`, then `configuration` and `eSignature` (mode
/// `e_signature`) or `cancelESignature` and `paperContract` (mode `cancel_e_signature`), then
/// `contractDocumentBase64` and `contractDocumentDownloadLink` (null unless asked for), and
/// `flowId`, the record of this run.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct FlowResult {
    pub success: bool,
    pub mode: String,
    #[serde(rename = "financingId")]
    pub financing_id: String,
    #[serde(rename = "flowId")]
    pub flow_id: i64,
    pub request: schema::FinancingRequestResponse,
    #[serde(rename = "patchedRequest")]
    pub patched_request: Option<schema::FinancingRequestResponse>,
    #[serde(rename = "patchedLessee")]
    pub patched_lessee: Option<schema::FinancingRequestResponse>,
    #[serde(rename = "readyRequest")]
    pub ready_request: schema::FinancingRequestResponse,
    pub configuration: Option<schema::ESignatureConfiguration>,
    #[serde(rename = "eSignature")]
    pub e_signature: Option<schema::ProviderAnswer>,
    #[serde(rename = "cancelESignature")]
    pub cancel_e_signature: Option<schema::ProviderAnswer>,
    #[serde(rename = "paperContract")]
    pub paper_contract: Option<schema::ProviderAnswer>,
    #[serde(rename = "contractDocumentBase64")]
    pub contract_document_base64: Option<schema::ContractDocument>,
    #[serde(rename = "contractDocumentDownloadLink")]
    pub contract_document_download_link: Option<schema::ProviderAnswer>,
}

/// The answer of the one-shot flow.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct FlowEnvelope {
    pub success: bool,
    pub data: Documented<FlowResult>,
}

/// Run the one-shot request flow
///
/// Up to eight actions in order: create; optionally patch the request and the lessee;
/// wait until ReadyToSign (as `wait-ready-to-sign`); then e-signature configuration and
/// start (mode `e_signature`) or cancel e-signature and switch to a paper contract (mode
/// `cancel_e_signature`); optionally fetch the contract as base64 and a download link.
/// Each run is recorded with its steps (`flowId`). Blocks for up to `max_attempts ×
/// sleep_milliseconds`. Honours `Idempotency-Key` like create.
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/leasing/request-flow", tags = ["leasing"] }]
pub async fn leasing_request_flow(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    headers: Header<IdempotencyHeader>,
    body: TypedBody<FlowRequest>,
) -> Result<HttpResponseOk<FlowEnvelope>, ApiError> {
    let caller = authorize(&rqctx, &token).await?;
    let key = headers.into_inner().idempotency_key;
    let request = body.into_inner();
    let (_place, stop) = hold(&rqctx, caller.user.id)?;
    let context = rqctx.context();
    let wait = WaitParams::new(
        request.max_attempts,
        request.sleep_milliseconds,
        request.technician_appointment_date.clone(),
        request.technician_appointment_time.clone(),
    )
    .map_err(|errors| ApiError::validation(errors).leasing())?;
    let input = FlowInput {
        request_payload: request.request_payload.into_inner(),
        e_signature_payload: request.e_signature_payload.map(Documented::into_inner),
        patch_request_payload: request.patch_request_payload.map(Documented::into_inner),
        patch_lessee_payload: request.patch_lessee_payload.map(Documented::into_inner),
        cancel_e_signature: request.cancel_e_signature,
        fetch_contract_document_base64: request.fetch_contract_document_base64,
        fetch_contract_document_download_link: request.fetch_contract_document_download_link,
        wait,
    };
    input.validate().map_err(|errors| ApiError::validation(errors).leasing())?;
    let fingerprint = serde_json::json!({
        "request_payload": input.request_payload, "e_signature_payload": input.e_signature_payload,
        "patch_request_payload": input.patch_request_payload, "patch_lessee_payload": input.patch_lessee_payload,
        "cancel_e_signature": input.cancel_e_signature, "fetch_contract_document_base64": input.fetch_contract_document_base64,
        "fetch_contract_document_download_link": input.fetch_contract_document_download_link,
        "max_attempts": input.wait.max_attempts, "sleep_milliseconds": input.wait.sleep.as_millis() as u64,
    });
    let store = &context.store;
    let user_id = caller.user.id;
    let reservation =
        match idempotency::claim(store, context.new_keys_per_minute, user_id, FLOW_ROUTE, key.clone(), &fingerprint)
            .await?
        {
            Claim::Run(reservation) => reservation,
            Claim::Answered(answer) => return answer.map(HttpResponseOk),
            Claim::Running => {
                let running = match key.as_deref() {
                    Some(key) => flow::by_idempotency_key(store, user_id, key).await?,
                    None => None,
                };
                return Err(match running {
                    // Ended without its answer kept: its instance stopped before it answered.
                    Some(flow) if flow.status != "running" => flow_answer_lost(&flow),
                    running => flow_in_progress(running.as_ref()),
                });
            }
        };
    // A flow under this key started before: its attempt's reservation was given up as
    // abandoned without an answer kept. Running again could create a second request.
    if let Some(key) = reservation.key()
        && let Some(earlier) = flow::by_idempotency_key(store, user_id, key).await?
    {
        return reservation
            .finish(store, Err::<FlowEnvelope, _>(Failure::Final(flow_answer_lost(&earlier))))
            .await
            .map(HttpResponseOk);
    }
    let outcome = async {
        // Over the user's rate the flow leaves no record either.
        context.leasing.may_create(user_id).await.map_err(|error| Failure::Repeatable(error.into()))?;
        let mut recorder = FlowRecorder::start(store, user_id, input.mode(), reservation.key())
            .await
            .map_err(|error| Failure::Repeatable(error.into()))?;
        let result = flow::run(&context.leasing, &input, &mut recorder, stop).await;
        context.metrics.leasing_flow_ended(LeasingFlow::RequestFlow, result.as_ref().err().map(|f| f.error.code()));
        match result {
            Ok(mut result) => {
                result["flowId"] = serde_json::json!(recorder.flow_id);
                Ok(FlowEnvelope { success: true, data: Documented::new(result) })
            }
            // The client went away: a retry is told where the flow stopped, not 499.
            Err(failure)
                if reservation.key().is_some()
                    && matches!(failure.error, LeasingError::Stopped(crate::stop::Stop::ClientGone)) =>
            {
                let kept = flow_left_by_its_client(&failure);
                Err(Failure::FinalKeptAs { answer: failure.into(), kept })
            }
            // Kept for retries: a financing request exists, or may exist, at the provider.
            Err(failure) if reservation.key().is_none() || failure.may_have_created() => {
                Err(Failure::Final(failure.into()))
            }
            // Nothing was created: the key is free for a retry, which runs a new flow.
            Err(failure) => match store.release_flow_idempotency_key(failure.flow_id).await {
                Ok(()) => Err(Failure::Repeatable(failure.into())),
                Err(error) => {
                    crate::telemetry::report_internal_error(&format!(
                        "flow {}: Idempotency-Key not released: {error}",
                        failure.flow_id
                    ));
                    Err(Failure::Final(failure.into()))
                }
            },
        }
    }
    .await;
    reservation.finish(store, outcome).await.map(HttpResponseOk)
}

/// The `Idempotency-Key` route name of the one-shot flow.
const FLOW_ROUTE: &str = "leasing.request-flow";

/// 409 to a retry while the first attempt with its key runs, naming its flow once it started.
fn flow_in_progress(flow: Option<&FlowRow>) -> ApiError {
    let mut error = idempotency::in_progress();
    if let Some(flow) = flow {
        error.message = format!(
            "A request with this Idempotency-Key is still running as flow {}; retry later, or follow it at \
             GET /api/v1/leasing/leasing/request-flow/{}.",
            flow.id, flow.id
        );
        error.flow =
            Some(FlowPosition { financing_id: flow.financing_id.clone(), flow_id: flow.id, failed_step: None });
    }
    error
}

/// 409 to a retry whose key's flow ended but whose answer was not kept (its instance stopped
/// before it answered): what its record says.
fn flow_answer_lost(flow: &FlowRow) -> ApiError {
    let message = format!(
        "The flow of this Idempotency-Key ended ({}) without its answer; its record is at \
         GET /api/v1/leasing/leasing/request-flow/{}.",
        flow.status, flow.id
    );
    let failed_step = flow.steps.last().map(|step| step.action.clone());
    flow_ended(message, FlowPosition { financing_id: flow.financing_id.clone(), flow_id: flow.id, failed_step })
}

/// 409 to a retry whose key's first attempt went away while its flow ran (the flow stopped,
/// `abandoned`): where it stopped, and the financing request it created, if any.
fn flow_left_by_its_client(failure: &flow::FlowFailure) -> ApiError {
    let created = match &failure.financing_id {
        Some(id) => format!(" Its financing request {id} exists: continue with the request's own routes."),
        None => " No financing request was created.".to_string(),
    };
    let message = format!(
        "The first request with this Idempotency-Key went away while its flow ran; the flow stopped at {} \
         (its record is at GET /api/v1/leasing/leasing/request-flow/{}).{created}",
        failure.failed_step, failure.flow_id
    );
    flow_ended(
        message,
        FlowPosition {
            financing_id: failure.financing_id.clone(),
            flow_id: failure.flow_id,
            failed_step: Some(failure.failed_step.clone()),
        },
    )
}

/// 409 `idempotency_key_flow_ended`: the key's flow ended without an answer its client read.
fn flow_ended(message: String, position: FlowPosition) -> ApiError {
    let mut error = ApiError::new(dropshot::ErrorStatusCode::CONFLICT, "idempotency_key_flow_ended", message).leasing();
    error.flow = Some(position);
    error
}

#[derive(Deserialize, JsonSchema)]
pub struct FlowIdPath {
    /// The flow's record, the `flowId` of the flow's answer.
    #[serde(rename = "flowId")]
    pub flow_id: i64,
}

/// One recorded step of a flow.
#[derive(Serialize, JsonSchema)]
pub struct FlowStep {
    /// 1 for the first step.
    pub position: i32,
    /// `create`, `patch_request`, `patch_lessee`, `wait_ready_to_sign`, `e_signature_configuration`,
    /// `start_e_signature`, `cancel_e_signature`, `switch_to_paper_contract`,
    /// `contract_document_base64` or `contract_document_link`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::flow_step_action")]
    pub action: String,
    /// `succeeded` or `failed`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::flow_step_outcome")]
    pub outcome: String,
    /// How long the step took, in milliseconds.
    pub duration_ms: i64,
    /// Why the step failed (the `error_code` the flow answered).
    pub error_code: Option<String>,
    /// Why the step failed, for humans.
    pub message: Option<String>,
}

/// The record of a one-shot flow.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "FlowRecord::example")]
pub struct FlowRecord {
    /// The flow's id, as in the flow's answer.
    #[serde(rename = "flowId")]
    pub flow_id: i64,
    /// `e_signature` or `cancel_e_signature`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::flow_mode")]
    pub mode: String,
    /// `running`, `succeeded`, `failed`, `abandoned` (its client went away) or `interrupted`
    /// (the service stopped while it ran).
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::flow_status")]
    pub status: String,
    /// The financing request the flow created; null until its create step succeeded.
    #[serde(rename = "financingId")]
    pub financing_id: Option<String>,
    /// Why the flow ended unsuccessfully, as its answer's `error_code`.
    pub error_code: Option<String>,
    /// Why the flow ended unsuccessfully, for humans.
    pub message: Option<String>,
    /// The steps that ran, in order; a step that was running when the flow stopped is absent.
    pub steps: Vec<FlowStep>,
}

impl FlowRecord {
    fn of(flow: FlowRow) -> FlowRecord {
        let steps = flow
            .steps
            .into_iter()
            .map(|step| {
                let (error_code, message) = step.detail.as_deref().map(flow::step_error).unzip();
                FlowStep {
                    position: step.position,
                    action: step.action,
                    outcome: step.outcome,
                    duration_ms: step.duration_ms,
                    error_code,
                    message,
                }
            })
            .collect();
        FlowRecord {
            flow_id: flow.id,
            mode: flow.mode,
            status: flow.status,
            financing_id: flow.financing_id,
            error_code: flow.error_code,
            message: flow.message,
            steps,
        }
    }

    fn example() -> Value {
        serde_json::json!({
            "flowId": 42, "mode": "e_signature", "status": "failed", "financingId": "a1b2c3d4-0000-4000-8000-000000000001",
            "error_code": "declined",
            "message": "The financing request was declined by the leasing provider; the process is aborted.",
            "steps": [
                {"position": 1, "action": "create", "outcome": "succeeded", "duration_ms": 212, "error_code": null, "message": null},
                {"position": 2, "action": "wait_ready_to_sign", "outcome": "failed", "duration_ms": 35, "error_code": "declined",
                 "message": "The financing request was declined by the leasing provider; the process is aborted."}
            ]
        })
    }
}

/// A flow's record.
#[derive(Serialize, JsonSchema)]
pub struct FlowRecordEnvelope {
    /// Always `true`.
    pub success: bool,
    pub data: FlowRecord,
}

/// Read a one-shot flow's record
///
/// Where a one-shot flow (`POST /api/v1/leasing/leasing/request-flow`) stands or ended: its
/// status, the financing request it created and each step with its outcome and, for a failed
/// step, the error. Only the flows of the token's user are found; any other id is 404.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/leasing/request-flow/{flowId}", tags = ["leasing"] }]
pub async fn leasing_request_flow_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FlowIdPath>,
) -> Result<HttpResponseOk<FlowRecordEnvelope>, ApiError> {
    let caller = authorize(&rqctx, &token).await?;
    let flow_id = path.into_inner().flow_id;
    let flow = flow::recorded(&rqctx.context().store, caller.user.id, flow_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no flow {flow_id}")).leasing())?;
    Ok(HttpResponseOk(FlowRecordEnvelope { success: true, data: FlowRecord::of(flow) }))
}

/// The flow's health check.
#[derive(Serialize, JsonSchema)]
pub struct FlowHealth {
    pub success: bool,
    pub message: String,
    /// Whether the leasing provider is configured (`LEASING_BASE_URL`).
    pub provider_configured: bool,
}

/// Request flow health check
///
/// Answers whether the one-shot flow can run: `provider_configured` says whether the
/// leasing provider is configured. The provider is not called.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/leasing/request-flow", tags = ["leasing"] }]
pub async fn leasing_request_flow_health(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
) -> Result<HttpResponseOk<FlowHealth>, ApiError> {
    authorize(&rqctx, &token).await?;
    let configured = rqctx.context().leasing.is_configured();
    let message = if configured {
        "The leasing request flow is available."
    } else {
        "The leasing provider is not configured (LEASING_BASE_URL)."
    };
    Ok(HttpResponseOk(FlowHealth { success: true, message: message.into(), provider_configured: configured }))
}

/// The contract PDF saved by the test flow.
#[derive(Serialize, JsonSchema)]
pub struct TestFlowResult {
    #[serde(rename = "financingId")]
    pub financing_id: String,
    pub stored: StoredPdf,
}

/// The answer of the test flow.
#[derive(Serialize, JsonSchema)]
pub struct TestFlowEnvelope {
    pub success: bool,
    pub data: TestFlowResult,
}

/// Store a contract PDF (test flow)
///
/// Only fetches the contract of the financing request and saves it to storage as
/// `contracts/<financingId>.pdf`.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/leasing/request-flow/test-flow/{financingId}",
    tags = ["leasing"],
}]
pub async fn leasing_test_flow(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<TestFlowEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    let (_, stored) = rqctx.context().leasing.contract_document(&id, true).await?;
    let stored = stored.ok_or_else(|| ApiError::internal("the contract was not stored").leasing())?;
    let stored = StoredPdf::from(stored);
    Ok(HttpResponseOk(TestFlowEnvelope { success: true, data: TestFlowResult { financing_id: id, stored } }))
}
