//! The per-entity field-report routes over real HTTP, against the field-report simulator:
//! the local mirror, forwarded writes, and no divergence when the upstream fails.

use crate::common::requests::answered;
use crate::common::{Caller, Db, TestService, add_fault, error_body};
use serde_json::{Value, json};

mod reads;
mod writes;

const ENTITIES: [(&str, &str); 15] = [
    ("companies", "Companies"),
    ("contacts", "Contacts"),
    ("products", "Products"),
    ("documents", "Documents"),
    ("timeEvents", "TimeEvents"),
    ("stepListTemplates", "StepListTemplates"),
    ("itemTypes", "ItemTypes"),
    ("itemUnits", "ItemUnits"),
    ("users", "Users"),
    ("costCenters", "CostCenters"),
    ("tags", "Tags"),
    ("qualifications", "Qualifications"),
    ("serviceObjects", "ServiceObjects"),
    ("serviceRequests", "ServiceRequests"),
    ("items", "Items"),
];

impl Caller<'_> {
    async fn json(&self, method: reqwest::Method, path: &str, body: Option<Value>, status: u16) -> Value {
        answered(path, self.send(method, path, body).await, Some(status)).await
    }

    /// `POST path` answered 201: the record created.
    async fn create(&self, path: &str, body: Value) -> Value {
        self.json(reqwest::Method::POST, path, Some(body), 201).await
    }

    async fn received(&self) -> Vec<Value> {
        self.svc.fieldreport_received().await
    }

    async fn fault(&self, rule: Value) {
        add_fault(&self.svc.client, &self.svc.fieldreport, rule).await;
    }
}

async fn api(svc: &TestService) -> Caller<'_> {
    Caller::signed_in(svc).await
}

async fn every_entity_supports_every_operation(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for (route, set) in ENTITIES {
        let base = format!("/api/v1/fieldreport/{route}");
        let created = api
            .create(
                &base,
                json!({"Id": "local-1", "Version": 1, "Name": format!("{set} one"), "Unknown": {"kept": [1, 2]}}),
            )
            .await;
        // The upstream assigned the Id; the local record took it, and the request's Version.
        let id = created["data"]["Id"].as_str().unwrap().to_string();
        assert!(id.parse::<i64>().is_ok(), "{route}: {created}");
        assert_eq!(created["data"]["Version"], 1);
        assert_eq!(created["data"]["Unknown"], json!({"kept": [1, 2]}));
        assert_eq!(created["fieldReportResponse"]["Id"], id.as_str());

        let list = api.json(reqwest::Method::GET, &base, None, 200).await;
        assert_eq!(list["data"].as_array().unwrap().len(), 1, "{route}");
        assert_eq!(list["meta"], json!({"current_page": 1, "per_page": 50, "total": 1, "last_page": 1}));
        let shown = api.json(reqwest::Method::GET, &format!("{base}/{id}"), None, 200).await;
        assert_eq!(shown, created["data"]);

        let patched =
            api.json(reqwest::Method::PATCH, &format!("{base}/{id}"), Some(json!({"Name": "patched"})), 200).await;
        assert_eq!(patched["data"]["Name"], "patched");
        assert_eq!(patched["data"]["Version"], 2);
        assert_eq!(patched["data"]["Unknown"], json!({"kept": [1, 2]}));
        let put = api.json(reqwest::Method::PUT, &format!("{base}/{id}"), Some(json!({"Name": "put"})), 200).await;
        assert_eq!(put["data"]["Version"], 3);

        let deleted = api.send(reqwest::Method::DELETE, &format!("{base}/{id}"), None).await;
        assert_eq!(deleted.status(), 204, "{route}");
        error_body(api.send(reqwest::Method::GET, &format!("{base}/{id}"), None).await, 404).await;

        let writes: Vec<Value> = api
            .received()
            .await
            .into_iter()
            .filter(|w| w["path"].as_str().unwrap().starts_with(&format!("/odata/{set}")))
            .collect();
        let shape: Vec<(String, String)> = writes
            .iter()
            .map(|w| (w["method"].as_str().unwrap().to_string(), w["path"].as_str().unwrap().to_string()))
            .collect();
        let item = format!("/odata/{set}({id}L)");
        assert_eq!(
            shape,
            [
                ("POST".to_string(), format!("/odata/{set}")),
                ("PUT".to_string(), item.clone()),
                ("PUT".to_string(), item.clone()),
                ("DELETE".to_string(), item)
            ],
            "{route}"
        );
    }
    svc.stop().await;
}

