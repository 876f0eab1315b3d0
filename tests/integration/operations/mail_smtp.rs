//! SMTP delivery against a real SMTP server (aiosmtpd on loopback, see `common/smtp.rs`):
//! the mailer on its own, and the leasing missing-info mail through the whole service.

use crate::common::{Api, JsonAnswer};
use std::sync::Arc;

use crate::common::smtp::SmtpServer;
use crate::common::{Db, TestService, error_body, leasing_request};
use integration_service::file_storage::Storage;
use integration_service::mail::{MailError, MailTemplate, Mailer, TemplateSource, parse_mailbox};
use serde_json::{Value, json};

/// One HTML template with fixed recipients of every kind.
struct HtmlTemplate;

#[async_trait::async_trait]
impl TemplateSource for HtmlTemplate {
    async fn template(&self, name: &str) -> Result<MailTemplate, MailError> {
        Ok(MailTemplate {
            name: name.to_string(),
            subject: "Order {{ order }} for {{ customer }}".into(),
            text: "<p>Hello {{ customer }},</p>\n<p>order {{ order }} is ready.</p>\n".into(),
            html: true,
            to: vec!["sales@example.com".into()],
            cc: vec!["Accounting <accounting@example.com>".into()],
            bcc: vec!["archive@example.com".into()],
        })
    }
}

fn temp_storage() -> (Storage, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("integration-service-mail-{}", uuid::Uuid::new_v4()));
    (Storage::from_url(&format!("file://{}", dir.display())).unwrap(), dir)
}

fn stored_mails(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("mail")) else { return Vec::new() };
    entries.map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect()
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_rendered_template_arrives_with_envelope_recipients_and_escaped_html() {
    let server = SmtpServer::start().await;
    let (storage, dir) = temp_storage();
    let from = parse_mailbox("Integration <integration@example.com>").unwrap();
    let mailer = Mailer::new(Some(&server.url()), from, storage, Arc::new(HtmlTemplate)).unwrap();

    let context = json!({"order": "A-17", "customer": "<b>ACME</b> & Sons"});
    let location = mailer.send_template("order-ready", &context, &["customer@example.com".into()]).await.unwrap();
    assert!(location.starts_with(&format!("smtp://127.0.0.1:{} (message-id <", server.port)), "{location}");
    assert!(location.contains(", copy at mail/"), "{location}");

    let messages = server.wait_for(1).await;
    assert_eq!(messages.len(), 1);
    let mail = &messages[0];
    assert_eq!(mail.mail_from, "integration@example.com");
    let mut recipients = mail.rcpt_tos.clone();
    recipients.sort();
    assert_eq!(
        recipients,
        ["accounting@example.com", "archive@example.com", "customer@example.com", "sales@example.com"]
    );
    // The subject is not HTML: inserted as is.
    assert_eq!(mail.header("Subject").as_deref(), Some("Order A-17 for <b>ACME</b> & Sons"), "{}", mail.data);
    assert_eq!(mail.header("To").as_deref(), Some("customer@example.com, sales@example.com"), "{}", mail.data);
    assert_eq!(mail.header("Cc").as_deref(), Some("Accounting <accounting@example.com>"), "{}", mail.data);
    assert!(mail.header("Bcc").is_none(), "Bcc is only in the envelope: {}", mail.data);
    assert_eq!(mail.header("From").as_deref(), Some("Integration <integration@example.com>"));
    assert!(mail.header("Content-Type").is_some_and(|t| t.starts_with("text/html")), "{}", mail.data);
    assert!(mail.body().contains("<p>Hello &lt;b&gt;ACME&lt;&#x2f;b&gt; &amp; Sons,</p>"), "{}", mail.data);
    let message_id = mail.header("Message-ID").expect("a Message-ID");
    assert!(location.contains(&message_id), "{location} names {message_id}");

    // The copy in storage is the message as sent.
    let copies = stored_mails(&dir);
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0].trim_end(), mail.data.trim_end());
}

