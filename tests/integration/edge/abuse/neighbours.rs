//! Requests that must not disturb others: oversized header blocks, bodies sent too slowly,
//! connections beyond the per-address cap, and a token checked before the body is read.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body, leasing_request};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::held_calls::financing_request;
use super::*;

/// Header blocks over the limit, small and huge, answer 431 without disturbing the requests in
/// flight beside them: long waits running while oversized requests arrive all get their normal
/// answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_are_431_and_disturb_no_request_in_flight() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let id = financing_request(&svc, &token, "Waiting GmbH [slow:60]").await;
    let waits: Vec<_> = (0..6)
        .map(|_| {
            let request = svc
                .client
                .get(
                    svc.url(&format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=30&sleep_milliseconds=300")),
                )
                .bearer_auth(&token)
                .checked();
            tokio::spawn(request)
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let address = address(&svc);
    for size in [17_000, 70_000, 300_000, 2_000_000] {
        for _ in 0..4 {
            let head = format!("GET /healthz HTTP/1.1\r\nhost: x\r\nx-junk: {}\r\n", "x".repeat(size));
            let (status, answer) = raw_tolerant(address, head.as_bytes()).await;
            assert!(status == Some(431) || (status.is_none() && size > 1_000_000), "{size} bytes: {answer:.200}");
        }
    }
    assert!(waits.iter().all(|wait| !wait.is_finished()), "the waits were still in flight");
    for wait in waits {
        let answer = wait.await.unwrap().unwrap();
        assert_eq!(answer.status(), 200, "a wait in flight was disturbed");
        let body: Value = answer.json_value().await;
        assert_eq!(body["meta"]["ready_to_sign"], true, "{body}");
    }
    let (status, _) = raw(address, b"GET /healthz HTTP/1.1\r\nhost: x\r\n", b"").await;
    assert_eq!(status, 200);
    svc.stop().await;
}

/// A raw request whose server may close before reading all of it: the status, if an answer
/// came, and what came.
async fn raw_tolerant(address: SocketAddr, head: &[u8]) -> (Option<u16>, String) {
    let mut request = head.to_vec();
    request.extend_from_slice(b"connection: close\r\n\r\n");
    let mut stream = TcpStream::connect(address).await.unwrap();
    let _ = stream.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    (answer.split(' ').nth(1).and_then(|s| s.parse().ok()), answer)
}

/// A body sent a byte at a time is cut off with 408 once its time is up, and the connection
/// closes; other clients are served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_sent_too_slowly_are_408_and_the_connection_closes() {
    let svc = TestService::start(Db::Sqlite, &[("BODY_READ_TIMEOUT_SECONDS", "1")]).await;
    let mut slow = TcpStream::connect(address(&svc)).await.unwrap();
    slow.write_all(
        b"POST /api/v1/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
    )
    .await
    .unwrap();
    let mut sent = 1;
    let mut answer = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(Duration::from_millis(300), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {
                if slow.write_all(b" ").await.is_err() {
                    break;
                }
                sent += 1;
            }
        }
        assert_eq!(svc.client.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "after {sent} bytes: {answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    assert!(sent < 1000, "cut off before the body was complete");
    svc.stop().await;
}

/// Connections beyond the per-address cap are closed at once and counted; once the held ones
/// close, the address is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_refused_at_once() {
    let svc =
        TestService::start(Db::Sqlite, &[("MAX_CONNECTIONS_PER_ADDRESS", "5"), ("HEADER_READ_TIMEOUT_SECONDS", "60")])
            .await;
    let address = address(&svc);
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap(); // and then nothing
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = TcpStream::connect(address).await.unwrap();
    let _ = refused.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await;
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), refused.read_to_end(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the sixth connection was served: {}",
        String::from_utf8_lossy(&buf)
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = raw(address, b"GET /healthz HTTP/1.1\r\nhost: x\r\n", b"").await;
    assert_eq!(status, 200, "served again once the held connections closed");
    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    let refused_line = metrics
        .lines()
        .find(|line| line.starts_with("integration_service_client_connections_refused_total{reason=\"per_address\"}"))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(!refused_line.ends_with(" 0"), "{refused_line}");
    svc.stop().await;
}

/// A guarded route without a well-formed token is 401 before its body is read (a bad body
/// would otherwise be 400 first); token ids are taken exactly as issued (`01|…` is no token),
/// and the scheme without regard to case, as RFC 7235 says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_checked_before_the_body_and_parsed_strictly() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let post = |authorization: Option<String>, body: &'static str| {
        let mut request =
            svc.client.post(svc.url("/api/v1/leasing")).header("content-type", "application/json").body(body);
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.checked()
    };
    for authorization in [None, Some("Bearer nonsense".to_string()), Some(format!("Bearer 0{token}"))] {
        let body = error_body(post(authorization.clone(), "{").await.unwrap(), 401).await;
        assert_eq!(body["error_code"], "unauthenticated", "{authorization:?}: {body}");
    }
    let shown =
        svc.client.get(svc.url("/api/v1/user")).header("authorization", format!("bearer {token}")).checked().await;
    assert_eq!(shown.unwrap().status(), 200, "the scheme is case-insensitive");
    let (id, secret) = token.split_once('|').unwrap();
    let padded = svc.client.get(svc.url("/api/v1/user")).bearer_auth(format!("0{id}|{secret}")).checked().await;
    assert_eq!(padded.unwrap().status(), 401, "an id with a leading zero names no token");
    let mut payload = leasing_request("ACME GmbH");
    payload["Period"] = json!(2_147_483_647);
    payload["Lessee"]["Email"] = json!("not an email");
    let answer = svc.post(&token, "/api/v1/leasing", payload.clone()).await;
    let body = error_body(answer, 422).await;
    assert!(body["errors"]["Period"].is_array() && body["errors"]["Lessee.Email"].is_array(), "{body}");
    svc.stop().await;
}

