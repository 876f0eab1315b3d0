//! Forwarded writes answered as a real OData server may answer them and our simulator does
//! not (see [`super::write_fake`]): a wait asked for, the record as the server stored it, and
//! OData v2's verbose form. The mirror ends equal to the server, and the caller is told what
//! happened.

use crate::common::{Api, Db, TestService, error_body};
use reqwest::Method;
use serde_json::{Value, json};

use super::mirror;
use super::write_fake::{Created, Updated, WriteFake, start};

const COMPANIES: &str = "/api/v1/fieldreport/companies";

async fn send(svc: &TestService, token: &str, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
    svc.call(token, method, path, body).await
}

/// A created company's Id, checked to have been answered 201.
async fn create(svc: &TestService, token: &str, body: Value) -> Value {
    let created = send(svc, token, Method::POST, COMPANIES, Some(body)).await;
    assert_eq!(created.status(), 201);
    created.json().await.unwrap()
}

/// A server in maintenance answers a write `503` with `Retry-After`. Read back, the write had
/// not applied, and the caller got 502 `upstream_unavailable`: the wait the server asked for
/// was lost. It gets 503 `upstream_busy` with that `Retry-After`, as for a 429; nothing
/// changed, and the write sent again succeeds.
async fn a_write_refused_with_retry_after_answers_the_wait(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = start(db, &fake).await;
    let created = create(&svc, &token, json!({"Id": "r", "Version": 1, "ExternalId": "r-1"})).await;
    let item = format!("{COMPANIES}/{}", created["data"]["Id"].as_str().unwrap());
    let maintenance = r#"{"error": {"code": "Maintenance", "message": "back soon"}}"#;
    let writes = [
        (Method::PUT, Method::PATCH, item.clone(), Some(json!({"Name": "n"}))),
        (Method::DELETE, Method::DELETE, item.clone(), None),
        (
            Method::POST,
            Method::POST,
            COMPANIES.to_string(),
            Some(json!({"Id": "s", "Version": 1, "ExternalId": "s-1"})),
        ),
    ];
    for (upstream, method, path, body) in writes {
        fake.script_with(upstream, 503, "application/json", maintenance, &[("Retry-After", "120")]);
        let refused = send(&svc, &token, method.clone(), &path, body).await;
        let wait = refused.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
        let answer = error_body(refused, 503).await;
        assert_eq!((answer["error_code"].as_str(), wait.as_deref()), (Some("upstream_busy"), Some("120")), "{method}");
        assert_eq!(mirror(&svc).await, fake.versions(), "{method}");
    }
    let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "n"}))).await;
    assert_eq!(updated.status(), 200, "{}", updated.text().await.unwrap());
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// A server that sets `Version` (and `DateModified`) itself on update and answers 200 with the
/// record: the mirror kept the document it sent, at the Version it sent, so the next update
/// sent a Version the server refused as stale. The mirror takes the record answered.
async fn an_update_takes_the_record_the_server_answered(db: Db) {
    let fake = WriteFake::new();
    *fake.updated.lock().unwrap() = Updated::Record;
    let (svc, token) = start(db, &fake).await;
    let created = create(&svc, &token, json!({"Id": "u", "Version": 1})).await;
    let item = format!("{COMPANIES}/{}", created["data"]["Id"].as_str().unwrap());
    for name in ["first", "second"] {
        let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": name}))).await;
        assert_eq!(updated.status(), 200, "{name}: {}", updated.text().await.unwrap());
        let body: Value = updated.json().await.unwrap();
        assert_eq!(body["data"]["DateModified"], "2026-02-02T00:00:00", "{body}");
        assert_eq!(mirror(&svc).await, fake.versions());
    }
    svc.stop().await;
}

