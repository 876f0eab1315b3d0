//! Path traversal: refused everywhere, and nothing written outside the storage folder.

use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService};
use serde_json::Value;

use super::*;

const TRAVERSALS: &[&str] = &[
    "..%2F..%2Fetc%2Fpasswd",
    "..%5C..%5Cetc%5Cpasswd",
    "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "%2e%2e",
    "..%252F..%252Fetc%252Fpasswd",
    "....%2F%2F....%2F%2Fetc",
    "..",
    "../../etc/passwd",
];

/// Every file under `dir`, relative to it.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                found.push(entry.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_traversal_is_refused_and_writes_nothing_outside_storage() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let auth = format!("authorization: Bearer {token}\r\n");
    let doc: Value = svc.client.get(svc.url("/docs/openapi.json")).json_value().await;
    let example = &doc["components"]["schemas"]["FinancingRequestPayload"]["example"];
    let created: Value =
        svc.client.post(svc.url("/api/v1/leasing")).bearer_auth(&token).json(example).json_value().await;
    let financing_id = created["data"]["FinancingId"].as_str().unwrap().to_string();

    // A legitimate store, so the storage check below has something to see.
    let (status, _) = raw(
        address(&svc),
        format!(
            "GET /api/v1/leasing/{financing_id}/contractdocument/base64?store_pdf=true HTTP/1.1\r\nhost: t\r\n{auth}"
        )
        .as_bytes(),
        b"",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(files_under(&svc.storage_dir), vec![format!("contracts/{financing_id}.pdf")]);

    let routes = [
        "/api/v1/leasing/{}",
        "/api/v1/leasing/{}/contractdocument/base64?store_pdf=true",
        "/api/v1/leasing/leasing/request-flow/test-flow/{}",
        "/api/v1/fieldreport/show/{}",
        "/api/v1/fieldreport/sync/{}",
        "/api/v1/fieldreport/show/{}/Name/x",
        "/api/v1/fieldreport/companies/{}",
        "/api/v1/erp/show/{}",
        "/api/v1/erp/setup/{}",
        "/api/v1/erp/show/customer/{}",
        "/api/v1/erp/update/customer/{}",
        "/api/v1/erp/entityPullAttr/{}",
    ];
    let mut refused = 0;
    for route in routes {
        for traversal in TRAVERSALS {
            let target = route.replace("{}", traversal);
            let head = format!("GET {target} HTTP/1.1\r\nhost: t\r\n{auth}");
            let (status, body) = raw(address(&svc), head.as_bytes(), b"").await;
            assert!([400, 404, 422].contains(&status), "GET {target}: {status} {body}");
            refused += 1;
        }
    }
    // Raw backslashes, as a Windows path would have them.
    let (status, _) = raw(
        address(&svc),
        format!("GET /api/v1/leasing/..\\..\\etc\\passwd HTTP/1.1\r\nhost: t\r\n{auth}").as_bytes(),
        b"",
    )
    .await;
    assert!([400, 404, 422].contains(&status), "backslashes: {status}");
    assert_eq!(refused, routes.len() * TRAVERSALS.len());
    eprintln!("path traversal: {} requests refused", refused + 1);

    // Nothing was written but the one contract, and nothing beside the storage folder.
    assert_eq!(files_under(&svc.storage_dir), vec![format!("contracts/{financing_id}.pdf")]);
    let outside = svc.storage_dir.parent().unwrap();
    assert!(!outside.join("etc").exists() && !outside.join("passwd.pdf").exists());
    svc.stop().await;
}

/// The front decides by the path as dropshot routes it (empty segments dropped, each segment
/// percent-decoded), not by its spelling: the internal routes stay unreachable however they are
/// written, and an unknown route under `/api/v1` says nothing without a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_decides_by_the_path_dropshot_routes() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    for target in [
        "/__internal/docs/openapi.json",
        "//__internal/docs/openapi.json",
        "/%5f%5finternal/docs/openapi.json",
        "/%5F%5Finternal//docs/page/bare",
    ] {
        let (status, body) = raw(address(&svc), format!("GET {target} HTTP/1.1\r\nhost: t\r\n").as_bytes(), b"").await;
        assert_eq!(status, 404, "GET {target}: {body:.200}");
    }
    for target in ["/api/v1/no-such-route", "//api/v1/no-such-route", "/api/v1//no-such-route/", "/%61pi/v1/x"] {
        let (status, body) = raw(address(&svc), format!("GET {target} HTTP/1.1\r\nhost: t\r\n").as_bytes(), b"").await;
        assert_eq!(status, 401, "GET {target}: {body:.200}");
    }
    // A leasing route's errors keep the leasing envelope whichever spelling reached it.
    for target in ["/api/v1/leasing/subscriptions", "//api/v1/leasing/subscriptions", "/api/v1/%6Ceasing/subscriptions"]
    {
        let (status, body) = raw(address(&svc), format!("GET {target} HTTP/1.1\r\nhost: t\r\n").as_bytes(), b"").await;
        assert_eq!(status, 401, "GET {target}: {body:.200}");
        assert!(body.contains(r#""success":false"#), "GET {target}: {body:.200}");
    }
    svc.stop().await;
}