async fn forwarded_updates_merge_bump_the_version_and_strip_system_fields(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    let created = api
        .create("/api/v1/fieldreport/companies", json!({"Id": "1", "Version": 4, "Name": "ACME", "Location": {"City": "Berlin", "Postal": "10115"}, "Tags": [{"Id": "1"}]}))
        .await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    // The simulator stored Version 4 as sent; the next forwarded version is 5.
    let body =
        json!({"Location": {"City": "Hamburg"}, "Tags": [], "DateModified": "2020-01-01T00:00:00Z", "created_at": "x"});
    let updated =
        api.json(reqwest::Method::PATCH, &format!("/api/v1/fieldreport/companies/{id}"), Some(body), 200).await;
    assert_eq!(updated["data"]["Location"], json!({"City": "Hamburg", "Postal": "10115"}));
    assert_eq!(updated["data"]["Tags"], json!([]));
    assert_eq!(updated["data"]["Version"], 5);
    let sent = api.received().await.last().unwrap()["body"].clone();
    assert_eq!(sent["Version"], 5);
    assert_eq!(sent["Location"], json!({"City": "Hamburg", "Postal": "10115"}));
    for field in ["DateModified", "DateOfCreation", "created_at", "updated_at"] {
        assert!(sent.get(field).is_none(), "{field} was sent: {sent}");
    }
    svc.stop().await;
}

async fn create_validates_id_and_version(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for (body, field) in [
        (json!({"Version": 1}), "Id"),
        (json!({"Id": "x".repeat(256), "Version": 1}), "Id"),
        (json!({"Id": 5, "Version": 1}), "Id"),
        (json!({"Id": "5"}), "Version"),
        (json!({"Id": "5", "Version": "one"}), "Version"),
    ] {
        let errors =
            error_body(api.send(reqwest::Method::POST, "/api/v1/fieldreport/tags", Some(body.clone())).await, 422)
                .await;
        assert!(errors["errors"][field].is_array(), "{body}: {errors}");
    }
    assert!(api.received().await.is_empty(), "nothing reaches the upstream");
    // A field of the wrong type for the model is named too.
    let errors = error_body(
        api.send(
            reqwest::Method::POST,
            "/api/v1/fieldreport/companies",
            Some(json!({"Id": "1", "Version": 1, "IsPhysicalPerson": "yes"})),
        )
        .await,
        422,
    )
    .await;
    assert!(errors["message"].as_str().unwrap().contains("bool"), "{errors}");
    svc.stop().await;
}

async fn lists_page_in_id_order(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for n in 0..5 {
        api.create("/api/v1/fieldreport/itemUnits", json!({"Id": format!("{n}"), "Version": 1})).await;
    }
    let page = api.json(reqwest::Method::GET, "/api/v1/fieldreport/itemUnits?page=2&per_page=2", None, 200).await;
    assert_eq!(page["meta"], json!({"current_page": 2, "per_page": 2, "total": 5, "last_page": 3}));
    let ids: Vec<i64> =
        page["data"].as_array().unwrap().iter().map(|r| r["Id"].as_str().unwrap().parse().unwrap()).collect();
    let all = api.json(reqwest::Method::GET, "/api/v1/fieldreport/itemUnits?per_page=500", None, 200).await;
    let every: Vec<i64> =
        all["data"].as_array().unwrap().iter().map(|r| r["Id"].as_str().unwrap().parse().unwrap()).collect();
    let mut sorted = every.clone();
    sorted.sort();
    assert_eq!(every, sorted);
    assert_eq!(ids, every[2..4]);
    // Past the last page: no records, and still the total (counted on its own then).
    let beyond = api.json(reqwest::Method::GET, "/api/v1/fieldreport/itemUnits?page=4&per_page=2", None, 200).await;
    assert_eq!(beyond["data"], json!([]));
    assert_eq!(beyond["meta"]["total"], 5, "{beyond}");
    // The count is kept with the records: a delete takes one off, in pages and in the overview.
    let deleted = api.send(reqwest::Method::DELETE, &format!("/api/v1/fieldreport/itemUnits/{}", every[2]), None).await;
    assert_eq!(deleted.status(), 204);
    let after = api.json(reqwest::Method::GET, "/api/v1/fieldreport/itemUnits?per_page=2", None, 200).await;
    assert_eq!(after["meta"]["total"], 4, "{after}");
    let shown = api.json(reqwest::Method::GET, "/api/v1/fieldreport/show/itemUnits", None, 200).await;
    assert_eq!(shown["data"]["records"], 4, "{shown}");
    svc.stop().await;
}

