//! The field-report area's endpoints: the tool routes (`show`, `sync`, `setup`, `post`) and
//! the per-entity endpoints.
//!
//! The per-entity endpoints: for every mirrored entity set of the generated registry
//! (`generated::fieldreport::sets`), list / create / show / update (PUT and PATCH) / delete
//! under `/api/v1/fieldreport/<route>`, each typed with the set's model, so the document shows
//! `Companies` bodies on `/api/v1/fieldreport/companies`. They are registered through
//! dropshot's `ApiEndpoint` ([`register`]) rather than as `#[endpoint]` functions because they
//! are one generic handler set instantiated per entity (docs/architecture.md, "Routing": no
//! `{entity}` variable). Like every guarded endpoint, each handler takes a [`BearerToken`].

use std::marker::PhantomData;

use dropshot::{
    ApiDescription, ApiEndpoint, ApiEndpointVersions, Body, Header, HttpResponseCreated, HttpResponseOk, Path, Query,
    RequestContext, TypedBody,
};
use generated::fieldreport::{EntityVisitor, MirroredEntity, visit_entities};
use http::{Method, Response, StatusCode};
use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::{InstanceType, Metadata, ObjectValidation, Schema, SchemaObject};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::ApiContext;
use super::guard::BearerToken;
use crate::error::ApiError;

/// A record of entity set `E`: passed through whole, documented with the set's model under the
/// set's name (e.g. `Companies`).
pub struct Record<E>(pub Value, PhantomData<fn() -> E>);

impl<E> Record<E> {
    fn new(value: Value) -> Self {
        Record(value, PhantomData)
    }
}

impl<'de, E> Deserialize<'de> for Record<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Record::new)
    }
}

impl<E> Serialize for Record<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<E: MirroredEntity> JsonSchema for Record<E> {
    fn schema_name() -> String {
        E::INFO.set.to_string()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <E::Model as JsonSchema>::json_schema(generator)
    }
}

/// A record of entity set `E` answered as stored, without parsing it; documented as
/// [`Record`].
pub struct StoredRecord<E>(Box<RawValue>, PhantomData<fn() -> E>);

impl<E> Serialize for StoredRecord<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<E: MirroredEntity> JsonSchema for StoredRecord<E> {
    fn schema_name() -> String {
        Record::<E>::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Record::<E>::json_schema(generator)
    }
}

/// The body of a create: a record of set `E` with the `Id` and `Version` a new record needs.
pub struct NewRecord<E>(pub Value, PhantomData<fn() -> E>);

impl<'de, E> Deserialize<'de> for NewRecord<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|value| NewRecord(value, PhantomData))
    }
}

impl<E: MirroredEntity> JsonSchema for NewRecord<E> {
    fn schema_name() -> String {
        format!("New{}", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let record = generator.subschema_for::<Record<E>>();
        let identity: Schema = serde_json::from_value(json!({
            "type": "object",
            "required": ["Id", "Version"],
            "properties": {
                "Id": {"type": "string", "minLength": 1, "maxLength": crate::fieldreport::service::MAX_ID_LEN},
                "Version": {"type": "integer", "format": "int64"}
            }
        }))
        .expect("a valid schema");
        Schema::Object(SchemaObject {
            metadata: Some(Box::new(Metadata {
                description: Some(format!(
                    "A new {} record: `Id` (1 to {} characters) and `Version` are required.",
                    E::INFO.set,
                    crate::fieldreport::service::MAX_ID_LEN
                )),
                ..Default::default()
            })),
            subschemas: Some(Box::new(schemars::schema::SubschemaValidation {
                all_of: Some(vec![record, identity]),
                ..Default::default()
            })),
            ..Default::default()
        })
    }
}

fn object_schema(description: &str, properties: Vec<(&str, Schema)>, required: &[&str]) -> Schema {
    Schema::Object(SchemaObject {
        metadata: Some(Box::new(Metadata { description: Some(description.to_string()), ..Default::default() })),
        instance_type: Some(InstanceType::Object.into()),
        object: Some(Box::new(ObjectValidation {
            properties: properties.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            required: required.iter().map(|r| r.to_string()).collect(),
            ..Default::default()
        })),
        ..Default::default()
    })
}

/// The answer of a write: the local record and what the upstream answered (null for internal
/// writes that are not forwarded).
pub struct RecordWrite<E> {
    pub data: Record<E>,
    pub field_report_response: Option<Value>,
}

impl<E> Serialize for RecordWrite<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            data: &'a Value,
            #[serde(rename = "fieldReportResponse")]
            field_report_response: &'a Option<Value>,
        }
        Wire { data: &self.data.0, field_report_response: &self.field_report_response }.serialize(s)
    }
}

