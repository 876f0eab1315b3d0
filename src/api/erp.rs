//! Handlers of the ERP routes: the webhook receiver and the helper routes for sync tooling.

use dropshot::{HttpResponseAccepted, HttpResponseOk, RequestContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ApiContext;
use super::fieldreport::{PageMeta, PageQuery};
use super::guard::{caller, client_address};
use crate::erp::attributes::{AttributePullReport, AttributePushReport};
use crate::erp::post::PostReport;
use crate::erp::pull::{PullKind, PullReport, check_field};
use crate::erp::webhook::{self, WebhookRefusal};
use crate::erp::{ErpError, ErpService, model_named};
use crate::error::ApiError;
use crate::fieldreport::service::MAX_PER_PAGE;

/// The header that may carry the webhook secret (else `?secret=`).
pub const SECRET_HEADER: &str = "x-webhook-secret";

/// The query of a POST webhook call: only the secret (the call itself is in the body).
#[derive(Deserialize, JsonSchema)]
pub struct WebhookSecretQuery {
    /// The webhook secret, when it is part of the URL registered at the ERP.
    pub secret: Option<String>,
}

/// A webhook call as the ERP sends it with GET, and the secret.
#[derive(Deserialize, JsonSchema)]
pub struct WebhookQuery {
    /// The webhook secret, when it is part of the URL registered at the ERP.
    pub secret: Option<String>,
    /// Entity type, e.g. `customer`: letters, digits, `_`, `-` and `.`, at most 64 (GET calls:
    /// required).
    #[serde(rename = "entityName")]
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{1,64}\s*$"))]
    pub entity_name: Option<String>,
    /// Id of the record: letters, digits and `-`, at most 64 (GET calls: this or `id` is
    /// required; blank counts as absent).
    #[serde(rename = "entityId")]
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9-]{1,64}\s*)?$"))]
    pub entity_id: Option<String>,
    /// Fallback for `entityId` (blank counts as absent).
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9-]{1,64}\s*)?$"))]
    pub id: Option<String>,
    /// `created`, `updated` or `deleted` (GET calls).
    #[serde(rename = "type")]
    pub event: Option<String>,
}

/// The body of a POST webhook call: entity name, entity id and event. Further fields are
/// accepted and ignored; the record is fetched from the ERP by id.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
pub struct WebhookPayload {
    /// Entity type, e.g. `customer`: letters, digits, `_`, `-` and `.`, at most 64 (also
    /// accepted: `entity_name`, `entity`).
    #[serde(rename = "entityName")]
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{1,64}\s*$"))]
    pub entity_name: String,
    /// Id of the record: letters, digits and `-`, at most 64, or an integer (also accepted:
    /// `entity_id`, `id`, `entity.id`).
    #[serde(rename = "entityId")]
    #[schemars(schema_with = "record_id_schema")]
    pub entity_id: String,
    /// `created`, `updated` or `deleted` (also accepted: `event`, `action`); absent means a
    /// change.
    #[serde(rename = "type")]
    pub event: Option<String>,
}

/// A record id in a webhook body: text of letters, digits and `-`, or an integer.
fn record_id_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    serde_json::from_value(serde_json::json!({
        "anyOf": [
            {"type": "string", "pattern": r"^\s*[A-Za-z0-9-]{1,64}\s*$"},
            {"type": "integer", "format": "int64"}
        ]
    }))
    .expect("a valid schema")
}

/// A stored webhook call.
#[derive(Serialize, JsonSchema)]
pub struct WebhookAccepted {
    /// Always true: the call is stored and will be processed.
    pub accepted: bool,
    /// Id of the call in the inbox (see `GET /api/v1/erp/show`).
    pub inbox_id: i64,
    #[serde(rename = "entityName")]
    pub entity_name: String,
    #[serde(rename = "entityId")]
    pub entity_id: String,
    /// `created`, `updated` or `deleted`.
    pub event: String,
}

async fn receive(
    rqctx: &RequestContext<ApiContext>,
    secret: Option<&str>,
    fields: Map<String, Value>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let erp: &ErpService = &rqctx.context().erp;
    let header = rqctx.request.headers().get(SECRET_HEADER).and_then(|v| v.to_str().ok());
    erp.guard().admit(client_address(rqctx), header.or(secret)).map_err(ErpError::from)?;
    let call = webhook::parse(&fields).map_err(ErpError::from)?;
    let inbox_id = erp.accept(&call, &Value::Object(fields)).await?;
    Ok(HttpResponseAccepted(WebhookAccepted {
        accepted: true,
        inbox_id,
        entity_name: call.entity_name,
        entity_id: call.entity_id,
        event: call.event.as_str().to_string(),
    }))
}

