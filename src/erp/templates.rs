//! Mail templates from the ERP (`mailTemplate` records, found by `name`), cached for a short
//! time so a burst of missing-info mails does not ask the ERP each time.
//!
//! Without a configured ERP the built-in template is used, so the missing-info mail works on a
//! bare installation; with an ERP, a template it does not have is an error (reported in the
//! leasing error), never silently replaced. When the ERP cannot be reached, a cached copy that
//! has expired is used rather than none.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mail::{BuiltInTemplates, MailError, MailTemplate, TemplateSource};
use crate::upstream::UpstreamError;
use crate::upstream::erp::ErpClient;

/// How long a loaded template is used before it is loaded again.
pub const TEMPLATE_TTL: Duration = Duration::from_secs(60);

pub struct ErpTemplates {
    client: Result<ErpClient, UpstreamError>,
    cache: Mutex<HashMap<String, (Instant, MailTemplate)>>,
}

fn addresses(record: &Value, key: &str) -> Vec<String> {
    record
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .split([',', ';'])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a template's text is HTML (the ERP's editor writes HTML; plain text has no tags).
fn looks_like_html(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["</", "<br", "<p>", "<p ", "<html", "<div", "<table"].iter().any(|tag| lower.contains(tag))
}

/// A `mailTemplate` record as a [`MailTemplate`].
pub fn from_record(name: &str, record: &Value) -> MailTemplate {
    let text = record.get("text").and_then(Value::as_str).unwrap_or_default().to_string();
    MailTemplate {
        name: name.to_string(),
        subject: record.get("subject").and_then(Value::as_str).unwrap_or_default().to_string(),
        html: looks_like_html(&text),
        text,
        to: addresses(record, "toEmailAddresses"),
        cc: addresses(record, "ccEmailAddresses"),
        bcc: addresses(record, "bccEmailAddresses"),
    }
}

impl ErpTemplates {
    pub fn new(client: Result<ErpClient, UpstreamError>) -> ErpTemplates {
        ErpTemplates { client, cache: Mutex::new(HashMap::new()) }
    }

    fn cached(&self, name: &str, fresh_only: bool) -> Option<MailTemplate> {
        let cache = self.cache.lock().expect("template cache lock");
        cache.get(name).filter(|(at, _)| !fresh_only || at.elapsed() < TEMPLATE_TTL).map(|(_, t)| t.clone())
    }

    async fn load(&self, client: &ErpClient, name: &str) -> Result<MailTemplate, MailError> {
        let query = [("name-eq".to_string(), name.to_string()), ("pageSize".to_string(), "1".to_string())];
        let records = client
            .list("mailTemplate", &query)
            .await
            .map_err(|e| MailError::Source(format!("mail template {name:?} could not be loaded from the ERP: {e}")))?;
        let record = records
            .iter()
            .find(|r| r.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| MailError::TemplateMissing(name.to_string()))?;
        let template = from_record(name, record);
        self.cache.lock().expect("template cache lock").insert(name.to_string(), (Instant::now(), template.clone()));
        Ok(template)
    }
}

#[async_trait::async_trait]
impl TemplateSource for ErpTemplates {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError> {
        let client = match &self.client {
            Ok(client) => client,
            Err(UpstreamError::NotConfigured { .. }) => return BuiltInTemplates.template(name).await,
            Err(error) => return Err(MailError::Source(error.to_string())),
        };
        if let Some(template) = self.cached(name, true) {
            return Ok(template);
        }
        match self.load(client, name).await {
            Err(MailError::Source(reason)) => self.cached(name, false).ok_or(MailError::Source(reason)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_become_templates_with_their_recipients() {
        let record = json!({
            "name": "leasing-missing-info", "subject": "Request {{ financing_id }}",
            "text": "<p>Hello {{ lessee.CompanyName }}</p>", "toEmailAddresses": "a@x.example, b@x.example",
            "ccEmailAddresses": "", "bccEmailAddresses": "archive@x.example"
        });
        let template = from_record("leasing-missing-info", &record);
        assert!(template.html);
        assert_eq!(template.to, vec!["a@x.example", "b@x.example"]);
        assert!(template.cc.is_empty());
        assert_eq!(template.bcc, vec!["archive@x.example"]);
        assert!(!from_record("t", &json!({"text": "plain {{ x }}"})).html);
    }
}
