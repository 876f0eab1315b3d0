//! Forwarded writes when things go wrong: nothing diverges when the upstream fails, concurrent
//! updates lose no change, and a delete answers with a representation or a clear error.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body};
use serde_json::{Value, json};

use super::*;

/// Every failure of a forwarded write leaves the mirror equal to the upstream, and tells the
/// caller what happened: not applied, unknown, applied late, or changed upstream meanwhile.
async fn nothing_diverges_when_the_upstream_fails(db: Db) {
    let svc = TestService::start(db, &[("FIELDREPORT_TIMEOUT_SECONDS", "1")]).await;
    let api = api(&svc).await;
    let created = api.create("/api/v1/fieldreport/products", json!({"Id": "1", "Version": 1, "Name": "Pump"})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let item = format!("/api/v1/fieldreport/products/{id}");

    // Faults after which the upstream, read back, shows the write was not applied. A create
    // without an `ExternalId` cannot be looked up: its outcome is unknown, nothing is stored.
    for (fault, status) in [
        (json!({"path_prefix": "/odata/Products", "status": 500, "times": 1}), 502),
        (json!({"path_prefix": "/odata/Products", "status": 0, "times": 1}), 502),
        (json!({"path_prefix": "/odata/Products", "status": 200, "body": "{oops", "times": 1}), 502),
    ] {
        api.fault(fault.clone()).await;
        let new = Some(json!({"Id": "2", "Version": 1}));
        let body = error_body(api.send(reqwest::Method::POST, "/api/v1/fieldreport/products", new).await, 504).await;
        assert_eq!(body["error_code"], "upstream_outcome_unknown", "{fault}");
        let list = api.json(reqwest::Method::GET, "/api/v1/fieldreport/products", None, 200).await;
        assert_eq!(list["meta"]["total"], 1, "{fault}");
        // update: the old record and version stay
        api.fault(fault.clone()).await;
        let body =
            error_body(api.send(reqwest::Method::PATCH, &item, Some(json!({"Name": "changed"}))).await, status).await;
        assert_eq!(body["error_code"], "upstream_unavailable", "{fault}");
        let shown = api.json(reqwest::Method::GET, &item, None, 200).await;
        assert_eq!((shown["Name"].clone(), shown["Version"].clone()), (json!("Pump"), json!(1)), "{fault}");
        // delete: the record stays
        api.fault(fault.clone()).await;
        let body = error_body(api.send(reqwest::Method::DELETE, &item, None).await, status).await;
        assert_eq!(body["error_code"], "upstream_unavailable", "{fault}");
        assert_eq!(api.json(reqwest::Method::GET, &item, None, 200).await, created["data"], "{fault}");
    }
    // A time-out before the upstream acts: nothing happened, the time-out is the answer.
    api.fault(json!({"path_prefix": "/odata/Products", "status": 200, "delay_ms": 2500, "times": 1})).await;
    let body = error_body(api.send(reqwest::Method::GET, "/api/v1/fieldreport/sync/products", None).await, 504).await;
    assert_eq!(body["error_code"], "upstream_timeout");

    // The upstream's own version conflict answers 409, and the mirror takes the upstream's
    // record: the caller reads it again and retries, without a sync.
    let sneaky = json!({"Id": id, "Version": 2, "Name": "changed upstream"});
    let response = svc.odata(reqwest::Method::PUT, &format!("Products({id}L)")).json(&sneaky).checked().await.unwrap();
    assert_eq!(response.status(), 200);
    let body = error_body(api.send(reqwest::Method::PATCH, &item, Some(json!({"Name": "mine"}))).await, 409).await;
    assert_eq!(body["error_code"], "upstream_conflict");
    let shown = api.json(reqwest::Method::GET, &item, None, 200).await;
    assert_eq!((shown["Name"].clone(), shown["Version"].clone()), (json!("changed upstream"), json!(2)));
    let retried = api.json(reqwest::Method::PATCH, &item, Some(json!({"Name": "mine"})), 200).await;
    assert_eq!(retried["data"]["Version"], 3);

    // Applied, but answered after the time-out: the write is read back and is a success.
    let late = json!({"path_prefix": format!("/odata/Products({id}L)"), "status": 200, "answer_delay_ms": 2500});
    api.fault(late.clone()).await;
    let updated = api.json(reqwest::Method::PATCH, &item, Some(json!({"Name": "late"})), 200).await;
    assert_eq!((updated["data"]["Name"].clone(), updated["data"]["Version"].clone()), (json!("late"), json!(4)));
    api.fault(late).await;
    assert_eq!(api.send(reqwest::Method::DELETE, &item, None).await.status(), 204);
    error_body(api.send(reqwest::Method::GET, &item, None).await, 404).await;
    svc.stop().await;
}

async fn concurrent_updates_never_lose_a_change(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    let created = api.create("/api/v1/fieldreport/tags", json!({"Id": "1", "Version": 1, "Name": "t"})).await;
    let item = format!("/api/v1/fieldreport/tags/{}", created["data"]["Id"].as_str().unwrap());
    let (a, b) = tokio::join!(
        api.send(reqwest::Method::PATCH, &item, Some(json!({"A": 1}))),
        api.send(reqwest::Method::PATCH, &item, Some(json!({"B": 2})))
    );
    let statuses = [a.status().as_u16(), b.status().as_u16()];
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 409), "{statuses:?}");
    let shown = api.json(reqwest::Method::GET, &item, None, 200).await;
    let successes = statuses.iter().filter(|s| **s == 200).count() as i64;
    assert_eq!(shown["Version"], 1 + successes);
    if statuses[0] == 200 {
        assert_eq!(shown["A"], 1, "{shown}");
    }
    if statuses[1] == 200 {
        assert_eq!(shown["B"], 2, "{shown}");
    }
    svc.stop().await;
}

async fn delete_with_a_representation_and_errors(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    let created = api.create("/api/v1/fieldreport/items", json!({"Id": "1", "Version": 1})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let response = svc
        .client
        .delete(svc.url(&format!("/api/v1/fieldreport/items/{id}")))
        .bearer_auth(&api.token)
        .header("prefer", "return=representation")
        .checked()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json_value().await;
    assert_eq!(body, json!({"data": true, "fieldReportResponse": null}));
    error_body(api.send(reqwest::Method::DELETE, &format!("/api/v1/fieldreport/items/{id}"), None).await, 404).await;
    error_body(api.send(reqwest::Method::PATCH, "/api/v1/fieldreport/items/404", Some(json!({}))).await, 404).await;
    let unauthenticated = svc.client.get(svc.url("/api/v1/fieldreport/items")).checked().await.unwrap();
    assert_eq!(error_body(unauthenticated, 401).await["message"], "Unauthenticated.");
    for query in ["page=0", "per_page=0", "per_page=501"] {
        error_body(api.send(reqwest::Method::GET, &format!("/api/v1/fieldreport/items?{query}"), None).await, 422)
            .await;
    }
    svc.stop().await;
}

on_both_databases!(
    nothing_diverges_when_the_upstream_fails,
    concurrent_updates_never_lose_a_change,
    delete_with_a_representation_and_errors,
);