impl<E: MirroredEntity> JsonSchema for RecordWrite<E> {
    fn schema_name() -> String {
        format!("{}Write", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let data = generator.subschema_for::<Record<E>>();
        let upstream = generator.subschema_for::<Option<serde_json::Map<String, Value>>>();
        object_schema(
            "The record as stored locally, and the field-report system's answer (null when the write was not forwarded).",
            vec![("data", data), ("fieldReportResponse", upstream)],
            &["data", "fieldReportResponse"],
        )
    }
}

/// Paging of a list.
#[derive(Serialize, JsonSchema)]
pub struct PageMeta {
    pub current_page: u32,
    pub per_page: u32,
    pub total: i64,
    pub last_page: u32,
}

impl PageMeta {
    /// The paging of page `current_page` of `per_page` records out of `total`.
    pub fn new(current_page: u32, per_page: u32, total: i64) -> PageMeta {
        let last_page = ((total.max(1) - 1) / i64::from(per_page) + 1) as u32;
        PageMeta { current_page, per_page, total, last_page }
    }
}

/// One page of records, ordered by Id; the documents go out as they are stored.
pub struct RecordPage<E> {
    pub data: Vec<Box<RawValue>>,
    pub meta: PageMeta,
    set: PhantomData<fn() -> E>,
}

impl<E> Serialize for RecordPage<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            data: &'a [Box<RawValue>],
            meta: &'a PageMeta,
        }
        Wire { data: &self.data, meta: &self.meta }.serialize(s)
    }
}

impl<E: MirroredEntity> JsonSchema for RecordPage<E> {
    fn schema_name() -> String {
        format!("{}Page", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let data = generator.subschema_for::<Vec<Record<E>>>();
        let meta = generator.subschema_for::<PageMeta>();
        object_schema("One page of records, ordered by Id.", vec![("data", data), ("meta", meta)], &["data", "meta"])
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct PageQuery {
    /// Page number, from 1 (default 1).
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Records per page, 1 to 500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    pub per_page: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
pub struct RecordPath {
    /// The record's Id.
    pub record: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct PreferHeader {
    /// `return=representation` answers a delete with 200 and a body instead of 204.
    pub prefer: Option<String>,
}

/// Checks that the body fits the set's model (fields of the wrong type are named); the
/// document itself is kept whole.
fn typed<E: MirroredEntity>(body: &Value) -> Result<(), ApiError> {
    crate::typed::from_json::<E::Model>(body)
        .map(|_| ())
        .map_err(|e| ApiError::validation([(e.field, vec![e.message])].into()))
}

async fn list<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    query: Query<PageQuery>,
) -> Result<HttpResponseOk<RecordPage<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let query = query.into_inner();
    let page = rqctx.context().fieldreport.list(&E::INFO, query.page, query.per_page).await?;
    Ok(HttpResponseOk(RecordPage {
        data: page.records,
        meta: PageMeta::new(page.page, page.per_page, page.total),
        set: PhantomData,
    }))
}

async fn create<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    body: TypedBody<NewRecord<E>>,
) -> Result<HttpResponseCreated<RecordWrite<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let body = body.into_inner().0;
    typed::<E>(&body)?;
    let outcome = rqctx.context().fieldreport.create(&E::INFO, body, true).await?;
    Ok(HttpResponseCreated(RecordWrite { data: Record::new(outcome.data), field_report_response: outcome.upstream }))
}

async fn show<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<RecordPath>,
) -> Result<HttpResponseOk<StoredRecord<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let document = rqctx.context().fieldreport.show(&E::INFO, &path.into_inner().record).await?;
    Ok(HttpResponseOk(StoredRecord(document, PhantomData)))
}

