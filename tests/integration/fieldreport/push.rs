//! Setup stages and the bulk push of internal (not forwarded) writes.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body};
use integration_service::config::Config;
use integration_service::fieldreport::service::FieldReportService;
use integration_service::upstream::fieldreport::FieldReportClient;
use serde_json::{Value, json};

/// A client of the test's field-report simulator, as the service has it.
fn upstream_client(svc: &TestService) -> Result<FieldReportClient, integration_service::upstream::UpstreamError> {
    let config = Config::load_with(
        None,
        &[
            ("FIELDREPORT_BASE_URL", &svc.fieldreport),
            ("FIELDREPORT_USERNAME", "sandbox"),
            ("FIELDREPORT_PASSWORD", "sandbox-password"),
        ],
    )
    .unwrap();
    FieldReportClient::from_config(&config.fieldreport)
}

/// The domain service as internal writers (ERP webhooks) use it: writes without forwarding.
fn internal_writer(svc: &TestService) -> FieldReportService {
    FieldReportService::new(svc.store().clone(), upstream_client(svc))
}

async fn setup_runs_the_stages_in_order(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("ItemTypes", 5).await;
    svc.seed("Users", 3).await;
    let response = svc.get(&token, "/api/v1/fieldreport/setup/1").await;
    assert_eq!(response.status(), 200);
    let reports: Value = response.json_value().await;
    let entities: Vec<&str> =
        reports["data"].as_array().unwrap().iter().map(|r| r["entity"].as_str().unwrap()).collect();
    assert_eq!(entities, ["itemTypes", "itemUnits", "costCenters", "tags", "qualifications", "users"]);
    assert_eq!(reports["data"][0]["inserted"], 5);
    assert_eq!(reports["data"][5]["inserted"], 3);
    let all: Value = svc.get_json(&token, "/api/v1/fieldreport/setup").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 15);
    error_body(svc.get(&token, "/api/v1/fieldreport/setup/9").await, 422).await;
    svc.stop().await;
}

async fn internal_writes_are_pushed_once(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 2).await;
    svc.get(&token, "/api/v1/fieldreport/sync/tags").await;
    let writer = internal_writer(&svc);
    let tags = generated::fieldreport::by_route("tags").unwrap();
    for id in ["int-1", "int-2"] {
        let outcome = writer.create_pending(tags, json!({"Id": id, "Version": 1, "Name": id})).await.unwrap();
        assert_eq!(outcome.upstream, None, "internal writes are not forwarded");
    }
    // Internal updates: one with the next version, one with a wrong one (the push sends each
    // on top of the upstream's current version, whatever the writer put).
    writer.update_pending(tags, "1001", json!({"Name": "from the ERP", "Version": 2})).await.unwrap();
    writer.update_pending(tags, "1002", json!({"Name": "stale", "Version": 7})).await.unwrap();
    let received_before: Vec<Value> = svc.fieldreport_received().await;
    assert!(received_before.is_empty(), "nothing was sent yet");

    let pushed: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/create/tags").await;
    assert_eq!(pushed["data"][0]["pushed"], 2, "{pushed}");
    let updates: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/update/tags").await;
    assert_eq!(updates["data"][0]["pushed"], 2, "{updates}");
    assert_eq!(updates["data"][0]["failed"], 0, "{updates}");
    assert_eq!(upstream_record(&svc, "Tags", "1002").await.unwrap()["Version"], 2, "sent as the next version");

    // A rerun sends nothing twice.
    let again: Value = svc.get_json(&token, "/api/v1/fieldreport/post").await;
    let pushed_again: u64 = again["data"].as_array().unwrap().iter().map(|r| r["pushed"].as_u64().unwrap()).sum();
    assert_eq!(pushed_again, 0, "{again}");
    let received: Vec<Value> = svc.fieldreport_received().await;
    let posts = received.iter().filter(|w| w["method"] == "POST").count();
    assert_eq!(posts, 2);

    // Pushed creates took the upstream's Id.
    let found: Value = svc.get_json(&token, "/api/v1/fieldreport/show/tags/Name/int-1").await;
    let id = found["data"][0]["Id"].as_str().unwrap();
    assert!(id.parse::<i64>().is_ok(), "{found}");

    error_body(svc.get(&token, "/api/v1/fieldreport/post/1/remove/tags").await, 422).await;
    error_body(svc.get(&token, "/api/v1/fieldreport/post/2/create/tags").await, 422).await;
    svc.stop().await;
}

/// The upstream's own copy of a record: its JSON, or the status it answered.
async fn upstream_record(svc: &TestService, set: &str, id: &str) -> Result<Value, u16> {
    let answer = svc.odata(reqwest::Method::GET, &format!("{set}({id}L)")).checked().await.unwrap();
    match answer.status().as_u16() {
        200 => Ok(answer.json_value().await),
        status => Err(status),
    }
}