async fn an_unconfigured_upstream_is_named(db: Db) {
    let svc = TestService::start(db, &[("FIELDREPORT_BASE_URL", "")]).await;
    let api = api(&svc).await;
    let body = error_body(
        api.send(reqwest::Method::POST, "/api/v1/fieldreport/tags", Some(json!({"Id": "1", "Version": 1}))).await,
        503,
    )
    .await;
    assert_eq!(body["error_code"], "upstream_not_configured");
    assert!(body["message"].as_str().unwrap().contains("FIELDREPORT_BASE_URL"));
    svc.stop().await;
}

/// A client's update may name the record's `Id` and `Version`: a stale `Version` is refused
/// with 409 (the record changed since it was read), a `Version` that is not an integer and an
/// `Id` that is not the record's own with 422 naming the field. Without them the body merges.
async fn updates_check_the_id_and_version_they_name(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    let created = api.create("/api/v1/fieldreport/companies", json!({"Id": "v", "Version": 1, "Name": "A"})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/fieldreport/companies/{id}");
    let version = |record: &Value| record["Version"].as_i64().unwrap();
    let current = version(&api.json(reqwest::Method::GET, &path, None, 200).await);

    let changed = api.json(reqwest::Method::PATCH, &path, Some(json!({"Version": current, "Name": "B"})), 200).await;
    assert_eq!(version(&changed["data"]), current + 1);
    let stale = api.send(reqwest::Method::PATCH, &path, Some(json!({"Version": current, "Name": "C"}))).await;
    let body = error_body(stale, 409).await;
    assert!(body["message"].as_str().unwrap().contains(&format!("is at Version {}", current + 1)), "{body}");
    let stale_put =
        api.send(reqwest::Method::PUT, &path, Some(json!({"Id": id, "Version": current, "Name": "C"}))).await;
    error_body(stale_put, 409).await;
    for (patch, field) in [
        (json!({"Version": "abc"}), "Version"),
        (json!({"Version": "7"}), "Version"),
        (json!({"Version": 1.5}), "Version"),
        (json!({"Id": "another"}), "Id"),
        (json!({"Id": 7}), "Id"),
    ] {
        let body = error_body(api.send(reqwest::Method::PATCH, &path, Some(patch.clone())).await, 422).await;
        assert!(body["errors"][field].is_array(), "{patch}: {body}");
    }
    let stored = api.json(reqwest::Method::GET, &path, None, 200).await;
    assert_eq!((stored["Name"].as_str(), version(&stored)), (Some("B"), current + 1), "nothing refused was applied");
    let merged = api.json(reqwest::Method::PATCH, &path, Some(json!({"Name": "D"})), 200).await;
    assert_eq!(version(&merged["data"]), current + 2, "without a Version the body merges");
    svc.stop().await;
}

/// A create keeps the `Version` it is given, whatever the integer (the owner's table: `Version`
/// an integer, required), and the document promises no more than that.
async fn a_create_keeps_any_integer_version(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for version in [0, -3, 1] {
        let created =
            api.create("/api/v1/fieldreport/tags", json!({"Id": format!("v{version}"), "Version": version})).await;
        assert_eq!(created["data"]["Version"], version, "{created}");
    }
    let document: Value = serde_json::from_str(crate::common::DOCUMENT).expect("the document is JSON");
    let said = &document["components"]["schemas"]["NewTags"]["properties"]["Version"]["description"];
    assert!(!said.as_str().unwrap().contains("1 or more"), "the document refuses what is accepted: {said}");
    svc.stop().await;
}

on_both_databases!(
    every_entity_supports_every_operation,
    updates_check_the_id_and_version_they_name,
    forwarded_updates_merge_bump_the_version_and_strip_system_fields,
    create_validates_id_and_version,
    a_create_keeps_any_integer_version,
    lists_page_in_id_order,
    an_unconfigured_upstream_is_named,
);
