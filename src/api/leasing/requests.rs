//! The leasing area's endpoints. Every leasing route requires a bearer token and answers
//! errors with `success: false` beside the common error fields.
//!
//! The request flow and the calculations sit at their public paths beside
//! `/api/v1/leasing/{financingId}` (`/api/v1/leasing/calculate`,
//! `/api/v1/leasing/leasing/request-flow`): the vendored dropshot prefers a literal path
//! segment to a variable one beside it.

use dropshot::{Header, HttpResponseCreated, HttpResponseOk, Path, Query, RequestContext, TypedBody};
use rust_decimal::prelude::ToPrimitive;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::ApiContext;
use crate::api::support::documented::Documented;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::idempotency::{self, Claim, Failure, IdempotencyHeader};
use crate::api::leasing::owner::{FinancingIdPath, reach};
use crate::api::leasing::schema;
use crate::auth::Caller;
use crate::error::{ApiError, FlowPosition};
use crate::leasing::flow::{self, FlowInput, FlowRecorder, FlowRow};
use crate::leasing::service::{LeasingError, StoredContract, WaitParams};
use crate::leasing::state::StateMeta;
use crate::metrics::LeasingFlow;

#[derive(Deserialize, JsonSchema)]
pub struct WaitQuery {
    /// How many times to read the state again after the first read (1 to 100; default 10).
    #[schemars(range(min = 1, max = 100))]
    pub max_attempts: Option<i64>,
    /// Pause before each new read, in milliseconds (0 to 60000; default 1000).
    #[schemars(range(min = 0, max = 60000))]
    pub sleep_milliseconds: Option<i64>,
    /// Date of the technician appointment, for the missing-info mail.
    pub technician_appointment_date: Option<String>,
    /// Time of the technician appointment, for the missing-info mail.
    pub technician_appointment_time: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct ContractDocumentQuery {
    /// Also save the PDF to storage as `contracts/<financingId>.pdf`: `true`/`false` or
    /// `1`/`0` (default false).
    #[serde(default)]
    pub store_pdf: crate::api::support::query_flag::QueryFlag,
}

/// A request-returning answer.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct RequestEnvelope {
    /// Always `true`.
    pub success: bool,
    pub data: Documented<schema::FinancingRequestResponse>,
    pub meta: StateMeta,
}

impl RequestEnvelope {
    fn of(request: Value) -> RequestEnvelope {
        let state = request.get("State").and_then(Value::as_str).unwrap_or_default().to_string();
        RequestEnvelope { success: true, data: Documented::new(request), meta: StateMeta::of(&state) }
    }
}

/// The e-signature configuration of a request.
#[derive(Serialize, JsonSchema)]
pub struct ConfigurationEnvelope {
    pub success: bool,
    pub data: Documented<schema::ESignatureConfiguration>,
}

/// The provider's answer to an action.
#[derive(Serialize, JsonSchema)]
pub struct ActionEnvelope {
    pub success: bool,
    pub data: Documented<schema::ProviderAnswer>,
}

/// Where the contract PDF was saved.
#[derive(Serialize, JsonSchema)]
pub struct StoredPdf {
    /// Storage key, `contracts/<financingId>.pdf`.
    pub path: String,
    pub bytes: u64,
    /// SHA-256 of the PDF, hex.
    pub sha256: String,
}

impl From<StoredContract> for StoredPdf {
    fn from(stored: StoredContract) -> Self {
        StoredPdf { path: stored.path, bytes: stored.bytes, sha256: stored.sha256 }
    }
}