async fn update<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<RecordPath>,
    body: TypedBody<Record<E>>,
) -> Result<HttpResponseOk<RecordWrite<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let body = body.into_inner().0;
    typed::<E>(&body)?;
    let outcome = rqctx.context().fieldreport.update(&E::INFO, &path.into_inner().record, body, true).await?;
    Ok(HttpResponseOk(RecordWrite { data: Record::new(outcome.data), field_report_response: outcome.upstream }))
}

async fn delete<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<RecordPath>,
    headers: Header<PreferHeader>,
) -> Result<Response<Body>, ApiError> {
    token.caller(&rqctx).await?;
    let outcome = rqctx.context().fieldreport.delete(&E::INFO, &path.into_inner().record, true).await?;
    let representation =
        headers.into_inner().prefer.is_some_and(|p| p.split(',').any(|v| v.trim() == "return=representation"));
    let response = if representation {
        let body = json!({"data": outcome.data, "fieldReportResponse": outcome.upstream});
        Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
    } else {
        Response::builder().status(StatusCode::NO_CONTENT).body(Body::empty())
    };
    response.map_err(ApiError::internal)
}

/// Registers the five endpoint kinds (six operations) of every mirrored set.
struct Registrar<'a> {
    api: &'a mut ApiDescription<ApiContext>,
    errors: Vec<String>,
}

impl Registrar<'_> {
    fn add(&mut self, endpoint: ApiEndpoint<ApiContext>) {
        if let Err(e) = self.api.register(endpoint) {
            self.errors.push(e.to_string());
        }
    }
}

/// An endpoint of one entity set, named `fieldreport_<route>_<action>`. (A macro, because
/// dropshot does not export the traits a generic function would need as bounds.)
macro_rules! endpoint {
    ($info:expr, $action:expr, $handler:expr, $method:expr, $path:expr, $summary:expr, $description:expr) => {
        ApiEndpoint::new(
            format!("fieldreport_{}_{}", $info.route, $action),
            $handler,
            $method,
            "application/json",
            $path,
            ApiEndpointVersions::All,
        )
        .summary($summary)
        .description($description)
        .tag("fieldreport")
    };
}

impl EntityVisitor for Registrar<'_> {
    fn visit<E: MirroredEntity>(&mut self) {
        let info = E::INFO;
        let collection = format!("/api/v1/fieldreport/{}", info.route);
        let item = format!("{collection}/{{record}}");
        let set = info.set;
        self.add(endpoint!(
            info,
            "list",
            list::<E>,
            Method::GET,
            &collection,
            format!("List {set}"),
            format!("{set} records of the local mirror, ordered by Id, `per_page` (1 to 500, default 50) per page.")
        ));
        self.add(endpoint!(info, "create", create::<E>, Method::POST, &collection, format!("Create a {set} record"),
            format!("`Id` (string, at most 255 characters) and `Version` (integer) are required; every other field is kept. The record is sent to the field-report system first; the local record takes the Id the upstream assigned. Nothing is stored when the upstream refuses.")));
        self.add(endpoint!(
            info,
            "show",
            show::<E>,
            Method::GET,
            &item,
            format!("Show a {set} record"),
            format!("The {set} record as stored in the local mirror.")
        ));
        for (method, action) in [(Method::PUT, "replace"), (Method::PATCH, "update")] {
            self.add(endpoint!(info, action, update::<E>, method, &item, format!("Update a {set} record"),
                format!("The body is deep-merged over the stored record (objects merge, arrays and scalars replace), `Version` is increased by 1 and the record is sent to the field-report system as `PUT {set}(<Id>L)` (without DateModified, DateOfCreation, created_at, updated_at). The local record changes only when the upstream accepted; a concurrent change answers 409.")));
        }
        self.add(endpoint!(info, "delete", delete::<E>, Method::DELETE, &item, format!("Delete a {set} record"),
            format!("Deletes the local record, then `{set}(<Id>L)` at the field-report system (the local record is restored if the upstream refuses). Answers 204, or 200 with `{{data, fieldReportResponse}}` with `Prefer: return=representation`.")));
    }
}

