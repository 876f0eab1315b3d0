//! The service's webhook registrations at the ERP: for every model the mapping handles, one
//! `webhook` record at the ERP calling the service's webhook route, made through the ERP's own
//! webhook API (`POST /webhook`, `GET /webhook`, `PUT`/`DELETE /webhook/id/{id}`).
//!
//! The registered URL is the service's address with the webhook route's path and, when
//! `ERP_WEBHOOK_SECRET` is set, the secret as `?secret=` (the ERP's calls carry no headers of
//! ours; the route reads the secret there). A registration is the service's own when its URL is
//! the same apart from the secret, so registering again keeps it (or brings its secret and
//! events up to date) instead of adding another, and unregistering removes only those. The
//! secret never leaves this module in text meant for people: every URL shown is [`redacted`].
//!
//! `erp webhooks register|list|unregister` and `serve --sandbox` use this one module.

use generated::erp::ErpModel;
use generated::erp::types::Webhook;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use url::Url;

use super::mapping::MAPPINGS;
use super::pull::id_order;
use crate::upstream::UpstreamError;
use crate::upstream::erp::{ErpClient, MAX_PAGE_SIZE};

/// The path of the service's webhook route.
pub const WEBHOOK_PATH: &str = "/api/v1/erp/webhooks";

/// The query parameter the webhook route reads the secret from.
const SECRET_PARAMETER: &str = "secret";

fn webhook_model() -> &'static str {
    <Webhook as ErpModel>::INFO.name
}

/// Why registering, listing or unregistering did not complete; one line, without the secret.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("--url {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{0}")]
    Erp(String),
}

/// The URL the ERP is to call: the service's webhook route, with the secret when one is set.
pub struct WebhookTarget {
    url: Url,
    secret: Option<SecretString>,
}

impl WebhookTarget {
    /// From the service's public address (`https://svc.example.com`, or the route's full URL
    /// `https://svc.example.com/api/v1/erp/webhooks`) and the configured webhook secret.
    pub fn new(address: &str, secret: Option<&SecretString>) -> Result<WebhookTarget, RegistrationError> {
        let bad = |reason: &str| RegistrationError::BadUrl { url: redacted(address), reason: reason.to_string() };
        let mut url = Url::parse(address.trim()).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(bad("an http or https URL with a host is required"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("give the address without a query: the secret is added from ERP_WEBHOOK_SECRET"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("user information in the URL is not supported"));
        }
        let path = url.path().trim_end_matches('/').to_string();
        if !path.ends_with(WEBHOOK_PATH) {
            url.set_path(&format!("{path}{WEBHOOK_PATH}"));
        }
        if let Some(secret) = secret {
            url.query_pairs_mut().append_pair(SECRET_PARAMETER, secret.expose_secret());
        }
        Ok(WebhookTarget { url, secret: secret.cloned() })
    }

    /// The URL as registered, secret included: for the ERP only.
    fn registered(&self) -> &str {
        self.url.as_str()
    }

    /// The URL as shown to people.
    pub fn shown(&self) -> String {
        redacted(self.url.as_str())
    }

    /// Whether a registered URL is this service's: the same apart from the secret.
    fn is_ours(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|url| without_secret(&url) == without_secret(&self.url))
    }

    /// An ERP error with the secret taken out, should the ERP have echoed the URL or the
    /// secret (a secret too short to be told from other text is taken out only as part of
    /// the URL).
    fn erp_error(&self, error: UpstreamError) -> RegistrationError {
        let mut text = error.to_string().replace(self.registered(), &self.shown());
        if let Some(secret) = self.secret.as_ref().map(|s| s.expose_secret()).filter(|s| s.len() >= 8) {
            text = text.replace(secret, super::secrets::MASK);
        }
        RegistrationError::Erp(text)
    }
}

/// A URL without its `secret` parameter and trailing slash, for comparing registrations.
fn without_secret(url: &Url) -> String {
    let mut plain = url.clone();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(name, _)| name != SECRET_PARAMETER)
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect();
    plain.set_query(None);
    if !kept.is_empty() {
        plain.query_pairs_mut().extend_pairs(kept);
    }
    plain.set_fragment(None);
    let path = plain.path().trim_end_matches('/').to_string();
    plain.set_path(&path);
    plain.to_string()
}

/// `url` with its secrets masked (`secret=***`, as mirrored records are shown); text that is no
/// URL is returned as is.
pub fn redacted(url: &str) -> String {
    super::secrets::masked_url(url.trim()).unwrap_or_else(|| url.to_string())
}

/// One webhook registered at the ERP, as shown by `erp webhooks list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub id: String,
    pub model: String,
    /// `create`, `update`, `delete`: the events it is called for.
    pub events: Vec<&'static str>,
    pub method: String,
    /// The URL, [`redacted`].
    pub url: String,
    /// Set while the ERP has deactivated the webhook after failures: its last error.
    pub deactivated: Option<String>,
}