/// The contract document.
#[derive(Serialize, JsonSchema)]
pub struct ContractDocumentEnvelope {
    pub success: bool,
    pub data: Documented<schema::ContractDocument>,
    /// Present when `store_pdf=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<StoredPdf>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalment {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    #[schemars(regex(pattern = r"^([1-9][0-9]{0,11}(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))$"))]
    pub monthly_instalment: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalmentAndPeriod {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    #[schemars(regex(pattern = r"^([1-9][0-9]{0,11}(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))$"))]
    pub monthly_instalment: String,
    /// Contract period in months: 48, 60, 72 or 84 by default (`LEASING_FACTORS`).
    #[schemars(regex(pattern = r"^[1-9][0-9]{0,3}$"))]
    pub period: String,
}

/// The amount that can be financed.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "InverseCalculationResult::example")]
pub struct InverseCalculationResult {
    /// The financing amount, rounded half away from zero to cents.
    pub data: f64,
    /// The monthly instalment used.
    #[serde(rename = "monthlyInstalment")]
    pub monthly_instalment: f64,
    /// The period in months used.
    pub period: u32,
}

impl InverseCalculationResult {
    fn example() -> serde_json::Value {
        serde_json::json!({"data": 20340.14, "monthlyInstalment": 299, "period": 84})
    }
}

/// Counts how a flow that ran ended (its `error_code`), and passes the result on.
fn counted<T>(context: &ApiContext, flow: LeasingFlow, result: Result<T, LeasingError>) -> Result<T, LeasingError> {
    context.metrics.leasing_flow_ended(flow, result.as_ref().err().map(LeasingError::code));
    result
}

/// The caller behind the token, or the leasing-shaped 401.
async fn authorize(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
) -> Result<Caller, ApiError> {
    token.caller(rqctx).await.map_err(ApiError::leasing)
}

/// A held call's place under its user's cap, and what it stops on (see
/// [`crate::api::support::held_calls`]).
fn hold(
    rqctx: &RequestContext<ApiContext>,
    user_id: i64,
) -> Result<(crate::api::support::held_calls::HeldCall, crate::stop::StopSignal), ApiError> {
    let calls = &rqctx.context().held_calls;
    let place = calls.take(user_id).ok_or_else(|| ApiError::too_many_held_calls(calls.per_user()).leasing())?;
    let key = rqctx
        .request
        .headers()
        .get(crate::stop::HELD_CALL_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok());
    Ok((place, calls.stop_signal(key)))
}

/// Create a financing request
///
/// Validates the request (every bad field is named in one 422) and creates it at the
/// provider. The answer is the submitted request completed with the provider's
/// `FinancingId` and `State`. Unknown fields are passed to the provider untouched.
///
/// With an `Idempotency-Key` header, a retry with the same key and body returns the first
/// answer and creates nothing new; the same key with another body is refused (422).
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing", tags = ["leasing"] }]
pub async fn leasing_create(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    headers: Header<IdempotencyHeader>,
    body: TypedBody<Documented<schema::FinancingRequestPayload>>,
) -> Result<HttpResponseCreated<RequestEnvelope>, ApiError> {
    let caller = authorize(&rqctx, &token).await?;
    let key = headers.into_inner().idempotency_key;
    let body = body.into_inner().into_inner();
    let context = rqctx.context();
    let envelope = idempotency::once(
        &context.store,
        context.new_keys_per_minute,
        caller.user.id,
        "leasing.create",
        key,
        &body,
        || async { Ok(RequestEnvelope::of(context.leasing.create(&body, caller.user.id).await?)) },
    )
    .await?;
    Ok(HttpResponseCreated(envelope))
}

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
    pub action: String,
    /// `succeeded` or `failed`.
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
    pub mode: String,
    /// `running`, `succeeded`, `failed`, `abandoned` (its client went away) or `interrupted`
    /// (the service stopped while it ran).
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

/// Read a financing request
///
/// The request as the provider reports it now, with its state in `meta`.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/{financingId}", tags = ["leasing"] }]
pub async fn leasing_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    Ok(HttpResponseOk(RequestEnvelope::of(rqctx.context().leasing.show(&id).await?)))
}

/// Change a financing request
///
/// Changes calculation fields (not the lessee). The provider refuses changes in the states
/// Contracted, Declined and Cancelled, and a change invalidates a running e-signature.
#[dropshot::endpoint { method = PATCH, path = "/api/v1/leasing/{financingId}", tags = ["leasing"] }]
pub async fn leasing_patch(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    body: TypedBody<Documented<schema::PatchRequestPayload>>,
) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    let body = body.into_inner().into_inner();
    Ok(HttpResponseOk(RequestEnvelope::of(rqctx.context().leasing.patch_request(&id, &body).await?)))
}

/// Change the lessee
///
/// Sends the fields of the body to the provider as a change of the request's lessee (the
/// company or person leasing); fields left out are kept. Answers the updated request.
#[dropshot::endpoint { method = PATCH, path = "/api/v1/leasing/{financingId}/lessee", tags = ["leasing"] }]
pub async fn leasing_patch_lessee(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    body: TypedBody<Documented<schema::PatchLesseePayload>>,
) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    let body = body.into_inner().into_inner();
    Ok(HttpResponseOk(RequestEnvelope::of(rqctx.context().leasing.patch_lessee(&id, &body).await?)))
}