/// Adds the per-entity endpoints to the API.
pub fn register(api: &mut ApiDescription<ApiContext>) -> Result<(), String> {
    let mut registrar = Registrar { api, errors: Vec::new() };
    visit_entities(&mut registrar);
    if registrar.errors.is_empty() { Ok(()) } else { Err(registrar.errors.join("; ")) }
}

// ---- Tool routes (internal sync tooling) ----

/// An entity set of the mirror.
#[derive(Serialize, JsonSchema)]
pub struct EntityOverview {
    /// Route name, e.g. `costCenters`.
    pub entity: String,
    /// OData set name, e.g. `CostCenters`.
    pub set: String,
    /// Records in the local mirror.
    pub records: i64,
    /// When the last sync completed (RFC 3339), if ever.
    pub last_sync_at: Option<String>,
    /// The newest `DateModified` synced.
    pub cursor: Option<String>,
    /// Relations pulled with each record.
    pub expand: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct EntitiesAnswer {
    pub data: Vec<EntityOverview>,
}

#[derive(Serialize, JsonSchema)]
pub struct EntityAnswer {
    pub data: EntityOverview,
}

/// Records found by a top-level field.
#[derive(Serialize, JsonSchema)]
pub struct FoundRecords {
    pub data: Vec<serde_json::Map<String, Value>>,
}

/// What each sync did.
#[derive(Serialize, JsonSchema)]
pub struct SyncAnswer {
    pub data: Vec<crate::fieldreport::sync::SyncReport>,
}

#[derive(Deserialize, JsonSchema)]
pub struct EntityPath {
    /// Route name (`costCenters`) or OData set name (`CostCenters`).
    pub entity: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct AttributePath {
    /// Route name (`costCenters`) or OData set name (`CostCenters`).
    pub entity: String,
    /// A top-level field of the record, e.g. `ExternalId` (letters, digits and `_`, at most 64).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_]{1,64}$"))]
    pub attribute: String,
    /// The value to look for (compared as text).
    pub value: String,
}

/// The entity set named in a tool route, or 404 listing the known names.
pub fn entity_named(name: &str) -> Result<&'static generated::fieldreport::EntityInfo, ApiError> {
    Ok(crate::fieldreport::service::entity_named(name)?)
}

async fn overview(
    rqctx: &RequestContext<ApiContext>,
    info: &generated::fieldreport::EntityInfo,
    counts: &[(String, i64)],
) -> Result<EntityOverview, ApiError> {
    let state = rqctx.context().store.sync_state(info.route).await?;
    Ok(EntityOverview {
        entity: info.route.to_string(),
        set: info.set.to_string(),
        records: counts.iter().find(|(e, _)| e == info.route).map(|(_, n)| *n).unwrap_or(0),
        last_sync_at: state
            .last_sync_at
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        cursor: state.cursor,
        expand: info.expand.iter().map(|e| e.to_string()).collect(),
    })
}

/// Field-report entities
///
/// The mirrored entity sets with their local record counts, last sync and cursor.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/show", tags = ["fieldreport"] }]
pub async fn fieldreport_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
) -> Result<HttpResponseOk<EntitiesAnswer>, ApiError> {
    token.caller(&rqctx).await?;
    let counts = rqctx.context().store.mirror_counts().await?;
    let mut data = Vec::new();
    for info in generated::fieldreport::ENTITIES {
        data.push(overview(&rqctx, info, &counts).await?);
    }
    Ok(HttpResponseOk(EntitiesAnswer { data }))
}

/// One field-report entity
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}", tags = ["fieldreport"] }]
pub async fn fieldreport_show_entity(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<EntityPath>,
) -> Result<HttpResponseOk<EntityAnswer>, ApiError> {
    token.caller(&rqctx).await?;
    let info = entity_named(&path.into_inner().entity)?;
    let counts = rqctx.context().store.mirror_counts().await?;
    Ok(HttpResponseOk(EntityAnswer { data: overview(&rqctx, info, &counts).await? }))
}

#[derive(Deserialize, JsonSchema)]
pub struct EntityAttributePath {
    /// Route name (`costCenters`) or OData set name (`CostCenters`).
    pub entity: String,
    /// A top-level field of the record, e.g. `ExternalId` (letters, digits and `_`, at most 64).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_]{1,64}$"))]
    pub attribute: String,
}

