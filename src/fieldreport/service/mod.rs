//! Create, update, delete, list and show on the local mirror, forwarding writes to the
//! field-report system.
//!
//! Nothing diverges on failure: a create calls the upstream first and writes locally only
//! after it succeeded; an update sends the merged record first and replaces the local one
//! only if it is still at the version it was read at (so two concurrent updates never lose a
//! change: the second gets 409); a delete removes the local record leaving a tombstone, calls
//! the upstream, and puts the record back if the upstream refused. No database lock is held
//! while the upstream is called.

use generated::fieldreport::EntityInfo;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::merge::deep_merge;
use crate::store::fieldreport::deletes::LocalDelete;
use crate::store::fieldreport::records::MirrorRecord;
use crate::store::{Store, StoreError};
use crate::upstream::UpstreamError;
use crate::upstream::fieldreport::FieldReportClient;
use crate::vocabulary::field_errors::FieldErrors;

// Fields the upstream sets itself, never sent back on update: `system_fields` of
// `spec/upstream/fieldreport/mirror.toml`.
use generated::fieldreport::SYSTEM_FIELDS;
pub const MAX_ID_LEN: usize = 255;
pub const MAX_PER_PAGE: u32 = 500;

#[derive(Debug, thiserror::Error)]
pub enum FieldReportError {
    #[error("{}", crate::vocabulary::field_errors::describe(.0))]
    Invalid(FieldErrors),
    #[error("unknown entity {0:?}; known: {known}", known = generated::fieldreport::entity_names().collect::<Vec<_>>().join(", "))]
    UnknownEntity(String),
    #[error("{entity} record {id} not found")]
    NotFound { entity: String, id: String },
    #[error("{0}")]
    Conflict(String),
    /// The process is stopping; the work ended early and can simply run again.
    #[error("interrupted: the service is stopping; run it again to resume")]
    Interrupted,
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A forwarded write ended without a definite answer and the upstream could not be asked
    /// whether it applied it: the record is left to be settled (a delete stays pending and
    /// `post` sends it again; the next write or sync reads the upstream first).
    #[error("{0}")]
    OutcomeUnknown(String),
    /// The upstream refused an update as stale: the record changed there. The mirror has
    /// taken the upstream's record, so reading it again and retrying works without a sync.
    #[error("{0}")]
    UpstreamConflict(String),
    /// A forwarded write ended without a definite answer, and reading the upstream back showed
    /// that it was not applied: nothing changed; the write can simply be sent again.
    #[error("{message}")]
    NotApplied { message: String, timed_out: bool },
    /// A fault of the service itself (a task of it that panicked); the detail is logged, not
    /// shown to the caller.
    #[error("{0}")]
    Internal(String),
}

/// What a write did: the local record and the upstream's answer (null without forwarding).
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    pub data: Value,
    pub upstream: Option<Value>,
}

/// One page of records, each document as stored.
#[derive(Debug, Clone)]
pub struct Page {
    pub records: Vec<Box<serde_json::value::RawValue>>,
    pub page: u32,
    pub per_page: u32,
    pub total: i64,
}

#[derive(Clone)]
pub struct FieldReportService {
    store: Store,
    client: Result<FieldReportClient, UpstreamError>,
    /// Set when the process stops (Ctrl-C, SIGTERM): long work (syncs, pulls, pushes) ends
    /// after its current page or record, releasing its claims, so the next run resumes.
    stop: Arc<AtomicBool>,
    /// Set to end the work of this handle only (a job that was cancelled or lost its lease),
    /// at the same points as a stop of the process.
    cancel: Option<Arc<AtomicBool>>,
    /// How far before its cursor an incremental sync starts (`FIELDREPORT_SYNC_OVERLAP_SECONDS`).
    sync_overlap: std::time::Duration,
    /// Where the repairs of reconciling syncs are counted.
    metrics: Option<Arc<crate::metrics::Metrics>>,
}

fn invalid(field: &str, message: &str) -> FieldReportError {
    FieldReportError::Invalid(FieldErrors::from([(field.to_string(), vec![message.to_string()])]))
}

