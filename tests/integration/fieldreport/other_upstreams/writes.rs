//! Forwarded writes against an OData server other than the simulator (see [`super::write_fake`]):
//! the mirror ends equal to the server, and a write sent again after a refusal succeeds
//! without a sync.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::common::{Api, Db, TestService, error_body};
use http::StatusCode;
use integration_service::fieldreport::service::entity_named;
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{json, serve};
use integration_service::store::fieldreport::records::SyncedRecord;
use reqwest::Method;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::fake::Held;
use super::mirror;
use super::push_answers::{internal_writer, push};
use super::write_fake::{Created, Updated, WriteFake, start};

const COMPANIES: &str = "/api/v1/fieldreport/companies";

async fn send(svc: &TestService, token: &str, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
    svc.call(token, method, path, body).await
}

/// A create answered `204 No Content` with the record's address in `OData-EntityId` (a server
/// asked, or defaulting, to `return=minimal`), or `201` with only `Location`: the server
/// assigned an Id the body does not tell. The record was stored under the Id the client sent,
/// which the server does not have: the next update of it was answered 404 and the record left
/// the mirror. It is stored under the server's Id, and updated there.
async fn a_create_answered_without_a_body_takes_the_id_of_its_address(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = start(db, &fake).await;
    for (n, created) in [Created::NoContent, Created::LocationOnly].into_iter().enumerate() {
        *fake.created.lock().unwrap() = created;
        let new = json!({"Id": format!("new-{n}"), "Version": 1, "Name": "Acme"});
        let response = send(&svc, &token, Method::POST, COMPANIES, Some(new)).await;
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        let id = body["data"]["Id"].as_str().unwrap().to_string();
        assert!(fake.records.lock().unwrap().contains_key(&id.parse::<i64>().unwrap_or(-1)), "{body}");
        let item = format!("{COMPANIES}/{id}");
        let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "Acme 2"}))).await;
        assert_eq!(updated.status(), 200, "{}", updated.text().await.unwrap());
    }
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// A server of ETags refuses a stale `Version` with `412 Precondition Failed`, not 409: the
/// update failed with 502 and the mirror kept its stale copy, so every retry was refused
/// again until a sync. The mirror takes the server's record, the caller gets 409
/// `upstream_conflict`, and the update sent again succeeds.
async fn an_update_refused_with_412_is_caught_up_as_a_conflict(db: Db) {
    let fake = WriteFake::new();
    *fake.stale_status.lock().unwrap() = 412;
    let (svc, token) = start(db, &fake).await;
    let created: Value =
        send(&svc, &token, Method::POST, COMPANIES, Some(json!({"Id": "x", "Version": 1}))).await.json().await.unwrap();
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let key: i64 = id.parse().unwrap();
    // Another client changes it at the server.
    fake.records
        .lock()
        .unwrap()
        .get_mut(&key)
        .unwrap()
        .extend(json!({"Version": 2, "Name": "theirs"}).as_object().unwrap().clone());
    let item = format!("{COMPANIES}/{id}");
    let refused = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "mine"}))).await;
    let body = error_body(refused, 409).await;
    assert_eq!(body["error_code"], "upstream_conflict", "{body}");
    let retried = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "mine"}))).await;
    assert_eq!(retried.status(), 200);
    assert_eq!(mirror(&svc).await, BTreeMap::from([(id, json!(3))]));
    svc.stop().await;
}

