//! One instance's domain services, built from its configuration in one place: `serve` puts the
//! HTTP API in front of them (`crate::server`), and the CLI's commands use them directly
//! (`crate::cli`). An upstream that is not configured is no reason not to assemble (its work
//! fails naming the missing setting); one that is misconfigured (an unreadable certificate) is.

use std::sync::Arc;

use secrecy::ExposeSecret;

use crate::api;
use crate::auth::{AuthError, Authenticator};
use crate::config::Config;
use crate::erp::ErpService;
use crate::erp::templates::ErpTemplates;
use crate::erp::webhook::WebhookGuard;
use crate::fieldreport::service::FieldReportService;
use crate::file_storage::Storage;
use crate::jobs::JobsService;
use crate::leasing::missing_info::MissingInfoMail;
use crate::leasing::service::LeasingService;
use crate::leasing::watch::Watcher;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::metrics::operations::OperationMatcher;
use crate::store::{Store, StoreError};
use crate::upstream::UpstreamError;
use crate::upstream::erp::ErpClient;
use crate::upstream::fieldreport::FieldReportClient;
use crate::upstream::leasing::LeasingClient;

#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    // The causes are in the messages and not `source`s: the command line prints an error with
    // its sources, which would say them twice.
    #[error("the database of DATABASE_URL: {0}")]
    Store(StoreError),
    #[error("authentication: {0}")]
    Auth(AuthError),
    /// A setting that names something unusable (a certificate, a storage or mail URL).
    #[error("{0}")]
    Unsupported(String),
}

impl From<StoreError> for AssemblyError {
    fn from(error: StoreError) -> Self {
        AssemblyError::Store(error)
    }
}

impl From<AuthError> for AssemblyError {
    fn from(error: AuthError) -> Self {
        AssemblyError::Auth(error)
    }
}

/// The services of one instance.
pub struct Services {
    pub store: Store,
    pub auth: Authenticator,
    /// The service's OpenAPI document, as served.
    pub openapi: bytes::Bytes,
    pub metrics: Arc<Metrics>,
    pub fieldreport: FieldReportService,
    pub erp: ErpService,
    pub leasing: LeasingService,
    pub jobs: JobsService,
}

impl Services {
    /// Opens the database (migrating it) and builds every service over it.
    pub async fn assemble(config: &Config) -> Result<Services, AssemblyError> {
        // Storage that cannot be used stops the start (building the S3 client sends no request).
        let storage =
            Storage::open(&config.storage, &config.s3).map_err(|e| AssemblyError::Unsupported(e.to_string()))?;
        let store = Store::open_configured(&config.store).await?;
        let auth = Authenticator::new(store.clone(), config.auth.clone())?;
        auth.normalize_stored_emails().await?;
        let openapi = api::support::openapi::document();
        let metrics = metrics(&openapi, &config.front.docs_path);
        let fieldreport = FieldReportService::new(
            store.clone(),
            configured(FieldReportClient::from_config(&config.fieldreport))?.map(|c| c.with_metrics(metrics.clone())),
        )
        .with_sync_overlap(config.fieldreport.sync_overlap)
        .with_metrics(metrics.clone());
        let erp_client =
            configured(ErpClient::from_config(&config.erp))?.map(|client| client.with_metrics(metrics.clone()));
        let erp = ErpService::new(
            store.clone(),
            erp_client.clone(),
            fieldreport.clone(),
            WebhookGuard { allowlist: config.erp.webhook_allowlist.clone(), secret: config.erp.webhook_secret.clone() },
            config.erp.pull_overlap,
        );
        let watcher = Watcher::new(store.clone(), config.watch.clone(), metrics.clone());
        let leasing = leasing_service(config, storage, erp_client, &metrics, watcher, store.clone())?;
        let jobs = JobsService::new(store.clone(), fieldreport.clone(), erp.clone(), metrics.clone())
            .with_active_per_user(config.jobs.active_per_user)
            .with_per_minute_per_user(config.jobs.per_minute_per_user);
        Ok(Services { store, auth, openapi: bytes::Bytes::from(openapi), metrics, fieldreport, erp, leasing, jobs })
    }
}

/// An upstream client: not configured is fine (kept as the error), misconfigured is not.
fn configured<C>(client: Result<C, UpstreamError>) -> Result<Result<C, UpstreamError>, AssemblyError> {
    match client {
        Err(error @ UpstreamError::Client { .. }) => Err(AssemblyError::Unsupported(error.to_string())),
        other => Ok(other),
    }
}

/// The leasing area's service, with the missing-info mail's templates from the ERP.
fn leasing_service(
    config: &Config,
    storage: Storage,
    erp: Result<ErpClient, UpstreamError>,
    metrics: &Arc<Metrics>,
    watcher: Watcher,
    store: Store,
) -> Result<LeasingService, AssemblyError> {
    let client =
        configured(LeasingClient::from_config(&config.leasing))?.map(|client| client.with_metrics(metrics.clone()));
    let mailer = Mailer::new(
        config.mail.url.as_ref().map(|u| u.expose_secret()),
        config.mail.from.clone(),
        storage.clone(),
        Arc::new(ErpTemplates::new(erp)),
    )
    .map_err(|e| AssemblyError::Unsupported(e.to_string()))?;
    let erp = &config.erp;
    let missing_info =
        MissingInfoMail::new(mailer, erp.missing_info_template.clone(), store, erp.missing_info_mail_interval);
    Ok(LeasingService::new(client, storage, missing_info, watcher))
}

/// The metrics of this service; requests are named by the operations of the served document.
fn metrics(openapi: &str, docs_path: &str) -> Arc<Metrics> {
    let document: serde_json::Value = serde_json::from_str(openapi).expect("the served document is JSON");
    let docs_route = format!("/{docs_path}/openapi.json");
    let matcher = OperationMatcher::new(&document, &[("get", &docs_route, "openapi_document")]);
    Arc::new(Metrics::new(matcher))
}
