//! Every request head over `MAX_HEADER_BYTES` gets the same answer, whatever its size and
//! whichever part of the front refuses it: 431 with the JSON error body (`message`,
//! `error_code` `headers_too_large`, `request_id`) and that id in `x-request-id`. A head just
//! over the limit is refused by the front's own check; one a kilobyte over, or several times the
//! limit, outgrows hyper's read buffer and is answered by hyper, replaced on its way out
//! (`src/front/own_answers.rs`); so is a head with more headers than hyper parses.

use serde_json::Value;

use crate::common::requests::raw_exchange;
use crate::common::{Db, TestService};

/// `MAX_HEADER_BYTES`' default.
const LIMIT: usize = 16 * 1024;

/// A head of exactly `size` bytes on the wire: request line, a padding header, the empty line.
fn head_of(size: usize) -> Vec<u8> {
    let start = "GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-pad: ";
    let padding = size - start.len() - "\r\n\r\n".len();
    format!("{start}{}\r\n\r\n", "p".repeat(padding)).into_bytes()
}

/// Sends `head` over a fresh connection and reads the answer to its end: the status, the
/// `x-request-id` header and the body.
async fn send(address: std::net::SocketAddr, head: &[u8]) -> (u16, Option<String>, String) {
    let (status, headers, body) = raw_exchange(address, head).await;
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    (status, request_id, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_oversized_head_gets_the_json_431_with_its_request_id() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let address = svc.service.as_ref().expect("running").address;

    let (status, _, _) = send(address, &head_of(LIMIT)).await;
    assert_eq!(status, 200, "a head of exactly the limit is served");

    let mut many_headers = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n".to_vec();
    for i in 0..150 {
        many_headers.extend_from_slice(format!("x-h{i}: 1\r\n").as_bytes());
    }
    many_headers.extend_from_slice(b"\r\n");
    let heads = [
        ("one byte over", head_of(LIMIT + 1)),
        ("a kilobyte over", head_of(LIMIT + 1024)),
        ("four times the limit", head_of(4 * LIMIT)),
        ("150 headers", many_headers),
    ];
    for (what, head) in heads {
        let (status, request_id, body) = send(address, &head).await;
        assert_eq!(status, 431, "{what}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {body:?}"));
        assert_eq!(body["error_code"], "headers_too_large", "{what}: {body}");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("16384 bytes")), "{what}: {body}");
        let id = body["request_id"].as_str().unwrap_or_else(|| panic!("{what}: no request_id: {body}"));
        assert!(!id.is_empty(), "{what}: {body}");
        assert_eq!(request_id.as_deref(), Some(id), "{what}: the header carries the body's request id");
    }
    // Each refusal is logged with its request id, as every answer is.
    let log = svc.log.text();
    assert!(log.lines().filter(|line| line.contains("\"status\":431")).count() >= 4, "{log}");

    let (status, _, _) = send(address, &head_of(200)).await;
    assert_eq!(status, 200, "the front serves on");
    svc.stop().await;
}