/// Wait until ready to sign
///
/// Reads the state; while it is not `ReadyToSign`, reads it again up to `max_attempts`
/// times, `sleep_milliseconds` apart. `MissingInfo` sends the missing-info mail and fails
/// (`missing_info`); `Declined`, `Cancelled` fail and abort (`declined`, `cancelled`);
/// `RunningContract`, `ContractPrinted` fail as past signing (`already_past_signing`);
/// attempts used up fail naming the last state (`not_ready_to_sign`). The call blocks for
/// up to `max_attempts × sleep_milliseconds`: allow a client time-out at least that long.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/{financingId}/wait-ready-to-sign",
    tags = ["leasing"],
}]
pub async fn leasing_wait_ready_to_sign(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    query: Query<WaitQuery>,
) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
    // Not the body itself: an `async fn` would also keep a copy of the request context it
    // moves into the wait's future (see `wait_ready_to_sign`).
    wait_ready_to_sign(rqctx, token, path, query).await
}

/// The future of `wait-ready-to-sign`, whose calls are held for as long as the provider takes,
/// thousands at once (`cargo xtask bench --scenario waiting-flows`: 10,000 within 300 MB).
/// Built so that a held call's future is small:
/// - in two steps, the caller's authorisation and the parameters first, then the wait (a
///   `futures` `and_then`, which keeps one step at a time): the request context (384 bytes)
///   is the first step's and gone during the wait, which needs only the server's state;
/// - a function returning futures, not an `async fn`, which would keep each argument twice
///   (as passed and as its local copy). The endpoint, an `async fn` as dropshot's endpoints
///   must be, keeps its arguments as passed; built inline in its body, the steps would keep
///   the request context a second time.
///
/// By `-Zprint-type-sizes`, this function's future takes 936 bytes; the endpoint's, which
/// holds it and the arguments, 1,456 bytes (1,840 with the steps inline in its body).
fn wait_ready_to_sign(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    query: Query<WaitQuery>,
) -> impl Future<Output = Result<HttpResponseOk<RequestEnvelope>, ApiError>> + Send + 'static {
    let server = rqctx.server.clone();
    let checked = async move {
        // Boxed: the wait's future keeps room for its largest step.
        let (caller, id) = Box::pin(reach(&rqctx, &token, path)).await?;
        let query = query.into_inner();
        let params = WaitParams::new(
            query.max_attempts,
            query.sleep_milliseconds,
            query.technician_appointment_date,
            query.technician_appointment_time,
        )
        .map_err(|errors| ApiError::validation(errors).leasing())?;
        let (place, stop) = hold(&rqctx, caller.user.id)?;
        Ok((id, params, place, stop))
    };
    futures::TryFutureExt::and_then(checked, move |(id, params, place, mut stop)| async move {
        // Held for as long as the wait runs (an unused binding would be dropped at once).
        let _place = place;
        let context = &server.private;
        let result = context.leasing.wait_ready_to_sign(&id, &params, None, &mut stop).await;
        Ok(HttpResponseOk(RequestEnvelope::of(counted(context, LeasingFlow::WaitReadyToSign, result)?)))
    })
}

/// E-signature configuration
///
/// How many customer and partner signees the provider accepts.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/{financingId}/e-signature/configuration",
    tags = ["leasing"],
}]
pub async fn leasing_e_signature_configuration(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<ConfigurationEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    let data = rqctx.context().leasing.e_signature_configuration(&id).await?;
    Ok(HttpResponseOk(ConfigurationEnvelope { success: true, data: Documented::new(data) }))
}

fn action(data: Value) -> HttpResponseOk<ActionEnvelope> {
    HttpResponseOk(ActionEnvelope { success: true, data: Documented::new(data) })
}

/// Start the e-signature
///
/// Starts the provider's e-signature process for a request that is `ReadyToSign`, with the
/// signees and options of the body (read the configuration first for what the provider
/// offers).
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/{financingId}/e-signature", tags = ["leasing"] }]
pub async fn leasing_start_e_signature(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    body: TypedBody<Documented<schema::ESignaturePayload>>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    let body = body.into_inner().into_inner();
    Ok(action(rqctx.context().leasing.start_e_signature(&id, &body).await?))
}

/// Cancel the e-signature
///
/// Cancels the provider's e-signature process of the financing request (for instance before
/// switching to a paper contract) and answers the provider's answer.
#[dropshot::endpoint { method = PUT, path = "/api/v1/leasing/{financingId}/cancel-e-signature", tags = ["leasing"] }]
pub async fn leasing_cancel_e_signature(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    Ok(action(rqctx.context().leasing.cancel_e_signature(&id).await?))
}