/// Field-report records having a field
///
/// Records of the local mirror whose top-level field is set (not null), at most 500.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}/{attribute}", tags = ["fieldreport"] }]
pub async fn fieldreport_show_having(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<EntityAttributePath>,
) -> Result<HttpResponseOk<FoundRecords>, ApiError> {
    let path = path.into_inner();
    show_records(&rqctx, &token, &path.entity, &path.attribute, None).await
}

/// Find field-report records by a field
///
/// Records of the local mirror whose top-level field equals the value (as text), at most 500.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/fieldreport/show/{entity}/{attribute}/{value}",
    tags = ["fieldreport"],
}]
pub async fn fieldreport_show_records(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<AttributePath>,
) -> Result<HttpResponseOk<FoundRecords>, ApiError> {
    let path = path.into_inner();
    show_records(&rqctx, &token, &path.entity, &path.attribute, Some(&path.value)).await
}

/// Records of a set whose field is set or, with a value, equals it.
async fn show_records(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken,
    entity: &str,
    attribute: &str,
    value: Option<&str>,
) -> Result<HttpResponseOk<FoundRecords>, ApiError> {
    token.caller(rqctx).await?;
    let info = entity_named(entity)?;
    let found = rqctx.context().fieldreport.find(info, attribute, value).await?;
    Ok(HttpResponseOk(FoundRecords { data: found.into_iter().filter_map(|r| r.as_object().cloned()).collect() }))
}

#[derive(Deserialize, JsonSchema)]
pub struct SyncQuery {
    /// After the sync, remove the local records the field-report system no longer has (an
    /// incremental sync cannot see deletes). It reads every Id of the set; records with a
    /// local change waiting for the upstream are kept and reported: `true`/`false` or `1`/`0`
    /// (default false).
    #[serde(default)]
    pub reconcile: super::query_flag::QueryFlag,
}

/// Sync every field-report entity
///
/// Pulls every entity set from the field-report system by OData into the mirror (records
/// newer than each set's cursor, with the set's expand relations), one set after the
/// other, without forwarding. Answers what each sync did. With `reconcile=true` each sync
/// is followed by a reconciling: the set's Ids are read from the field-report system and
/// local records it no longer has are removed (those with a local change waiting for it
/// are kept and reported). Intended for internal tooling; `integration-service fieldreport
/// sync [--reconcile]` does the same with a progress display.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/sync", tags = ["fieldreport"] }]
pub async fn fieldreport_sync_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    query: Query<SyncQuery>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    sync(&rqctx, &token, None, query.into_inner()).await
}

/// Sync one field-report entity
///
/// As `/api/v1/fieldreport/sync` for one set. 409 while another sync of it runs (on any
/// instance sharing the database).
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/sync/{entity}", tags = ["fieldreport"] }]
pub async fn fieldreport_sync(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<EntityPath>,
    query: Query<SyncQuery>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    sync(&rqctx, &token, Some(&path.into_inner().entity), query.into_inner()).await
}

/// Syncs one set or, without a name, all of them in seed order.
async fn sync(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken,
    entity: Option<&str>,
    query: SyncQuery,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let reconcile = query.reconcile.value("reconcile")?;
    let entities: Vec<&generated::fieldreport::EntityInfo> = match entity {
        Some(name) => vec![entity_named(name)?],
        None => generated::fieldreport::ENTITIES.iter().collect(),
    };
    let service = &rqctx.context().fieldreport;
    let mut data = Vec::new();
    for info in entities {
        data.push(match reconcile {
            true => service.sync_and_reconcile(info, &|_| {}).await?,
            false => service.sync(info, &|_| {}).await?,
        });
    }
    Ok(HttpResponseOk(SyncAnswer { data }))
}

