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

use serde_json::Value;

use crate::store::{Store, StoreError};
use crate::upstream::UpstreamError;
use crate::upstream::fieldreport::FieldReportClient;
use crate::vocabulary::field_errors::FieldErrors;
use crate::vocabulary::json_integer::json_integer;

// Fields the upstream sets itself, never sent back on update: `system_fields` of
// `spec/upstream/fieldreport/mirror.toml`.
use generated::fieldreport::SYSTEM_FIELDS;

mod reads;
pub(in crate::fieldreport) mod upstream;
mod writes;
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
    /// that it was not applied: nothing changed; the write can simply be sent again, after
    /// `retry_after` when the upstream asked for a wait (a 503 in maintenance).
    #[error("{message}")]
    NotApplied { message: String, timed_out: bool, retry_after: Option<std::time::Duration> },
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
        retry_after: error.retry_after(),
    }
}

/// Whether a field of an upstream's record only annotates the answer: v4 `@odata.…`, v3
/// `odata.…`, v2 verbose `__metadata`, or a relation v2 did not expand (`{"__deferred": …}`,
/// a link in place of the related records, which the mirror keeps).
pub(in crate::fieldreport) fn is_annotation(key: &str, value: &Value) -> bool {
    let deferred = value.as_object().is_some_and(|fields| fields.len() == 1 && fields.contains_key("__deferred"));
    key.starts_with('@') || key.starts_with("odata.") || key == "__metadata" || deferred
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

/// A record's `Version`, a JSON integer or its text as OData v3 writes every Edm.Int64; 0
/// when it has none.
pub(super) fn version_of(document: &Value) -> i64 {
    document.get("Version").and_then(json_integer).unwrap_or(0)
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
