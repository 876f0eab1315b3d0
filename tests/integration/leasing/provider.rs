//! The provider as it answers behind a load balancer or proxy, unlike the simulator's own
//! answers: error pages in HTML or with no body, for statuses the description lists with the
//! provider's JSON error. The status decides what the failure is; the provider's JSON error,
//! when there is one, still gives the message.

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
    let svc = TestService::start(db, &[]).await;
    let token = svc.user_token().await;
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

on_both_databases!(error_pages_keep_their_status);