/// A record's `Id` as the mirror keys it: a non-empty string, or a number written out.
pub fn record_id(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether the upstream's record holds what an update sent for each field its body named.
pub(super) fn carries(upstream: &Value, sent: &Value, body: &Value) -> bool {
    body.as_object().is_some_and(|fields| fields.keys().all(|field| upstream.get(field) == sent.get(field)))
}

/// A forwarded write that the upstream, read back, shows it did not apply.
pub(super) fn not_applied(write: &str, entity: &EntityInfo, key: &str, error: &UpstreamError) -> FieldReportError {
    FieldReportError::NotApplied {
        message: format!(
            "the field-report system did not apply the {write} of {} {key} ({error}); nothing changed: send it again",
            entity.route
        ),
        timed_out: matches!(error, UpstreamError::Timeout { .. }),
    }
}

/// A record as sent upstream: without the fields the upstream sets itself.
pub(super) fn without_system_fields(document: &Value) -> Value {
    let mut outgoing = document.clone();
    if let Value::Object(fields) = &mut outgoing {
        for field in SYSTEM_FIELDS {
            fields.remove(*field);
        }
    }
    outgoing
}

/// A record's `Version` (see [`version_number`]); 0 when it has none.
pub(super) fn version_of(document: &Value) -> i64 {
    document.get("Version").and_then(version_number).unwrap_or(0)
}

/// A `Version` as the field-report system writes it: a JSON integer, or, as OData v3 JSON
/// writes every Edm.Int64, the same number as a string (`"3"`).
pub(super) fn version_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.parse().ok())
}

/// The entity set named by its route (`costCenters`) or set name (`CostCenters`).
pub fn entity_named(name: &str) -> Result<&'static EntityInfo, FieldReportError> {
    generated::fieldreport::entity(name).ok_or_else(|| FieldReportError::UnknownEntity(name.to_string()))
}

impl FieldReportService {
    pub fn new(store: Store, client: Result<FieldReportClient, UpstreamError>) -> Self {
        FieldReportService {
            store,
            client,
            stop: Arc::new(AtomicBool::new(false)),
            cancel: None,
            sync_overlap: crate::upstream::config::DEFAULT_SYNC_OVERLAP,
            metrics: None,
        }
    }

    /// The same service, counting the repairs of its reconciling syncs in `metrics`.
    pub fn with_metrics(self, metrics: Arc<crate::metrics::Metrics>) -> FieldReportService {
        FieldReportService { metrics: Some(metrics), ..self }
    }

    /// Where repairs are counted (the ERP's reconciling counts its own there too).
    pub fn metrics(&self) -> Option<&crate::metrics::Metrics> {
        self.metrics.as_deref()
    }

    /// The same service whose incremental syncs start `overlap` before their cursor.
    pub fn with_sync_overlap(self, overlap: std::time::Duration) -> FieldReportService {
        FieldReportService { sync_overlap: overlap, ..self }
    }

    pub(super) fn sync_overlap(&self) -> std::time::Duration {
        self.sync_overlap
    }

    /// Asks long work in progress to end after its current page or record.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The same service whose long work also ends, as on a stop of the process, once
    /// `cancel` is set: the handle a job runs with.
    pub fn cancellable(&self, cancel: Arc<AtomicBool>) -> FieldReportService {
        FieldReportService { cancel: Some(cancel), ..self.clone() }
    }

    /// `Err(Interrupted)` once a stop (or this handle's cancel) was requested.
    pub fn check_stop(&self) -> Result<(), FieldReportError> {
        let cancelled = self.cancel.as_ref().is_some_and(|cancel| cancel.load(Ordering::SeqCst));
        if cancelled || self.stop.load(Ordering::SeqCst) { Err(FieldReportError::Interrupted) } else { Ok(()) }
    }

    /// Whether the process is stopping (not merely this handle cancelled).
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub(super) fn client(&self) -> Result<&FieldReportClient, FieldReportError> {
        self.client.as_ref().map_err(|e| FieldReportError::Upstream(e.clone()))
    }

