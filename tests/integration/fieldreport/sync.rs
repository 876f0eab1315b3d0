//! Pulling the field-report system into the mirror, and the show tool routes.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::{Db, TestService, add_fault, error_body};
use serde_json::{Value, json};

async fn sync(svc: &TestService, token: &str, entity: &str) -> Value {
    let response = svc.get(token, &format!("/api/v1/fieldreport/sync/{entity}")).await;
    assert_eq!(response.status(), 200);
    response.json::<Value>().await.unwrap()["data"][0].clone()
}

/// Whether the mirror's table was analyzed by a statement (not by autovacuum); always false
/// on SQLite.
async fn analyzed_by_the_service(svc: &TestService) -> bool {
    if svc.store().dialect() != integration_service::store::Dialect::Postgres {
        return false;
    }
    sqlx::query_scalar(
        "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables \
         WHERE relname = 'fieldreport_records' AND schemaname = current_schema()",
    )
    .fetch_one(svc.store().pool())
    .await
    .unwrap()
}

async fn ten_thousand_records_across_pages_then_only_newer_ones(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 10_000).await;
    assert!(!analyzed_by_the_service(&svc).await);
    let report = sync(&svc, &token, "companies").await;
    assert_eq!(report["fetched"], 10_000, "{report}");
    // A large sync refreshes the planner's statistics (Postgres): cached plans made for a small
    // set would otherwise read the whole table on every page.
    assert_eq!(analyzed_by_the_service(&svc).await, db == Db::Postgres);
    assert_eq!(report["inserted"], 10_000, "{report}");
    assert_eq!(report["updated"], 0);
    assert!(report["pages"].as_u64().unwrap() >= 100, "{report}");
    assert!(report["cursor"].as_str().is_some());

    // Expanded relations were pulled with each record.
    let page: Value = svc.get_json(&token, "/api/v1/fieldreport/companies?per_page=1").await;
    assert_eq!(page["meta"]["total"], 10_000);
    let company = &page["data"][0];
    for relation in ["Contacts", "Tags", "ServiceObjects"] {
        assert!(company[relation].is_array(), "{relation} missing in {company}");
    }
    assert!(company["MainContact"].is_object(), "MainContact (one record) missing in {company}");

    // Nothing is newer: the records of the overlap window before the cursor (all of them, just
    // seeded) are read again and not written.
    let again = sync(&svc, &token, "companies").await;
    assert_eq!((again["inserted"].clone(), again["updated"].clone()), (json!(0), json!(0)), "{again}");
    assert_eq!(again["unchanged"], again["fetched"], "{again}");

    // Change two records upstream: only they come back.
    for id in ["1001", "1002"] {
        let body = json!({"Id": id, "Version": 2, "Name": "renamed upstream"});
        let response =
            svc.odata(reqwest::Method::PUT, &format!("Companies({id}L)")).json(&body).checked().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let newer = sync(&svc, &token, "companies").await;
    assert_eq!((newer["inserted"].clone(), newer["updated"].clone()), (json!(0), json!(2)), "{newer}");
    let renamed: Value = svc.get_json(&token, "/api/v1/fieldreport/companies/1001").await;
    assert_eq!(renamed["Name"], "renamed upstream");
    svc.stop().await;
}

async fn an_interrupted_sync_resumes_without_duplicates(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 750).await;
    // The query for records never modified (none here) and three pages go through, then the
    // fourth page fails three times in a row (reads are retried twice): the sync stops half
    // way, with 300 records stored.
    let fault = json!({"path_prefix": "/odata/Tags", "status": 500, "times": 3, "after": 4});
    add_fault(&svc.client, &svc.fieldreport, fault).await;
    let stopped = svc.get(&token, "/api/v1/fieldreport/sync/tags").await;
    let body = error_body(stopped, 502).await;
    assert_eq!(body["error_code"], "upstream_error");
    let partial: Value = svc.get_json(&token, "/api/v1/fieldreport/show/tags").await;
    assert_eq!(partial["data"]["last_sync_at"], Value::Null, "a failed sync records no completion");
    assert_eq!(partial["data"]["records"], 300);

    let report = sync(&svc, &token, "tags").await;
    assert_eq!(report["fetched"], 750);
    assert_eq!((report["inserted"].clone(), report["unchanged"].clone()), (json!(450), json!(300)), "{report}");
    let page: Value = svc.get_json(&token, "/api/v1/fieldreport/tags?per_page=1").await;
    assert_eq!(page["meta"]["total"], 750);
    svc.stop().await;
}