#[tokio::test]
async fn credentials_from_the_url_authenticate_and_never_show() {
    let password = "pa:ss w0rd";
    let server = SmtpServer::start_with_auth("mailer", password).await;
    let (storage, _dir) = temp_storage();
    let from = parse_mailbox("integration@example.com").unwrap();
    let url = format!("smtp://mailer:pa%3Ass%20w0rd@127.0.0.1:{}", server.port);
    let mailer = Mailer::new(Some(&url), from.clone(), storage.clone(), Arc::new(HtmlTemplate)).unwrap();
    assert!(!format!("{mailer:?}").contains("w0rd"));
    let context = json!({"order": "A-18", "customer": "ACME"});
    let location = mailer.send_template("order-ready", &context, &[]).await.unwrap();
    assert!(!location.contains("w0rd") && !location.contains("mailer:"), "{location}");
    let messages = server.wait_for(1).await;
    assert_eq!(messages[0].login.as_deref(), Some("mailer"));

    let wrong = format!("smtp://mailer:wrong-secret@127.0.0.1:{}", server.port);
    let mailer = Mailer::new(Some(&wrong), from, storage, Arc::new(HtmlTemplate)).unwrap();
    match mailer.send_template("order-ready", &context, &[]).await {
        Err(error @ MailError::Delivery(_)) => {
            let text = error.to_string();
            assert!(text.contains(&format!("smtp://127.0.0.1:{}", server.port)), "{text}");
            assert!(!text.contains("wrong-secret"), "{text}");
        }
        other => panic!("expected a delivery error, got {other:?}"),
    }
    assert_eq!(server.messages().await.len(), 1);
}

#[tokio::test]
async fn a_server_that_is_down_is_a_delivery_error() {
    let port = closed_port();
    let (storage, dir) = temp_storage();
    let from = parse_mailbox("integration@example.com").unwrap();
    let url = format!("smtp://user:s3cret-pw@127.0.0.1:{port}");
    let mailer = Mailer::new(Some(&url), from, storage, Arc::new(HtmlTemplate)).unwrap();
    let context = json!({"order": "A-19", "customer": "ACME"});
    match mailer.send_template("order-ready", &context, &[]).await {
        Err(error @ MailError::Delivery(_)) => {
            let text = error.to_string();
            assert!(text.starts_with(&format!("mail could not be delivered: smtp://127.0.0.1:{port}: ")), "{text}");
            assert!(!text.contains("s3cret-pw"), "{text}");
        }
        other => panic!("expected a delivery error, got {other:?}"),
    }
    assert!(stored_mails(&dir).is_empty(), "no copy of a mail that was not sent");
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_delivery_error() {
    // Accepts connections and stays silent (no greeting).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let (storage, dir) = temp_storage();
    let from = parse_mailbox("integration@example.com").unwrap();
    let mailer = Mailer::new(Some(&format!("smtp://127.0.0.1:{port}")), from, storage, Arc::new(HtmlTemplate))
        .unwrap()
        .with_delivery_timeout(std::time::Duration::from_millis(500));
    let context = json!({"order": "A-20", "customer": "ACME"});
    match mailer.send_template("order-ready", &context, &[]).await {
        Err(MailError::Delivery(reason)) => assert!(reason.contains("no answer within"), "{reason}"),
        other => panic!("expected a delivery error, got {other:?}"),
    }
    assert!(stored_mails(&dir).is_empty());
    silent.abort();
}

async fn the_missing_info_mail_goes_out_by_smtp(db: Db) {
    let server = SmtpServer::start().await;
    let svc =
        TestService::start(db, &[("MAIL_URL", &server.url()), ("MAIL_FROM", "Leasing <leasing@example.com>")]).await;
    let token = svc.user_token().await;
    let created = svc.post(&token, "/api/v1/leasing", leasing_request("Needs More [missing-info]")).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    let id = created["data"]["FinancingId"].as_str().unwrap().to_string();

    let query =
        "max_attempts=1&sleep_milliseconds=1&technician_appointment_date=2026-12-01&technician_appointment_time=09:30";
    let response = svc.get(&token, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?{query}")).await;
    let body = error_body(response, 500).await;
    assert_eq!(body["error_code"], "missing_info");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(&format!("mail was sent (smtp://127.0.0.1:{} (message-id", server.port)), "{body}");

    let messages = server.wait_for(1).await;
    assert_eq!(messages.len(), 1);
    let mail = &messages[0];
    assert_eq!(mail.mail_from, "leasing@example.com");
    // The lessee, plus the blind copy the ERP's template names (the sandbox ERP's seed).
    assert_eq!(mail.rcpt_tos, ["lessee@example.com", "leasing-archive@sandbox.example"]);
    assert_eq!(mail.header("To").as_deref(), Some("lessee@example.com"));
    assert_eq!(mail.header("Bcc"), None);
    assert!(mail.header("Subject").is_some_and(|s| s.contains("information missing")), "{}", mail.data);
    assert!(mail.body().contains("Technician appointment: 2026-12-01 at 09:30."), "{}", mail.data);
    assert!(mail.body().contains(&id), "{}", mail.data);
    assert_eq!(stored_mails(&svc.storage_dir).len(), 1, "a copy is kept in storage");
    svc.stop().await;
}

on_both_databases!(the_missing_info_mail_goes_out_by_smtp);
