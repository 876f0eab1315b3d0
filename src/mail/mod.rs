//! Outgoing mail: templates rendered with minijinja and delivered by the configured mailer.
//!
//! The leasing area sends the missing-info mail through [`Mailer::send_template`]. The
//! template comes from a [`TemplateSource`]: built in for now; the ERP area supplies the ERP's
//! `mailTemplate` records through the same trait.
//!
//! Where mail goes is `MAIL_URL` ([`MailTarget::parse`]):
//!
//! - unset or `file://…`: RFC 5322 `.eml` files under storage's `mail/`, nothing is sent;
//! - `smtp://[user[:password]@]host[:port]`: plain SMTP (port 25), for local relays and tests;
//! - `smtp://…?tls=required` / `smtp://…?tls=opportunistic`: STARTTLS (port 587), required or
//!   used when the server offers it;
//! - `smtps://[user[:password]@]host[:port]`: implicit TLS (port 465).
//!
//! User and password are percent-decoded and used for SMTP AUTH (PLAIN or LOGIN). TLS uses
//! rustls with the platform's trust store. Connecting times out after [`SMTP_TIMEOUT`], a
//! whole delivery after [`SMTP_DELIVERY_TIMEOUT`]. Over SMTP, `to`, `cc` and `bcc` are the
//! envelope recipients and `Bcc` is left out of the headers; a copy of every sent mail is still written to storage's `mail/`, and
//! the returned location names both. The password never appears in `Debug` output, locations
//! or error messages.
//!
//! The sender is `MAIL_FROM` ([`DEFAULT_MAIL_FROM`] unless set).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use percent_encoding::percent_decode_str;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use url::Url;

use crate::file_storage::{Storage, StorageError, StorageKey};
use crate::vocabulary::settings::{ConfigError, Settings, invalid};

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

/// The sender when `MAIL_FROM` is not set.
pub const DEFAULT_MAIL_FROM: &str = "integration-service <integration-service@localhost>";

/// Time-out of connecting to the SMTP server (lettre's `timeout`).
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Time-out of one whole delivery (connect, greeting, TLS, AUTH, envelope, data). lettre's
/// tokio transport applies its `timeout` to connecting only, so a server that accepts and
/// then stays silent is bounded by this.
pub const SMTP_DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// The mail settings: where mail goes and who sends it.
#[derive(Debug, Clone)]
pub struct MailConfig {
    /// `MAIL_URL`, checked with [`MailTarget::parse`]; secret, as it may hold the SMTP password.
    pub url: Option<SecretString>,
    /// `MAIL_FROM`, default [`DEFAULT_MAIL_FROM`].
    pub from: Mailbox,
}

impl MailConfig {
    /// Reads and checks `MAIL_URL` and `MAIL_FROM`.
    pub fn read(raw: &Settings) -> Result<MailConfig, ConfigError> {
        match MailTarget::parse(raw.get("MAIL_URL")) {
            Ok(_) => {}
            Err(MailError::Config(reason)) => return Err(invalid("MAIL_URL", reason)),
            Err(other) => return Err(invalid("MAIL_URL", other.to_string())),
        }
        let from_raw = raw.string_or("MAIL_FROM", DEFAULT_MAIL_FROM);
        let from = parse_mailbox(&from_raw).map_err(|_| {
            invalid("MAIL_FROM", format!("{from_raw:?} is not a mailbox like `Name <user@example.com>`"))
        })?;
        Ok(MailConfig { url: raw.secret("MAIL_URL"), from })
    }
}

/// Parses a `MAIL_FROM` value: a mailbox such as `Name <user@example.com>` or `user@example.com`.
pub fn parse_mailbox(value: &str) -> Result<Mailbox, MailError> {
    value.trim().parse::<Mailbox>().map_err(|_| MailError::Address(value.to_string()))
}

/// How a connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// No TLS (`smtp://`).
    Plain,
    /// STARTTLS, refusing to go on without it (`smtp://…?tls=required`).
    StartTlsRequired,
    /// STARTTLS when the server offers it (`smtp://…?tls=opportunistic`).
    StartTlsOpportunistic,
    /// TLS from the first byte (`smtps://`).
    ImplicitTls,
}

/// An SMTP server named by `MAIL_URL`. Its `Debug` and [`SmtpTarget::describe`] leave the
/// password out.
#[derive(Clone)]
pub struct SmtpTarget {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    pub username: Option<String>,
    password: Option<SecretString>,
    /// The password as written in `MAIL_URL` (percent-encoded), only to redact it.
    password_in_url: Option<SecretString>,
}

impl SmtpTarget {
    /// `scheme://host:port` plus the `tls` mode, without credentials: for locations and logs.
    pub fn describe(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.security {
            SmtpSecurity::Plain => format!("smtp://{host}:{}", self.port),
            SmtpSecurity::StartTlsRequired => format!("smtp://{host}:{}?tls=required", self.port),
            SmtpSecurity::StartTlsOpportunistic => format!("smtp://{host}:{}?tls=opportunistic", self.port),
            SmtpSecurity::ImplicitTls => format!("smtps://{host}:{}", self.port),
        }
    }