/// What registering did for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A registration of ours was there as wanted.
    Kept,
    /// A registration of ours was there with another secret, events or method, and was
    /// brought up to date.
    Updated,
    /// None was there; one was created.
    Created,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Kept => "kept",
            Change::Updated => "updated",
            Change::Created => "created",
        }
    }
}

/// What registering did for one model: the registration's id, the change, and how many
/// further registrations of ours (duplicates, deactivated ones) were removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub model: &'static str,
    pub id: String,
    pub change: Change,
    pub duplicates_removed: usize,
}

/// Every webhook registered at the ERP, in id order. Each page is asked by key, after the
/// greatest id read (`id-gt`), not by number: a webhook created or removed while the pages are
/// read would shift a page number's records, and one of them would be read twice or never.
async fn all_webhooks(client: &ErpClient) -> Result<Vec<Webhook>, UpstreamError> {
    let mut hooks: Vec<Webhook> = Vec::new();
    loop {
        let after = hooks.last().and_then(|hook| hook.id.clone());
        let mut query =
            vec![("pageSize".to_string(), MAX_PAGE_SIZE.to_string()), ("sort".to_string(), "id".to_string())];
        query.extend(after.clone().map(|id| ("id-gt".to_string(), id)));
        let records = client.list(webhook_model(), &query).await?;
        // Only an empty page ends the list: an ERP may serve fewer records than `pageSize`.
        if records.is_empty() {
            break;
        }
        let mut page = Vec::with_capacity(records.len());
        for record in records {
            let hook: Webhook = serde_json::from_value(record)
                .map_err(|e| malformed(format!("a webhook record does not match the ERP model: {e}")))?;
            page.push(hook);
        }
        page.sort_by(|a, b| id_order(a.id.as_deref().unwrap_or_default(), b.id.as_deref().unwrap_or_default()));
        // A page that does not start after the last id (an ERP that ignored `id-gt`, or a
        // webhook without an id) could be asked for forever.
        let first = page[0].id.clone().unwrap_or_default();
        if first.is_empty() || after.as_deref().is_some_and(|after| id_order(&first, after).is_le()) {
            return Err(malformed(format!(
                "asked for the webhooks after id {}, the ERP answered webhook {first:?}",
                after.as_deref().unwrap_or("-")
            )));
        }
        hooks.extend(page);
    }
    Ok(hooks)
}

fn malformed(detail: String) -> UpstreamError {
    UpstreamError::Malformed { system: crate::vocabulary::calls::System::Erp, detail }
}

/// The fields of a registration of ours for `model`.
fn wanted(model: &str, target: &WebhookTarget) -> Value {
    json!({
        "entityName": model, "atCreate": true, "atUpdate": true, "atDelete": true,
        "requestMethod": "POST", "url": target.registered(),
    })
}

/// Whether a registration of ours is as wanted (and active).
fn is_current(hook: &Webhook, target: &WebhookTarget) -> bool {
    hook.url.as_deref() == Some(target.registered())
        && hook.at_create == Some(true)
        && hook.at_update == Some(true)
        && hook.at_delete == Some(true)
        && hook.request_method.as_deref().is_some_and(|m| m.eq_ignore_ascii_case("POST"))
        && hook.deactivated_date.is_none()
}

/// Registers `target` for every mapped model: keeps a registration of ours that is as wanted,
/// updates an active one that differs, creates one where none is active, and removes further
/// ones of ours for the same model (duplicates, deactivated ones), so registering twice never
/// doubles the calls.
pub async fn register(client: &ErpClient, target: &WebhookTarget) -> Result<Vec<Registered>, RegistrationError> {
    let hooks = all_webhooks(client).await.map_err(|e| target.erp_error(e))?;
    let mut report = Vec::new();
    for mapping in MAPPINGS {
        let ours: Vec<&Webhook> = hooks
            .iter()
            .filter(|h| h.entity_name.as_deref() == Some(mapping.model))
            .filter(|h| h.url.as_deref().is_some_and(|url| target.is_ours(url)))
            .filter(|h| h.id.is_some())
            .collect();
        // A current one is kept in preference to one that needs an update; a webhook the ERP
        // deactivated after failures is replaced rather than updated.
        let keep = ours
            .iter()
            .position(|h| is_current(h, target))
            .or_else(|| ours.iter().position(|h| h.deactivated_date.is_none()));
        let (id, change) = match keep.map(|i| ours[i]) {
            Some(hook) if is_current(hook, target) => (hook.id.clone().unwrap_or_default(), Change::Kept),
            Some(hook) => {
                let id = hook.id.clone().unwrap_or_default();
                client
                    .update_partial(webhook_model(), &id, &wanted(mapping.model, target))
                    .await
                    .map_err(|e| target.erp_error(e))?;
                (id, Change::Updated)
            }
            None => {
                let created = client
                    .create(webhook_model(), &wanted(mapping.model, target))
                    .await
                    .map_err(|e| target.erp_error(e))?;
                (crate::upstream::erp::id_of(&created).unwrap_or_default(), Change::Created)
            }
        };
        let mut duplicates_removed = 0;
        for (i, hook) in ours.iter().enumerate() {
            if Some(i) != keep {
                client
                    .delete(webhook_model(), hook.id.as_deref().unwrap_or_default())
                    .await
                    .map_err(|e| target.erp_error(e))?;
                duplicates_removed += 1;
            }
        }
        report.push(Registered { model: mapping.model, id, change, duplicates_removed });
    }
    Ok(report)
}

