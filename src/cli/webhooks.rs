//! `erp webhooks register|list|unregister`: the service's webhook registrations at the ERP,
//! for operators wiring a real tenant to the service; `serve --sandbox` registers at the
//! simulator through [`register`] too, so both take the same path.

use crate::erp::mapping::MAPPINGS;
use crate::erp::registration::{self, Registered, WebhookTarget};
use crate::upstream::config::ErpConfig;
use crate::upstream::erp::ErpClient;

fn client(config: &ErpConfig) -> anyhow::Result<ErpClient> {
    ErpClient::from_config(config).map_err(anyhow::Error::new)
}

fn target(config: &ErpConfig, url: &str) -> anyhow::Result<WebhookTarget> {
    WebhookTarget::new(url, config.webhook_secret.as_ref()).map_err(anyhow::Error::new)
}

/// The mapped models as a phrase: `customer, contact and article`.
pub(super) fn mapped_models() -> String {
    let names: Vec<&str> = MAPPINGS.iter().map(|m| m.model).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Registers the webhook route under `url` at the ERP for every mapped model.
pub(super) async fn register(config: &ErpConfig, url: &str) -> anyhow::Result<Vec<Registered>> {
    let (client, target) = (client(config)?, target(config, url)?);
    registration::register(&client, &target)
        .await
        .map_err(|e| anyhow::Error::new(e).context("registering the ERP webhooks"))
}

/// `erp webhooks register --url URL`: one line per model, then the URL (secret hidden).
pub(super) async fn register_command(config: &ErpConfig, url: &str) -> anyhow::Result<()> {
    // A missing setting or a bad URL is the one line, without notes before it.
    let (client, target) = (client(config)?, target(config, url)?);
    if config.webhook_secret.is_none() {
        eprintln!("note: ERP_WEBHOOK_SECRET is not set: the registered URL carries no secret");
    }
    if config.webhook_allowlist.is_empty() {
        eprintln!(
            "note: ERP_WEBHOOK_ALLOWLIST is empty: the service refuses every webhook call until it lists the ERP's addresses"
        );
    }
    let registered = registration::register(&client, &target)
        .await
        .map_err(|e| anyhow::Error::new(e).context("registering the ERP webhooks"))?;
    for registered in registered {
        let removed = match registered.duplicates_removed {
            0 => String::new(),
            n => format!(", {n} further registration(s) of this URL removed"),
        };
        println!("{}: {} (webhook {}){removed}", registered.model, registered.change.as_str(), registered.id);
    }
    println!("ERP webhooks for {} call {}", mapped_models(), target.shown());
    Ok(())
}

/// `erp webhooks list`: every webhook at the ERP, one line each, secrets hidden.
pub(super) async fn list_command(config: &ErpConfig) -> anyhow::Result<()> {
    let hooks = registration::list(&client(config)?)
        .await
        .map_err(|e| anyhow::Error::new(e).context("listing the ERP webhooks"))?;
    if hooks.is_empty() {
        println!("no webhooks registered at the ERP");
    }
    for hook in hooks {
        let deactivated = hook.deactivated.map(|error| format!("  deactivated: {error}")).unwrap_or_default();
        println!(
            "webhook {}: {} on {} {} {}{deactivated}",
            hook.id,
            hook.model,
            if hook.events.is_empty() { "-".to_string() } else { hook.events.join(",") },
            hook.method,
            hook.url
        );
    }
    Ok(())
}

/// `erp webhooks unregister --url URL`: removes the registrations of that URL only.
pub(super) async fn unregister_command(config: &ErpConfig, url: &str) -> anyhow::Result<()> {
    let (client, target) = (client(config)?, target(config, url)?);
    let removed = registration::unregister(&client, &target)
        .await
        .map_err(|e| anyhow::Error::new(e).context("unregistering the ERP webhooks"))?;
    for hook in &removed {
        println!("removed webhook {}: {}", hook.id, hook.model);
    }
    println!("{} registration(s) of {} removed", removed.len(), target.shown());
    Ok(())
}