pub async fn webhook_get(
    rqctx: &RequestContext<ApiContext>,
    query: WebhookQuery,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let mut fields = Map::new();
    for (key, value) in
        [("entityName", query.entity_name), ("entityId", query.entity_id), ("id", query.id), ("type", query.event)]
    {
        if let Some(value) = value {
            fields.insert(key.into(), Value::String(value));
        }
    }
    receive(rqctx, query.secret.as_deref(), fields).await
}

pub async fn webhook_post(
    rqctx: &RequestContext<ApiContext>,
    secret: Option<String>,
    body: Value,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let fields = match body {
        Value::Object(fields) => fields,
        _ => return Err(ErpError::from(WebhookRefusal::Invalid("the body must be a JSON object".into())).into()),
    };
    receive(rqctx, secret.as_deref(), fields).await
}

/// One model of the mirror.
#[derive(Serialize, JsonSchema)]
pub struct ModelSummary {
    /// The ERP's name of the model.
    pub model: String,
    /// Local records.
    pub records: i64,
    /// The newest `lastModifiedDate` pulled (epoch ms).
    pub cursor: Option<i64>,
    /// When the model was last pulled completely (epoch ms).
    pub last_pull_at: Option<i64>,
}

/// One webhook call of the inbox.
#[derive(Serialize, JsonSchema)]
pub struct InboxEntry {
    pub id: i64,
    pub received_at: i64,
    #[serde(rename = "entityName")]
    pub entity_name: String,
    #[serde(rename = "entityId")]
    pub entity_id: String,
    pub event: String,
    /// `pending` (waiting for a first or further attempt), `done` or `failed` (given up).
    pub state: String,
    pub attempts: i64,
    /// When the next attempt is due (epoch ms), for pending calls.
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    /// What processing did (mirror and field-report write), for done calls.
    pub outcome: Option<Value>,
}

/// The webhook inbox.
#[derive(Serialize, JsonSchema)]
pub struct InboxSummary {
    pub pending: i64,
    pub done: i64,
    pub failed: i64,
    /// Calls not done yet (oldest first, at most 50), then the 50 newest done ones.
    pub calls: Vec<InboxEntry>,
}

/// The ERP mirror at a glance.
#[derive(Serialize, JsonSchema)]
pub struct ErpOverview {
    /// Every model of the registry, with local counts and pull state.
    pub models: Vec<ModelSummary>,
    pub inbox: InboxSummary,
}

pub async fn show(rqctx: &RequestContext<ApiContext>) -> Result<HttpResponseOk<ErpOverview>, ApiError> {
    caller(rqctx).await?;
    let store = rqctx.context().erp.store();
    let states = store.erp_models().await?;
    let models = generated::erp::model_names()
        .map(|name| {
            let state = states.iter().find(|s| s.model == name);
            ModelSummary {
                model: name.to_string(),
                records: state.map_or(0, |s| s.records),
                cursor: state.and_then(|s| s.cursor),
                last_pull_at: state.and_then(|s| s.last_pull_at),
            }
        })
        .collect();
    let counts = store.inbox_counts().await?;
    let calls = store
        .inbox_recent(50)
        .await?
        .into_iter()
        .map(|i| InboxEntry {
            id: i.id,
            received_at: i.received_at,
            entity_name: i.entity_name,
            entity_id: i.entity_id,
            event: i.event,
            state: i.state,
            attempts: i.attempts,
            next_attempt_at: i.next_attempt_at,
            last_error: i.last_error,
            outcome: i.outcome.and_then(|o| serde_json::from_str(&o).ok()),
        })
        .collect();
    Ok(HttpResponseOk(ErpOverview {
        models,
        inbox: InboxSummary { pending: counts.pending, done: counts.done, failed: counts.failed, calls },
    }))
}

/// One page of mirrored ERP records, ordered by id.
#[derive(Serialize, JsonSchema)]
pub struct ErpRecordPage {
    /// The records as the ERP sent them.
    pub data: Vec<Map<String, Value>>,
    pub meta: PageMeta,
}

/// Mirrored ERP records.
#[derive(Serialize, JsonSchema)]
pub struct ErpRecords {
    pub data: Vec<Map<String, Value>>,
}

/// Records as shown: secrets masked (see [`crate::erp::secrets`]).
fn objects(records: Vec<crate::store::erp::ErpRecord>) -> Vec<Map<String, Value>> {
    records
        .into_iter()
        .filter(|r| r.document.is_object())
        .map(|r| crate::erp::secrets::masked_object(r.document))
        .collect()
}

pub async fn show_model(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    query: PageQuery,
) -> Result<HttpResponseOk<ErpRecordPage>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    let page = query.page.unwrap_or(1);
    let per_page = query.per_page.unwrap_or(50);
    if page == 0 || per_page == 0 || per_page > MAX_PER_PAGE {
        return Err(ErpError::Invalid {
            field: "page".into(),
            message: format!("page starts at 1; per_page is 1 to {MAX_PER_PAGE}"),
        }
        .into());
    }
    let offset = i64::from(page - 1) * i64::from(per_page);
    let (records, total) = rqctx.context().erp.store().erp_page(info.name, offset, i64::from(per_page)).await?;
    Ok(HttpResponseOk(ErpRecordPage { data: objects(records), meta: PageMeta::new(page, per_page, total) }))
}

