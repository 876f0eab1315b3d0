//! Assembles a running service: store, dropshot on a loopback port, the front on the public
//! address. `main` and the tests both start it through [`start`].

use std::net::SocketAddr;
use std::sync::Arc;

use dropshot::{ConfigDropshot, HttpServer, ServerBuilder};
use slog::{Drain, Logger, o};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::{self, ApiContext};
use crate::auth::{AuthError, Authenticator};
use crate::config::Config;
use crate::erp::ErpService;
use crate::erp::inbox::InboxWorker;
use crate::erp::templates::ErpTemplates;
use crate::erp::webhook::WebhookGuard;
use crate::fieldreport::service::FieldReportService;
use crate::front::rewrite::RewriteTable;
use crate::front::{self, Front};
use crate::leasing::calculation::Factors;
use crate::leasing::service::LeasingService;
use crate::mail::Mailer;
use crate::storage::Storage;
use crate::store::{Store, StoreError};
use crate::upstream::UpstreamError;
use crate::upstream::erp::ErpClient;
use crate::upstream::fieldreport::FieldReportClient;
use crate::upstream::leasing::LeasingClient;
use secrecy::ExposeSecret;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("authentication: {0}")]
    Auth(#[from] AuthError),
    #[error("cannot listen on {address}: {source}")]
    Bind { address: SocketAddr, source: std::io::Error },
    #[error("internal server: {0}")]
    Dropshot(String),
    #[error("{0}")]
    Unsupported(String),
}

/// A started service; [`RunningService::shutdown`] stops it gracefully.
pub struct RunningService {
    /// The public address (the front).
    pub address: SocketAddr,
    /// dropshot's own loopback address, behind the front.
    pub backend_address: SocketAddr,
    pub store: Store,
    stop_front: Option<oneshot::Sender<()>>,
    front_task: JoinHandle<()>,
    dropshot: HttpServer<ApiContext>,
    inbox_worker: Option<InboxWorker>,
}

impl RunningService {
    /// Stops accepting connections, lets in-flight requests finish, then closes the database.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop_front.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.front_task).await;
        if let Some(worker) = self.inbox_worker.take() {
            worker.stop().await;
        }
        let _ = self.dropshot.close().await;
        self.store.close().await;
    }
}

/// The leasing area's service. A provider that is not configured is no reason not to start
/// (its routes answer naming the missing setting); an unreadable certificate is.
fn leasing_service(config: &Config, erp: Result<ErpClient, UpstreamError>) -> Result<LeasingService, StartError> {
    let client = match LeasingClient::from_config(&config.leasing) {
        Err(error @ UpstreamError::Client { .. }) => return Err(StartError::Unsupported(error.to_string())),
        other => other,
    };
    let storage = Storage::from_url(&config.storage_url).map_err(|e| StartError::Unsupported(e.to_string()))?;
    let mailer = Mailer::new(
        config.mail_url.as_ref().map(|u| u.expose_secret()),
        config.mail_from.clone(),
        storage.clone(),
        Arc::new(ErpTemplates::new(erp)),
    )
    .map_err(|e| StartError::Unsupported(e.to_string()))?;
    Ok(LeasingService::new(client, storage, mailer, config.erp.missing_info_template.clone()))
}

/// The ERP client; not configured is fine, misconfigured is not.
fn erp_client(config: &Config) -> Result<Result<ErpClient, UpstreamError>, StartError> {
    match ErpClient::from_config(&config.erp) {
        Err(error @ UpstreamError::Client { .. }) => Err(StartError::Unsupported(error.to_string())),
        other => Ok(other),
    }
}

/// The field-report client; not configured is fine, misconfigured is not.
fn fieldreport_client(config: &Config) -> Result<Result<FieldReportClient, UpstreamError>, StartError> {
    match FieldReportClient::from_config(&config.fieldreport) {
        Err(error @ UpstreamError::Client { .. }) => Err(StartError::Unsupported(error.to_string())),
        other => Ok(other),
    }
}

pub async fn start(config: &Config, log: &Logger) -> Result<RunningService, StartError> {
    if config.tls_cert.is_some() {
        return Err(StartError::Unsupported(
            "TLS_CERT: terminating TLS in the service is not available yet; run behind a TLS proxy".into(),
        ));
    }
    let store = Store::open(&config.database_url).await?;
    let auth = Authenticator::new(store.clone(), config.token_ttl)?;
    let fieldreport = FieldReportService::new(store.clone(), fieldreport_client(config)?);
    let erp_client = erp_client(config)?;
    let erp = ErpService::new(
        store.clone(),
        erp_client.clone(),
        fieldreport.clone(),
        WebhookGuard { allowlist: config.erp.webhook_allowlist.clone(), secret: config.erp.webhook_secret.clone() },
    );
    let inbox_worker = erp.start_worker(log.new(o!("component" => "erp-inbox")));
    let context = ApiContext {
        store: store.clone(),
        auth,
        openapi: Arc::new(api::openapi::document()),
        leasing_factors: Factors::new(config.leasing.factors.clone()),
        leasing: leasing_service(config, erp_client)?,
        fieldreport,
        erp,
    };

    let dropshot_config = ConfigDropshot {
        bind_address: "127.0.0.1:0".parse().expect("a valid address"),
        default_request_body_max_bytes: config.max_body_bytes,
        ..Default::default()
    };
    // dropshot's own per-request lines would repeat the front's and carry query strings;
    // only its errors are kept.
    let dropshot_log =
        Logger::root(slog::LevelFilter::new(log.clone(), slog::Level::Error).fuse(), o!("component" => "dropshot"));
    let dropshot = ServerBuilder::new(api::description(), context, dropshot_log)
        .config(dropshot_config)
        .start()
        .map_err(|e| StartError::Dropshot(e.to_string()))?;
    let backend_address = dropshot.local_addr();

    let listener = TcpListener::bind(config.bind_address)
        .await
        .map_err(|source| StartError::Bind { address: config.bind_address, source })?;
    let address = listener.local_addr().map_err(|source| StartError::Bind { address: config.bind_address, source })?;
    let front = Arc::new(Front {
        backend: backend_address,
        rewrites: RewriteTable::with_docs_path(&config.docs_path),
        trusted_proxies: config.trusted_proxies.clone(),
        max_body_bytes: config.max_body_bytes,
        header_read_timeout: config.header_read_timeout,
        log: log.new(o!("component" => "front")),
    });
    let (stop_front, stopped) = oneshot::channel();
    let front_task = tokio::spawn(front::serve(front, listener, stopped));
    Ok(RunningService {
        address,
        backend_address,
        store,
        stop_front: Some(stop_front),
        front_task,
        dropshot,
        inbox_worker: Some(inbox_worker),
    })
}
