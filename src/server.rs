//! A running service: the domain services ([`crate::assembly`]), dropshot's router and
//! handlers (in process, without a socket), and the front on the public address, the only one
//! the service listens on. `serve` and the tests both start it through [`start`].

use std::net::SocketAddr;
use std::sync::Arc;

use dropshot::{ConfigDropshot, HandlerTaskMode, ServerBuilder};
use slog::{Drain, Logger, o};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::{self, ApiContext};
use crate::assembly::{AssemblyError, Services};
use crate::background::Background;
use crate::background::janitor::Janitor;
use crate::config::Config;
use crate::fieldreport::service::FieldReportService;
use crate::front::docs_path::DocsPaths;
use crate::front::tls::{TlsSetupError, TlsTerminator};
use crate::front::{self, Front};
use crate::leasing::calculation::Factors;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Services(#[from] AssemblyError),
    // The cause is in the message and not a `source`, which the command line would print again.
    #[error("cannot listen on {address}: {error}")]
    Bind { address: SocketAddr, error: std::io::Error },
    #[error("internal server: {0}")]
    Dropshot(String),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
}

/// A started service; [`RunningService::shutdown`] stops it gracefully.
pub struct RunningService {
    /// The public address (the front).
    pub address: SocketAddr,
    /// Whether the front terminates TLS at `address`.
    pub tls: bool,
    pub store: Store,
    stop_front: Option<oneshot::Sender<()>>,
    front_task: JoinHandle<()>,
    /// Every background task: jobs, the schedule, the leasing watcher, the ERP inbox, the
    /// janitor and the last-use writer.
    background: Background,
    /// Postgres: hears of token and user changes for the token cache.
    change_listener: Option<JoinHandle<()>>,
    fieldreport: FieldReportService,
    /// Tells held calls (waits, flows) that the service is shutting down.
    shutting_down: tokio::sync::watch::Sender<bool>,
}

impl RunningService {
    /// The service's root URL, `http://` or `https://` as it listens.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// Stops accepting connections, lets in-flight requests finish, then closes the database.
    pub async fn shutdown(mut self) {
        // Syncs, pulls and pushes in flight end after their current page or record.
        self.fieldreport.request_stop();
        // Waits answer 503 `shutting_down` and flows are recorded as interrupted at once, so
        // that the drain below ends within its time whatever is held.
        self.shutting_down.send_replace(true);
        if let Some(stop) = self.stop_front.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.front_task).await;
        // Jobs in flight end at their next page (the stop above) and go back to the queue; the
        // inbox finishes its call in flight; the last token uses are written.
        self.background.stop().await;
        if let Some(listener) = &self.change_listener {
            listener.abort();
        }
        self.store.close().await;
    }
}

pub async fn start(config: &Config, log: &Logger) -> Result<RunningService, StartError> {
    // Unusable certificate files stop the start before anything else happens.
    let tls = match &config.front.tls {
        Some(files) => Some(Arc::new(TlsTerminator::from_pem_files(&files.cert, &files.key)?)),
        None => None,
    };
    let Services { store, auth, openapi, metrics, fieldreport, erp, leasing, jobs } =
        Services::assemble(config).await?;
    let mut background = Background::new(metrics.clone());
    let (inbox_worker, inbox_pruner) = erp.inbox_tasks(&log.new(o!("component" => "erp-inbox")));
    background.start(inbox_worker);
    background.start(inbox_pruner);
    background.start(jobs.runner(log.new(o!("component" => "jobs"))));
    if let Some(scheduler) = jobs.scheduler(config.jobs.schedule.clone(), log.new(o!("component" => "schedule"))) {
        background.start(scheduler);
    }
    let (deliverer, poller) = leasing.watch_tasks(&log.new(o!("component" => "leasing-watch")));
    background.start(deliverer);
    if let Some(poller) = poller {
        background.start(poller);
    }
    background.start(Janitor {
        store: store.clone(),
        retention: config.store.retention.clone(),
        metrics: metrics.clone(),
        log: log.new(o!("component" => "janitor")),
    });
    background.start(auth.last_use_writer(log.new(o!("component" => "last-used"))));
    let change_listener = store.listen_for_changes(&config.store.database_url);
    let context_fieldreport = fieldreport.clone();
    let (shutting_down, shutdown_signal) = tokio::sync::watch::channel(false);
    let departures = Arc::new(crate::stop::Departures::default());
    let held_calls = api::support::held_calls::HeldCalls::new(
        config.api.max_held_calls_per_user,
        departures.clone(),
        shutdown_signal,
    );
    let context = ApiContext {
        store: store.clone(),
        auth: auth.clone(),
        openapi,
        docs_page: api::docs_page::DocsPage::new(&config.front.docs_path),
        leasing_factors: Factors::new(config.leasing.factors.clone()),
        leasing,
        fieldreport,
        erp,
        jobs,
        metrics: metrics.clone(),
        metrics_token: config.api.metrics_token.clone(),
        new_keys_per_minute: api::support::idempotency::NewKeysPerMinute(
            config.api.idempotency_keys_per_minute_per_user,
        ),
        held_calls,
        exports: api::support::per_user::PerUser::new(config.api.max_exports_per_user),
    };

    let listener = TcpListener::bind(config.front.bind_address)
        .await
        .map_err(|error| StartError::Bind { address: config.front.bind_address, error })?;
    let address =
        listener.local_addr().map_err(|error| StartError::Bind { address: config.front.bind_address, error })?;
    let dropshot_config = ConfigDropshot {
        bind_address: address,
        default_request_body_max_bytes: config.front.max_body_bytes,
        // Handlers run in the front's task; one whose client leaves runs on (`RunsToEnd`).
        default_handler_task_mode: HandlerTaskMode::CancelOnDisconnect,
        ..Default::default()
    };
    // dropshot's own per-request lines would repeat the front's and carry query strings;
    // only its errors are kept.
    let dropshot_log =
        Logger::root(slog::LevelFilter::new(log.clone(), slog::Level::Error).fuse(), o!("component" => "dropshot"));
    let handlers = ServerBuilder::new(api::description(), context, dropshot_log)
        .config(dropshot_config)
        .build_in_process()
        .map_err(|e| StartError::Dropshot(e.to_string()))?;
    let front = Arc::new(Front {
        handlers: Arc::new(handlers),
        docs_paths: DocsPaths::new(&config.front.docs_path),
        trusted_proxies: config.front.trusted_proxies.clone(),
        max_body_bytes: config.front.max_body_bytes,
        header_read_timeout: config.front.header_read_timeout,
        max_header_bytes: config.front.max_header_bytes,
        body_read_timeout: config.front.body_read_timeout,
        send_timeout: config.front.send_timeout,
        departures,
        connections: front::connections::ConnectionLimits::new(
            config.front.max_connections,
            config.front.max_connections_per_address,
            metrics.clone(),
        ),
        log: log.new(o!("component" => "front")),
        metrics,
        remainders: Default::default(),
    });
    let (stop_front, stopped) = oneshot::channel();
    let tls_enabled = tls.is_some();
    let front_task = tokio::spawn(front::serve(front, listener, tls, stopped));
    Ok(RunningService {
        address,
        tls: tls_enabled,
        store,
        stop_front: Some(stop_front),
        front_task,
        background,
        change_listener,
        fieldreport: context_fieldreport,
        shutting_down,
    })
}
