//! Outgoing mail: templates rendered with minijinja and delivered by the configured mailer.
//!
//! The leasing area sends the missing-info mail through [`Mailer::send_template`]. The
//! template comes from a [`TemplateSource`]: built in for now; the ERP area supplies the ERP's
//! `mailTemplate` records through the same trait. Delivery writes RFC 5322 `.eml` files into
//! storage (`mail/…`) unless `MAIL_URL` names another target.

use std::sync::Arc;

use bytes::Bytes;
use lettre::Message;
use lettre::message::{Mailbox, header::ContentType};
use serde_json::Value;

use crate::storage::{Storage, StorageError, StorageKey};

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("mail template {0:?} not found")]
    TemplateMissing(String),
    #[error("mail template {name:?} does not render: {detail}")]
    Template { name: String, detail: String },
    /// The template could not be loaded (e.g. the ERP is unreachable).
    #[error("{0}")]
    Source(String),
    #[error("no recipient for the mail")]
    NoRecipient,
    #[error("bad address {0:?}")]
    Address(String),
    #[error("mail could not be built: {0}")]
    Build(String),
    #[error("mail could not be delivered: {0}")]
    Delivery(String),
    #[error("MAIL_URL: {0}")]
    Config(String),
}

impl From<StorageError> for MailError {
    fn from(e: StorageError) -> Self {
        MailError::Delivery(e.to_string())
    }
}

/// A mail template as the ERP keeps them (`mailTemplate`): subject and text with
/// placeholders, fixed recipients, and whether the text is HTML.
#[derive(Debug, Clone, PartialEq)]
pub struct MailTemplate {
    pub name: String,
    pub subject: String,
    pub text: String,
    pub html: bool,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

/// Where templates come from.
#[async_trait::async_trait]
pub trait TemplateSource: Send + Sync {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError>;
}

/// The templates shipped with the service.
pub struct BuiltInTemplates;

pub const MISSING_INFO_SUBJECT: &str = "Financing request {{ request.RequestId or financing_id }}: information missing";
pub const MISSING_INFO_TEXT: &str = "Hello {{ lessee.CompanyName or 'customer' }},\n\n\
the leasing provider needs more information before financing request {{ request.RequestId or financing_id }} \
(financing id {{ financing_id }}) can be signed.\n\
{% if technician_appointment_date %}Technician appointment: {{ technician_appointment_date }}{% if technician_appointment_time %} at {{ technician_appointment_time }}{% endif %}.\n{% endif %}\n\
Please get in touch with us.\n";

#[async_trait::async_trait]
impl TemplateSource for BuiltInTemplates {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError> {
        Ok(MailTemplate {
            name: name.to_string(),
            subject: MISSING_INFO_SUBJECT.into(),
            text: MISSING_INFO_TEXT.into(),
            html: false,
            to: Vec::new(),
            cc: Vec::new(),
            bcc: Vec::new(),
        })
    }
}

/// A rendered mail ready to deliver.
#[derive(Debug, Clone)]
pub struct RenderedMail {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
    pub html: bool,
}

/// Renders subject and text with `context`; HTML templates escape inserted values.
pub fn render(template: &MailTemplate, context: &Value) -> Result<(String, String), MailError> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    let fail = |e: minijinja::Error| MailError::Template { name: template.name.clone(), detail: e.to_string() };
    let subject = env.render_str(&template.subject, context).map_err(fail)?;
    let mut body_env = minijinja::Environment::new();
    let html = template.html;
    body_env.set_auto_escape_callback(
        move |_| if html { minijinja::AutoEscape::Html } else { minijinja::AutoEscape::None },
    );
    let body = body_env.render_str(&template.text, context).map_err(fail)?;
    Ok((subject.replace(['\r', '\n'], " "), body))
}

/// Delivers mail.
#[derive(Clone)]
pub struct Mailer {
    storage: Storage,
    from: Mailbox,
    templates: Arc<dyn TemplateSource>,
}