#[derive(Deserialize, JsonSchema)]
pub struct StagePath {
    /// 1 (reference data), 2 (companies, contacts, products, service objects) or 3 (service
    /// requests, items, documents, time events, step-list templates).
    #[schemars(regex(pattern = "^[123]$"))]
    pub stage: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct StageTypePath {
    /// 1, 2 or 3.
    #[schemars(regex(pattern = "^[123]$"))]
    pub stage: String,
    /// `create`, `update` or `delete`.
    #[schemars(regex(pattern = "^(create|update|delete)$"))]
    pub r#type: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct StageTypeEntityPath {
    /// 1, 2 or 3.
    #[schemars(regex(pattern = "^[123]$"))]
    pub stage: String,
    /// `create`, `update` or `delete`.
    #[schemars(regex(pattern = "^(create|update|delete)$"))]
    pub r#type: String,
    /// Route name (`costCenters`) or OData set name (`CostCenters`).
    pub entity: String,
}

/// What each push did.
#[derive(Serialize, JsonSchema)]
pub struct PushAnswer {
    pub data: Vec<crate::fieldreport::push::PushReport>,
}

/// Initial setup (all stages)
///
/// Syncs every entity set, stage by stage: 1 reference data (itemTypes, itemUnits,
/// costCenters, tags, qualifications, users), 2 companies, contacts, products,
/// serviceObjects, 3 serviceRequests, items, documents, timeEvents, stepListTemplates.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/setup", tags = ["fieldreport"] }]
pub async fn fieldreport_setup_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    setup(&rqctx, &token, None).await
}

/// Initial setup of one stage
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/setup/{stage}", tags = ["fieldreport"] }]
pub async fn fieldreport_setup(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<StagePath>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    setup(&rqctx, &token, Some(&path.into_inner().stage)).await
}

/// Syncs the sets of one stage or, without one, of every stage in order.
async fn setup(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken,
    stage: Option<&str>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    token.caller(rqctx).await?;
    Ok(HttpResponseOk(SyncAnswer { data: rqctx.context().fieldreport.setup(stage).await? }))
}

/// Push internal writes (all)
///
/// Sends the records written without forwarding (e.g. by ERP webhooks) to the field-report
/// system: `create` ones by POST, `update` ones by PUT, local deletes by DELETE (a record
/// the upstream no longer has counts as done). Each is marked as soon as the upstream
/// accepted it, so a rerun sends nothing twice; refusals are reported per record and the
/// batch goes on.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/post", tags = ["fieldreport"] }]
pub async fn fieldreport_post_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    post(&rqctx, &token, None, None, None).await
}

/// Push internal writes of a stage
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}", tags = ["fieldreport"] }]
pub async fn fieldreport_post_stage(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<StagePath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    post(&rqctx, &token, Some(&path.into_inner().stage), None, None).await
}

/// Push internal writes of a stage and type
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}/{type}", tags = ["fieldreport"] }]
pub async fn fieldreport_post_type(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<StageTypePath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    let path = path.into_inner();
    post(&rqctx, &token, Some(&path.stage), Some(&path.r#type), None).await
}

/// Push internal writes of one entity
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/fieldreport/post/{stage}/{type}/{entity}",
    tags = ["fieldreport"],
}]
pub async fn fieldreport_post(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken,
    path: Path<StageTypeEntityPath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    let path = path.into_inner();
    post(&rqctx, &token, Some(&path.stage), Some(&path.r#type), Some(&path.entity)).await
}

/// Pushes internal writes: of a stage (or all), of a type (or both), of one entity (or all of
/// the stage).
async fn post(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken,
    stage: Option<&str>,
    kind: Option<&str>,
    entity: Option<&str>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let kinds = crate::fieldreport::push::push_kinds(kind)?;
    let mut entities = crate::fieldreport::push::stage_entities(stage)?;
    if let Some(name) = entity {
        let wanted = entity_named(name)?;
        entities.retain(|e| e.route == wanted.route);
        if entities.is_empty() {
            return Err(ApiError::validation(
                [(
                    "entity".to_string(),
                    vec![format!("{} is not part of stage {}", wanted.route, stage.unwrap_or("-"))],
                )]
                .into(),
            ));
        }
    }
    let mut data = Vec::new();
    for info in entities {
        for kind in &kinds {
            data.push(rqctx.context().fieldreport.push(info, kind).await?);
        }
    }
    Ok(HttpResponseOk(PushAnswer { data }))
}