    /// Whether the upstream is configured (forwarded writes need it).
    pub fn client_ready(&self) -> Result<(), FieldReportError> {
        self.client().map(|_| ())
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    fn object(body: &Value) -> Result<&Map<String, Value>, FieldReportError> {
        body.as_object().ok_or_else(|| invalid("body", "The record must be a JSON object."))
    }

    /// Checks `Id` (string, 1 to 255 characters) and `Version` (integer).
    pub fn validate_new(body: &Value) -> Result<(String, i64), FieldReportError> {
        let object = Self::object(body)?;
        let mut errors = FieldErrors::new();
        let id = match object.get("Id") {
            Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= MAX_ID_LEN => Some(id.clone()),
            Some(Value::String(id)) if !id.is_empty() => {
                errors.insert("Id".into(), vec![format!("The Id may not be longer than {MAX_ID_LEN} characters.")]);
                None
            }
            Some(Value::String(_)) | None | Some(Value::Null) => {
                errors.insert("Id".into(), vec!["The Id field is required.".into()]);
                None
            }
            Some(_) => {
                errors.insert("Id".into(), vec!["The Id must be a string.".into()]);
                None
            }
        };
        let version = match object.get("Version") {
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            None | Some(Value::Null) => {
                errors.insert("Version".into(), vec!["The Version field is required.".into()]);
                None
            }
            Some(_) => {
                errors.insert("Version".into(), vec!["The Version must be an integer.".into()]);
                None
            }
        };
        match (id, version) {
            (Some(id), Some(version)) if errors.is_empty() => Ok((id, version)),
            _ => Err(FieldReportError::Invalid(errors)),
        }
    }

    /// A client's update may name the record's `Id` and `Version`: the `Id` must be the record's
    /// own (an Id never changes), and the `Version` the one stored, else the write is refused
    /// with 409, as the model's description says (someone changed the record since the client
    /// read it: read it again and retry). Without them the write merges into the stored record.
    fn check_identity(entity: &EntityInfo, stored: &MirrorRecord, body: &Value) -> Result<(), FieldReportError> {
        let mut errors = FieldErrors::new();
        match body.get("Id") {
            None | Some(Value::Null) => {}
            Some(Value::String(id)) if *id == stored.id => {}
            Some(Value::String(_)) => {
                let message = format!("The Id must be the record's own ({}); an Id cannot change.", stored.id);
                errors.insert("Id".into(), vec![message]);
            }
            Some(_) => {
                errors.insert("Id".into(), vec!["The Id must be a string.".into()]);
            }
        }
        let version = match body.get("Version") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            Some(_) => {
                errors.insert("Version".into(), vec!["The Version must be an integer.".into()]);
                None
            }
        };
        if !errors.is_empty() {
            return Err(FieldReportError::Invalid(errors));
        }
        match version {
            Some(version) if version != stored.version => Err(FieldReportError::Conflict(format!(
                "{} record {} is at Version {}, not {version}: it changed since it was read; read it again and retry",
                entity.route, stored.id, stored.version
            ))),
            _ => Ok(()),
        }
    }

    /// Creates a record at the field-report system, then here under the Id it assigned.
    pub async fn create_forwarded(&self, entity: &EntityInfo, body: Value) -> Result<WriteOutcome, FieldReportError> {
        self.create(entity, body, true).await
    }

    /// Creates a record here only, pending for `post` (writes made inside the service).
    pub async fn create_pending(&self, entity: &EntityInfo, body: Value) -> Result<WriteOutcome, FieldReportError> {
        self.create(entity, body, false).await
    }

    async fn create(&self, entity: &EntityInfo, body: Value, forward: bool) -> Result<WriteOutcome, FieldReportError> {
        let (requested_id, version) = Self::validate_new(&body)?;
        if self.store.mirror_get(entity.route, &requested_id).await?.is_some() {
            return Err(FieldReportError::Conflict(format!("{} record {requested_id} exists already", entity.route)));
        }
        let upstream = if forward { Some(self.create_upstream(entity, &body).await?) } else { None };
        let id = upstream.as_ref().and_then(|answer| answer.get("Id")).and_then(record_id).unwrap_or(requested_id);
        let mut document = body;
        document["Id"] = Value::String(id.clone());
        let record = MirrorRecord { id, version, document };
        let pending = (!forward).then_some("create");
        self.store.mirror_insert(entity.route, &record, pending).await.map_err(|e| match e {
            StoreError::Duplicate(_) => {
                FieldReportError::Conflict(format!("{} record {} exists already", entity.route, record.id))
            }
            other => other.into(),
        })?;
        Ok(WriteOutcome { data: record.document, upstream })
    }

    /// Updates a record at the field-report system (the body deep-merged over the stored
    /// record), then here.
    pub async fn update_forwarded(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
    ) -> Result<WriteOutcome, FieldReportError> {
        self.update(entity, id, body, true).await
    }

    /// Updates a record here only (the body's fields replace the stored ones), pending for
    /// `post`.
    pub async fn update_pending(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
    ) -> Result<WriteOutcome, FieldReportError> {
        self.update(entity, id, body, false).await
    }