async fn one_sync_per_entity_at_a_time(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let far = integration_service::store::now_ms() + 60_000;
    assert!(svc.store().take_sync_lease("users", "another-instance", far).await.unwrap());
    let body = error_body(svc.get(&token, "/api/v1/fieldreport/sync/users").await, 409).await;
    assert!(body["message"].as_str().unwrap().contains("already running"), "{body}");
    // Other entities are not blocked, and an expired lease is taken over.
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/sync/items").await.status(), 200);
    assert!(svc.store().take_sync_lease("users", "another-instance", 1).await.unwrap());
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/sync/users").await.status(), 200);
    svc.stop().await;
}

async fn show_lists_entities_and_finds_records(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("CostCenters", 3).await;
    sync(&svc, &token, "CostCenters").await;
    let all: Value = svc.get_json(&token, "/api/v1/fieldreport/show").await;
    let entities = all["data"].as_array().unwrap();
    assert_eq!(entities.len(), 15);
    let cost_centers = entities.iter().find(|e| e["entity"] == "costCenters").unwrap();
    assert_eq!(cost_centers["records"], 3);
    assert!(cost_centers["last_sync_at"].as_str().is_some());
    let found: Value = svc.get_json(&token, "/api/v1/fieldreport/show/costCenters/ExternalId/seed-1002").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["data"][0]["Id"], "1002");
    let having: Value = svc.get_json(&token, "/api/v1/fieldreport/show/costCenters/ExternalId").await;
    assert_eq!(having["data"].as_array().unwrap().len(), 3, "{having}");
    let lacking: Value = svc.get_json(&token, "/api/v1/fieldreport/show/costCenters/NoSuchField").await;
    assert_eq!(lacking["data"], json!([]));
    let none: Value = svc.get_json(&token, "/api/v1/fieldreport/show/costCenters/ExternalId/nothing").await;
    assert_eq!(none["data"], json!([]));
    // A SQL-looking value is only ever a bound value.
    let injection: Value = svc.get_json(&token, "/api/v1/fieldreport/show/costCenters/Name/x'%20OR%20'1'='1").await;
    assert_eq!(injection["data"], json!([]));
    error_body(svc.get(&token, "/api/v1/fieldreport/show/costCenters/Bad-Name/x").await, 422).await;
    let unknown = error_body(svc.get(&token, "/api/v1/fieldreport/sync/widgets").await, 404).await;
    assert!(unknown["message"].as_str().unwrap().contains("costCenters"), "{unknown}");
    svc.stop().await;
}

