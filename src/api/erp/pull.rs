//! Pulls into the ERP mirror: full (`setup`), incremental (`get`), reconciling and refreshing
//! (`update`), and the custom attributes pulled and pushed back (`entityPullAttr`,
//! `entityPushAttr`).

use dropshot::{HttpResponseOk, Path, RequestContext};
use schemars::JsonSchema;
use serde::Serialize;

use super::{ModelAttributePath, ModelFieldValuePath, ModelPath, ModelRecordPath};
use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::erp::attributes::{AttributePullReport, AttributePushReport};
use crate::erp::pull::{PullKind, PullReport};
use crate::erp::{ErpService, model_named};
use crate::error::ApiError;

/// What each pull did.
#[derive(Serialize, JsonSchema)]
pub struct PullAnswer {
    pub data: Vec<PullReport>,
}

/// Full pull of every ERP model
///
/// Pulls every record of every model of the registry (pages of 1000) into the mirror and
/// removes local records the ERP no longer has. A model that fails is reported in its own
/// entry and the others go on. `integration-service erp setup` does the same with a
/// progress display.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/setup", tags = ["erp"] }]
pub async fn erp_setup_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    pull(&rqctx, &token, None, PullKind::Full).await
}

/// Full pull of one ERP model
///
/// As `/api/v1/erp/setup` for one model. 409 while another pull of it runs.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/setup/{model}", tags = ["erp"] }]
pub async fn erp_setup(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    pull(&rqctx, &token, Some(&path.into_inner().model), PullKind::Full).await
}

/// Incremental pull of every ERP model
///
/// Pulls the records of each model changed since its cursor, less the overlap
/// (`ERP_PULL_OVERLAP_SECONDS`), in (`lastModifiedDate`, `id`) order; everything on a model's
/// first pull. The cursor moves when the pull completes.
/// `integration-service erp pull` does the same with a progress display.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/get", tags = ["erp"] }]
pub async fn erp_get(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    pull(&rqctx, &token, None, PullKind::Incremental).await
}

/// Reconcile one ERP model
///
/// Reads the ids and versions of every record of `model` at the ERP (in id order, by
/// `id-gt`), then fetches the records the mirror lacks (`fetched_missing`) and those whose
/// version differs (`refreshed`), and removes the records the ERP no longer has (`removed`,
/// each absence confirmed by id). Afterwards the mirror holds what the ERP held. The job kind
/// `erp.reconcile` does the same.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/update/{model}", tags = ["erp"] }]
pub async fn erp_update_model(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    pull(&rqctx, &token, Some(&path.into_inner().model), PullKind::Reconcile).await
}

/// Refresh ERP records matching a field
///
/// Fetches the model's records whose field `entity` equals `value` (`<entity>-eq=<value>`)
/// and stores them.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/update/{model}/{entity}/{value}", tags = ["erp"] }]
pub async fn erp_update_matching(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelFieldValuePath>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    let path = path.into_inner();
    pull(&rqctx, &token, Some(&path.model), PullKind::Matching { field: path.entity, value: path.value }).await
}

/// Pulls one model or, without a name, every model of the registry.
async fn pull(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Erp>,
    model: Option<&str>,
    kind: PullKind,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let erp = &rqctx.context().erp;
    let data = match model {
        Some(name) => vec![erp.pull(model_named(name)?, &kind, &|_| {}).await?],
        None => erp.pull_models(&ErpService::all_models(), &kind, &|_, _| {}).await?,
    };
    Ok(HttpResponseOk(PullAnswer { data }))
}

/// Reconcile every mirrored ERP model
///
/// Reconciles every model that has local records, as `/api/v1/erp/update/{model}`.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/update", tags = ["erp"] }]
pub async fn erp_update_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    token.caller(&rqctx).await?;
    let erp = &rqctx.context().erp;
    let models = erp.mirrored_models().await?;
    Ok(HttpResponseOk(PullAnswer { data: erp.pull_models(&models, &PullKind::Reconcile, &|_, _| {}).await? }))
}

/// Refresh one ERP record
///
/// Fetches the record by id and stores it; removes it locally when the ERP no longer has
/// it (404 when neither has it).
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/update/{model}/{entity}", tags = ["erp"] }]
pub async fn erp_update_record(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelRecordPath>,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    token.caller(&rqctx).await?;
    let path = path.into_inner();
    let info = model_named(&path.model)?;
    Ok(HttpResponseOk(PullAnswer { data: vec![rqctx.context().erp.refresh_one(info, &path.entity).await?] }))
}

/// What a custom attribute pull did.
#[derive(Serialize, JsonSchema)]
pub struct AttributePullAnswer {
    pub data: AttributePullReport,
}

/// What a custom attribute push did.
#[derive(Serialize, JsonSchema)]
pub struct AttributePushAnswer {
    pub data: AttributePushReport,
}

/// Pull custom attributes of an ERP model
///
/// Pulls every `customAttributeDefinition` and the model's records (with their
/// `customAttributes` values) into the mirror. Values changed locally and not pushed yet
/// are kept.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/entityPullAttr/{model}", tags = ["erp"] }]
pub async fn erp_pull_attributes(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
) -> Result<HttpResponseOk<AttributePullAnswer>, ApiError> {
    pull_attributes(&rqctx, &token, &path.into_inner().model, None).await
}

/// Pull one custom attribute of an ERP model
///
/// As `entityPullAttr/{model}`, counting the values of one definition (its
/// `attributeKey` or id; 404 listing the model's keys when unknown).
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/entityPullAttr/{model}/{attribute}", tags = ["erp"] }]
pub async fn erp_pull_one_attribute(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelAttributePath>,
) -> Result<HttpResponseOk<AttributePullAnswer>, ApiError> {
    let path = path.into_inner();
    pull_attributes(&rqctx, &token, &path.model, Some(&path.attribute)).await
}

/// Pulls a model's custom attributes, all or one definition's.
async fn pull_attributes(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Erp>,
    model: &str,
    attribute: Option<&str>,
) -> Result<HttpResponseOk<AttributePullAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let info = model_named(model)?;
    Ok(HttpResponseOk(AttributePullAnswer { data: rqctx.context().erp.pull_attributes(info, attribute).await? }))
}

/// Push custom attributes of an ERP model
///
/// Sends the locally changed custom attribute values of the model's records back to the
/// ERP (`PUT /<model>/id/{id}?ignoreMissingProperties=true` with the mirrored `version`).
/// A record changed in the ERP since it was pulled is refused by the ERP and reported as a
/// conflict; its values stay pending.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/entityPushAttr/{model}", tags = ["erp"] }]
pub async fn erp_push_attributes(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
) -> Result<HttpResponseOk<AttributePushAnswer>, ApiError> {
    push_attributes(&rqctx, &token, &path.into_inner().model, None).await
}

/// Push one custom attribute of an ERP model
///
/// As `entityPushAttr/{model}`, for the records with a pending value of one definition.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/entityPushAttr/{model}/{attribute}", tags = ["erp"] }]
pub async fn erp_push_one_attribute(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelAttributePath>,
) -> Result<HttpResponseOk<AttributePushAnswer>, ApiError> {
    let path = path.into_inner();
    push_attributes(&rqctx, &token, &path.model, Some(&path.attribute)).await
}

/// Pushes a model's pending custom attribute values, all or one definition's.
async fn push_attributes(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Erp>,
    model: &str,
    attribute: Option<&str>,
) -> Result<HttpResponseOk<AttributePushAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let info = model_named(model)?;
    Ok(HttpResponseOk(AttributePushAnswer { data: rqctx.context().erp.push_attributes(info, attribute).await? }))
}
