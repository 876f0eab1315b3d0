//! A financing request is its creator's: another user reading or acting on it by its id gets
//! 404 before anything is asked of the provider, on every route that names one; an operator
//! reaches every request; a request the service has no creator of (created elsewhere) is
//! reached by anyone, and becomes the first watcher's.

use crate::common::{Api, JsonAnswer};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{Db, TestService, clear_faults, error_body, execute, leasing_request};
use sqlx::AssertSqlSafe;

async fn create(svc: &TestService, token: &str, company: &str) -> String {
    let created = svc.post(token, "/api/v1/leasing", leasing_request(company)).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    created["data"]["FinancingId"].as_str().unwrap().to_string()
}

/// Every route that names a financing request, with a body where it takes one.
fn routes(id: &str) -> Vec<(Method, String, Option<Value>)> {
    let signer = json!({"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example"});
    vec![
        (Method::GET, format!("/api/v1/leasing/{id}"), None),
        (Method::PATCH, format!("/api/v1/leasing/{id}"), Some(json!({"FinancingAmount": 1000}))),
        (Method::PATCH, format!("/api/v1/leasing/{id}/lessee"), Some(json!({"CompanyName": "Other GmbH"}))),
        (Method::GET, format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=1&sleep_milliseconds=0"), None),
        (Method::GET, format!("/api/v1/leasing/{id}/e-signature/configuration"), None),
        (Method::POST, format!("/api/v1/leasing/{id}/e-signature"), Some(signer)),
        (Method::PUT, format!("/api/v1/leasing/{id}/cancel-e-signature"), None),
        (Method::PUT, format!("/api/v1/leasing/{id}/switch-to-paper-contract"), None),
        (Method::GET, format!("/api/v1/leasing/{id}/contractdocument/base64"), None),
        (Method::POST, format!("/api/v1/leasing/{id}/contractdocument/link"), None),
        (Method::GET, format!("/api/v1/leasing/leasing/request-flow/test-flow/{id}"), None),
        (Method::POST, format!("/api/v1/leasing/{id}/watch"), None),
    ]
}

async fn financing_requests_belong_to_their_creator(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let alice = svc.user_token().await;
    let (bob, root) = svc.bob_and_root().await;
    let alices = create(&svc, &alice, "Alice GmbH").await;

    let provider_calls = svc.provider_request_count().await;
    for (method, path, body) in routes(&alices) {
        let answer = svc.call(&bob, method.clone(), &path, body).await;
        let body = error_body(answer, 404).await;
        assert_eq!(
            (body["error_code"].as_str(), body["success"].as_bool()),
            (Some("not_found"), Some(false)),
            "{method} {path}: {body}"
        );
    }
    assert_eq!(svc.provider_request_count().await, provider_calls, "nothing was asked of the provider for bob");

    let path = format!("/api/v1/leasing/{alices}");
    let read: Value = svc.get_json(&alice, &path).await;
    assert_eq!(read["data"]["FinancingId"], alices.as_str(), "{read}");
    assert_eq!(svc.get(&root, &path).await.status(), 200, "an operator reads every request");

    // A request created at the provider, not through the service, has no creator here.
    let elsewhere = svc
        .client
        .post(format!("{}/basic/v1/requests", svc.leasing.trim_end_matches('/')))
        .json(&leasing_request("Elsewhere GmbH"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 201);
    let elsewhere: Value = elsewhere.json_value().await;
    let id = elsewhere["FinancingId"].as_str().unwrap().to_string();
    assert_eq!(svc.get(&bob, &format!("/api/v1/leasing/{id}")).await.status(), 200, "no creator recorded");
    let watched = svc.call(&bob, Method::POST, &format!("/api/v1/leasing/{id}/watch"), None).await;
    assert_eq!(watched.status(), 200);
    let answer = svc.get(&alice, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(error_body(answer, 404).await["error_code"], "not_found", "bob watched it first");
    svc.stop().await;
}

/// The provider's ids are UUIDs, one id in any case (RFC 9562) and with or without its hyphens
/// (the provider is IIS: .NET reads a GUID in either form); a provider that reads them so
/// answers `ABC…` with the request `abc…`. Another user who spells Alice's id in upper or mixed
/// case, or without hyphens, is refused as for the id itself, before the provider is asked (the
/// owner was looked up by the exact spelling, found none and let the call through); Alice
/// reaches her request in any spelling.
async fn a_financing_request_is_its_creators_in_any_case(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let alice = svc.user_token().await;
    let (bob, _) = svc.bob_and_root().await;
    let alices = create(&svc, &alice, "Alice GmbH").await;
    let read: Value = svc.get_json(&alice, &format!("/api/v1/leasing/{alices}")).await;
    let upper = alices.to_uppercase();
    assert_ne!(upper, alices, "a UUID has letters");
    let as_the_provider_reads_it =
        json!({"path_prefix": format!("/basic/v1/requests/{upper}"), "status": 200, "body": read["data"].to_string()});

    svc.leasing_fault(as_the_provider_reads_it.clone()).await;
    let answer = svc.get(&bob, &format!("/api/v1/leasing/{upper}")).await;
    let body = error_body(answer, 404).await;
    assert_eq!(body["error_code"], "not_found", "{body}");
    clear_faults(&svc.client, &svc.leasing).await;
    let bare = alices.replace('-', "");
    let as_a_guid_reads_it =
        json!({"path_prefix": format!("/basic/v1/requests/{bare}"), "status": 200, "body": read["data"].to_string()});
    svc.leasing_fault(as_a_guid_reads_it).await;
    let answer = svc.get(&bob, &format!("/api/v1/leasing/{bare}")).await;
    let body = error_body(answer, 404).await;
    assert_eq!(body["error_code"], "not_found", "{body}");
    clear_faults(&svc.client, &svc.leasing).await;

    let mixed: String =
        alices.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c }).collect();
    let provider_calls = svc.provider_request_count().await;
    for spelling in [&upper, &mixed, &bare, &bare.to_uppercase()] {
        for (method, path, body) in routes(spelling) {
            let answer = svc.call(&bob, method.clone(), &path, body).await;
            let body = error_body(answer, 404).await;
            assert_eq!(body["error_code"], "not_found", "{method} {path}: {body}");
        }
    }
    assert_eq!(svc.provider_request_count().await, provider_calls, "nothing was asked of the provider for bob");

    svc.leasing_fault(as_the_provider_reads_it).await;
    let own: Value = svc.get_json(&alice, &format!("/api/v1/leasing/{upper}")).await;
    assert_eq!(own["data"]["FinancingId"], alices.as_str(), "{own}");
    svc.stop().await;
}

/// A request created through the service is its creator's even when its watch could not be
/// started (the database refused the write right after the provider created it): it was
/// reached by every leasing token as one created elsewhere, and the first other user to watch
/// it took it. The watch is started once the database takes writes again, with its creator.
async fn a_request_whose_watch_could_not_start_stays_its_creators(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let alice = svc.user_token().await;
    let (bob, root) = svc.bob_and_root().await;
    sqlx::any::install_default_drivers();
    let sql = sqlx::AnyPool::connect(&svc.database_url).await.expect("a connection of the test's own");
    // Nothing of a create before the provider's answer reads or writes the watches: with
    // their table away, the provider creates the request and only its watch fails.
    execute(&sql, "ALTER TABLE leasing_watches RENAME TO leasing_watches_away").await;
    let created = svc.post(&alice, "/api/v1/leasing", leasing_request("Alice GmbH")).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    let id = created["data"]["FinancingId"].as_str().unwrap().to_string();
    execute(&sql, "ALTER TABLE leasing_watches_away RENAME TO leasing_watches").await;

    let provider_calls = svc.provider_request_count().await;
    for (method, path, body) in routes(&id) {
        let answer = svc.call(&bob, method.clone(), &path, body).await;
        let body = error_body(answer, 404).await;
        assert_eq!(body["error_code"], "not_found", "{method} {path}: {body}");
    }
    assert_eq!(svc.provider_request_count().await, provider_calls, "nothing was asked of the provider for bob");
    let read: Value = svc.get_json(&alice, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(read["data"]["FinancingId"], id.as_str(), "{read}");
    assert_eq!(svc.get(&root, &format!("/api/v1/leasing/{id}")).await.status(), 200, "an operator reads it");

    // The watch is started with its creator as the owner once the database takes writes.
    let me: Value = svc.get_json(&alice, "/api/v1/user").await;
    let query = format!("SELECT user_id FROM leasing_watches WHERE financing_id = '{id}'");
    let mut owner = None;
    for _ in 0..300 {
        owner = sqlx::query_scalar::<_, Option<i64>>(AssertSqlSafe(query.clone())).fetch_optional(&sql).await.unwrap();
        if owner.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(owner.flatten(), me["id"].as_i64(), "the watch was started, as alice's");
    let answer = svc.get(&bob, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(error_body(answer, 404).await["error_code"], "not_found");
    svc.stop().await;
}

on_both_databases!(
    financing_requests_belong_to_their_creator,
    a_financing_request_is_its_creators_in_any_case,
    a_request_whose_watch_could_not_start_stays_its_creators
);
