//! The field-report area's per-entity endpoints (the tool routes `show`, `sync`, `setup` and
//! `post` are in [`crate::api::fieldreport::tools`]): for every mirrored entity set of the generated registry
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

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::paging::{Cursor, NextPage, Paging};
pub use crate::api::support::paging::{PageMeta, PageQuery};
use crate::error::ApiError;
use crate::vocabulary::unique_keys::UniqueKeys;

/// A record of entity set `E`: passed through whole, documented as the set's model under the
/// model's name (e.g. `Company`), so that a record and a nested one (`Contact.Company`) are one
/// schema.
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
        <E::Model as JsonSchema>::schema_name()
    }
    /// The model's id: `Record<E>` and `E::Model` are one schema in the document.
    fn schema_id() -> std::borrow::Cow<'static, str> {
        <E::Model as JsonSchema>::schema_id()
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
    fn schema_id() -> std::borrow::Cow<'static, str> {
        Record::<E>::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Record::<E>::json_schema(generator)
    }
}

/// The body of a create: a record of set `E` with the `Id` and `Version` a new record needs.
pub struct NewRecord<E>(pub Value, PhantomData<fn() -> E>);

impl<'de, E> Deserialize<'de> for NewRecord<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        UniqueKeys::deserialize(d).map(|UniqueKeys(value)| NewRecord(value, PhantomData))
    }
}

impl<E: MirroredEntity> JsonSchema for NewRecord<E> {
    fn schema_name() -> String {
        format!("New{}", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let description = format!(
            "A new {} record: `Id` (a string of 1 to {} characters) and `Version` (an integer) are required; every other field is the set's.",
            E::INFO.set,
            crate::fieldreport::service::MAX_ID_LEN
        );
        with_identity::<E>(generator, description, true)
    }
}

/// The body of an update (PUT or PATCH) of a record of set `E`: the set's fields, and the
/// record's own `Id` and stored `Version` when the client names them.
pub struct RecordUpdate<E>(pub Value, PhantomData<fn() -> E>);

impl<'de, E> Deserialize<'de> for RecordUpdate<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        UniqueKeys::deserialize(d).map(|UniqueKeys(value)| RecordUpdate(value, PhantomData))
    }
}

impl<E: MirroredEntity> JsonSchema for RecordUpdate<E> {
    fn schema_name() -> String {
        format!("{}Update", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let description = format!(
            "Fields of a {} record to merge over the stored one. `Id`, when given, must be the record's own; `Version`, when given, must be the stored one (a stale Version is refused with 409: the record changed since it was read).",
            E::INFO.set
        );
        with_identity::<E>(generator, description, false)
    }
}

/// The set's model as one object schema of its own (not an `allOf` over the set's schema:
/// client generators cannot narrow the set's `Edm.Int64` union in a second part), with `Id` a
/// string and `Version` an integer, the types the service takes in a write body.
fn with_identity<E: MirroredEntity>(generator: &mut SchemaGenerator, description: String, required: bool) -> Schema {
    let Schema::Object(mut schema) = <E::Model as JsonSchema>::json_schema(generator) else {
        unreachable!("a generated model is an object schema")
    };
    let identity: [(&str, Schema); 2] = [
        (
            "Id",
            serde_json::from_value(json!({
                "type": "string",
                "minLength": 1,
                "maxLength": crate::fieldreport::service::MAX_ID_LEN,
                "description": "The record's Id."
            }))
            .expect("a valid schema"),
        ),
        (
            "Version",
            serde_json::from_value(json!({
                "type": "integer",
                "format": "int64",
                "description": "The record's version: on a create any integer, kept as given (each forwarded update adds 1); on an update, the version the client read."
            }))
            .expect("a valid schema"),
        ),
    ];
    let object = schema.object.get_or_insert_with(Default::default);
    // The service refuses a longer `ExternalId` text (422): it is indexed like the `Id`.
    if let Some(Schema::Object(external_id)) = object.properties.get_mut("ExternalId") {
        external_id.string().max_length = Some(crate::fieldreport::service::MAX_ID_LEN as u32);
    }
    for (name, property) in identity {
        object.properties.insert(name.to_string(), property);
        if required {
            object.required.insert(name.to_string());
        }
    }
    schema.metadata().description = Some(description);
    Schema::Object(schema)
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

/// One page of records, ordered by Id; the documents go out as they are stored. Read by
/// position it has `meta`; read by key, `next_cursor` and `next` while records follow.
pub struct RecordPage<E> {
    pub data: Vec<Box<RawValue>>,
    pub meta: Option<PageMeta>,
    pub next: NextPage,
    set: PhantomData<fn() -> E>,
}

impl<E> Serialize for RecordPage<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            data: &'a [Box<RawValue>],
            #[serde(skip_serializing_if = "Option::is_none")]
            meta: &'a Option<PageMeta>,
            #[serde(skip_serializing_if = "Option::is_none")]
            next_cursor: &'a Option<Cursor>,
            #[serde(skip_serializing_if = "Option::is_none")]
            next: &'a Option<String>,
        }
        Wire { data: &self.data, meta: &self.meta, next_cursor: &self.next.cursor, next: &self.next.link }.serialize(s)
    }
}

