//! The ERP area: the local mirror of the ERP's models, the webhook inbox and its worker, the
//! pulls behind the helper routes, custom attributes, the ERP → field-report mapping, and the
//! ERP's mail templates for the missing-info mail. Free of HTTP types.

pub mod attributes;
pub mod inbox;
pub mod mapping;
pub mod post;
pub mod pull;
pub mod registration;
pub mod secrets;
pub mod templates;
pub mod webhook;

use std::sync::Arc;

use generated::erp::ModelInfo;
use serde::Serialize;

use crate::fieldreport::service::{FieldReportError, FieldReportService};
use crate::store::{Store, StoreError};
use crate::upstream::UpstreamError;
use crate::upstream::erp::ErpClient;
use webhook::{WebhookGuard, WebhookRefusal};

#[derive(Debug, thiserror::Error)]
pub enum ErpError {
    #[error("unknown ERP model {0:?}; known: {known}", known = generated::erp::model_names().collect::<Vec<_>>().join(", "))]
    UnknownModel(String),
    #[error("{model} record {id} not found")]
    NotFound { model: String, id: String },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// Another pull of the model runs (on any instance sharing the database).
    #[error("{0}")]
    Busy(String),
    #[error(transparent)]
    Webhook(#[from] WebhookRefusal),
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    FieldReport(#[from] FieldReportError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The ERP model called `name` (the ERP's spelling, e.g. `salesOrder`).
pub fn model_named(name: &str) -> Result<&'static ModelInfo, ErpError> {
    generated::erp::model(name).ok_or_else(|| ErpError::UnknownModel(name.to_string()))
}

/// One record a bulk operation could not handle; the operation goes on without it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecordError {
    pub model: String,
    /// The record's id, when the failure concerns one record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub message: String,
}

impl RecordError {
    pub fn new(model: &str, id: Option<&str>, message: impl Into<String>) -> RecordError {
        RecordError { model: model.to_string(), id: id.map(str::to_string), message: message.into() }
    }
}

/// The ERP area's service, cheap to clone.
#[derive(Clone)]
pub struct ErpService {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    client: Result<ErpClient, UpstreamError>,
    fieldreport: FieldReportService,
    guard: WebhookGuard,
    /// Wakes the inbox worker when a call was stored.
    wake: Arc<tokio::sync::Notify>,
    /// Names this process as a lease owner.
    instance: String,
    /// How far before its cursor an incremental pull starts (`ERP_PULL_OVERLAP_SECONDS`).
    pull_overlap: std::time::Duration,
}

impl ErpService {
    pub fn new(
        store: Store,
        client: Result<ErpClient, UpstreamError>,
        fieldreport: FieldReportService,
        guard: WebhookGuard,
        pull_overlap: std::time::Duration,
    ) -> ErpService {
        let instance = format!("erp-{}", uuid::Uuid::new_v4().simple());
        let wake = Arc::default();
        ErpService { inner: Arc::new(Inner { store, client, fieldreport, guard, wake, instance, pull_overlap }) }
    }

    fn pull_overlap(&self) -> std::time::Duration {
        self.inner.pull_overlap
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The same service over another field-report handle (a job's cancellable one, whose
    /// cancel also ends this service's pulls at their next page).
    pub fn with_fieldreport(&self, fieldreport: FieldReportService) -> ErpService {
        let inner = &self.inner;
        ErpService {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                client: inner.client.clone(),
                fieldreport,
                guard: inner.guard.clone(),
                wake: Arc::default(),
                // An owner of its own: a pull of this handle and one of the instance's never
                // take each other's lease for their own.
                instance: format!("erp-{}", uuid::Uuid::new_v4().simple()),
                pull_overlap: inner.pull_overlap,
            }),
        }
    }

    pub fn client(&self) -> Result<&ErpClient, ErpError> {
        self.inner.client.as_ref().map_err(|e| ErpError::Upstream(e.clone()))
    }

    pub(crate) fn fieldreport(&self) -> &FieldReportService {
        &self.inner.fieldreport
    }

    pub fn guard(&self) -> &WebhookGuard {
        &self.inner.guard
    }

    fn instance(&self) -> &str {
        &self.inner.instance
    }
}
