//! `serve`: the HTTP service (with `--sandbox`, on the upstream simulators), until a signal.

use crate::config::Config;
use crate::{sandbox, server, telemetry};

use super::process::raise_open_files_limit;
use super::signals::shutdown_signal;

pub(super) async fn serve(mut config: Config, sandbox: bool) -> anyhow::Result<()> {
    let (log, _log_guard) = telemetry::init(config.log_format);
    slog::info!(log, "starting"; "database" => config.store.database_url.redacted(), "bind" => %config.front.bind_address);
    match raise_open_files_limit() {
        Ok(open_files) => slog::info!(log, "open files limit"; "open_files" => open_files,
            "max_connections" => config.front.max_connections, "max_connections_per_address" => config.front.max_connections_per_address),
        Err(error) => slog::warn!(log, "the open files limit could not be raised"; "error" => %error),
    }
    if sandbox {
        for overridden in sandbox_overrides(&config) {
            println!("sandbox: warning: overrides {overridden}");
            slog::warn!(log, "sandbox overrides a setting"; "setting" => overridden);
        }
        let sandboxes = sandbox::start(None, &log).await?;
        config.leasing.base_url = Some(sandboxes.leasing_base_url().parse()?);
        config.fieldreport.base_url = Some(sandboxes.fieldreport_base_url().parse()?);
        config.fieldreport.username = Some(sandbox::fieldreport::USERNAME.to_string());
        config.fieldreport.password = Some(sandbox::fieldreport::PASSWORD.to_string().into());
        config.erp.base_url = Some(sandboxes.erp_base_url().parse()?);
        config.erp.api_key = Some(sandbox::erp::API_KEY.to_string().into());
        println!("sandbox: leasing provider simulator at {}", sandboxes.leasing_base_url());
        println!("sandbox: field-report simulator at {}", sandboxes.fieldreport_base_url());
        println!("sandbox: ERP simulator at {}", sandboxes.erp_base_url());
        // Subscribers in a sandbox are local receivers.
        config.watch.allow_private = true;
        // The simulator calls the webhook from loopback; a secret is made up unless configured.
        if config.erp.webhook_allowlist.is_empty() {
            config.erp.webhook_allowlist = vec!["127.0.0.0/8".parse()?, "::1/128".parse()?];
        }
        if config.erp.webhook_secret.is_none() {
            config.erp.webhook_secret = Some(uuid::Uuid::new_v4().simple().to_string().into());
        }
    }
    let stop = shutdown_signal();
    let service = server::start(&config, &log).await?;
    if sandbox {
        // The simulator is wired like a real tenant: `erp webhooks register` does the same.
        super::webhooks::register(&config.erp, &service.url()).await?;
        println!("sandbox: ERP webhooks for {} registered", super::webhooks::mapped_models());
    }
    slog::info!(log, "listening"; "address" => service.url(), "docs" => format!("{}/{}", service.url(), config.front.docs_path));
    println!("integration-service listening on {}", service.url());
    println!("API reference: {}/{}", service.url(), config.front.docs_path);
    stop.await;
    slog::info!(log, "shutting down: finishing in-flight requests");
    service.shutdown().await;
    slog::info!(log, "stopped");
    Ok(())
}

/// What `--sandbox` replaces of the configuration, each with what it was (secrets unnamed):
/// the upstream settings that were set, and `CALLBACK_ALLOW_PRIVATE` when it was false.
fn sandbox_overrides(config: &Config) -> Vec<String> {
    let mut overridden = Vec::new();
    let mut set = |name: &str, was_set: bool, with: &str| {
        if was_set {
            overridden.push(format!("{name} (set) with {with}"));
        }
    };
    set("LEASING_BASE_URL", config.leasing.base_url.is_some(), "the leasing simulator");
    set("FIELDREPORT_BASE_URL", config.fieldreport.base_url.is_some(), "the field-report simulator");
    set("FIELDREPORT_USERNAME", config.fieldreport.username.is_some(), "the simulator's user");
    set("FIELDREPORT_PASSWORD", config.fieldreport.password.is_some(), "the simulator's password");
    set("ERP_BASE_URL", config.erp.base_url.is_some(), "the ERP simulator");
    set("ERP_API_KEY", config.erp.api_key.is_some(), "the simulator's key");
    if !config.watch.allow_private {
        overridden.push(
            "CALLBACK_ALLOW_PRIVATE=false with true: subscriptions may reach loopback and private addresses".into(),
        );
    }
    overridden
}