/// A delete made without forwarding (as an ERP webhook makes it) is pending like a create or
/// an update: a sync meanwhile does not bring the record back, even when another client
/// changed it at the upstream; `post` deletes it there once; a placeholder that never reached
/// the upstream is dropped with nothing to send.
async fn local_deletes_are_pushed_and_never_undone_by_a_sync(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 3).await;
    svc.get(&token, "/api/v1/fieldreport/sync/tags").await;
    let writer = internal_writer(&svc);
    let tags = generated::fieldreport::by_route("tags").unwrap();
    writer.delete_pending(tags, "1001").await.unwrap();
    writer.create_pending(tags, json!({"Id": "int-9", "Version": 1, "Name": "never pushed"})).await.unwrap();
    writer.delete_pending(tags, "int-9").await.unwrap();
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/tags/1001").await.status(), 404);

    // Another client changes the record at the upstream: the next sync fetches it again.
    let mut changed = upstream_record(&svc, "Tags", "1001").await.unwrap();
    changed["Name"] = json!("changed elsewhere");
    changed["Version"] = json!(changed["Version"].as_i64().unwrap() + 1);
    let client = upstream_client(&svc).unwrap();
    client.update("Tags", "1001", &changed).await.unwrap();
    let synced: Value = svc.get_json(&token, "/api/v1/fieldreport/sync/tags").await;
    // The overlap window reads the other two again, unchanged.
    assert_eq!(synced["data"][0]["fetched"], 3, "{synced}");
    assert_eq!(synced["data"][0]["deleted_here"], 1, "{synced}");
    assert_eq!(synced["data"][0]["inserted"], 0, "{synced}");
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/tags/1001").await.status(), 404, "the sync undid no delete");

    let posted: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/delete/tags").await;
    assert_eq!(posted["data"][0]["kind"], "delete", "{posted}");
    assert_eq!(posted["data"][0]["pushed"], 1, "one delete sent, none for the placeholder: {posted}");
    assert_eq!(upstream_record(&svc, "Tags", "1001").await, Err(404));
    let again: Value = svc.get_json(&token, "/api/v1/fieldreport/post").await;
    let sent_again: u64 = again["data"].as_array().unwrap().iter().map(|r| r["pushed"].as_u64().unwrap()).sum();
    assert_eq!(sent_again, 0, "{again}");
    let received: Vec<Value> = svc.fieldreport_received().await;
    let deletes: Vec<&Value> = received.iter().filter(|w| w["method"] == "DELETE").collect();
    assert_eq!(deletes.len(), 1, "{received:?}");
    assert!(deletes[0]["path"].as_str().unwrap().contains("Tags(1001L)"), "{received:?}");

    // A delete the upstream has already made counts as done.
    writer.delete_pending(tags, "1002").await.unwrap();
    client.delete("Tags", "1002").await.unwrap();
    let posted: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/delete/tags").await;
    assert_eq!((posted["data"][0]["pushed"].as_u64(), posted["data"][0]["recovered"].as_u64()), (Some(0), Some(1)));
    let left: (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM fieldreport_deletes").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(left.0, 0, "confirmed deletes leave no tombstone");
    svc.stop().await;
}

/// An internal update (as an ERP webhook makes it, without a Version) waits for its push: a
/// sync meanwhile does not overwrite it, even after another client changed the record
/// upstream, and the push sends it on top of that change; a record deleted upstream meanwhile
/// leaves the mirror with its local change, reported.
async fn internal_updates_survive_syncs_and_upstream_changes(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 2).await;
    svc.get(&token, "/api/v1/fieldreport/sync/tags").await;
    let writer = internal_writer(&svc);
    let client = upstream_client(&svc).unwrap();
    let tags = generated::fieldreport::by_route("tags").unwrap();
    writer.update_pending(tags, "1001", json!({"Name": "from the ERP"})).await.unwrap();
    writer.update_pending(tags, "1002", json!({"Name": "from the ERP too"})).await.unwrap();
    let mut elsewhere = upstream_record(&svc, "Tags", "1001").await.unwrap();
    elsewhere["Name"] = json!("changed elsewhere");
    elsewhere["Description"] = json!("only upstream");
    elsewhere["Version"] = json!(2);
    client.update("Tags", "1001", &elsewhere).await.unwrap();
    client.delete("Tags", "1002").await.unwrap();

    let synced: Value = svc.get_json(&token, "/api/v1/fieldreport/sync/tags").await;
    assert_eq!(synced["data"][0]["updated"], 0, "{synced}");
    let local: Value = svc.get_json(&token, "/api/v1/fieldreport/tags/1001").await;
    assert_eq!(local["Name"], "from the ERP", "the sync kept the local change");

    let pushed: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/update/tags").await;
    assert_eq!((pushed["data"][0]["pushed"].as_u64(), pushed["data"][0]["failed"].as_u64()), (Some(1), Some(1)));
    assert_eq!(pushed["data"][0]["failures"][0]["id"], "1002", "{pushed}");
    let upstream = upstream_record(&svc, "Tags", "1001").await.unwrap();
    assert_eq!((upstream["Name"].as_str(), upstream["Version"].as_i64()), (Some("from the ERP"), Some(3)));
    assert_eq!(upstream["Description"], "only upstream", "a field only the upstream had stays");
    let local: Value = svc.get_json(&token, "/api/v1/fieldreport/tags/1001").await;
    assert_eq!(local["Version"], 3, "{local}");
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/tags/1002").await.status(), 404);
    svc.stop().await;
}

