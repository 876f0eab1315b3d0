//! Financing requests: create, read, change, wait until ready to sign, e-signature, and the
//! contract document.

use dropshot::{Header, HttpResponseCreated, HttpResponseOk, Path, Query, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{authorize, hold};
use crate::api::ApiContext;
use crate::api::leasing::owner::{FinancingIdPath, reach};
use crate::api::leasing::schema;
use crate::api::support::documented::Documented;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::idempotency::{self, IdempotencyHeader};
use crate::error::ApiError;
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

/// Counts how a flow that ran ended (its `error_code`), and passes the result on.
fn counted<T>(context: &ApiContext, flow: LeasingFlow, result: Result<T, LeasingError>) -> Result<T, LeasingError> {
    context.metrics.leasing_flow_ended(flow, result.as_ref().err().map(LeasingError::code));
    result
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
    let claim =
        idempotency::claim(&context.store, context.new_keys_per_minute, caller.user.id, "leasing.create", key, &body)
            .await?;
    let envelope = claim
        .once(&context.store, || async {
            Ok(RequestEnvelope::of(context.leasing.create(&body, caller.user.id).await?))
        })
        .await?;
    Ok(HttpResponseCreated(envelope))
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

pub(super) fn action(data: Value) -> HttpResponseOk<ActionEnvelope> {
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