/// A client that asks for answers and never reads them (a "slow read": requests pipelined into
/// a connection whose receive window stays shut) holds its connection, and the answer waiting
/// to be sent, only until `SEND_TIMEOUT_SECONDS` pass without it taking any of it; then the
/// connection is closed, short of the answers asked for, and its place given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_no_answer_is_disconnected() {
    let svc =
        TestService::start(Db::Sqlite, &[("SEND_TIMEOUT_SECONDS", "1"), ("HEADER_READ_TIMEOUT_SECONDS", "60")]).await;
    let before = open_connections(&svc).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(address(&svc)).await.unwrap();
    // Eight copies of the document (about 1 MB each): more than the sockets' buffers hold.
    let asked = 8;
    stalled.write_all(&b"GET /docs/openapi.json HTTP/1.1\r\nhost: x\r\n\r\n".repeat(asked)).await.unwrap();
    until_open_connections(&svc, "the stalled connection is counted", |open| open > before).await;
    until_open_connections(&svc, "the stalled connection is closed", |open| open <= before).await;
    let mut taken = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stalled.read_to_end(&mut taken)).await;
    assert!(matches!(read, Ok(Ok(_)) | Ok(Err(_))), "the connection was closed");
    let answers = taken.windows(b"HTTP/1.1 200".len()).filter(|w| w == b"HTTP/1.1 200").count();
    assert!(answers < asked, "closed before every answer was sent: {answers} of {asked}");
    assert_eq!(svc.client.get(svc.url("/healthz")).checked().await.unwrap().status(), 200);
    svc.stop().await;
}

/// `integration_service_client_connections`: the client connections open now, this one
/// included. Asked on a connection of its own that is not kept, so that the asking leaves no
/// connection behind.
async fn open_connections(svc: &TestService) -> u64 {
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let metrics = client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    let line = metrics.lines().find(|line| line.starts_with("integration_service_client_connections "));
    line.and_then(|line| line.rsplit(' ').next()?.parse().ok()).unwrap_or_else(|| panic!("{metrics}"))
}

/// Asks for the open connections until `holds` (at most 30 s).
async fn until_open_connections(svc: &TestService, what: &str, holds: impl Fn(u64) -> bool) {
    let started = std::time::Instant::now();
    loop {
        let open = open_connections(svc).await;
        if holds(open) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{what}: never happened ({open} open)");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
