//! Exports held open: each holds pages of its set at the service until its client reads them,
//! so a user streams at most `MAX_EXPORTS_PER_USER` at once, whatever tokens they use.

use std::time::Duration;

use crate::common::Api;
use crate::common::{Db, EMAIL, PASSWORD, TestService, error_body};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use super::*;

const EXPORT: &str = "/api/v1/fieldreport/companies/export";

/// An export whose client reads its head and nothing more.
async fn unread_export(svc: &TestService, token: &str) -> TcpStream {
    let mut stream = held(svc, token, "GET", EXPORT, None).await;
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "the export answered");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// Whether an export of `token`'s user is admitted now: read to its end when it is, the 429
/// checked when it is not.
async fn admitted(svc: &TestService, token: &str, path: &str) -> bool {
    let answer = svc.get(token, path).await;
    if answer.status() == 200 {
        let text = answer.text().await.unwrap();
        assert!(text.lines().last().unwrap().contains("next_cursor"), "read to its end");
        return true;
    }
    assert!(answer.headers().contains_key("retry-after"));
    let body = error_body(answer, 429).await;
    assert_eq!(body["error_code"], "too_many_exports", "{body}");
    false
}

/// A set larger than what the sockets and the export's chunks hold, so that an export nobody
/// reads stays open; with `MAX_EXPORTS_PER_USER` of them open, the user's next export (by
/// another login's token, of another area too) is 429 `too_many_exports` with `Retry-After`,
/// another user's is not, and the place of an export whose client left is given back.
async fn exports_are_capped_per_user(db: Db) {
    let svc = TestService::start(db, &[("MAX_EXPORTS_PER_USER", "2")]).await;
    let token = svc.user_token().await;
    svc.seed("Companies", 30_000).await;
    svc.get_json(&token, "/api/v1/fieldreport/sync/companies").await;
    let mut open = vec![unread_export(&svc, &token).await, unread_export(&svc, &token).await];

    let second_login = svc.token(EMAIL, PASSWORD).await;
    assert!(!admitted(&svc, &second_login, EXPORT).await, "a third export of the same user");
    assert!(!admitted(&svc, &token, "/api/v1/erp/export/customer").await, "the ERP's exports count too");
    let (bob, _root) = svc.bob_and_root().await;
    assert!(admitted(&svc, &bob, EXPORT).await, "another user's export");

    drop(open.pop());
    let mut again = false;
    for _ in 0..100 {
        again = admitted(&svc, &token, EXPORT).await;
        if again {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(again, "the place of an export whose client left is given back");
    drop(open);
    svc.stop().await;
}

crate::on_both_databases!(exports_are_capped_per_user);
