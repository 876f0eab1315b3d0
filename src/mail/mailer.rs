//! The mailer: renders a template and delivers it over SMTP, with a copy in storage.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lettre::message::{Mailbox, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;

use super::error::MailError;
use super::target::{MailTarget, SMTP_DELIVERY_TIMEOUT, SmtpTarget};
use super::templates::{RenderedMail, TemplateSource, render};
use crate::file_storage::{Storage, StorageKey};

#[derive(Clone)]
enum Transport {
    Files,
    Smtp { target: SmtpTarget, transport: Arc<AsyncSmtpTransport<Tokio1Executor>> },
}

/// Delivers mail: to the SMTP server `MAIL_URL` names, with a copy in storage, or only into
/// storage.
#[derive(Clone)]
pub struct Mailer {
    pub(super) storage: Storage,
    pub(super) from: Mailbox,
    templates: Arc<dyn TemplateSource>,
    transport: Transport,
    delivery_timeout: Duration,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let target = match &self.transport {
            Transport::Files => "storage mail/".to_string(),
            Transport::Smtp { target, .. } => target.describe(),
        };
        f.debug_struct("Mailer").field("from", &self.from.to_string()).field("target", &target).finish()
    }
}

impl Mailer {
    /// A mailer for `MAIL_URL` (see the module documentation) sending as `from`. An unknown
    /// scheme or a malformed URL is [`MailError::Config`].
    pub fn new(
        mail_url: Option<&str>,
        from: Mailbox,
        storage: Storage,
        templates: Arc<dyn TemplateSource>,
    ) -> Result<Mailer, MailError> {
        let transport = match MailTarget::parse(mail_url)? {
            MailTarget::Files => Transport::Files,
            MailTarget::Smtp(target) => {
                let transport = Arc::new(target.transport()?);
                Transport::Smtp { target, transport }
            }
        };
        Ok(Mailer { storage, from, templates, transport, delivery_timeout: SMTP_DELIVERY_TIMEOUT })
    }

    /// The same mailer with another limit for one whole SMTP delivery (default
    /// [`SMTP_DELIVERY_TIMEOUT`]).
    pub fn with_delivery_timeout(mut self, timeout: Duration) -> Mailer {
        self.delivery_timeout = timeout;
        self
    }

    /// Where this mailer sends: `scheme://host:port` for SMTP, `None` for storage only.
    pub fn smtp_target(&self) -> Option<&SmtpTarget> {
        match &self.transport {
            Transport::Files => None,
            Transport::Smtp { target, .. } => Some(target),
        }
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

    /// Builds the message and delivers it. Returns where it went: the storage key of the
    /// `.eml` file, or for SMTP `smtp://host:port (message-id <…>), copy at mail/….eml`.
    pub async fn deliver(&self, mail: &RenderedMail) -> Result<String, MailError> {
        if mail.to.is_empty() {
            return Err(MailError::NoRecipient);
        }
        let mailbox = |a: &String| a.trim().parse::<Mailbox>().map_err(|_| MailError::Address(a.clone()));
        let message_id = format!("<{}@{}>", uuid::Uuid::new_v4().simple(), self.from.email.domain());
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(mail.subject.clone())
            .message_id(Some(message_id.clone()));
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
        let formatted = message.formatted();
        let key = StorageKey::new(&format!(
            "mail/{}-{}.eml",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ"),
            uuid::Uuid::new_v4().simple()
        ))?;
        let Transport::Smtp { target, transport } = &self.transport else {
            return Ok(self.storage.put(&key, Bytes::from(formatted)).await?.path);
        };
        let sent = tokio::time::timeout(self.delivery_timeout, transport.send_raw(message.envelope(), &formatted));
        match sent.await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let reason = target.redact(&smtp_error_text(&e));
                return Err(MailError::Delivery(format!("{}: {reason}", target.describe())));
            }
            Err(_) => {
                let limit = self.delivery_timeout;
                return Err(MailError::Delivery(format!("{}: no answer within {limit:?}", target.describe())));
            }
        }
        let sent = format!("{} (message-id {message_id})", target.describe());
        // The mail is out: a copy that cannot be stored is reported, not turned into a failure.
        match self.storage.put(&key, Bytes::from(formatted)).await {
            Ok(stored) => Ok(format!("{sent}, copy at {}", stored.path)),
            Err(error) => {
                crate::telemetry::report_internal_error(&format!("copy of sent mail {message_id}: {error}"));
                Ok(format!("{sent}, no copy stored: {error}"))
            }
        }
    }
}

/// A lettre error with its causes, on one line.
fn smtp_error_text(error: &lettre::transport::smtp::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.replace(['\r', '\n'], " ")
}
