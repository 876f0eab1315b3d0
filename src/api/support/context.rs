//! State shared by every handler.

use std::sync::Arc;

use crate::api::docs_page::DocsPage;
use crate::auth::Authenticator;
use crate::fieldreport::service::FieldReportService;
use crate::leasing::calculation::Factors;
use crate::leasing::service::LeasingService;
use crate::metrics::Metrics;
use crate::store::Store;

pub struct ApiContext {
    pub store: Store,
    pub auth: Authenticator,
    /// The OpenAPI document as served, built once at start-up and shared by every answer
    /// that sends it (about 1 MB: a copy per answer held a megabyte per client that did not
    /// read it, bench/HISTORY.md 2026-11-30).
    pub openapi: bytes::Bytes,
    /// The API reference page over that document.
    pub docs_page: DocsPage,
    /// Factors of the inverse lease calculation.
    pub leasing_factors: Factors,
    pub leasing: LeasingService,
    pub fieldreport: FieldReportService,
    pub erp: crate::erp::ErpService,
    pub jobs: crate::jobs::JobsService,
    pub metrics: Arc<Metrics>,
    /// When set, `GET /metrics` needs `Authorization: Bearer <METRICS_TOKEN>`.
    pub metrics_token: Option<secrecy::SecretString>,
    /// How many new `Idempotency-Key`s a user may store within a minute.
    pub new_keys_per_minute: crate::api::support::idempotency::NewKeysPerMinute,
    /// Waits and flows held open: their cap per token, and what stops them early.
    pub held_calls: std::sync::Arc<crate::api::support::held_calls::HeldCalls>,
    /// Exports streaming: their cap per user (each holds pages of a set until its client
    /// reads them).
    pub exports: std::sync::Arc<crate::api::support::per_user::PerUser>,
}