/// Every webhook registered at the ERP (the service's and any other), URLs redacted.
pub async fn list(client: &ErpClient) -> Result<Vec<Registration>, RegistrationError> {
    let hooks = all_webhooks(client).await.map_err(|e| RegistrationError::Erp(e.to_string()))?;
    Ok(hooks.iter().map(registration).collect())
}

fn registration(hook: &Webhook) -> Registration {
    let events = [(hook.at_create, "create"), (hook.at_update, "update"), (hook.at_delete, "delete")]
        .into_iter()
        .filter(|(on, _)| *on == Some(true))
        .map(|(_, event)| event)
        .collect();
    Registration {
        id: hook.id.clone().unwrap_or_default(),
        model: hook.entity_name.clone().unwrap_or_default(),
        events,
        method: hook.request_method.clone().unwrap_or_default(),
        url: redacted(hook.url.as_deref().unwrap_or_default()),
        deactivated: hook.deactivated_date.map(|_| hook.error_message.clone().unwrap_or_default()),
    }
}

/// Removes every registration of `target` (for any model, with any secret); others stay.
/// Returns those removed.
pub async fn unregister(client: &ErpClient, target: &WebhookTarget) -> Result<Vec<Registration>, RegistrationError> {
    let hooks = all_webhooks(client).await.map_err(|e| target.erp_error(e))?;
    let mut removed = Vec::new();
    for hook in hooks.iter().filter(|h| h.url.as_deref().is_some_and(|url| target.is_ours(url))) {
        let Some(id) = hook.id.as_deref() else { continue };
        client.delete(webhook_model(), id).await.map_err(|e| target.erp_error(e))?;
        removed.push(registration(hook));
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> SecretString {
        text.to_string().into()
    }

    #[test]
    fn the_route_and_the_secret_are_added_to_the_address() {
        let target = WebhookTarget::new("https://svc.example.com/", Some(&secret("s3cr3t"))).unwrap();
        assert_eq!(target.registered(), "https://svc.example.com/api/v1/erp/webhooks?secret=s3cr3t");
        assert_eq!(target.shown(), "https://svc.example.com/api/v1/erp/webhooks?secret=***");
        let full = WebhookTarget::new("https://svc.example.com/base/api/v1/erp/webhooks", None).unwrap();
        assert_eq!(full.registered(), "https://svc.example.com/base/api/v1/erp/webhooks");
    }

    #[test]
    fn addresses_with_a_query_or_another_scheme_are_refused_without_echoing_secrets() {
        let error = WebhookTarget::new("https://svc.example.com/?secret=abc", None).err().unwrap().to_string();
        assert!(error.contains("without a query") && !error.contains("abc"), "{error}");
        assert!(WebhookTarget::new("ftp://svc.example.com", None).is_err());
        assert!(WebhookTarget::new("not a url", None).is_err());
    }

    #[test]
    fn a_registration_is_ours_whatever_its_secret() {
        let target = WebhookTarget::new("https://svc.example.com", Some(&secret("new"))).unwrap();
        assert!(target.is_ours("https://svc.example.com/api/v1/erp/webhooks?secret=old"));
        assert!(target.is_ours("https://svc.example.com/api/v1/erp/webhooks/"));
        assert!(!target.is_ours("https://other.example.com/api/v1/erp/webhooks?secret=new"));
        assert!(!target.is_ours("https://svc.example.com/hooks?secret=new"));
    }

    #[test]
    fn errors_of_the_erp_never_carry_the_secret() {
        let target = WebhookTarget::new("https://svc.example.com", Some(&secret("s3cr3t-value"))).unwrap();
        let echo = UpstreamError::Refused {
            system: crate::vocabulary::calls::System::Erp,
            status: 400,
            message: format!("url: {} is invalid; s3cr3t-value", target.registered()),
            retry_after: None,
        };
        let text = target.erp_error(echo).to_string();
        assert!(!text.contains("s3cr3t-value"), "{text}");
        assert!(text.contains("webhooks?secret=*** is invalid; ***"), "{text}");
        let short = WebhookTarget::new("https://svc.example.com", Some(&secret("s"))).unwrap();
        let unreachable = UpstreamError::Unreachable {
            system: crate::vocabulary::calls::System::Erp,
            detail: "connection refused".into(),
        };
        assert!(short.erp_error(unreachable).to_string().ends_with("connection refused"));
    }

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(redacted("https://h.example/x?secret=a&entity=b"), "https://h.example/x?secret=***&entity=b");
        assert_eq!(redacted("https://u:pw@h.example/?api_key=k"), "https://u:***@h.example/?api_key=***");
        assert_eq!(redacted("no url"), "no url");
    }
}