/// A server that sets `Version` itself on update and answers `204` with only an `ETag`
/// naming it (weak, `W/"102"`): the mirror kept the Version it sent, so the next update was
/// refused as stale and the caller told the record had changed at the server, which no one
/// had changed. The mirror learns the server's record.
async fn an_update_answered_with_only_a_new_etag_learns_the_servers_version(db: Db) {
    let fake = WriteFake::new();
    *fake.updated.lock().unwrap() = Updated::ETagOnly;
    let (svc, token) = start(db, &fake).await;
    let created = create(&svc, &token, json!({"Id": "t", "Version": 1})).await;
    let item = format!("{COMPANIES}/{}", created["data"]["Id"].as_str().unwrap());
    for name in ["first", "second"] {
        let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": name}))).await;
        assert_eq!(updated.status(), 200, "{name}: {}", updated.text().await.unwrap());
        assert_eq!(mirror(&svc).await, fake.versions());
    }
    svc.stop().await;
}

/// A server that answers a write `200` with an OData error body (`{"error": …}`) did not do
/// it: the mirror took the update as done, and let the deleted record go, while the server
/// kept both as they were. Such an answer is no success: the server is read back, the write
/// is answered as not applied, and the mirror stays equal to the server.
async fn a_write_answered_200_with_an_error_body_is_not_taken_as_done(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = start(db, &fake).await;
    let created = create(&svc, &token, json!({"Id": "e", "Version": 1})).await;
    let item = format!("{COMPANIES}/{}", created["data"]["Id"].as_str().unwrap());
    let error = r#"{"error": {"code": "Locked", "message": "the record is locked"}}"#;
    for (upstream, method, body) in
        [(Method::PUT, Method::PATCH, Some(json!({"Name": "n"}))), (Method::DELETE, Method::DELETE, None)]
    {
        fake.script(upstream, 200, "application/json", error);
        let answered = send(&svc, &token, method.clone(), &item, body).await;
        let answer = error_body(answered, 502).await;
        assert!(answer["message"].as_str().unwrap().contains("the record is locked"), "{method}: {answer}");
        assert_eq!(mirror(&svc).await, fake.versions(), "{method}");
    }
    svc.stop().await;
}