/// A server that answers `410 Gone` for a record deleted there: a delete of it is done (as a
/// 404 is), not refused for ever with the record put back; an update of it lets the record go
/// from the mirror and answers 404.
async fn a_record_gone_with_410_leaves_the_mirror(db: Db) {
    let fake = WriteFake::new();
    *fake.gone_status.lock().unwrap() = 410;
    let (svc, token) = start(db, &fake).await;
    let mut ids = Vec::new();
    for n in 0..2 {
        let new = json!({"Id": format!("n{n}"), "Version": 1});
        let created: Value = send(&svc, &token, Method::POST, COMPANIES, Some(new)).await.json().await.unwrap();
        ids.push(created["data"]["Id"].as_str().unwrap().to_string());
    }
    fake.records.lock().unwrap().clear();
    let deleted = send(&svc, &token, Method::DELETE, &format!("{COMPANIES}/{}", ids[0]), None).await;
    assert_eq!(deleted.status(), 204, "{}", deleted.text().await.unwrap());
    let updated = send(&svc, &token, Method::PATCH, &format!("{COMPANIES}/{}", ids[1]), Some(json!({"A": 1}))).await;
    error_body(updated, 404).await;
    assert_eq!(mirror(&svc).await, BTreeMap::new());
    let tombstones: (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM fieldreport_deletes").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(tombstones.0, 0);
    svc.stop().await;
}

/// Error bodies that are not OData JSON: an OData v3 XML error and an HTML error page of a
/// proxy or of IIS. The caller gets the server's message, not markup.
async fn error_bodies_in_xml_and_html_give_their_message(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = start(db, &fake).await;
    let xml = r#"<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>Validation</m:code><m:message xml:lang="en-US">The Name field is required.</m:message></m:error>"#;
    let html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{font-family:Segoe UI}</style><title>400 - Bad Request: the request could not be understood</title></head><body><h1>Server Error</h1></body></html>";
    for (content_type, body, expected) in [
        ("application/xml", xml, "Validation: The Name field is required."),
        ("text/html", html, "400 - Bad Request: the request could not be understood"),
    ] {
        fake.script(Method::POST, 400, content_type, body);
        let refused = send(&svc, &token, Method::POST, COMPANIES, Some(json!({"Id": "e", "Version": 1}))).await;
        let answer = error_body(refused, 502).await;
        assert_eq!(answer["error_code"], "upstream_error", "{answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message}");
        assert!(!message.contains('<'), "{message}");
    }
    assert_eq!(mirror(&svc).await, BTreeMap::new());
    svc.stop().await;
}

/// A server that assigns a new record's `Version` itself (answered as OData v3 writes an
/// Int64, a string) whatever the create sent: the mirror kept the Version sent, so the next
/// update sent one the server refused as stale. The mirror takes the Version answered.
async fn a_create_takes_the_version_the_server_assigned(db: Db) {
    let fake = WriteFake::new();
    *fake.first_version.lock().unwrap() = Some(1);
    let (svc, token) = start(db, &fake).await;
    let created = send(&svc, &token, Method::POST, COMPANIES, Some(json!({"Id": "v", "Version": 5}))).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["data"]["Version"], 1, "{created}");
    let item = format!("{COMPANIES}/{}", created["data"]["Id"].as_str().unwrap());
    let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "n"}))).await;
    assert_eq!(updated.status(), 200, "{}", updated.text().await.unwrap());
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// A create answered `204` with an address that is not the configured server's: another
/// host and port, another scheme, a network-path reference (`//host/…`), dot segments that
/// climb out of the service root. The record is read back (the server sets its `Version`,
/// which only that read tells) at the configured server under the key the address names:
/// the address's place is never asked, so our credentials go nowhere else.
async fn a_create_is_read_back_at_the_configured_server_only(db: Db) {
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let noted = asked.clone();
    let log = slog::Logger::root(slog::Discard, slog::o!());
    let elsewhere = serve("127.0.0.1:0".parse().unwrap(), Arc::new(Faults::default()), log, move |req| {
        let authorization = req.headers.get("authorization").map(|v| v.to_str().unwrap_or("?").to_string());
        noted.lock().unwrap().push(format!("{} {} {authorization:?}", req.method, req.path));
        async { json(StatusCode::OK, &json!({"Id": "1", "Version": 99})) }
    })
    .await
    .unwrap();
    let fake = WriteFake::new();
    *fake.created.lock().unwrap() = Created::NoContent;
    *fake.first_version.lock().unwrap() = Some(7);
    let (svc, token) = start(db, &fake).await;
    let addresses = [
        format!("http://{elsewhere}/odata/Companies({{id}}L)"),
        format!("https://{elsewhere}/odata/Companies({{id}}L)"),
        format!("//{elsewhere}/odata/Companies({{id}}L)"),
        format!("/odata/../../{elsewhere}/odata/Companies({{id}}L)"),
        format!("http://{elsewhere}/odata/../x/./Companies({{id}}L)"),
    ];
    for (n, address) in addresses.into_iter().enumerate() {
        *fake.address.lock().unwrap() = Some(address.clone());
        let new = json!({"Id": format!("l{n}"), "Version": 1});
        let created = send(&svc, &token, Method::POST, COMPANIES, Some(new)).await;
        assert_eq!(created.status(), 201, "{address}");
        let body: Value = created.json().await.unwrap();
        let id = body["data"]["Id"].as_str().unwrap().parse::<i64>().unwrap_or(-1);
        assert!(fake.records.lock().unwrap().contains_key(&id), "{address}: {body}");
        assert_eq!(body["data"]["Version"], 7, "{address}: read back at the configured server: {body}");
    }
    assert_eq!(*asked.lock().unwrap(), Vec::<String>::new(), "nothing asked elsewhere");
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// The service, its field-report system `fake` with its answers to `method` held until
/// the test lets each go (a sync reads what the server made meanwhile).
pub(super) async fn serving_held(db: Db, fake: &Arc<WriteFake>, method: Method) -> (TestService, String, Held) {
    let served = fake.clone();
    super::fake::serving_held(db, move |req| served.answer(req), move |req| req.method == method).await
}

/// A company made through the service (the server's answers to creates are not held); its Id.
pub(super) async fn made(svc: &TestService, token: &str) -> String {
    let made = send(svc, token, Method::POST, COMPANIES, Some(json!({"Id": "0", "Version": 1}))).await;
    let made: Value = made.json().await.unwrap();
    made["data"]["Id"].as_str().unwrap().to_string()
}

/// Once the server holds a record of which `read` makes the copy a sync reads, stores that
/// copy as a sync's page does and lets the held answer go; the record's Id.
async fn synced_meanwhile(
    svc: &TestService,
    fake: &WriteFake,
    answers_held: &Notify,
    read: impl Fn(&Map<String, Value>) -> Option<Map<String, Value>>,
) -> String {
    let mut copy = None;
    for _ in 0..1_000 {
        copy = fake.records.lock().unwrap().values().find_map(&read);
        if copy.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let copy = Value::Object(copy.expect("the server made the write"));
    let id = copy["Id"].as_str().unwrap().to_string();
    let version = copy["Version"].as_i64().unwrap();
    let document = serde_json::value::to_raw_value(&copy).unwrap();
    let page = vec![SyncedRecord { id: id.clone(), version, external_id: None, document }];
    svc.store().mirror_upsert_page("companies", page).await.unwrap();
    answers_held.notify_one();
    id
}

/// A sync reads a new record while the server's answer to its create is on its way: the
/// mirror holds the record before the create stores it. The create was answered 409 "exists
/// already" though the server had made it, and a client's retry made a second record. It is
/// answered 201 with the record, which the server holds once.
async fn a_create_whose_record_a_sync_stored_first_is_made_once(db: Db) {
    let fake = WriteFake::new();
    let (svc, token, held) = serving_held(db, &fake, Method::POST).await;
    let new = json!({"Id": "0", "Version": 1, "Name": "Acme"});
    let (created, id) = tokio::join!(
        send(&svc, &token, Method::POST, COMPANIES, Some(new)),
        synced_meanwhile(&svc, &fake, &held.answers, |record| Some(record.clone()))
    );
    let status = created.status();
    let body: Value = created.json().await.unwrap();
    assert_eq!((status, body["data"]["Id"].as_str()), (StatusCode::CREATED, Some(id.as_str())), "{body}");
    assert_eq!(fake.records.lock().unwrap().len(), 1);
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// A sync reads a later change of a record, made at the server by someone else, while the
/// server's answer to an update is on its way: the update was answered 409 "changed by
/// another request" though the server had taken it. It is answered 200, and the mirror keeps
/// the later change.
async fn an_update_overtaken_by_a_later_change_a_sync_read_stands(db: Db) {
    let fake = WriteFake::new();
    *fake.updated.lock().unwrap() = Updated::Record;
    let (svc, token, held) = serving_held(db, &fake, Method::PUT).await;
    let item = format!("{COMPANIES}/{}", made(&svc, &token).await);
    let later_change = |record: &Map<String, Value>| {
        let version = record["Version"].as_i64().filter(|version| *version > 1)?;
        let mut later = record.clone();
        later.insert("Name".into(), json!("changed there later"));
        later.insert("Version".into(), json!(version + 1));
        Some(later)
    };
    let (updated, _) = tokio::join!(
        send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "Acme 2"}))),
        synced_meanwhile(&svc, &fake, &held.answers, later_change)
    );
    let status = updated.status();
    let body: Value = updated.json().await.unwrap();
    assert_eq!((status, body["data"]["Name"].as_str()), (StatusCode::OK, Some("Acme 2")), "{body}");
    let mirrored: Value = send(&svc, &token, Method::GET, &item, None).await.json().await.unwrap();
    assert_eq!(mirrored["Name"], "changed there later", "{mirrored}");
    svc.stop().await;
}

