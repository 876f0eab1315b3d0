//! The change feed and the export of each mirrored field-report set
//! (`/api/v1/fieldreport/<route>/changes`, `/api/v1/fieldreport/<route>/export`), registered
//! per set like the other per-entity endpoints ([`crate::api::fieldreport::entities`]) so that their records
//! are typed with the set's model. The wire is shared with the ERP's ([`crate::api::support::feed`]).

use std::marker::PhantomData;

use dropshot::{ApiDescription, ApiEndpoint, ApiEndpointVersions, Body, HttpResponseOk, Query, RequestContext};
use generated::fieldreport::{EntityVisitor, MirroredEntity, visit_entities};
use http::{Method, Response};
use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::Schema;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::api::ApiContext;
use crate::api::fieldreport::entities::Record;
use crate::api::support::feed::{
    ChangeItem, ChangePageBody, EXPORT_PAGE, FeedQuery, change_page_schema, change_schema, export_place,
};
use crate::api::support::guard::{BearerToken, needs};
use crate::error::ApiError;
use crate::store::feed::Mirror as FeedMirror;

/// A page of changes of set `E`, documented with the set's model.
pub struct RecordChangePage<E>(ChangePageBody, PhantomData<fn() -> E>);

impl<E> Serialize for RecordChangePage<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// One change of set `E` (the schema of a page's items and of an export's lines).
pub struct RecordChange<E>(PhantomData<fn() -> E>);

impl<E: MirroredEntity> JsonSchema for RecordChange<E> {
    fn schema_name() -> String {
        format!("{}Change", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let record = generator.subschema_for::<Record<E>>();
        change_schema(generator, record, &format!("the {} set", E::INFO.set))
    }
}

impl<E: MirroredEntity> JsonSchema for RecordChangePage<E> {
    fn schema_name() -> String {
        format!("{}ChangePage", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<RecordChange<E>>();
        change_page_schema(generator, item, &format!("the {} set", E::INFO.set))
    }
}

/// A field-report record goes out as stored.
fn as_stored(document: Box<RawValue>) -> Box<RawValue> {
    document
}

pub async fn changes<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportRead>,
    query: Query<FeedQuery>,
) -> Result<HttpResponseOk<RecordChangePage<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let (since, limit) = query.into_inner().read()?;
    let store = &rqctx.context().store;
    let page = crate::feed::changes(store, FeedMirror::FieldReport, E::INFO.route, since, limit).await?;
    let body = ChangePageBody::new(page, rqctx.request.uri().path(), limit, &as_stored);
    Ok(HttpResponseOk(RecordChangePage(body, PhantomData)))
}

pub async fn export<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportRead>,
) -> Result<Response<Body>, ApiError> {
    let caller = token.caller(&rqctx).await?;
    let place = export_place(&rqctx.context().exports, caller.user.id)?;
    let store = rqctx.context().store.clone();
    // Where the feed stands before the first record is read: whatever is written meanwhile
    // comes again in the feed after it.
    let position = crate::feed::position(&store, FeedMirror::FieldReport, E::INFO.route).await?;
    crate::api::support::feed::export(store.clone(), position, place, move |after| {
        let store = store.clone();
        async move {
            let page = store.mirror_after(E::INFO.route, after.as_deref(), i64::from(EXPORT_PAGE)).await?;
            Ok(page.into_iter().map(|(id, document)| ChangeItem::upsert(id, document)).collect())
        }
    })
}

/// Registers the feed and the export of every mirrored set, named as the set's other
/// operations (`fieldreport_<route in snake case>_changes`, `…_export`).
struct Registrar<'a> {
    api: &'a mut ApiDescription<ApiContext>,
    errors: Vec<String>,
}

impl EntityVisitor for Registrar<'_> {
    fn visit<E: MirroredEntity>(&mut self) {
        let info = E::INFO;
        let set = info.set;
        let collection = format!("/api/v1/fieldreport/{}", info.route);
        let name = |action: &str| {
            format!("fieldreport_{}_{action}", crate::api::fieldreport::entities::snake_case(info.route))
        };
        let endpoints = [
            ApiEndpoint::new(
                name("changes"),
                changes::<E>,
                Method::GET,
                "application/json",
                &format!("{collection}/changes"),
                ApiEndpointVersions::All,
            )
            .summary(format!("Changes of {set}"))
            .description(format!("What changed in the local mirror's {set} since a position, in the order it was stored: each record written (created, updated, synced, pushed) as it is now, and the Id of each record removed. Without `since`, from the start: every record the set holds, once, then what follows. Answered with `next_cursor`, where to read on: a consumer copies the set with the export, then follows the feed from the copy's position; applying the changes in order reproduces the mirror. Removals are kept `RETAIN_FEED_REMOVALS_DAYS` (default 30): a position older than the oldest removal kept is answered 410 `cursor_expired`, and the consumer copies the set again with the export. Reading this feed from the start is a copy too while no removal has been dropped; once one has, the positions of records older than it are such positions, and a read from the start may be answered 410 on a later page.")),
            ApiEndpoint::new(
                name("export"),
                export::<E>,
                Method::GET,
                "application/json",
                &format!("{collection}/export"),
                ApiEndpointVersions::All,
            )
            .summary(format!("Export {set}"))
            .description(format!("Every {set} record of the local mirror in Id order, streamed as NDJSON (`application/x-ndjson`): one change line per record (`{{\"change\":\"upsert\",\"id\":…,\"record\":…}}`, as the change feed's items), then a last line `{{\"next_cursor\":…,\"records\":N}}`: the position to follow the change feed from. An answer that ends without that line was cut short: export again. Memory stays bounded whatever the set's size. A user streams at most `MAX_EXPORTS_PER_USER` exports at once (429 `too_many_exports`).")),
        ];
        for endpoint in endpoints {
            if let Err(e) = self.api.register(endpoint.tag("fieldreport")) {
                self.errors.push(e.to_string());
            }
        }
    }
}

/// Adds the feed and the export of every mirrored set to the API.
pub fn register(api: &mut ApiDescription<ApiContext>) -> Result<(), String> {
    let mut registrar = Registrar { api, errors: Vec::new() };
    visit_entities(&mut registrar);
    if registrar.errors.is_empty() { Ok(()) } else { Err(registrar.errors.join("; ")) }
}