impl Mailer {
    /// `MAIL_URL` unset or `file://…` (files under storage's `mail/`): the built-in mailer.
    pub fn new(
        mail_url: Option<&str>,
        storage: Storage,
        templates: Arc<dyn TemplateSource>,
    ) -> Result<Mailer, MailError> {
        if let Some(url) = mail_url
            && !url.starts_with("file://")
        {
            return Err(MailError::Config(
                "only file:// delivery is built in so far; SMTP comes with the ERP area".into(),
            ));
        }
        let from = "integration-service <integration-service@localhost>"
            .parse()
            .map_err(|_| MailError::Address("from".into()))?;
        Ok(Mailer { storage, from, templates })
    }

    /// Loads a template, renders it with `context` and sends it to `extra_to` plus the
    /// template's own recipients; returns where the mail went.
    pub async fn send_template(&self, name: &str, context: &Value, extra_to: &[String]) -> Result<String, MailError> {
        let template = self.templates.template(name).await?;
        let (subject, body) = render(&template, context)?;
        let mut to: Vec<String> = extra_to.iter().filter(|a| !a.trim().is_empty()).cloned().collect();
        to.extend(template.to.iter().cloned());
        let mail =
            RenderedMail { to, cc: template.cc.clone(), bcc: template.bcc.clone(), subject, body, html: template.html };
        self.deliver(&mail).await
    }

    pub async fn deliver(&self, mail: &RenderedMail) -> Result<String, MailError> {
        if mail.to.is_empty() {
            return Err(MailError::NoRecipient);
        }
        let mailbox = |a: &String| a.parse::<Mailbox>().map_err(|_| MailError::Address(a.clone()));
        let mut builder = Message::builder().from(self.from.clone()).subject(mail.subject.clone());
        for a in &mail.to {
            builder = builder.to(mailbox(a)?);
        }
        for a in &mail.cc {
            builder = builder.cc(mailbox(a)?);
        }
        for a in &mail.bcc {
            builder = builder.bcc(mailbox(a)?);
        }
        let content_type = if mail.html { ContentType::TEXT_HTML } else { ContentType::TEXT_PLAIN };
        let message =
            builder.header(content_type).body(mail.body.clone()).map_err(|e| MailError::Build(e.to_string()))?;
        let key = StorageKey::new(&format!(
            "mail/{}-{}.eml",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ"),
            uuid::Uuid::new_v4().simple()
        ))?;
        let stored = self.storage.put(&key, Bytes::from(message.formatted())).await?;
        Ok(stored.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_missing_info_template_renders_the_request_and_appointment() {
        let template = MailTemplate {
            name: "leasing-missing-info".into(),
            subject: MISSING_INFO_SUBJECT.into(),
            text: MISSING_INFO_TEXT.into(),
            html: false,
            to: vec![],
            cc: vec![],
            bcc: vec![],
        };
        let context = json!({
            "financing_id": "f-1", "request": {"RequestId": "180-33001"}, "lessee": {"CompanyName": "ACME GmbH"},
            "technician_appointment_date": "2026-12-01", "technician_appointment_time": "09:30"
        });
        let (subject, body) = render(&template, &context).unwrap();
        assert_eq!(subject, "Financing request 180-33001: information missing");
        assert!(body.contains("Hello ACME GmbH"), "{body}");
        assert!(body.contains("Technician appointment: 2026-12-01 at 09:30."), "{body}");
    }

    #[test]
    fn html_templates_escape_values() {
        let template = MailTemplate {
            name: "t".into(),
            subject: "{{ name }}".into(),
            text: "<p>{{ name }}</p>".into(),
            html: true,
            to: vec![],
            cc: vec![],
            bcc: vec![],
        };
        let (_, body) = render(&template, &json!({"name": "<script>x</script>"})).unwrap();
        assert_eq!(body, "<p>&lt;script&gt;x&lt;&#x2f;script&gt;</p>");
    }
}