impl<E: MirroredEntity> JsonSchema for RecordPage<E> {
    fn schema_name() -> String {
        format!("{}Page", E::INFO.set)
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let data = generator.subschema_for::<Vec<Record<E>>>();
        let meta = generator.subschema_for::<PageMeta>();
        let cursor = generator.subschema_for::<Cursor>();
        let next: Schema = serde_json::from_value(json!({
            "type": "string",
            "description": "The path and query that read the next page (read by key), while records follow."
        }))
        .expect("a valid schema");
        object_schema(
            "One page of records, ordered by Id. Read by position (`page`, `per_page`) it has `meta`, with the count; read by key (`after`, `limit`) it has `next_cursor` and `next` while records follow this page, and neither on the last page.",
            vec![("data", data), ("meta", meta), ("next_cursor", cursor), ("next", next)],
            &["data"],
        )
    }
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
    token: BearerToken<needs::FieldreportRead>,
    query: Query<PageQuery>,
) -> Result<HttpResponseOk<RecordPage<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let fieldreport = &rqctx.context().fieldreport;
    let page = match query.into_inner().paging()? {
        Paging::Key { after, limit } => {
            let page = fieldreport.list_after(&E::INFO, after.as_deref(), limit).await?;
            let next = NextPage::after(rqctx.request.uri().path(), page.next.as_deref(), limit);
            RecordPage { data: page.records, meta: None, next, set: PhantomData }
        }
        Paging::Position { page, per_page } => {
            let page = fieldreport.list(&E::INFO, page, per_page).await?;
            let meta = PageMeta::new(page.page, page.per_page, page.total);
            RecordPage { data: page.records, meta: Some(meta), next: NextPage::default(), set: PhantomData }
        }
    };
    Ok(HttpResponseOk(page))
}

async fn create<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportWrite>,
    body: TypedBody<NewRecord<E>>,
) -> Result<HttpResponseCreated<RecordWrite<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let body = body.into_inner().0;
    typed::<E>(&body)?;
    let outcome = rqctx.context().fieldreport.create_forwarded(&E::INFO, body).await?;
    Ok(HttpResponseCreated(RecordWrite { data: Record::new(outcome.data), field_report_response: outcome.upstream }))
}

async fn show<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportRead>,
    path: Path<RecordPath>,
) -> Result<HttpResponseOk<StoredRecord<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let document = rqctx.context().fieldreport.show(&E::INFO, &path.into_inner().record).await?;
    Ok(HttpResponseOk(StoredRecord(document, PhantomData)))
}

async fn update<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportWrite>,
    path: Path<RecordPath>,
    body: TypedBody<RecordUpdate<E>>,
) -> Result<HttpResponseOk<RecordWrite<E>>, ApiError> {
    token.caller(&rqctx).await?;
    let body = body.into_inner().0;
    typed::<E>(&body)?;
    let outcome = rqctx.context().fieldreport.update_forwarded(&E::INFO, &path.into_inner().record, body).await?;
    Ok(HttpResponseOk(RecordWrite { data: Record::new(outcome.data), field_report_response: outcome.upstream }))
}

async fn delete<E: MirroredEntity>(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportWrite>,
    path: Path<RecordPath>,
    headers: Header<PreferHeader>,
) -> Result<Response<Body>, ApiError> {
    token.caller(&rqctx).await?;
    let outcome = rqctx.context().fieldreport.delete_forwarded(&E::INFO, &path.into_inner().record).await?;
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

/// `costCenters` as `cost_centers`: operationIds are snake case throughout the document (the
/// methods of generated clients are named after them).
pub(super) fn snake_case(route: &str) -> String {
    let mut snake = String::with_capacity(route.len() + 4);
    for c in route.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
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

/// An endpoint of one entity set, named `fieldreport_<route in snake case>_<action>`. (A macro, because
/// dropshot does not export the traits a generic function would need as bounds.)
macro_rules! endpoint {
    ($info:expr, $action:expr, $handler:expr, $method:expr, $path:expr, $summary:expr, $description:expr) => {
        ApiEndpoint::new(
            format!("fieldreport_{}_{}", snake_case($info.route), $action),
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
            format!("{set} records of the local mirror, ordered by Id (numeric Ids in numeric order). Read by key: `limit` (1 to 500, default 50) records after the cursor `after` (from the start without it), answered with `next_cursor` and the `next` link while records follow, and no count; a page costs the same at any depth, and a record inserted or deleted meanwhile makes no other record skip or repeat. Read by position (the slower way, kept for existing callers: a page costs what it skips): page `page` of `per_page` (1 to 500, default 50) records, with the count in `meta`.")
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
                format!("The body is deep-merged over the stored record (objects merge, arrays and scalars replace), `Version` is increased by 1 and the record is sent to the field-report system as `PUT {set}(<Id>L)` (without DateModified, DateOfCreation, created_at, updated_at). `Id` and `Version` may be left out; when given, `Id` must be the record's own and `Version` the stored one, else 422 (not a string, not an integer, another Id) or 409 (a stale Version: read the record again). The local record changes only when the upstream accepted; a concurrent change answers 409.")));
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