/// An ERP webhook's write of a record (local, pending for `post`) lands while the server's
/// answer to an update of it through the API is on its way. The update's answer replaced the
/// record, as the local write left its Version as it was: the webhook's fields were gone here,
/// and `post` sent the record without them. They stay, and `post` sends them on top.
async fn a_local_write_during_a_forwarded_update_is_kept_and_pushed(db: Db) {
    let fake = WriteFake::new();
    let (svc, token, held) = serving_held(db, &fake, Method::PUT).await;
    let id = made(&svc, &token).await;
    let item = format!("{COMPANIES}/{id}");
    let webhook_meanwhile = async {
        held.arrived.notified().await;
        let companies = entity_named("companies").unwrap();
        let phone = json!({"Phone": "from the ERP"});
        internal_writer(&svc).update_pending(companies, &id, phone).await.unwrap();
        held.answers.notify_one();
    };
    let name = Some(json!({"Name": "Acme 2"}));
    let (updated, ()) = tokio::join!(send(&svc, &token, Method::PATCH, &item, name), webhook_meanwhile);
    assert_eq!(updated.status(), 200);
    let mirrored: Value = send(&svc, &token, Method::GET, &item, None).await.json().await.unwrap();
    let fields = (mirrored["Name"].as_str(), mirrored["Phone"].as_str());
    assert_eq!(fields, (Some("Acme 2"), Some("from the ERP")), "{mirrored}");
    held.answers.notify_one();
    push(&svc, &token, "update").await;
    let at_server = fake.records.lock().unwrap()[&id.parse::<i64>().unwrap()].clone();
    assert_eq!((&at_server["Name"], &at_server["Phone"]), (&json!("Acme 2"), &json!("from the ERP")));
    svc.stop().await;
}

on_both_databases!(
    a_local_write_during_a_forwarded_update_is_kept_and_pushed,
    a_create_is_read_back_at_the_configured_server_only,
    a_create_answered_without_a_body_takes_the_id_of_its_address,
    an_update_refused_with_412_is_caught_up_as_a_conflict,
    a_record_gone_with_410_leaves_the_mirror,
    error_bodies_in_xml_and_html_give_their_message,
    a_create_takes_the_version_the_server_assigned,
    a_create_whose_record_a_sync_stored_first_is_made_once,
    an_update_overtaken_by_a_later_change_a_sync_read_stands,
);
