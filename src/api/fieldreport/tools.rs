//! The field-report area's tool routes for sync tooling and operators: `show` (what the
//! mirror holds), `sync` (pull from the upstream), `setup` (the staged initial pull) and `post`
//! (push the writes made without forwarding). The per-entity endpoints are in
//! [`crate::api::fieldreport::entities`].

use dropshot::{HttpResponseOk, Path, Query, RequestContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::error::ApiError;

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
    token: BearerToken<needs::FieldreportTools>,
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
///
/// The set named by its route (`costCenters`) or OData name (`CostCenters`): how many records
/// the mirror holds, when it was last synced, its sync cursor and the relations each sync
/// expands. 404 for an unknown set.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}", tags = ["fieldreport"] }]
pub async fn fieldreport_show_entity(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
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
    token: BearerToken<needs::FieldreportTools>,
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
    token: BearerToken<needs::FieldreportTools>,
    path: Path<AttributePath>,
) -> Result<HttpResponseOk<FoundRecords>, ApiError> {
    let path = path.into_inner();
    show_records(&rqctx, &token, &path.entity, &path.attribute, Some(&path.value)).await
}

/// Records of a set whose field is set or, with a value, equals it.
async fn show_records(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::FieldreportTools>,
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
    /// After the sync, reconcile the set both ways: read every Id and Version of the set, fetch
    /// the records the mirror lacks or holds at another version, and remove those the
    /// field-report system no longer has (an incremental sync cannot see deletes); records with
    /// a local change waiting for the upstream are kept and reported: `true`/`false` or `1`/`0`
    /// (default false).
    #[serde(default)]
    pub reconcile: crate::api::support::query_flag::QueryFlag,
}

/// Sync every field-report entity
///
/// Pulls every entity set from the field-report system by OData into the mirror (records
/// stamped since the overlap before each set's cursor, in (`DateModified`, `Id`) key order,
/// with the set's expand relations), one set after the other, without forwarding; records
/// read again unchanged are not written. Answers what each sync did. With `reconcile=true`
/// each sync is followed by a reconciling: the set's Ids and Versions are read from the
/// field-report system, the records the mirror lacks or holds at another version are
/// fetched, and local records it no longer has are removed (those with a local change
/// waiting for it are kept and reported). Intended for internal tooling; `integration-service fieldreport
/// sync [--reconcile]` does the same with a progress display.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/sync", tags = ["fieldreport"] }]
pub async fn fieldreport_sync_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
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
    token: BearerToken<needs::FieldreportTools>,
    path: Path<EntityPath>,
    query: Query<SyncQuery>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    sync(&rqctx, &token, Some(&path.into_inner().entity), query.into_inner()).await
}

/// Syncs one set or, without a name, all of them in seed order.
async fn sync(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::FieldreportTools>,
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
    token: BearerToken<needs::FieldreportTools>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    setup(&rqctx, &token, None).await
}

/// Initial setup of one stage
///
/// Syncs the sets of stage 1, 2 or 3 (see the setup of all stages for which sets each holds),
/// in order, from the field-report system into the mirror; the answer reports each set's sync.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/setup/{stage}", tags = ["fieldreport"] }]
pub async fn fieldreport_setup(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
    path: Path<StagePath>,
) -> Result<HttpResponseOk<SyncAnswer>, ApiError> {
    setup(&rqctx, &token, Some(&path.into_inner().stage)).await
}

/// Syncs the sets of one stage or, without one, of every stage in order.
async fn setup(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::FieldreportTools>,
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
    token: BearerToken<needs::FieldreportTools>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    post(&rqctx, &token, None, None, None).await
}

/// Push internal writes of a stage
///
/// As the push of all internal writes, for the sets of stage 1, 2 or 3 only.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}", tags = ["fieldreport"] }]
pub async fn fieldreport_post_stage(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
    path: Path<StagePath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    post(&rqctx, &token, Some(&path.into_inner().stage), None, None).await
}

/// Push internal writes of a stage and type
///
/// As the push of all internal writes, for one set of the stage (`type`, its route or OData
/// name) only.
#[dropshot::endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}/{type}", tags = ["fieldreport"] }]
pub async fn fieldreport_post_type(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
    path: Path<StageTypePath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    let path = path.into_inner();
    post(&rqctx, &token, Some(&path.stage), Some(&path.r#type), None).await
}

/// Push internal writes of one entity
///
/// As the push of all internal writes, for the one record `entity` (its Id) of set `type`.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/fieldreport/post/{stage}/{type}/{entity}",
    tags = ["fieldreport"],
}]
pub async fn fieldreport_post(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::FieldreportTools>,
    path: Path<StageTypeEntityPath>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    let path = path.into_inner();
    post(&rqctx, &token, Some(&path.stage), Some(&path.r#type), Some(&path.entity)).await
}

/// Pushes internal writes: of a stage (or all), of a type (or both), of one entity (or all of
/// the stage).
async fn post(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::FieldreportTools>,
    stage: Option<&str>,
    kind: Option<&str>,
    entity: Option<&str>,
) -> Result<HttpResponseOk<PushAnswer>, ApiError> {
    token.caller(rqctx).await?;
    let kinds = crate::fieldreport::push::push_kinds(kind)?;
    let mut entities = crate::fieldreport::stages::stage_entities(stage)?;
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