/// Seeds and syncs the simulator's tag 1001: a local write of it (as an ERP webhook makes it,
/// pending for `post`).
async fn one_tag_synced(svc: &TestService, token: &str) -> impl AsyncFn(Value) + use<> {
    svc.seed("Tags", 1).await;
    svc.get(token, "/api/v1/fieldreport/sync/tags").await;
    let writer = internal_writer(svc);
    async move |fields| {
        let tags = generated::fieldreport::by_route("tags").unwrap();
        writer.update_pending(tags, "1001", fields).await.unwrap();
    }
}

/// Another client renames tag 1001 at the upstream (its Version 1 to 2).
async fn renamed_elsewhere(svc: &TestService) {
    let mut elsewhere = upstream_record(svc, "Tags", "1001").await.unwrap();
    elsewhere["Name"] = json!("changed elsewhere");
    elsewhere["Version"] = json!(2);
    upstream_client(svc).unwrap().update("Tags", "1001", &elsewhere).await.unwrap();
}

/// A pending update sends over the upstream's current record only the fields the local writes
/// changed, gathered across them until the push (a field written with the value it had is no
/// change, as an ERP webhook writes every mapped field): a field another client changed there
/// meanwhile stays as it is there, and the mirror takes the upstream's record with the local
/// fields on top.
async fn a_push_sends_only_the_fields_written_here(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let write_here = one_tag_synced(&svc, &token).await;
    write_here(json!({"Description": "from the ERP"})).await;
    write_here(json!({"Color": "red", "Name": "Tags 0"})).await;
    renamed_elsewhere(&svc).await;

    let pushed: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/update/tags").await;
    assert_eq!(pushed["data"][0]["pushed"], 1, "{pushed}");
    let upstream = upstream_record(&svc, "Tags", "1001").await.unwrap();
    let fields = |record: &Value| {
        let field = |name: &str| record[name].as_str().map(str::to_string);
        (field("Name"), field("Description"), field("Color"), record["Version"].as_i64())
    };
    let expected =
        (Some("changed elsewhere".to_string()), Some("from the ERP".to_string()), Some("red".to_string()), Some(3));
    assert_eq!(fields(&upstream), expected, "the other client's change stays: {upstream}");
    let local: Value = svc.get_json(&token, "/api/v1/fieldreport/tags/1001").await;
    assert_eq!(fields(&local), expected, "the mirror holds what the upstream has: {local}");
    svc.stop().await;
}

/// A pending update whose changed fields were not recorded (made pending before they were,
/// migration 0043) is pushed as it was then: its whole document over the upstream's record.
async fn an_update_pending_without_its_fields_is_pushed_whole(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    one_tag_synced(&svc, &token).await(json!({"Description": "from the ERP"})).await;
    sqlx::query("UPDATE fieldreport_records SET pending_fields = NULL").execute(svc.store().pool()).await.unwrap();
    renamed_elsewhere(&svc).await;

    let pushed: Value = svc.get_json(&token, "/api/v1/fieldreport/post/1/update/tags").await;
    assert_eq!(pushed["data"][0]["pushed"], 1, "{pushed}");
    let upstream = upstream_record(&svc, "Tags", "1001").await.unwrap();
    assert_eq!((upstream["Name"].as_str(), upstream["Description"].as_str()), (Some("Tags 0"), Some("from the ERP")));
    svc.stop().await;
}

on_both_databases!(
    a_push_sends_only_the_fields_written_here,
    an_update_pending_without_its_fields_is_pushed_whole,
    internal_updates_survive_syncs_and_upstream_changes,
    setup_runs_the_stages_in_order,
    internal_writes_are_pushed_once,
    local_deletes_are_pushed_and_never_undone_by_a_sync
);
