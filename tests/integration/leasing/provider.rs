//! The provider as it answers unlike the simulator: behind a load balancer or proxy, error
//! pages in HTML or with no body for statuses the description lists with the provider's JSON
//! error (the status decides what the failure is; the provider's JSON error, when there is one,
//! still gives the message); the contract document as the PDF itself or its base64 text, the
//! forms the provider's documentation leaves open beside the JSON one.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, serve};

use crate::common::{Api, Db, TestService, error_body};
use serde_json::{Value, json};

const PAGE: &str = "<html><head><title>Error</title></head><body><h1>Service Unavailable</h1></body></html>";

/// A fault on the provider's reads of `id` answering `status` with `body` as `content_type`.
fn page(id: &str, status: u16, body: &str, content_type: &str, times: u32) -> Value {
    json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": status, "body": body,
        "content_type": content_type, "times": times})
}

async fn show(svc: &TestService, token: &str, id: &str) -> reqwest::Response {
    svc.get(token, &format!("/api/v1/leasing/{id}")).await
}

async fn error_pages_keep_their_status(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let created: Value = svc.post_json(&token, "/api/v1/leasing", crate::common::leasing_request("ACME GmbH")).await;
    let id = created["data"]["FinancingId"].as_str().unwrap().to_string();

    for (status, body, content_type) in
        [(500, PAGE, "text/html"), (502, PAGE, "text/html"), (503, "", "text/plain"), (504, PAGE, "text/html")]
    {
        // A read is retried: two error pages are absorbed, three are an upstream error.
        svc.leasing_fault(page(&id, status, body, content_type, 2)).await;
        assert_eq!(show(&svc, &token, &id).await.status(), 200, "after two {status} pages");
        svc.leasing_fault(page(&id, status, body, content_type, 3)).await;
        let answer = error_body(show(&svc, &token, &id).await, 500).await;
        assert_eq!(answer["error_code"], "upstream_error", "{status}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(&status.to_string()), "{status}: {message}");
    }

    // A 404 page is the provider not knowing the request, not an unreadable answer.
    svc.leasing_fault(page(&id, 404, PAGE, "text/html", 1)).await;
    let answer = error_body(show(&svc, &token, &id).await, 500).await;
    assert_eq!(answer["error_code"], "upstream_rejected", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("404"), "{answer}");

    // The provider's own JSON error still gives the message.
    let error = json!({"Message": "Database offline", "StatusCode": 500, "CorrelationId": "c-42"}).to_string();
    svc.leasing_fault(page(&id, 500, &error, "application/json", 3)).await;
    let answer = error_body(show(&svc, &token, &id).await, 500).await;
    assert_eq!(answer["error_code"], "upstream_error", "{answer}");
    let message = answer["message"].as_str().unwrap();
    assert!(message.contains("Database offline") && message.contains("c-42"), "{message}");
    svc.stop().await;
}

/// A binary PDF, as real ones start (a comment of bytes above 127 after the header).
fn binary_pdf() -> Vec<u8> {
    let mut pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    pdf.extend(integration_service::sandbox::pdf::one_page("Contract").split_off(9));
    pdf
}

/// A provider whose contract document of `raw-pdf` is the PDF itself (`application/pdf`), and
/// of `base64-text` the PDF's base64 as plain text.
async fn document_provider() -> String {
    let handler = |request: SimRequest| async move {
        let (content_type, body) = match request.segments().as_slice() {
            [.., "raw-pdf", "contractdocument"] => ("application/pdf", binary_pdf()),
            [.., "base64-text", "contractdocument"] => ("text/plain", STANDARD.encode(binary_pdf()).into_bytes()),
            _ => return integration_service::sandbox::http::empty(http::StatusCode::NOT_FOUND),
        };
        http::Response::builder()
            .header(http::header::CONTENT_TYPE, content_type)
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .unwrap()
    };
    let bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let log = integration_service::telemetry::discard();
    let address = serve(bind, Arc::new(Faults::default()), log, handler).await.unwrap();
    format!("http://{address}")
}

async fn a_contract_document_answered_bare_is_read(db: Db) {
    let provider = document_provider().await;
    let (svc, token) = TestService::with_user(db, &[("LEASING_BASE_URL", &provider)]).await;
    for id in ["raw-pdf", "base64-text"] {
        let path = format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=true");
        let document = svc.get_json(&token, &path).await;
        assert_eq!(STANDARD.decode(document["data"]["Content"].as_str().unwrap()).unwrap(), binary_pdf(), "{id}");
        let stored = std::fs::read(svc.storage_dir.join(format!("contracts/{id}.pdf"))).unwrap();
        assert_eq!(stored, binary_pdf(), "{id}");
    }
    svc.stop().await;
}

/// A create answered 2xx without a usable `FinancingId` (a proxy's page, a redirect the client
/// followed to another resource, a provider fault) is no created request.
async fn a_create_answered_without_a_financing_id_fails(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for answer in [json!({"State": "RequestToGrenke"}), json!({"FinancingId": "../../x", "State": "RequestToGrenke"})] {
        let rule = json!({"path_prefix": "/basic/v1/requests", "status": 200, "body": answer.to_string(), "times": 1});
        svc.leasing_fault(rule).await;
        let created = svc.post(&token, "/api/v1/leasing", crate::common::leasing_request("ACME GmbH")).await;
        let body = error_body(created, 500).await;
        assert_eq!(body["error_code"], "upstream_invalid_response", "{answer}: {body}");
        assert!(body["message"].as_str().unwrap().contains("FinancingId"), "{body}");
    }
    svc.stop().await;
}

on_both_databases!(
    error_pages_keep_their_status,
    a_contract_document_answered_bare_is_read,
    a_create_answered_without_a_financing_id_fails,
);
