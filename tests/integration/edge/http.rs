//! The HTTP surface common to every route: the served document, request ids, error shape,
//! body limits, probes and graceful shutdown.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::time::Duration;

use crate::common::{DOCUMENT, Db, TestService, error_body};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn served_document_equals_the_committed_file(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let response = svc.client.get(svc.url("/docs/openapi.json")).checked().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let served = response.text().await.unwrap();
    assert!(served == DOCUMENT, "served document differs from spec/openapi.json");
    // The internal path behind it is not reachable from outside.
    let internal = svc.client.get(svc.url("/__internal/docs/openapi.json")).checked().await.unwrap();
    error_body(internal, 404).await;
    svc.stop().await;
}

async fn docs_path_is_configurable(db: Db) {
    let svc = TestService::start(db, &[("DOCS_PATH", "/reference/")]).await;
    let moved = svc.client.get(svc.url("/reference/openapi.json")).checked().await.unwrap();
    assert_eq!(moved.status(), 200);
    assert_eq!(moved.text().await.unwrap(), DOCUMENT);
    error_body(svc.client.get(svc.url("/docs/openapi.json")).checked().await.unwrap(), 404).await;
    svc.stop().await;
}

async fn malformed_json_is_a_400_naming_the_problem(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let response = svc
        .client
        .post(svc.url("/api/v1/login"))
        .header("content-type", "application/json")
        .body("{\"email\": \"a@example.com\", \"password\": ")
        .checked()
        .await
        .unwrap();
    let body = error_body(response, 400).await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("EOF") || message.contains("line 1"), "{message}");

    let missing_field = svc
        .client
        .post(svc.url("/api/v1/login"))
        .json(&serde_json::json!({"email": "a@example.com"}))
        .checked()
        .await
        .unwrap();
    let body = error_body(missing_field, 400).await;
    assert!(body["message"].as_str().unwrap().contains("password"), "{body}");
    svc.stop().await;
}

