use std::sync::Arc;

use secrecy::ExposeSecret;

use super::*;
use crate::file_storage::Storage;
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
        let mailer = Mailer::new(Some(url), mailer.from.clone(), mailer.storage.clone(), Arc::new(BuiltInTemplates));
        assert!(mailer.is_ok_and(|m| m.smtp_target().is_some()), "{url}");
    }
}

#[test]
fn mail_from_must_be_a_mailbox() {
    assert_eq!(parse_mailbox(DEFAULT_MAIL_FROM).unwrap().email.to_string(), "integration-service@localhost");
    assert!(parse_mailbox("ops@example.com").is_ok());
    assert!(parse_mailbox("nobody").is_err());
}