/// Switch to a paper contract
///
/// Asks the provider to sign the financing request's contract on paper instead of
/// electronically; cancel a running e-signature first.
#[dropshot::endpoint {
    method = PUT,
    path = "/api/v1/leasing/{financingId}/switch-to-paper-contract",
    tags = ["leasing"],
}]
pub async fn leasing_switch_to_paper_contract(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    Ok(action(rqctx.context().leasing.switch_to_paper_contract(&id).await?))
}

/// Contract document (base64)
///
/// The contract PDF as base64 in `data.Content`. With `store_pdf=true` the PDF is also
/// saved to storage as `contracts/<financingId>.pdf` and `stored` says where, how large
/// and with which SHA-256.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/{financingId}/contractdocument/base64",
    tags = ["leasing"],
}]
pub async fn leasing_contract_document(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
    query: Query<ContractDocumentQuery>,
) -> Result<HttpResponseOk<ContractDocumentEnvelope>, ApiError> {
    let store_pdf = query.into_inner().store_pdf.value("store_pdf").map_err(ApiError::leasing)?;
    let (_, id) = reach(&rqctx, &token, path).await?;
    let (document, stored) = rqctx.context().leasing.contract_document(&id, store_pdf).await?;
    Ok(HttpResponseOk(ContractDocumentEnvelope {
        success: true,
        data: Documented::new(document),
        stored: stored.map(StoredPdf::from),
    }))
}

/// Contract document download link
///
/// Asks the provider for a time-limited link to download the request's contract document
/// (the document itself: `GET .../contractdocument`).
#[dropshot::endpoint {
    method = POST,
    path = "/api/v1/leasing/{financingId}/contractdocument/link",
    tags = ["leasing"],
}]
pub async fn leasing_contract_document_link(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    let (_, id) = reach(&rqctx, &token, path).await?;
    Ok(action(rqctx.context().leasing.contract_document_link(&id).await?))
}

/// Lease calculation at the provider
///
/// Calls the provider's calculation with the validated body (`FinancingAmount` > 0;
/// without `Period` the provider answers every period it offers).
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/calculate", tags = ["leasing"] }]
pub async fn leasing_provider_calculation(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    body: TypedBody<Documented<schema::CalculationPayload>>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    authorize(&rqctx, &token).await?;
    let body = body.into_inner().into_inner();
    Ok(action(rqctx.context().leasing.calculate(&body).await?))
}

/// Inverse lease calculation (defaults)
///
/// The amount that can be financed for a monthly instalment of 299 over 84 months:
/// `financingAmount = monthlyInstalment × 100 / factor(period)`, rounded half away from
/// zero to cents. Same as `/api/v1/leasing/calculate/299/84`.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/calculate", tags = ["leasing"] }]
pub async fn leasing_calculate_default(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    calculate(&rqctx, &token, None, None).await
}

/// Inverse lease calculation (instalment)
///
/// The amount that can be financed for this monthly instalment over 84 months.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/calculate/{monthlyInstalment}", tags = ["leasing"] }]
pub async fn leasing_calculate_instalment(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<CalculateInstalment>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    let path = path.into_inner();
    calculate(&rqctx, &token, Some(&path.monthly_instalment), None).await
}

/// Inverse lease calculation
///
/// The amount that can be financed for this monthly instalment over this period. The
/// periods supported by default are 48, 60, 72 and 84 months (factors 2.31, 1.91, 1.64,
/// 1.47; configurable with `LEASING_FACTORS`); others answer 422.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/calculate/{monthlyInstalment}/{period}",
    tags = ["leasing"],
}]
pub async fn leasing_calculate(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<CalculateInstalmentAndPeriod>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    let path = path.into_inner();
    calculate(&rqctx, &token, Some(&path.monthly_instalment), Some(&path.period)).await
}

/// The inverse calculation of the three `leasing_calculate` endpoints; without an instalment
/// or a period, the defaults.
async fn calculate(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
    monthly_instalment: Option<&str>,
    period: Option<&str>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    authorize(rqctx, token).await?;
    let result = rqctx
        .context()
        .leasing_factors
        .inverse(monthly_instalment, period)
        .map_err(|errors| ApiError::validation(errors).leasing())?;
    Ok(HttpResponseOk(InverseCalculationResult {
        data: result.financing_amount.to_f64().unwrap_or_default(),
        monthly_instalment: result.monthly_instalment.to_f64().unwrap_or_default(),
        period: result.period,
    }))
}
