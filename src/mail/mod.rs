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

mod config;
mod error;
mod mailer;
mod target;
mod templates;
#[cfg(test)]
mod tests;

pub use self::config::{DEFAULT_MAIL_FROM, MailConfig, parse_mailbox};
pub use self::error::MailError;
pub use self::mailer::Mailer;
pub use self::target::{MailTarget, SMTP_DELIVERY_TIMEOUT, SMTP_TIMEOUT, SmtpSecurity, SmtpTarget};
pub use self::templates::{
    BuiltInTemplates, MISSING_INFO_SUBJECT, MISSING_INFO_TEXT, MailTemplate, RenderedMail, TemplateSource, render,
};
