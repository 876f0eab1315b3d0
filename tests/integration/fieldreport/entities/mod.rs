//! The per-entity field-report routes over real HTTP, against the field-report simulator:
//! the local mirror, forwarded writes, and no divergence when the upstream fails.

use crate::common::contract::Checked;
use crate::common::requests::answered;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, add_fault, error_body};
use serde_json::{Value, json};

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

struct Caller<'a> {
    svc: &'a TestService,
    token: String,
}

impl Caller<'_> {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> reqwest::Response {
        self.svc.call(&self.token, method, path, body).await
    }

    async fn json(&self, method: reqwest::Method, path: &str, body: Option<Value>, status: u16) -> Value {
        answered(path, self.send(method, path, body).await, Some(status)).await
    }

    async fn received(&self) -> Vec<Value> {
        self.svc.fieldreport_received().await
    }

    async fn fault(&self, rule: Value) {
        add_fault(&self.svc.client, &self.svc.fieldreport, rule).await;
    }
}

async fn api(svc: &TestService) -> Caller<'_> {
    Caller { svc, token: svc.user_token().await }
}

async fn every_entity_supports_every_operation(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for (route, set) in ENTITIES {
        let base = format!("/api/v1/fieldreport/{route}");
        let created = api
            .json(
                reqwest::Method::POST,
                &base,
                Some(json!({"Id": "local-1", "Version": 1, "Name": format!("{set} one"), "Unknown": {"kept": [1, 2]}})),
                201,
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
        .json(
            reqwest::Method::POST,
            "/api/v1/fieldreport/companies",
            Some(json!({"Id": "1", "Version": 4, "Name": "ACME", "Location": {"City": "Berlin", "Postal": "10115"}, "Tags": [{"Id": "1"}]})),
            201,
        )
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

/// Every failure of a forwarded write leaves the mirror equal to the upstream, and tells the
/// caller what happened: not applied, unknown, applied late, or changed upstream meanwhile.
async fn nothing_diverges_when_the_upstream_fails(db: Db) {
    let svc = TestService::start(db, &[("FIELDREPORT_TIMEOUT_SECONDS", "1")]).await;
    let api = api(&svc).await;
    let created = api
        .json(
            reqwest::Method::POST,
            "/api/v1/fieldreport/products",
            Some(json!({"Id": "1", "Version": 1, "Name": "Pump"})),
            201,
        )
        .await;
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
    let created = api
        .json(
            reqwest::Method::POST,
            "/api/v1/fieldreport/tags",
            Some(json!({"Id": "1", "Version": 1, "Name": "t"})),
            201,
        )
        .await;
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
    let created =
        api.json(reqwest::Method::POST, "/api/v1/fieldreport/items", Some(json!({"Id": "1", "Version": 1})), 201).await;
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

async fn lists_page_in_id_order(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = api(&svc).await;
    for n in 0..5 {
        api.json(
            reqwest::Method::POST,
            "/api/v1/fieldreport/itemUnits",
            Some(json!({"Id": format!("{n}"), "Version": 1})),
            201,
        )
        .await;
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
    let created = api
        .json(
            reqwest::Method::POST,
            "/api/v1/fieldreport/companies",
            Some(json!({"Id": "v", "Version": 1, "Name": "A"})),
            201,
        )
        .await;
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

on_both_databases!(
    every_entity_supports_every_operation,
    updates_check_the_id_and_version_they_name,
    forwarded_updates_merge_bump_the_version_and_strip_system_fields,
    create_validates_id_and_version,
    nothing_diverges_when_the_upstream_fails,
    concurrent_updates_never_lose_a_change,
    delete_with_a_representation_and_errors,
    lists_page_in_id_order,
    an_unconfigured_upstream_is_named,
);

/// Postgres: each instance keeps records and pages it read in memory, and forgets them when
/// any instance (or anyone with SQL) changes the mirror.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_changed_anywhere_are_answered_changed_on_every_instance() {
    let Some((first, second, sql)) = crate::common::two_instances_on_postgres().await else { return };
    let on_first = api(&first).await;
    let on_second = Caller { svc: &second, token: on_first.token.clone() };
    let set_name = |id: String, name: String| {
        let sql = sql.clone();
        async move {
            sqlx::query(
                "UPDATE fieldreport_records SET document = jsonb_set(document::jsonb, '{Name}', to_jsonb($1::text))::text \
                 WHERE entity = 'companies' AND record_id = $2",
            )
            .bind(name)
            .bind(id)
            .execute(&sql)
            .await
            .unwrap();
        }
    };
    let created = on_first
        .json(reqwest::Method::POST, "/api/v1/fieldreport/companies", Some(json!({"Id": "a", "Version": 1})), 201)
        .await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/fieldreport/companies/{id}");

    // Without the notification (its trigger off), a change by SQL is not seen by an instance
    // that read the record while listening: it answers from memory.
    sqlx::query("ALTER TABLE fieldreport_records DISABLE TRIGGER fieldreport_records_notify_updated")
        .execute(&sql)
        .await
        .unwrap();
    let mut cached = false;
    for round in 0..50 {
        on_second.json(reqwest::Method::GET, &path, None, 200).await;
        let name = format!("unseen {round}");
        set_name(id.clone(), name.clone()).await;
        if on_second.json(reqwest::Method::GET, &path, None, 200).await["Name"] != name.as_str() {
            cached = true;
            break;
        }
        // The second instance was not listening yet, so it cached nothing.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(cached, "the second instance caches records");
    assert!(lookups(&second, "hit").await >= 1.0, "the cache's hits are counted");
    sqlx::query("ALTER TABLE fieldreport_records ENABLE TRIGGER fieldreport_records_notify_updated")
        .execute(&sql)
        .await
        .unwrap();

    // With it: a change by SQL, then a write through the first instance.
    set_name(id.clone(), "by hand".into()).await;
    answered_soon(&on_second, &path, |record| record["Name"] == "by hand").await;
    on_first.json(reqwest::Method::PATCH, &path, Some(json!({"Name": "on the first"})), 200).await;
    answered_soon(&on_second, &path, |record| record["Name"] == "on the first").await;

    // Pages: a page read on the second instance, then 20 records inserted by one statement
    // (a notification for the whole set), then every record changed by one statement.
    let list = "/api/v1/fieldreport/companies?per_page=100";
    assert_eq!(on_second.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 1);
    assert_eq!(on_second.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 1);
    sqlx::query(
        "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
         SELECT 'companies', 'bulk-' || n, 1, json_build_object('Id', 'bulk-' || n, 'Version', 1)::text, 0, 0 \
         FROM generate_series(1, 20) AS n",
    )
    .execute(&sql)
    .await
    .unwrap();
    answered_soon(&on_second, list, |page| page["meta"]["total"] == 21 && page["data"].as_array().unwrap().len() == 21)
        .await;
    on_second.json(reqwest::Method::GET, &path, None, 200).await;
    sqlx::query(
        "UPDATE fieldreport_records SET document = jsonb_set(document::jsonb, '{Name}', to_jsonb('all'::text))::text \
         WHERE entity = 'companies'",
    )
    .execute(&sql)
    .await
    .unwrap();
    answered_soon(&on_second, &path, |record| record["Name"] == "all").await;
    answered_soon(&on_second, list, |page| page["data"][20]["Name"] == "all").await;

    // An instance's own write is answered at once by that instance (each instance has an upstream
    // simulator of its own: the record is the first's).
    for n in 0..5 {
        let name = format!("own write {n}");
        on_first.json(reqwest::Method::GET, &path, None, 200).await;
        on_first.json(reqwest::Method::PATCH, &path, Some(json!({"Name": name})), 200).await;
        assert_eq!(on_first.json(reqwest::Method::GET, &path, None, 200).await["Name"], name.as_str());
    }
    let deleted = on_first.send(reqwest::Method::DELETE, &path, None).await;
    assert_eq!(deleted.status(), 204);
    error_body(on_first.send(reqwest::Method::GET, &path, None).await, 404).await;
    assert_eq!(on_first.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 20);
    sql.close().await;
    second.stop().await;
    first.stop().await;
}

/// SQLite: pages read are kept in memory too, and forgotten as soon as anyone commits to the
/// database file (another process, a statement run by hand): the very next read answers the
/// change, with no notification to wait for. (Single records are read in place.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_changed_by_another_connection_are_answered_changed_at_once_on_sqlite() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let api = api(&svc).await;
    sqlx::any::install_default_drivers();
    let sql = sqlx::AnyPool::connect(&svc.database_url).await.expect("a connection of another's to the file");
    let created = api
        .json(reqwest::Method::POST, "/api/v1/fieldreport/companies", Some(json!({"Id": "a", "Version": 1})), 201)
        .await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/fieldreport/companies/{id}");
    let list = "/api/v1/fieldreport/companies?per_page=100";
    let hits_before = lookups(&svc, "hit").await;
    for round in 0..3 {
        // Read twice: the second read is answered from memory.
        api.json(reqwest::Method::GET, &path, None, 200).await;
        api.json(reqwest::Method::GET, list, None, 200).await;
        api.json(reqwest::Method::GET, &path, None, 200).await;
        api.json(reqwest::Method::GET, list, None, 200).await;
        let name = format!("by hand {round}");
        sqlx::query(
            "UPDATE fieldreport_records SET document = json_set(document, '$.Name', $1) \
             WHERE entity = 'companies' AND record_id = $2",
        )
        .bind(name.clone())
        .bind(id.clone())
        .execute(&sql)
        .await
        .unwrap();
        assert_eq!(api.json(reqwest::Method::GET, &path, None, 200).await["Name"], name.as_str());
        assert_eq!(api.json(reqwest::Method::GET, list, None, 200).await["data"][0]["Name"], name.as_str());
    }
    assert!(lookups(&svc, "hit").await >= hits_before + 3.0, "the second page read of each round was a hit");
    sqlx::query(
        "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
         VALUES ('companies', 'by-hand', 1, '{\"Id\":\"by-hand\",\"Version\":1}', 0, 0)",
    )
    .execute(&sql)
    .await
    .unwrap();
    assert_eq!(api.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 2);
    sql.close().await;
    svc.stop().await;
}

/// Asks for `path` until `answered` holds of its JSON (a notification reaches other instances
/// once the changing transaction commits), at most about five seconds.
async fn answered_soon(api: &Caller<'_>, path: &str, answered: impl Fn(&Value) -> bool) {
    let mut last = Value::Null;
    for _ in 0..50 {
        last = api.json(reqwest::Method::GET, path, None, 200).await;
        if answered(&last) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{path} still answers {last}");
}

/// The record cache's lookups with this result (`hit`, `miss`), from the metrics.
async fn lookups(svc: &TestService, result: &str) -> f64 {
    let text = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    let series = format!("integration_service_fieldreport_record_cache_lookups_total{{result=\"{result}\"}} ");
    let line = text.lines().find_map(|line| line.strip_prefix(series.as_str()));
    line.unwrap_or_else(|| panic!("no {series} in {text}")).parse().unwrap()
}

/// A record read from the API goes back to its update route as it was read (its `Id` a string,
/// its `Version` an integer, as the document types both) and is accepted: for every set, a
/// record the simulator holds with its `Version` written as OData v3 writes an `Edm.Int64`
/// (`"1"`), and one seeded with what its set expands, synced, listed and PUT back unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_read_is_accepted_back_by_its_update_route() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let api = api(&svc).await;
    for (route, set) in ENTITIES {
        let v3 = json!({"Name": format!("{set} v3"), "Version": "1"});
        let created = svc.odata(reqwest::Method::POST, &format!("{set}")).json(&v3).send().await.unwrap();
        assert!(created.status().is_success(), "{set}: {}", created.status());
        svc.seed(set, 1).await;
        api.json(reqwest::Method::GET, &format!("/api/v1/fieldreport/sync/{route}"), None, 200).await;
        let base = format!("/api/v1/fieldreport/{route}");
        let list = api.json(reqwest::Method::GET, &base, None, 200).await;
        let records = list["data"].as_array().unwrap();
        assert_eq!(records.len(), 2, "{route}: {list}");
        for record in records {
            let id = record["Id"].as_str().unwrap_or_else(|| panic!("{route}: {record}")).to_string();
            let version = record["Version"].as_i64().unwrap_or_else(|| panic!("{route}: {record}"));
            let written = api.json(reqwest::Method::PUT, &format!("{base}/{id}"), Some(record.clone()), 200).await;
            assert_eq!(written["data"]["Id"], id.as_str(), "{route}");
            assert_eq!(written["data"]["Version"], version + 1, "{route}");
            assert_eq!(written["data"]["Name"], record["Name"], "{route}");
        }
    }
}