    async fn update(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
        forward: bool,
    ) -> Result<WriteOutcome, FieldReportError> {
        Self::object(&body)?;
        let mut stored = self.load(entity, id).await?;
        if forward {
            Self::check_identity(entity, &stored, &body)?;
        }
        if forward && self.store.update_unsettled(entity.route, &stored.id).await? {
            stored = self.settle_before_update(entity, stored).await?;
        }
        let mut document = stored.document.clone();
        if !forward {
            // Internal writes apply the body as it is: its fields replace the stored ones.
            if let (Value::Object(target), Value::Object(fields)) = (&mut document, &body) {
                target.extend(fields.clone());
            }
            let record = MirrorRecord { id: stored.id.clone(), version: version_of(&document), document };
            return self.replace(entity, record, stored.version, Some("update"), None).await;
        }
        deep_merge(&mut document, &body);
        let version = version_of(&stored.document).checked_add(1).ok_or_else(|| {
            FieldReportError::Conflict(format!(
                "{} record {} has the highest Version there is ({}); it cannot be updated",
                entity.route,
                stored.id,
                i64::MAX
            ))
        })?;
        document["Id"] = Value::String(stored.id.clone());
        document["Version"] = Value::from(version);
        let outgoing = without_system_fields(&document);
        let record = MirrorRecord { id: stored.id.clone(), version, document };
        let upstream = match self.client()?.update(entity.set, &stored.id, &outgoing).await {
            Ok(upstream) => upstream,
            Err(error) if error.may_have_applied() => {
                self.settle_update(entity, &stored, &record, &body, error).await?
            }
            Err(error @ UpstreamError::Refused { status: 409, .. }) => {
                return Err(self.catch_up_after_conflict(entity, &stored, error).await);
            }
            Err(UpstreamError::Refused { status: 404, .. }) => {
                // Deleted at the field-report system by someone else: the mirror follows.
                self.store.mirror_delete(entity.route, &stored.id).await?;
                return Err(FieldReportError::NotFound { entity: entity.route.into(), id: stored.id });
            }
            Err(error) => return Err(error.into()),
        };
        if self.store.mirror_replace(entity.route, &record, stored.version, None).await? {
            return Ok(WriteOutcome { data: record.document, upstream: Some(upstream) });
        }
        // The upstream took this write at its version, so a mirror already at that version
        // holds this very write: a concurrent update, refused upstream as stale, caught the
        // mirror up with the upstream's copy of it. It takes the document as sent.
        let caught_up =
            self.store.mirror_get(entity.route, &record.id).await?.is_some_and(|now| now.version == version);
        if caught_up && self.store.mirror_replace(entity.route, &record, version, None).await? {
            return Ok(WriteOutcome { data: record.document, upstream: Some(upstream) });
        }
        Err(FieldReportError::Conflict(format!(
            "{} record {} was changed by another request; read it again and retry",
            entity.route, record.id
        )))
    }

    async fn replace(
        &self,
        entity: &EntityInfo,
        record: MirrorRecord,
        expected_version: i64,
        pending: Option<&str>,
        upstream: Option<Value>,
    ) -> Result<WriteOutcome, FieldReportError> {
        if !self.store.mirror_replace(entity.route, &record, expected_version, pending).await? {
            return Err(FieldReportError::Conflict(format!(
                "{} record {} was changed by another request; read it again and retry",
                entity.route, record.id
            )));
        }
        Ok(WriteOutcome { data: record.document, upstream })
    }

    /// Deletes a record locally, leaving a tombstone (see [`crate::store::fieldreport::deletes`])
    /// that keeps syncs from bringing it back until the upstream confirmed the delete. Without
    /// forwarding the delete stays pending for `post`; a placeholder that never reached the
    /// upstream is simply dropped. Forwarded, the upstream is called at once: done (or already
    /// gone there) → the tombstone goes; refused → the record is put back; no definite answer →
    /// see [`FieldReportService::settle_delete`].
    pub async fn delete_forwarded(&self, entity: &EntityInfo, id: &str) -> Result<WriteOutcome, FieldReportError> {
        self.delete(entity, id, true).await
    }

    /// Deletes a record here, the delete pending for `post` (see [`Self::delete_forwarded`]).
    pub async fn delete_pending(&self, entity: &EntityInfo, id: &str) -> Result<WriteOutcome, FieldReportError> {
        self.delete(entity, id, false).await
    }

