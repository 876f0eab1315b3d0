//! The ERP mirror as it is held locally: the overview, a model's records and one record, and
//! the records matching a field.

use dropshot::{HttpResponseOk, Path, Query, RequestContext};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ModelFieldValuePath, ModelPath, ModelRecordPath};
use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::paging::{Cursor, NextPage, PageMeta, PageQuery, Paging};
use crate::erp::pull::check_field;
use crate::erp::{ErpError, model_named};
use crate::error::ApiError;
use crate::fieldreport::key_pages::checked_limit;
use crate::fieldreport::service::MAX_PER_PAGE;
use crate::vocabulary::key_page::key_page;

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
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::inbox_state")]
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
