//! Where mail goes, as `MAIL_URL` says: storage only, or an SMTP server, and the SMTP time-outs.

use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use percent_encoding::percent_decode_str;
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::error::MailError;

/// Time-out of connecting to the SMTP server (lettre's `timeout`).
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Time-out of one whole delivery (connect, greeting, TLS, AUTH, envelope, data). lettre's
/// tokio transport applies its `timeout` to connecting only, so a server that accepts and
/// then stays silent is bounded by this.
pub const SMTP_DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

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
    pub(super) password: Option<SecretString>,
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
    pub(super) fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in [&self.password, &self.password_in_url].into_iter().flatten() {
            let secret = secret.expose_secret();
            if !secret.is_empty() {
                text = text.replace(secret, "********");
            }
        }
        text
    }

    pub(super) fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
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
