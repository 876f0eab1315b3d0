//! Bodies, numbers and encodings beyond the limits (oversized, deep, huge, invalid UTF-8), and
//! headers sent a byte a second.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_413_whether_declared_or_chunked() {
    let svc = TestService::start(Db::Sqlite, &[("MAX_BODY_BYTES", "4096")]).await;
    let token = svc.user_token().await;
    let big = json!({"Id": "big", "Version": 1, "Name": "x".repeat(8192)}).to_string();

    let declared =
        svc.send_raw(Some(&token), reqwest::Method::POST, "/api/v1/fieldreport/companies", big.clone()).await;
    assert_eq!(error_body(declared, 413).await["error_code"], "payload_too_large");

    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big.as_bytes().chunks(1000).map(|c| Ok(c.to_vec())).collect();
    let chunked = svc
        .client
        .post(svc.url("/api/v1/fieldreport/companies"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .checked()
        .await
        .unwrap();
    assert_eq!(error_body(chunked, 413).await["error_code"], "payload_too_large");

    // Nothing was stored, and a body within the limit still works.
    let small = svc
        .post(&token, "/api/v1/fieldreport/companies", json!({"Id": "small", "Version": 1, "Name": "Small GmbH"}))
        .await;
    assert_eq!(small.status(), 201);
    let list: Value = svc.get_json(&token, "/api/v1/fieldreport/companies").await;
    assert_eq!(list["meta"]["total"], 1, "{list}");
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_json_huge_numbers_and_invalid_utf8_are_4xx_and_the_service_goes_on() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let address = address(&svc);
    let post = |path: &'static str, body: Vec<u8>| {
        svc.client
            .post(svc.url(path))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .checked()
    };

    // JSON nested 10,000 deep, as arrays and as objects.
    let arrays = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes();
    let objects = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)).into_bytes();
    for (path, body) in [
        ("/api/v1/fieldreport/companies", arrays.clone()),
        ("/api/v1/fieldreport/companies", objects.clone()),
        ("/api/v1/leasing", objects.clone()),
        ("/api/v1/login", arrays.clone()),
    ] {
        let response = post(path, body).await.unwrap();
        let status = response.status().as_u16();
        assert!(status == 400 || status == 422, "{path}: {status}");
        error_body(response, status).await;
    }
    assert_eq!(svc.client.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);

    // Numbers beyond 64 bits in integer fields, in bodies and in paging.
    for body in [
        r#"{"Id": "n1", "Version": 123456789012345678901234567890}"#,
        r#"{"Id": "n2", "Version": -9223372036854775809}"#,
        r#"{"Id": "n3", "Version": 18446744073709551616}"#,
        r#"{"Id": "n4", "Version": 1e400}"#,
    ] {
        let response = post("/api/v1/fieldreport/companies", body.as_bytes().to_vec()).await.unwrap();
        let status = response.status().as_u16();
        assert!((400..500).contains(&status), "{body}: {status}");
        error_body(response, status).await;
    }
    let response =
        post("/api/v1/leasing/calculate", br#"{"FinancingAmount": 1000, "Period": 99999999999999999999}"#.to_vec())
            .await
            .unwrap();
    let status = response.status().as_u16();
    assert!((400..500).contains(&status), "calculate: {status}");
    for query in ["page=18446744073709551616", "per_page=99999999999999999999999", "page=-1", "per_page=4294967296"] {
        let response = svc.get(&token, &format!("/api/v1/fieldreport/companies?{query}")).await;
        let status = response.status().as_u16();
        assert!(status == 400 || status == 422, "{query}: {status}");
        error_body(response, status).await;
    }
    // The largest Version there is cannot be increased: a conflict, not an overflow.
    let at_max = post(
        "/api/v1/fieldreport/companies",
        json!({"Id": "max", "Version": i64::MAX, "Name": "Max"}).to_string().into_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(at_max.status(), 201);
    let id = at_max.json::<Value>().await.unwrap()["data"]["Id"].as_str().unwrap().to_string();
    let bumped = svc.patch(&token, &format!("/api/v1/fieldreport/companies/{id}"), json!({"Name": "Max 2"})).await;
    error_body(bumped, 409).await;

    // Invalid UTF-8 in the body, the path and a header.
    let bad_utf8 = b"{\"email\": \"\xff\xfe@example.com\", \"password\": \"x\"}".to_vec();
    let response = svc.send_raw(None, reqwest::Method::POST, "/api/v1/login", bad_utf8.clone()).await;
    error_body(response, 400).await;
    let response = post("/api/v1/fieldreport/companies", bad_utf8).await.unwrap();
    error_body(response, 400).await;
    let auth = format!("authorization: Bearer {token}\r\n");
    for target in ["/api/v1/fieldreport/show/%FF%FE", "/api/v1/fieldreport/companies/%C3%28", "/api/v1/leasing/%FF"] {
        let (status, body) = raw(address, format!("GET {target} HTTP/1.1\r\nhost: t\r\n{auth}").as_bytes(), b"").await;
        assert!((400..500).contains(&status), "{target}: {status} {body}");
    }
    let mut head = b"GET /api/v1/fieldreport/show/\xff\xfe HTTP/1.1\r\nhost: t\r\n".to_vec();
    head.extend_from_slice(auth.as_bytes());
    let (status, _) = raw(address, &head, b"").await;
    assert_eq!(status, 400);
    let (status, body) =
        raw(address, b"GET /api/v1/user HTTP/1.1\r\nhost: t\r\nauthorization: Bearer \xff\xfe\r\n", b"").await;
    assert_eq!(status, 401, "{body}");
    let mut head =
        b"POST /api/v1/leasing HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\nidempotency-key: \xff\xfe\r\n"
            .to_vec();
    head.extend_from_slice(auth.as_bytes());
    let (status, body) = raw(address, &head, b"{}").await;
    assert!(status == 400 || status == 422, "{status} {body}");

    // The service goes on: a normal request still works.
    let user = svc.get(&token, "/api/v1/user").await;
    assert_eq!(user.status(), 200);
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_sent_a_byte_a_second_are_cut_off() {
    let svc = TestService::start(Db::Sqlite, &[("HEADER_READ_TIMEOUT_SECONDS", "1")]).await;
    let address = address(&svc);
    // A fresh connection per check: the 1 s limit also ends idle keep-alive connections, and a
    // pooled one could be closed just as it is reused.
    let other = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let head = b"GET /healthz HTTP/1.1\r\nhost: slow.example\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut slow = TcpStream::connect(address).await.unwrap();
    let mut sent = 0;
    let mut served_meanwhile = 0;
    let mut closed = false;
    let mut answer = Vec::new();
    while sent < head.len() {
        if slow.write_all(&head[sent..sent + 1]).await.is_err() {
            closed = true;
            break;
        }
        sent += 1;
        // Another client is served while this one trickles.
        let health = other.get(svc.url("/healthz")).checked().await.unwrap();
        assert_eq!(health.status(), 200);
        served_meanwhile += 1;
        let mut buf = [0u8; 1024];
        match tokio::time::timeout(Duration::from_secs(1), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {} // nothing yet: send the next byte
        }
    }
    assert!(closed, "the server kept a client that took {sent} s for {} header bytes", head.len());
    assert!(sent < head.len(), "the whole header was sent before the cut");
    // A byte a second against the configured 1 s: cut within a few bytes (the default 10 s
    // would let about ten through), so the setting is what cut it.
    assert!(sent <= 5, "cut only after {sent} bytes");
    assert!(served_meanwhile >= 1);
    // Whatever the server said before closing, it was not a served request.
    let answer = String::from_utf8_lossy(&answer);
    assert!(!answer.contains("\"ok\""), "{answer}");
    assert_eq!(other.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);
    svc.stop().await;
}

/// An error whose message echoes a huge input (an unknown job kind or event type of 70,000
/// characters) still answers the common error shape, with the status's own code and, under
/// `/api/v1/leasing`, `success: false`, not an empty body that a client cannot read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_that_echoes_a_huge_input_keeps_the_error_shape() {
    let svc = TestService::start(Db::Sqlite, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let token = svc.user_token().await;
    let huge = "k".repeat(70_000);
    for (path, body) in [
        ("/api/v1/jobs", json!({"kind": huge})),
        ("/api/v1/leasing/subscriptions", json!({"url": "http://127.0.0.1:9/hook", "events": [huge]})),
    ] {
        let answer = svc.client.post(svc.url(path)).bearer_auth(&token).json(&body).checked().await.unwrap();
        let error = error_body(answer, 422).await;
        assert_eq!(error["error_code"], "validation_failed", "{path}: {error}");
        assert!(error.to_string().len() < 1024, "{path}: {error}");
        if path.starts_with("/api/v1/leasing") {
            assert_eq!(error["success"], false, "{error}");
        }
    }
    svc.stop().await;
}

/// A company's `ExternalId` is bounded like its `Id` (255 characters): it is indexed, and on
/// Postgres an index entry holds about 2,700 bytes, so a create or update with a longer one
/// failed with 500 after the field-report system had taken it (the mirror then lacked what
/// the upstream held). Refused with 422 before anything is sent, on both databases alike.
async fn a_long_external_id_is_refused_before_it_is_sent(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    // Letters without a pattern, which Postgres cannot compress below its index limit.
    let mut state = 7u64;
    let long: String = (0..10_000)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            char::from(b'a' + (state >> 59) as u8 % 26)
        })
        .collect();
    let send = |method: reqwest::Method, path: &str, body: Value| {
        svc.client.request(method, svc.url(path)).bearer_auth(&token).json(&body).checked()
    };
    let company = |external: &str| json!({"Id": "new", "Version": 1, "Name": "ACME", "ExternalId": external});
    let created = send(reqwest::Method::POST, "/api/v1/fieldreport/companies", company(&long[..255])).await.unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json_value().await["data"]["Id"].as_str().unwrap().to_string();
    let sent = svc.fieldreport_received().await.len();
    let refused = send(reqwest::Method::POST, "/api/v1/fieldreport/companies", company(&long)).await.unwrap();
    assert!(error_body(refused, 422).await["errors"]["ExternalId"].is_array());
    let path = format!("/api/v1/fieldreport/companies/{id}");
    let refused = send(reqwest::Method::PATCH, &path, json!({"ExternalId": long})).await.unwrap();
    assert!(error_body(refused, 422).await["errors"]["ExternalId"].is_array());
    assert_eq!(svc.fieldreport_received().await.len(), sent, "a refused write reached the field-report system");
    svc.stop().await;
}