/// An OData v2 server answers a record in its verbose form, `{"d": {…}}`. A create's Id was
/// looked for beside `d`, not in it: without an address the create's outcome was unknown
/// (504), and the Version the server assigned was lost; an update's record was not seen. The
/// record is read inside `d`, its `__metadata` and the link of a relation not expanded
/// (`__deferred`) left out: the mirror keeps the relation's records.
async fn records_answered_in_the_verbose_form_are_read_inside_d(db: Db) {
    let fake = WriteFake::new();
    *fake.created.lock().unwrap() = Created::Verbose;
    *fake.updated.lock().unwrap() = Updated::Verbose;
    *fake.first_version.lock().unwrap() = Some(1);
    let (svc, token) = start(db, &fake).await;
    let contact = json!({"Id": "7", "Name": "Ada"});
    let created = create(&svc, &token, json!({"Id": "v", "Version": 5, "Name": "Acme", "MainContact": contact})).await;
    assert_eq!(created["data"]["Version"], 1, "{created}");
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    assert!(fake.records.lock().unwrap().contains_key(&id.parse::<i64>().unwrap_or(-1)), "{created}");
    let updated = send(&svc, &token, Method::PATCH, &format!("{COMPANIES}/{id}"), Some(json!({"Name": "n"}))).await;
    assert_eq!(updated.status(), 200);
    let body: Value = updated.json().await.unwrap();
    assert_eq!(body["data"]["Version"], 102, "{body}");
    assert!(body["data"].get("__metadata").is_none() && body["data"].get("d").is_none(), "{body}");
    assert_eq!(body["data"]["MainContact"], contact, "{body}");
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

/// A server that takes a create for later processing answers `202 Accepted` without a body or
/// an address. The create was looked up by its `ExternalId` at once, not found (not made yet),
/// and answered 502 "not applied: send it again"; sent again, the record was made twice. Its
/// outcome is unknown (504 `upstream_outcome_unknown`), and the same create sent again looks
/// for the first one before it sends anything: found, it is the answer, and the server holds
/// one record.
async fn a_create_accepted_for_later_is_an_unknown_outcome(db: Db) {
    let fake = WriteFake::new();
    *fake.created.lock().unwrap() = Created::Accepted;
    let (svc, token) = start(db, &fake).await;
    let new = json!({"Id": "a", "Version": 1, "Name": "Later", "ExternalId": "acc-1"});
    let first = send(&svc, &token, Method::POST, COMPANIES, Some(new.clone())).await;
    let status = first.status().as_u16();
    let body: Value = first.json().await.unwrap();
    assert_eq!((status, body["error_code"].as_str()), (504, Some("upstream_outcome_unknown")), "{body}");
    assert_eq!(mirror(&svc).await, fake.versions(), "nothing stored here");
    fake.process_accepted();
    *fake.created.lock().unwrap() = Created::Record;
    let again = create(&svc, &token, new).await;
    let external = |record: &serde_json::Map<String, Value>| record.get("ExternalId") == Some(&json!("acc-1"));
    let made = fake.records.lock().unwrap().values().filter(|record| external(record)).count();
    assert_eq!(made, 1, "the server made the record once: {again}");
    assert_eq!(mirror(&svc).await, fake.versions());
    // Without an ExternalId nothing can be looked up: unknown too, never "not applied".
    *fake.created.lock().unwrap() = Created::Accepted;
    let unnamed = send(&svc, &token, Method::POST, COMPANIES, Some(json!({"Id": "b", "Version": 1}))).await;
    assert_eq!(error_body(unnamed, 504).await["error_code"], "upstream_outcome_unknown");
    svc.stop().await;
}

/// A server whose record read by key carries no `Version` (a `$select` of its own, or a
/// property it leaves out of single reads) refuses a delete: the record was put back at
/// Version 0 beside a document at 4, so the version the mirror compares (an update's replace,
/// a copy stored meanwhile kept when newer) was not the record's. It is put back with the
/// server's fields at the Version it had, and the next update is taken.
async fn a_refused_delete_put_back_from_a_copy_without_version_keeps_it(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = start(db, &fake).await;
    let created = create(&svc, &token, json!({"Id": "d", "Version": 4, "Name": "Acme"})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let item = format!("{COMPANIES}/{id}");
    fake.script(Method::DELETE, 403, "application/json", r#"{"error": {"code": "", "message": "in use"}}"#);
    let copy = json!({"Id": id, "Name": "Acme at the server"}).to_string();
    fake.script(Method::GET, 200, "application/json", &copy);
    let refused = send(&svc, &token, Method::DELETE, &item, None).await;
    assert_eq!(refused.status(), 502, "{}", refused.text().await.unwrap());
    let restored: Value = send(&svc, &token, Method::GET, &item, None).await.json().await.unwrap();
    assert_eq!((&restored["Version"], &restored["Name"]), (&json!(4), &json!("Acme at the server")), "{restored}");
    let stored = svc.store().mirror_get("companies", &id).await.unwrap().unwrap();
    assert_eq!(stored.version, 4, "the version the mirror compares");
    let updated = send(&svc, &token, Method::PATCH, &item, Some(json!({"Name": "n"}))).await;
    assert_eq!(updated.status(), 200, "{}", updated.text().await.unwrap());
    assert_eq!(mirror(&svc).await, fake.versions());
    svc.stop().await;
}

on_both_databases!(
    a_refused_delete_put_back_from_a_copy_without_version_keeps_it,
    a_create_accepted_for_later_is_an_unknown_outcome,
    a_write_refused_with_retry_after_answers_the_wait,
    an_update_takes_the_record_the_server_answered,
    an_update_answered_with_only_a_new_etag_learns_the_servers_version,
    a_write_answered_200_with_an_error_body_is_not_taken_as_done,
    records_answered_in_the_verbose_form_are_read_inside_d,
);