pub async fn show_record(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    id: &str,
) -> Result<HttpResponseOk<Map<String, Value>>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    crate::erp::pull::check_id(id)?;
    let record = rqctx
        .context()
        .erp
        .store()
        .erp_get(info.name, id)
        .await?
        .ok_or_else(|| ErpError::NotFound { model: info.name.into(), id: id.into() })?;
    Ok(HttpResponseOk(crate::erp::secrets::masked_object(record.document)))
}

pub async fn show_matching(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    field: &str,
    value: &str,
) -> Result<HttpResponseOk<ErpRecords>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    check_field(field)?;
    let found = rqctx.context().erp.store().erp_find(info.name, field, value).await?;
    Ok(HttpResponseOk(ErpRecords { data: objects(found) }))
}

/// What each pull did.
#[derive(Serialize, JsonSchema)]
pub struct PullAnswer {
    pub data: Vec<PullReport>,
}

/// Pulls one model or, without a name, every model of the registry.
pub async fn pull(
    rqctx: &RequestContext<ApiContext>,
    model: Option<&str>,
    kind: PullKind,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    caller(rqctx).await?;
    let erp = &rqctx.context().erp;
    let data = match model {
        Some(name) => vec![erp.pull(model_named(name)?, &kind, &|_| {}).await?],
        None => erp.pull_models(&ErpService::all_models(), &kind, &|_, _| {}).await?,
    };
    Ok(HttpResponseOk(PullAnswer { data }))
}

/// `update` of everything mirrored: each model with local records, pulled completely.
pub async fn update_mirrored(rqctx: &RequestContext<ApiContext>) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    caller(rqctx).await?;
    let erp = &rqctx.context().erp;
    let models = erp.mirrored_models().await?;
    Ok(HttpResponseOk(PullAnswer { data: erp.pull_models(&models, &PullKind::Full, &|_, _| {}).await? }))
}

pub async fn update_record(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    id: &str,
) -> Result<HttpResponseOk<PullAnswer>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    Ok(HttpResponseOk(PullAnswer { data: vec![rqctx.context().erp.refresh_one(info, id).await?] }))
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

pub async fn pull_attributes(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    attribute: Option<&str>,
) -> Result<HttpResponseOk<AttributePullAnswer>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    Ok(HttpResponseOk(AttributePullAnswer { data: rqctx.context().erp.pull_attributes(info, attribute).await? }))
}

pub async fn push_attributes(
    rqctx: &RequestContext<ApiContext>,
    model: &str,
    attribute: Option<&str>,
) -> Result<HttpResponseOk<AttributePushAnswer>, ApiError> {
    caller(rqctx).await?;
    let info = model_named(model)?;
    Ok(HttpResponseOk(AttributePushAnswer { data: rqctx.context().erp.push_attributes(info, attribute).await? }))
}

/// What each mapping's post did.
#[derive(Serialize, JsonSchema)]
pub struct PostAnswer {
    pub data: Vec<PostReport>,
}

#[derive(Deserialize, JsonSchema)]
pub struct PostQuery {
    /// Only the record with this ERP id (needs a model in the path).
    pub id: Option<String>,
}

pub async fn field_report_post(
    rqctx: &RequestContext<ApiContext>,
    model: Option<&str>,
    query: PostQuery,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    caller(rqctx).await?;
    if model.is_none() && query.id.is_some() {
        return Err(ErpError::Invalid {
            field: "id".into(),
            message: "an id needs a model: /fieldReportPost/{model}?id=…".into(),
        }
        .into());
    }
    let data = rqctx.context().erp.post_to_field_report(model, query.id.as_deref()).await?;
    Ok(HttpResponseOk(PostAnswer { data }))
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelPath {
    /// The ERP's name of the model, e.g. `customer`, `salesOrder`.
    pub model: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelRecordPath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// The id of one record (letters, digits and `-`, at most 64).
    #[schemars(regex(pattern = "^[A-Za-z0-9-]{1,64}$"))]
    pub entity: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelFieldValuePath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// A top-level field of the model, e.g. `customerNumber` (letters and digits, at most 64).
    #[schemars(regex(pattern = "^[A-Za-z0-9]{1,64}$"))]
    pub entity: String,
    /// The value the field must equal.
    pub value: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelAttributePath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// A custom attribute definition: its `attributeKey` or id.
    pub attribute: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct PostPath {
    /// A mapped ERP model: `customer`, `contact` or `article`.
    pub request: String,
}
