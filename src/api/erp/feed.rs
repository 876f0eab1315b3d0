//! The change feed and the export of each mirrored ERP model (`/api/v1/erp/changes/{model}`,
//! `/api/v1/erp/export/{model}`): the field-report sets' feed and export
//! ([`crate::api::fieldreport::feed`]) for the ERP mirror, its records shown as `show` shows them
//! (secrets masked). The wire is shared ([`crate::api::support::feed`]).

use dropshot::{Body, HttpResponseOk, Path, Query, RequestContext};
use http::Response;
use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::Schema;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::api::ApiContext;
use crate::api::erp::ModelPath;
use crate::api::erp::mirror::ErpRecord;
use crate::api::support::feed::{
    ChangeItem, ChangePageBody, EXPORT_PAGE, FeedQuery, change_page_schema, change_schema, export_place,
};
use crate::api::support::guard::{BearerToken, needs};
use crate::erp::model_named;
use crate::error::ApiError;
use crate::store::StoreError;
use crate::store::feed::Mirror as FeedMirror;

/// One change of an ERP model.
pub struct ErpChange;

impl JsonSchema for ErpChange {
    fn schema_name() -> String {
        "ErpChange".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let record = generator.subschema_for::<ErpRecord>();
        change_schema(generator, record, "an ERP model")
    }
}

/// A page of changes of an ERP model.
pub struct ErpChangePage(ChangePageBody);

impl Serialize for ErpChangePage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl JsonSchema for ErpChangePage {
    fn schema_name() -> String {
        "ErpChangePage".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<ErpChange>();
        change_page_schema(generator, item, "an ERP model")
    }
}

/// An ERP record as `show` shows it: its secrets masked (see [`crate::erp::secrets`]).
#[allow(clippy::boxed_local)] // the shape every record of a change takes (see `ChangeItem::of`)
fn masked(document: Box<RawValue>) -> Box<RawValue> {
    let shown = serde_json::from_str(document.get()).map(crate::erp::secrets::masked);
    match shown.and_then(|value| serde_json::value::to_raw_value(&value)) {
        Ok(shown) => shown,
        // A stored document is JSON (checked when stored); nothing is shown unmasked.
        Err(_) => RawValue::from_string("null".into()).expect("null is JSON"),
    }
}

/// Changes of an ERP model
///
/// What changed in the local mirror's records of `model` since a position, in the order it
/// was stored: each record written (pulled, received by webhook, its attributes changed) as
/// it is now, secrets masked, and the id of each record removed. Without `since`, from the
/// start: every record the model holds, once, then what follows. Answered with
/// `next_cursor`, where to read on: a consumer copies the model with the export, then follows
/// the feed from the copy's position; applying the changes in order reproduces the mirror.
/// Removals are kept `RETAIN_FEED_REMOVALS_DAYS` (default 30): a position older than the
/// oldest removal kept is answered 410 `cursor_expired`, and the consumer copies the model
/// again with the export. Reading this feed from the start is a copy too while no removal has
/// been dropped; once one has, the positions of records older than it are such positions, and
/// a read from the start may be answered 410 on a later page.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/changes/{model}", tags = ["erp"] }]
pub async fn erp_changes(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
    query: Query<FeedQuery>,
) -> Result<HttpResponseOk<ErpChangePage>, ApiError> {
    token.caller(&rqctx).await?;
    let info = model_named(&path.into_inner().model)?;
    let (since, limit) = query.into_inner().read()?;
    let store = &rqctx.context().store;
    let page = crate::feed::changes(store, FeedMirror::Erp, info.name, since, limit).await?;
    Ok(HttpResponseOk(ErpChangePage(ChangePageBody::new(page, rqctx.request.uri().path(), limit, &masked))))
}

/// Export an ERP model
///
/// Every record of `model` in the local mirror in id order, secrets masked, streamed as
/// NDJSON (`application/x-ndjson`): one change line per record (`{"change":"upsert","id":…,
/// "record":…}`, as the change feed's items), then a last line `{"next_cursor":…,
/// "records":N}`: the position to follow the change feed from. An answer that ends without
/// that line was cut short: export again. Memory stays bounded whatever the model's size. A
/// user streams at most `MAX_EXPORTS_PER_USER` exports at once (429 `too_many_exports`).
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/export/{model}", tags = ["erp"] }]
pub async fn erp_export(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<ModelPath>,
) -> Result<Response<Body>, ApiError> {
    let caller = token.caller(&rqctx).await?;
    let info = model_named(&path.into_inner().model)?;
    let place = export_place(&rqctx.context().exports, caller.user.id)?;
    let store = rqctx.context().store.clone();
    // Where the feed stands before the first record is read: whatever is written meanwhile
    // comes again in the feed after it.
    let position = crate::feed::position(&store, FeedMirror::Erp, info.name).await?;
    crate::api::support::feed::export(store.clone(), position, place, move |after| {
        let store = store.clone();
        async move {
            let page = store.erp_after(info.name, after.as_deref(), i64::from(EXPORT_PAGE)).await?;
            page.into_iter()
                .map(|record| {
                    let shown = crate::erp::secrets::masked(record.document);
                    let document =
                        serde_json::value::to_raw_value(&shown).map_err(|e| StoreError::Query(e.to_string()))?;
                    Ok(ChangeItem::upsert(record.id, document))
                })
                .collect()
        }
    })
}