    /// Whether a password is configured (the password itself stays inside).
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// `text` with the password (as given and percent-encoded) replaced by `********`.
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in [&self.password, &self.password_in_url].into_iter().flatten() {
            let secret = secret.expose_secret();
            if !secret.is_empty() {
                text = text.replace(secret, "********");
            }
        }
        text
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
        let tls = || {
            TlsParameters::new(self.host.clone())
                .map_err(|e| MailError::Config(format!("TLS for {}: {}", self.describe(), self.redact(&e.to_string()))))
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(self.host.clone())
            .port(self.port)
            .timeout(Some(SMTP_TIMEOUT));
        builder = match self.security {
            SmtpSecurity::Plain => builder,
            SmtpSecurity::StartTlsRequired => builder.tls(Tls::Required(tls()?)),
            SmtpSecurity::StartTlsOpportunistic => builder.tls(Tls::Opportunistic(tls()?)),
            SmtpSecurity::ImplicitTls => builder.tls(Tls::Wrapper(tls()?)),
        };
        if let Some(username) = &self.username {
            let password = self.password.as_ref().map(|p| p.expose_secret().to_string()).unwrap_or_default();
            builder = builder.credentials(Credentials::new(username.clone(), password));
        }
        Ok(builder.build())
    }
}

impl std::fmt::Debug for SmtpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "********"))
            .finish()
    }
}

/// Where mail goes, as `MAIL_URL` says.
#[derive(Debug, Clone)]
pub enum MailTarget {
    /// `.eml` files under storage's `mail/` (`MAIL_URL` unset or `file://…`).
    Files,
    /// An SMTP server (`smtp://…`, `smtps://…`).
    Smtp(SmtpTarget),
}

impl MailTarget {
    /// Reads `MAIL_URL`. Errors are [`MailError::Config`] with a reason that never quotes the
    /// URL (it may hold a password).
    pub fn parse(mail_url: Option<&str>) -> Result<MailTarget, MailError> {
        let Some(raw) = mail_url.map(str::trim).filter(|u| !u.is_empty()) else { return Ok(MailTarget::Files) };
        let config = |reason: String| MailError::Config(reason);
        let scheme = raw.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("file") => return Ok(MailTarget::Files),
            Some("smtp" | "smtps") => {}
            Some(other)
                if !other.is_empty() && other.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                return Err(config(format!("unknown scheme {other:?}: use smtp://, smtps:// or file://")));
            }
            _ => return Err(config("must start with smtp://, smtps:// or file://".into())),
        }
        let form = "expected smtp[s]://[user[:password]@]host[:port][?tls=required|opportunistic]";
        let url = Url::parse(raw).map_err(|e| config(format!("not a valid URL ({e}); {form}")))?;
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(config(format!("names no host; {form}"))),
        };
        if !matches!(url.path(), "" | "/") {
            return Err(config(format!("has a path; {form}")));
        }
        if url.fragment().is_some() {
            return Err(config(format!("has a fragment; {form}")));
        }
        let mut tls = None;
        for (key, value) in url.query_pairs() {
            match key.as_ref() {
                "tls" if tls.is_none() => tls = Some(value.to_ascii_lowercase()),
                "tls" => return Err(config("names tls twice".into())),
                other => return Err(config(format!("unknown parameter {other:?}; only tls is understood"))),
            }
        }
        let security = match (url.scheme(), tls.as_deref()) {
            ("smtp", None) => SmtpSecurity::Plain,
            ("smtp", Some("required")) => SmtpSecurity::StartTlsRequired,
            ("smtp", Some("opportunistic")) => SmtpSecurity::StartTlsOpportunistic,
            ("smtp", Some(other)) => {
                return Err(config(format!("tls={other:?}: expected tls=required or tls=opportunistic")));
            }
            ("smtps", None) => SmtpSecurity::ImplicitTls,
            _ => return Err(config("smtps:// is always TLS; leave out the tls parameter".into())),
        };
        let port = url.port().unwrap_or(match security {
            SmtpSecurity::Plain => 25,
            SmtpSecurity::StartTlsRequired | SmtpSecurity::StartTlsOpportunistic => 587,
            SmtpSecurity::ImplicitTls => 465,
        });
        let decode = |part: &str, what: &str| {
            percent_decode_str(part)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| config(format!("the {what} is not valid UTF-8 once percent-decoded")))
        };
        let username = Some(url.username()).filter(|u| !u.is_empty()).map(|u| decode(u, "user name")).transpose()?;
        let password = url.password().map(|p| decode(p, "password")).transpose()?.map(SecretString::from);
        let password_in_url = url.password().map(|p| SecretString::from(p.to_string()));
        if password.is_some() && username.is_none() {
            return Err(config("a password needs a user name: smtp://user:password@host".into()));
        }
        Ok(MailTarget::Smtp(SmtpTarget { host, port, security, username, password, password_in_url }))
    }
}