async fn oversize_bodies_get_413(db: Db) {
    let svc = TestService::start(db, &[("MAX_BODY_BYTES", "2048")]).await;
    let big = format!("{{\"email\": \"{}\", \"password\": \"x\"}}", "a".repeat(4096));
    let declared = svc.send_raw(None, reqwest::Method::POST, "/api/v1/login", big.clone()).await;
    let body = error_body(declared, 413).await;
    assert_eq!(body["error_code"], "payload_too_large");

    // A client still sending a body that declares up to four times the limit is answered, not
    // cut off with a broken pipe: the front reads the rest and throws it away. Sent many
    // times with the default limit (1 MiB, more than a socket buffers), since a cut-off
    // depends on how far the client got.
    let defaults = TestService::start(db, &[]).await;
    let larger = vec![b' '; 2 * 1024 * 1024];
    for _ in 0..10 {
        let sent = defaults.client.post(defaults.url("/api/v1/login")).body(larger.clone()).checked().await;
        let answer = sent.expect("the client is answered while it sends");
        error_body(answer, 413).await;
    }
    defaults.stop().await;

    // Without a Content-Length (chunked), the limit applies while the body streams.
    let chunks = futures::stream::iter(
        big.into_bytes().chunks(512).map(|c| Ok::<_, std::io::Error>(c.to_vec())).collect::<Vec<_>>(),
    );
    let streamed = svc
        .client
        .post(svc.url("/api/v1/login"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .checked()
        .await
        .unwrap();
    error_body(streamed, 413).await;

    // A body under the limit still works on a fresh connection.
    let small = svc.login("nobody@example.com", "whatever").await;
    error_body(small, 401).await;
    svc.stop().await;
}

async fn unknown_routes_and_methods_have_the_error_shape(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let unknown = svc.client.get(svc.url("/api/v1/nothing-here"));
    let body = error_body(unknown.bearer_auth(&token).checked().await.unwrap(), 404).await;
    assert_eq!(body["error_code"], "not_found");
    // Without a token, nothing under /api/v1 but the public routes says whether it exists.
    let body = error_body(svc.client.get(svc.url("/api/v1/nothing-here")).checked().await.unwrap(), 401).await;
    assert_eq!(body["error_code"], "unauthenticated");
    let body = error_body(svc.client.delete(svc.url("/api/v1/login")).checked().await.unwrap(), 405).await;
    assert_eq!(body["error_code"], "method_not_allowed");
    let health = svc.client.get(svc.url("/healthz")).checked().await.unwrap();
    assert_eq!(health.status(), 200);
    assert!(health.headers().contains_key("x-request-id"));
    svc.stop().await;
}

async fn readiness_follows_the_database(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let ready: serde_json::Value = svc.client.get(svc.url("/readyz")).json_value().await;
    assert_eq!(ready["database"], "ok");
    svc.store().close().await;
    let body = error_body(svc.client.get(svc.url("/readyz")).checked().await.unwrap(), 503).await;
    assert_eq!(body["error_code"], "service_unavailable");
    // Liveness does not depend on the database.
    assert_eq!(svc.client.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);
    svc.stop().await;
}

/// Creates a user and opens a raw connection to the service with the head of a login request
/// written: the caller sends the body returned, as it likes.
async fn login_by_hand(svc: &TestService) -> (tokio::net::TcpStream, &'static [u8]) {
    svc.create_user("ada@example.com", "analytical-engine").await;
    let address = svc.service.as_ref().unwrap().address;
    let body = br#"{"email": "ada@example.com", "password": "analytical-engine"}"#;
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /api/v1/login HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    (stream, body)
}

async fn shutdown_lets_an_in_flight_request_finish(db: Db) {
    let mut svc = TestService::start(db, &[]).await;
    let (mut stream, body) = login_by_hand(&svc).await;
    let address = svc.service.as_ref().unwrap().address;
    stream.write_all(&body[..10]).await.unwrap();
    // Wait until the front has forwarded the request (the backend sees a connection).
    tokio::time::sleep(Duration::from_millis(300)).await;

    let service = svc.service.take().unwrap();
    let shutdown = tokio::spawn(service.shutdown());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!shutdown.is_finished(), "shutdown must wait for the request in flight");
    // New connections are refused once shutdown has begun.
    assert!(tokio::net::TcpStream::connect(address).await.is_err());

    stream.write_all(&body[10..]).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("access_token"), "{answer}");
    shutdown.await.unwrap();
    svc.stop().await;
}

/// A client may shut down its sending side once its request is out (half-close): the front
/// still answers it rather than taking the end of its input for the client leaving.
async fn a_client_that_half_closes_gets_its_answer(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let (mut stream, body) = login_by_hand(&svc).await;
    stream.write_all(body).await.unwrap();
    // The login hashes the password (argon2id): the answer is still to come.
    stream.shutdown().await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("access_token"), "{answer}");
    svc.stop().await;
}

async fn one_json_log_line_per_request_without_query_or_secrets(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let response = svc.client.get(svc.url("/healthz?secret=do-not-log-me")).checked().await.unwrap();
    let request_id = response.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(response.status(), 200);
    let lines: Vec<serde_json::Value> = svc
        .log
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every log line is JSON"))
        .filter(|line: &serde_json::Value| line["request_id"] == request_id.as_str())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["method"], "GET");
    assert_eq!(line["path"], "/healthz");
    assert_eq!(line["status"], 200);
    assert!(line["latency_ms"].as_str().unwrap().parse::<f64>().is_ok());
    assert!(!svc.log.text().contains("do-not-log-me"));
    svc.stop().await;
}

on_both_databases!(
    served_document_equals_the_committed_file,
    docs_path_is_configurable,
    malformed_json_is_a_400_naming_the_problem,
    oversize_bodies_get_413,
    unknown_routes_and_methods_have_the_error_shape,
    readiness_follows_the_database,
    shutdown_lets_an_in_flight_request_finish,
    a_client_that_half_closes_gets_its_answer,
    one_json_log_line_per_request_without_query_or_secrets,
);