crate::on_both_databases!(a_long_external_id_is_refused_before_it_is_sent);

/// Framing a proxy in front might read otherwise (request smuggling): `Content-Length` beside
/// `Transfer-Encoding: chunked` is read as chunked and the connection closes after the answer,
/// so a request behind it is never read; two lengths, or an unknown coding beside a length,
/// are 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_framing_is_never_read_two_ways() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let body = r#"{"email":"nobody@example.com","password":"x"}"#;
    let head = "POST /api/v1/login HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n";
    let chunked =
        format!("{head}content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let mut stream = TcpStream::connect(address(&svc)).await.unwrap();
    stream.write_all(format!("{chunked}GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n").as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 401 "), "{answer}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "the request behind was read: {answer}");
    // `raw` adds the body's own `content-length`.
    for framing in ["content-length: 5\r\n", "transfer-encoding: gzip\r\n"] {
        let (status, answer) = raw(address(&svc), format!("{head}{framing}").as_bytes(), body.as_bytes()).await;
        assert_eq!(status, 400, "{framing}: {answer}");
        assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["error_code"], "bad_request", "{framing}");
    }
    svc.stop().await;
}

/// A header the service reads one of, sent twice, is 400 before anything reads either: a proxy
/// that checked the first `Authorization` (or keyed a retry on the first `Idempotency-Key`)
/// would otherwise see another request than the service. Lists (`X-Forwarded-For`) pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_read_once_sent_twice_is_400() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let body = r#"{"kind":"fieldreport.sync","target":"tags"}"#;
    let head = "POST /api/v1/jobs HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n";
    let bearer = format!("authorization: Bearer {token}\r\n");
    for (twice, name) in [
        (format!("{bearer}authorization: Bearer x\r\n"), "Authorization"),
        (format!("authorization: Bearer x\r\n{bearer}"), "Authorization"),
        (format!("{bearer}idempotency-key: a\r\nidempotency-key: b\r\n"), "Idempotency-Key"),
        (format!("{bearer}content-type: text/plain\r\n"), "Content-Type"),
        (format!("{bearer}host: u\r\n"), "Host"),
    ] {
        let (status, answer) = raw(address(&svc), format!("{head}{twice}").as_bytes(), body.as_bytes()).await;
        assert_eq!(status, 400, "{twice}: {answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error_code"], "bad_request", "{twice}");
        assert!(answer["message"].as_str().unwrap().contains(name), "{answer}");
    }
    let listed = format!("{head}{bearer}x-forwarded-for: 10.0.0.1\r\nx-forwarded-for: 10.0.0.2\r\n");
    let (status, answer) = raw(address(&svc), listed.as_bytes(), body.as_bytes()).await;
    assert_eq!(status, 202, "{answer}");
    svc.stop().await;
}