    async fn delete(&self, entity: &EntityInfo, id: &str, forward: bool) -> Result<WriteOutcome, FieldReportError> {
        let client = if forward { Some(self.client()?) } else { None };
        let stored = self.load(entity, id).await?;
        let done = Ok(WriteOutcome { data: Value::Bool(true), upstream: None });
        match self.store.mirror_delete_tombstoned(entity.route, id).await? {
            LocalDelete::Missing => {
                return Err(FieldReportError::NotFound { entity: entity.route.into(), id: id.into() });
            }
            LocalDelete::Dropped => return done,
            LocalDelete::Tombstoned => {}
        }
        let Some(client) = client else { return done };
        match client.delete(entity.set, id).await {
            Ok(answer) => {
                self.store.mirror_forget_tombstone(entity.route, id).await?;
                Ok(WriteOutcome { data: Value::Bool(true), upstream: Some(answer) })
            }
            Err(UpstreamError::Refused { status: 404, .. }) => {
                self.store.mirror_forget_tombstone(entity.route, id).await?;
                done
            }
            Err(error) if error.may_have_applied() => self.settle_delete(entity, stored, error).await,
            Err(error) => {
                self.restore(entity, &stored).await?;
                Err(error.into())
            }
        }
    }

    /// The upstream's create: sent, or found after a lost answer. A create with an
    /// `ExternalId` whose earlier attempt has an unknown outcome looks for that attempt first
    /// (the upstream finds records by `ExternalId`; it has no other key a client chooses).
    async fn create_upstream(&self, entity: &EntityInfo, body: &Value) -> Result<Value, FieldReportError> {
        let client = self.client()?;
        let external = body.get("ExternalId").and_then(Value::as_str).filter(|e| !e.is_empty());
        if let Some(external) = external
            && self.store.create_unsettled(entity.route, external).await?
        {
            let earlier = self.upstream_by_external_id(entity, external).await.map_err(|read| {
                FieldReportError::OutcomeUnknown(format!(
                    "an earlier create of {} {external:?} may have reached the field-report system, and it cannot be \
                     asked now ({read}); nothing was sent",
                    entity.route
                ))
            })?;
            self.store.settle_create(entity.route, external).await?;
            if let Some(earlier) = earlier {
                return Ok(earlier);
            }
        }
        let error = match client.create(entity.set, body).await {
            Ok(answer) => return Ok(answer),
            Err(error) if error.may_have_applied() => error,
            Err(error) => return Err(error.into()),
        };
        let Some(external) = external else {
            return Err(FieldReportError::OutcomeUnknown(format!(
                "the create of a {} record may or may not have reached the field-report system ({error}); without an \
                 ExternalId it cannot be looked up: a sync shows whether it arrived",
                entity.route
            )));
        };
        match self.upstream_by_external_id(entity, external).await {
            Ok(Some(found)) => Ok(found),
            Ok(None) => Err(not_applied("create", entity, external, &error)),
            Err(read) => {
                self.store.mark_create_unsettled(entity.route, external).await?;
                Err(FieldReportError::OutcomeUnknown(format!(
                    "the create of {} {external:?} may or may not have reached the field-report system ({error}; \
                     looking it up failed too: {read}); sending the same create again is safe: it looks for this \
                     one first",
                    entity.route
                )))
            }
        }
    }

    /// The upstream's record with this `ExternalId`, if it has one.
    pub(super) async fn upstream_by_external_id(
        &self,
        entity: &EntityInfo,
        external_id: &str,
    ) -> Result<Option<Value>, FieldReportError> {
        let filter = format!("ExternalId eq '{}'", external_id.replace('\'', "''"));
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("$filter", &filter).finish();
        let page = self.client()?.page(entity.set, &query, None).await?;
        let Some(first) = page.records.first() else { return Ok(None) };
        Ok(Some(crate::upstream::parse_json(crate::upstream::System::FieldReport, first.get())?))
    }