#[derive(Clone)]
enum Transport {
    Files,
    Smtp { target: SmtpTarget, transport: Arc<AsyncSmtpTransport<Tokio1Executor>> },
}

/// Delivers mail: to the SMTP server `MAIL_URL` names, with a copy in storage, or only into
/// storage.
#[derive(Clone)]
pub struct Mailer {
    storage: Storage,
    from: Mailbox,
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

    fn smtp(url: &str) -> SmtpTarget {
        match MailTarget::parse(Some(url)) {
            Ok(MailTarget::Smtp(target)) => target,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn mail_url_forms() {
        assert!(matches!(MailTarget::parse(None), Ok(MailTarget::Files)));
        assert!(matches!(MailTarget::parse(Some("file://./var/mail")), Ok(MailTarget::Files)));
        let plain = smtp("smtp://127.0.0.1");
        assert_eq!((plain.port, plain.security, plain.username.as_deref()), (25, SmtpSecurity::Plain, None));
        assert_eq!(plain.describe(), "smtp://127.0.0.1:25");
        let starttls = smtp("smtp://relay.example.com?tls=required");
        assert_eq!((starttls.port, starttls.security), (587, SmtpSecurity::StartTlsRequired));
        assert_eq!(starttls.describe(), "smtp://relay.example.com:587?tls=required");
        let opportunistic = smtp("SMTP://relay.example.com:2587?tls=opportunistic");
        assert_eq!((opportunistic.port, opportunistic.security), (2587, SmtpSecurity::StartTlsOpportunistic));
        let implicit = smtp("smtps://mailer%40example.com:p%40ss%3Aword@mail.example.com");
        assert_eq!((implicit.port, implicit.security), (465, SmtpSecurity::ImplicitTls));
        assert_eq!(implicit.username.as_deref(), Some("mailer@example.com"));
        assert_eq!(implicit.password.as_ref().unwrap().expose_secret(), "p@ss:word");
        assert_eq!(implicit.describe(), "smtps://mail.example.com:465");
        assert_eq!(smtp("smtp://[::1]:2525").describe(), "smtp://[::1]:2525");
        let user_only = smtp("smtp://relay-user@localhost:2525");
        assert_eq!(user_only.username.as_deref(), Some("relay-user"));
        assert!(!user_only.has_password());
    }

    #[test]
    fn bad_mail_urls_are_config_errors_without_the_password() {
        for url in [
            "sendmail://x",
            "http://user:hunter2@host",
            "hunter2",
            "smtp://user:hunter2@",
            "smtp://user:hunter2@host?tls=never",
            "smtps://user:hunter2@host?tls=required",
            "smtp://user:hunter2@host/helo",
            "smtp://user:hunter2@host?password=hunter2",
            "smtp://user:hunter2@host:70000",
            "smtp://:hunter2@host",
        ] {
            match MailTarget::parse(Some(url)) {
                Err(MailError::Config(reason)) => assert!(!reason.contains("hunter2"), "{url}: {reason}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn the_password_stays_out_of_debug_and_redacted_text() {
        let target = smtp("smtp://user:hunter%32@127.0.0.1:2525");
        assert_eq!(target.password.as_ref().unwrap().expose_secret(), "hunter2");
        let debug = format!("{target:?}");
        assert!(!debug.contains("hunter"), "{debug}");
        assert_eq!(target.redact("AUTH hunter2 / hunter%32"), "AUTH ******** / ********");
        let dir = std::env::temp_dir().join(format!("mail-{}", uuid::Uuid::new_v4()));
        let storage = Storage::from_url(&format!("file://{}", dir.display())).unwrap();
        let from = parse_mailbox(DEFAULT_MAIL_FROM).unwrap();
        let mailer =
            Mailer::new(Some("smtp://user:hunter2@127.0.0.1:2525"), from, storage, Arc::new(BuiltInTemplates)).unwrap();
        let debug = format!("{mailer:?}");
        assert!(!debug.contains("hunter2") && debug.contains("smtp://127.0.0.1:2525"), "{debug}");
        // The TLS forms build their rustls configuration (platform trust store) up front.
        for url in ["smtps://user:hunter2@mail.example.com", "smtp://relay.example.com?tls=required"] {
            let mailer =
                Mailer::new(Some(url), mailer.from.clone(), mailer.storage.clone(), Arc::new(BuiltInTemplates));
            assert!(mailer.is_ok_and(|m| m.smtp_target().is_some()), "{url}");
        }
    }

    #[test]
    fn mail_from_must_be_a_mailbox() {
        assert_eq!(parse_mailbox(DEFAULT_MAIL_FROM).unwrap().email.to_string(), "integration-service@localhost");
        assert!(parse_mailbox("ops@example.com").is_ok());
        assert!(parse_mailbox("nobody").is_err());
    }
}
