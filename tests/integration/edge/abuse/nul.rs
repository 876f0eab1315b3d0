//! The NUL character (U+0000): a text value of Postgres cannot hold it, SQLite's can. Records
//! that hold one (as `\u0000` in their JSON) and requests that carry one are answered on both
//! databases alike, never with a 500.

use crate::common::contract::Checked;
use crate::common::{Api, Db, TestService};
use serde_json::json;

/// One caller's company named with a NUL leaves everyone's lookups of the companies by a field
/// working: on Postgres each lookup cast every document of the set to `jsonb`, which refuses
/// an escaped NUL, so the whole set answered 500 to every user.
async fn a_record_holding_a_nul_leaves_the_lookups_of_its_set_working(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let (bob, _) = svc.bob_and_root().await;
    for name in ["ACME GmbH", "Evil\u{0}Corp"] {
        let company = json!({"Id": "new", "Version": 1, "Name": name, "IsPhysicalPerson": false});
        let answer = svc.client.post(svc.url("/api/v1/fieldreport/companies")).bearer_auth(&token).json(&company);
        assert_eq!(answer.checked().await.unwrap().status(), 201, "{name:?}");
    }
    let found = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Name/ACME%20GmbH").await;
    assert_eq!(found["data"].as_array().map(Vec::len), Some(1), "{found}");
    let having = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Name").await;
    assert_eq!(having["data"].as_array().map(Vec::len), Some(2), "{having}");
    let none = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Missing").await;
    assert_eq!(none["data"].as_array().map(Vec::len), Some(0), "{none}");
    svc.stop().await;
}

/// A NUL in an id, a filter or a body text is the request's fault: on SQLite it is looked up
/// or stored like any other character, on Postgres it is refused with 400 `bad_request`; it
/// was a 500 `internal_error` there on every route that reached the database with it.
async fn a_nul_in_a_request_is_a_client_error(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let get = |path: &str| svc.client.get(svc.url(path)).bearer_auth(&token);
    let post = |path: &str, body| svc.client.post(svc.url(path)).bearer_auth(&token).json(&body);
    let requests = [
        ("subscription", get("/api/v1/leasing/subscriptions/sub_%00")),
        ("financing request", get("/api/v1/leasing/abc%00def")),
        ("company", get("/api/v1/fieldreport/companies/1%00")),
        ("companies by name", get("/api/v1/fieldreport/show/companies/Name/a%00b")),
        ("ERP customers by company", get("/api/v1/erp/show/customer/company/a%00")),
        ("login", post("/api/v1/login", json!({"email": "a\u{0}@example.com", "password": "a long passphrase"}))),
        (
            "subscribe",
            post("/api/v1/leasing/subscriptions", json!({"url": "http://127.0.0.1:9/hook", "description": "a\u{0}b"})),
        ),
    ];
    for (what, request) in requests {
        let answer = request.checked().await.unwrap();
        let status = answer.status().as_u16();
        let body = answer.text().await.unwrap();
        assert!(status < 500, "{what}: {status} {body}");
        if db == Db::Postgres && status >= 400 {
            assert!(status == 400 || status == 422, "{what}: {status} {body}");
        }
    }
    svc.stop().await;
}

crate::on_both_databases!(
    a_record_holding_a_nul_leaves_the_lookups_of_its_set_working,
    a_nul_in_a_request_is_a_client_error,
);
