//! The ERP area's endpoints: the webhook receiver and the helper routes for sync tooling.

use dropshot::{HttpResponseAccepted, HttpResponseOk, Path, Query, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::ApiContext;
use crate::api::support::documented::Documented;
use crate::api::support::guard::{BearerToken, client_address, needs};
use crate::api::support::paging::{Cursor, NextPage, PageMeta, PageQuery, Paging};
use crate::erp::attributes::{AttributePullReport, AttributePushReport};
use crate::erp::post::PostReport;
use crate::erp::pull::{PullKind, PullReport, check_field};
use crate::erp::webhook::{self, WebhookRefusal};
use crate::erp::{ErpError, ErpService, model_named};
use crate::error::ApiError;
use crate::fieldreport::key_pages::{checked_limit, key_page};
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

/// Receive an ERP webhook (GET)
///
/// The ERP calls this when a watched record is created, changed or deleted, with the entity
/// name, the record id and the event in the query. Not token-guarded: only calls from an
/// address in `ERP_WEBHOOK_ALLOWLIST` are admitted (403 otherwise; behind a proxy listed in
/// `TRUSTED_PROXIES` the address comes from `X-Forwarded-For`), and with
/// `ERP_WEBHOOK_SECRET` set the call must carry it as `?secret=` or `X-Webhook-Secret`
/// (401 otherwise). The call is stored before the 202 answer and processed afterwards:
/// the record is fetched from the ERP by id, the mirror updated (or the record removed),
/// and mapped records (customer → companies, contact → contacts, article → products) are
/// written to the field-report mirror without forwarding. Repeated deliveries change
/// nothing; failed processing is retried with back-off (see `GET /api/v1/erp/show`).
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
pub async fn erp_webhook_get(
    rqctx: RequestContext<ApiContext>,
    query: Query<WebhookQuery>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let query = query.into_inner();
    let mut fields = Map::new();
    for (key, value) in
        [("entityName", query.entity_name), ("entityId", query.entity_id), ("id", query.id), ("type", query.event)]
    {
        if let Some(value) = value {
            fields.insert(key.into(), Value::String(value));
        }
    }
    receive(&rqctx, query.secret.as_deref(), fields).await
}

/// Receive an ERP webhook (POST)
///
/// As the GET form, with the entity name, id and event in a JSON body
/// (`{"entityName", "entityId", "type"}`; the variants `entity_name`, `id`, `entity.id`,
/// `event`, `action` are accepted too).
#[dropshot::endpoint { method = POST, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
pub async fn erp_webhook_post(
    rqctx: RequestContext<ApiContext>,
    query: Query<WebhookSecretQuery>,
    body: TypedBody<Documented<WebhookPayload>>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let fields = match body.into_inner().into_inner() {
        Value::Object(fields) => fields,
        _ => return Err(ErpError::from(WebhookRefusal::Invalid("the body must be a JSON object".into())).into()),
    };
    receive(&rqctx, query.into_inner().secret.as_deref(), fields).await
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

/// ERP mirror overview
///
/// Every ERP model with its local record count, pull cursor and last complete pull, and
/// the webhook inbox: counts by state and the calls not done yet (with their attempts and
/// last error), then the newest processed ones.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/show", tags = ["erp"] }]
pub async fn erp_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
) -> Result<HttpResponseOk<ErpOverview>, ApiError> {
    token.caller(&rqctx).await?;
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

/// One page of mirrored ERP records, ordered by id. Read by position (`page`, `per_page`) it
/// has `meta`, with the count; read by key (`after`, `limit`) it has `next_cursor` and `next`
/// while records follow this page, and neither on the last page.
#[derive(Serialize, JsonSchema)]
pub struct ErpRecordPage {
    /// The records as the ERP sent them.
    pub data: Vec<Map<String, Value>>,
    /// Read by position: the paging and the count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<PageMeta>,
    /// Read by key: the cursor to pass as `after` for the next page, while records follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Read by key: the path and query that read the next page, while records follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One mirrored ERP record as the ERP sent it (secrets masked): the model's fields.
#[derive(Serialize)]
#[serde(transparent)]
pub struct ErpRecord(pub Map<String, Value>);

impl JsonSchema for ErpRecord {
    fn schema_name() -> String {
        "ErpRecord".into()
    }
    fn json_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        serde_json::from_value(serde_json::json!({
            "type": "object",
            "additionalProperties": true,
            "description": "One mirrored ERP record as the ERP sent it (secrets masked): the model's fields.",
            "example": {"id": 17, "version": 3, "name": "ACME GmbH", "lastModifiedDate": "2026-11-27T10:00:00.000Z"}
        }))
        .expect("a valid schema")
    }
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

/// Mirrored records of an ERP model
///
/// The model's records as stored locally, ordered by id (numeric ids in numeric order). Read
/// by key: `limit` (1 to 500, default 50) records after the cursor `after` (from the start
/// without it), answered with `next_cursor` and the `next` link while records follow, and no
/// count; a page costs the same at any depth, and a record inserted or deleted meanwhile makes
/// no other record skip or repeat. Read by position (the slower way, kept for existing
/// callers: a page costs what it skips): page `page` of `per_page` (1 to 500, default 50)
/// records, with the count in `meta`.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/show/{model}", tags = ["erp"] }]
pub async fn erp_show_model(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
    query: Query<PageQuery>,
) -> Result<HttpResponseOk<ErpRecordPage>, ApiError> {
    token.caller(&rqctx).await?;
    let info = model_named(&path.into_inner().model)?;
    let store = rqctx.context().erp.store();
    let (page, per_page) = match query.into_inner().paging()? {
        Paging::Key { after, limit: asked } => {
            let limit = checked_limit(asked).map_err(ApiError::validation)?;
            let records = store.erp_after(info.name, after.as_deref(), i64::from(limit) + 1).await?;
            let (records, next_key) = key_page(records, limit, |record| record.id.clone());
            let next = NextPage::after(rqctx.request.uri().path(), next_key.as_deref(), asked);
            let data = objects(records);
            return Ok(HttpResponseOk(ErpRecordPage { data, meta: None, next_cursor: next.cursor, next: next.link }));
        }
        Paging::Position { page, per_page } => (page.unwrap_or(1), per_page.unwrap_or(50)),
    };
    if page == 0 || per_page == 0 || per_page > MAX_PER_PAGE {
        return Err(ErpError::Invalid {
            field: "page".into(),
            message: format!("page starts at 1; per_page is 1 to {MAX_PER_PAGE}"),
        }
        .into());
    }
    let offset = i64::from(page - 1) * i64::from(per_page);
    let (records, total) = store.erp_page(info.name, offset, i64::from(per_page)).await?;
    let meta = Some(PageMeta::new(page, per_page, total));
    Ok(HttpResponseOk(ErpRecordPage { data: objects(records), meta, next_cursor: None, next: None }))
}

/// One mirrored ERP record
///
/// The record of `model` with id `entity` as the local mirror holds it (the last pull or
/// webhook wrote it); the ERP is not asked. 404 when the mirror has no such record.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/show/{model}/{entity}", tags = ["erp"] }]
pub async fn erp_show_record(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelRecordPath>,
) -> Result<HttpResponseOk<ErpRecord>, ApiError> {
    token.caller(&rqctx).await?;
    let path = path.into_inner();
    let info = model_named(&path.model)?;
    let id = path.entity;
    crate::erp::pull::check_id(&id)?;
    let record = rqctx
        .context()
        .erp
        .store()
        .erp_get(info.name, &id)
        .await?
        .ok_or_else(|| ErpError::NotFound { model: info.name.into(), id })?;
    Ok(HttpResponseOk(ErpRecord(crate::erp::secrets::masked_object(record.document))))
}

/// Find mirrored ERP records by a field
///
/// Records whose top-level field `entity` equals `value` (compared as text), at most 500.
/// Secrets in records (a webhook URL's `secret=`, fields named like a password) are never
/// matched: a value holding one finds nothing.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/show/{model}/{entity}/{value}", tags = ["erp"] }]
pub async fn erp_show_matching(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelFieldValuePath>,
) -> Result<HttpResponseOk<ErpRecords>, ApiError> {
    token.caller(&rqctx).await?;
    let path = path.into_inner();
    let info = model_named(&path.model)?;
    check_field(&path.entity)?;
    let found = rqctx.context().erp.store().erp_find(info.name, &path.entity, &path.value).await?;
    // Matched as shown, not as stored: a value with a secret in it (a webhook URL's
    // `secret=`) is shown masked, so a guess at the secret finds nothing, right or wrong.
    let shown = objects(found).into_iter().filter(|record| shown_as(record.get(&path.entity), &path.value)).collect();
    Ok(HttpResponseOk(ErpRecords { data: shown }))
}

/// Whether a shown (masked) field reads as `value`, compared as text like the lookup.
fn shown_as(field: Option<&Value>, value: &str) -> bool {
    match field {
        Some(Value::String(text)) => text == value,
        Some(Value::Null) | None => false,
        Some(other) => serde_json::from_str::<Value>(value).is_ok_and(|parsed| &parsed == other),
    }
}

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

/// Post mapped ERP records to the field-report system
///
/// Runs the ERP → field-report mapping (customer → companies, contact → contacts,
/// article → products) over the mirror and writes the records with forwarding: created
/// upstream when new, updated when the mapping changes something. After a create the
/// field-report Id is set on the ERP record's `fieldReportId` custom attribute (when the
/// ERP defines it), pending `entityPushAttr`. Failures are reported per record.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/fieldReportPost", tags = ["erp"] }]
pub async fn erp_field_report_post_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    query: Query<PostQuery>,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    field_report_post(&rqctx, &token, None, query.into_inner()).await
}

/// Post one model's mapped records to the field-report system
///
/// As `fieldReportPost` for one mapped model (`customer`, `contact`, `article`); with
/// `?id=` for one record.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/fieldReportPost/{request}", tags = ["erp"] }]
pub async fn erp_field_report_post(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<PostPath>,
    query: Query<PostQuery>,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    field_report_post(&rqctx, &token, Some(&path.into_inner().request), query.into_inner()).await
}

/// Posts the mapped records of one model or, without one, of every mapped model.
async fn field_report_post(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Erp>,
    model: Option<&str>,
    query: PostQuery,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    token.caller(rqctx).await?;
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