/// Records deleted at the upstream by someone else: an incremental sync cannot see them, a
/// reconciling one removes them, except a record with a local change waiting (kept and named).
/// The upstream's Ids are read in several windows (1,200 records, 500 Ids a request).
async fn a_reconciling_sync_removes_what_the_upstream_deleted(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 1200).await;
    assert_eq!(sync(&svc, &token, "tags").await["inserted"], 1200);
    let upstream = |id: &str| svc.odata(reqwest::Method::DELETE, &format!("Tags({id}L)")).checked();
    for id in ["1001", "1002", "1700"] {
        assert_eq!(upstream(id).await.unwrap().status(), 204);
    }
    // A local change of 1002, made without forwarding (as an ERP webhook makes it), waits for
    // a push.
    let writer = integration_service::fieldreport::service::FieldReportService::new(
        svc.store().clone(),
        Err(integration_service::upstream::UpstreamError::NotConfigured {
            system: integration_service::upstream::System::FieldReport,
            setting: "FIELDREPORT_BASE_URL",
        }),
    );
    let tags = generated::fieldreport::by_route("tags").unwrap();
    writer.update_pending(tags, "1002", json!({"Name": "changed here"})).await.unwrap();

    let incremental = sync(&svc, &token, "tags").await;
    assert_eq!(incremental["inserted"], 0, "{incremental}");
    assert_eq!(
        svc.get(&token, "/api/v1/fieldreport/tags/1001").await.status(),
        200,
        "an incremental sync sees no delete"
    );

    let answer = svc.get(&token, "/api/v1/fieldreport/sync/tags?reconcile=true").await;
    assert_eq!(answer.status(), 200);
    let report = answer.json::<Value>().await.unwrap()["data"][0]["reconcile"].clone();
    assert_eq!(report["upstream"], 1197, "{report}");
    assert_eq!(report["checked"], 1200, "{report}");
    assert_eq!(report["removed"], 2, "{report}");
    assert_eq!((report["fetched_missing"].clone(), report["refreshed"].clone()), (json!(0), json!(0)), "{report}");
    assert_eq!(report["kept_pending"], 1, "{report}");
    assert_eq!(report["kept_pending_ids"], json!(["1002"]), "{report}");
    for (id, status) in [("1001", 404), ("1700", 404), ("1002", 200), ("1003", 200)] {
        assert_eq!(svc.get(&token, &format!("/api/v1/fieldreport/tags/{id}")).await.status(), status, "{id}");
    }
    let again = svc.get(&token, "/api/v1/fieldreport/sync/tags?reconcile=1").await.json::<Value>().await.unwrap();
    assert_eq!(again["data"][0]["reconcile"]["removed"], 0, "{again}");
    svc.stop().await;
}

/// A record deleted here while a sync's page holding it is on its way (read at the upstream
/// before the delete, answered after it; the delete confirmed meanwhile, its tombstone gone)
/// stays deleted: the sync leaves it out of the mirror, as the upstream has.
async fn a_record_deleted_while_its_page_is_on_its_way_stays_deleted(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 3).await;
    assert_eq!(sync(&svc, &token, "tags").await["inserted"], 3);
    // The next sync's second list of Tags (its first asks for records never modified) is
    // answered two seconds after it was read; once read, 1003 is changed upstream, which tells
    // the test that the page holding 1001 is on its way. Calls for one record are let through
    // as they are (the first rule a call matches applies), and not counted by the second.
    let by_id = json!({"path_prefix": "/odata/Tags(", "status": 200, "times": 1000});
    add_fault(&svc.client, &svc.fieldreport, by_id).await;
    let late = json!({"path_prefix": "/odata/Tags", "status": 200, "answer_delay_ms": 2000, "after": 1});
    add_fault(&svc.client, &svc.fieldreport, late).await;
    let script = json!({"set": "Tags", "after_pages": 2, "touch": ["1003"]});
    let answer = svc.client.post(format!("{}/__sandbox/during-list", svc.fieldreport)).json(&script).checked().await;
    assert_eq!(answer.unwrap().status(), 200);
    let delete = async {
        loop {
            let read = svc.odata(reqwest::Method::GET, "Tags(1003L)").checked().await.unwrap();
            if read.json::<Value>().await.unwrap()["Version"] == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(svc.delete(&token, "/api/v1/fieldreport/tags/1001").await.status(), 204);
    };
    let (report, ()) = tokio::join!(sync(&svc, &token, "tags"), delete);
    let gone = svc.odata(reqwest::Method::GET, "Tags(1001L)").checked().await.unwrap();
    assert_eq!(gone.status(), 404, "deleted upstream");
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/tags/1001").await.status(), 404, "{report}");
    svc.stop().await;
}

on_both_databases!(
    a_reconciling_sync_removes_what_the_upstream_deleted,
    ten_thousand_records_across_pages_then_only_newer_ones,
    an_interrupted_sync_resumes_without_duplicates,
    one_sync_per_entity_at_a_time,
    show_lists_entities_and_finds_records,
    a_record_deleted_while_its_page_is_on_its_way_stays_deleted,
);