    /// The mirror takes the upstream's copy of a record: its fields over the stored document
    /// (a record read by key carries no expanded relations; the stored ones are kept).
    pub(super) async fn take_upstream(
        &self,
        entity: &EntityInfo,
        stored: &MirrorRecord,
        upstream: &Value,
    ) -> Result<MirrorRecord, FieldReportError> {
        let mut document = stored.document.clone();
        if let (Value::Object(target), Value::Object(fields)) = (&mut document, upstream) {
            target.extend(
                fields
                    .iter()
                    .filter(|(key, _)| !key.starts_with('@') && !key.starts_with("odata."))
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let record = MirrorRecord { id: stored.id.clone(), version: version_of(upstream), document };
        if !self.store.mirror_replace(entity.route, &record, stored.version, None).await? {
            return Err(FieldReportError::Conflict(format!(
                "{} record {} was changed by another request; read it again and retry",
                entity.route, record.id
            )));
        }
        Ok(record)
    }

    /// Puts a record back as it was after the upstream refused its delete.
    pub(super) async fn restore(&self, entity: &EntityInfo, stored: &MirrorRecord) -> Result<(), FieldReportError> {
        self.store.mirror_forget_tombstone(entity.route, &stored.id).await?;
        self.store.mirror_insert(entity.route, stored, None).await?;
        Ok(())
    }

    async fn load(&self, entity: &EntityInfo, id: &str) -> Result<MirrorRecord, FieldReportError> {
        self.store
            .mirror_get(entity.route, id)
            .await?
            .ok_or_else(|| FieldReportError::NotFound { entity: entity.route.into(), id: id.into() })
    }

    /// A record as stored (never parsed: it is answered as it is).
    pub async fn show(&self, entity: &EntityInfo, id: &str) -> Result<Box<RawValue>, FieldReportError> {
        self.store
            .mirror_document(entity.route, id)
            .await?
            .ok_or_else(|| FieldReportError::NotFound { entity: entity.route.into(), id: id.into() })
    }

    /// Records whose top-level field `attribute` equals `value` (compared as text) or, without
    /// a value, has any non-null value; by Id, at most 500.
    pub async fn find(
        &self,
        entity: &EntityInfo,
        attribute: &str,
        value: Option<&str>,
    ) -> Result<Vec<Value>, FieldReportError> {
        let valid = !attribute.is_empty()
            && attribute.len() <= 64
            && attribute.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(invalid("attribute", "A field name: letters, digits and _, at most 64 characters."));
        }
        let records = match value {
            Some(value) => self.store.mirror_find(entity.route, attribute, value).await?,
            None => self.store.mirror_having(entity.route, attribute).await?,
        };
        Ok(records.into_iter().map(|r| r.document).collect())
    }

    /// The record mapped from another system's record by its `ExternalId`, if there is one.
    pub async fn find_by_external_id(
        &self,
        entity: &EntityInfo,
        external_id: &str,
    ) -> Result<Option<Value>, FieldReportError> {
        Ok(self.store.mirror_by_external_id(entity.route, external_id).await?.map(|r| r.document))
    }

    pub async fn list(
        &self,
        entity: &EntityInfo,
        page: Option<u32>,
        per_page: Option<u32>,
    ) -> Result<Page, FieldReportError> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(50);
        let mut errors = FieldErrors::new();
        if page == 0 {
            errors.insert("page".into(), vec!["page starts at 1.".into()]);
        }
        if per_page == 0 || per_page > MAX_PER_PAGE {
            errors.insert("per_page".into(), vec![format!("per_page must be between 1 and {MAX_PER_PAGE}.")]);
        }
        if !errors.is_empty() {
            return Err(FieldReportError::Invalid(errors));
        }
        let offset = i64::from(page - 1) * i64::from(per_page);
        let (records, total) = self.store.mirror_page(entity.route, offset, i64::from(per_page)).await?;
        Ok(Page { records, page, per_page, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_records_need_a_string_id_and_an_integer_version() {
        assert_eq!(
            FieldReportService::validate_new(&json!({"Id": "12", "Version": 1})).unwrap(),
            ("12".to_string(), 1)
        );
        for (body, field) in [
            (json!({"Version": 1}), "Id"),
            (json!({"Id": "", "Version": 1}), "Id"),
            (json!({"Id": 12, "Version": 1}), "Id"),
            (json!({"Id": "x".repeat(256), "Version": 1}), "Id"),
            (json!({"Id": "1"}), "Version"),
            (json!({"Id": "1", "Version": "2"}), "Version"),
            (json!({"Id": "1", "Version": 1.5}), "Version"),
        ] {
            match FieldReportService::validate_new(&body) {
                Err(FieldReportError::Invalid(errors)) => assert!(errors.contains_key(field), "{body}: {errors:?}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    /// The mirror reads a record's Version whichever way the upstream writes an Edm.Int64.
    #[test]
    fn versions_are_read_as_numbers_or_v3_strings() {
        assert_eq!(super::version_of(&json!({"Version": 3})), 3);
        assert_eq!(super::version_of(&json!({"Version": "3"})), 3);
        assert_eq!(super::version_of(&json!({"Version": "three"})), 0);
        assert_eq!(super::version_of(&json!({"Name": "no version"})), 0);
    }
}
