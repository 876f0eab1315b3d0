//! Pushed writes (written here without forwarding, sent later by `post`) answered as a real
//! OData server may answer them (see [`super::write_fake`]): the mirror takes what the server
//! answered, as it does for a forwarded write, so the next update through the API is not
//! refused as stale.

use crate::common::{Api, Db, TestService, error_body};
use integration_service::fieldreport::service::FieldReportService;
use integration_service::upstream::{System, UpstreamError};
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::Arc;

use super::mirror;
use super::write_fake::{Created, Updated, WriteFake, start};

/// The domain service as internal writers (ERP webhooks) use it: writes without forwarding.
pub(super) fn internal_writer(svc: &TestService) -> FieldReportService {
    let unused = UpstreamError::Client { system: System::FieldReport, detail: "internal writes".to_string() };
    FieldReportService::new(svc.store().clone(), Err(unused))
}

/// Pushes the pending writes of `kind` of the companies: one pushed, none failed.
pub(super) async fn push(svc: &TestService, token: &str, kind: &str) {
    let pushed: Value = svc.get_json(token, &format!("/api/v1/fieldreport/post/2/{kind}/companies")).await;
    assert_eq!((&pushed["data"][0]["pushed"], &pushed["data"][0]["failed"]), (&json!(1), &json!(0)), "{pushed}");
}

/// The only company of the mirror, updated through the API: answered 200.
async fn update_through_the_api(svc: &TestService, token: &str, name: &str) {
    let id = mirror(svc).await.into_keys().next().unwrap();
    let path = format!("/api/v1/fieldreport/companies/{id}");
    let updated = svc.call(token, Method::PATCH, &path, Some(json!({"Name": name}))).await;
    assert_eq!(updated.status(), 200, "{name}: {}", updated.text().await.unwrap());
}

/// A service over `fake` holding one company created here and pending for `post` (Id `local`).
async fn with_a_create_pending(db: Db, fake: &Arc<WriteFake>) -> (TestService, String) {
    let (svc, token) = start(db, fake).await;
    let companies = generated::fieldreport::by_route("companies").unwrap();
    let record = json!({"Id": "local", "Version": 5, "Name": "Acme"});
    internal_writer(&svc).create_pending(companies, record).await.unwrap();
    (svc, token)
}

/// Pushes the pending writes of `kind`, then updates the record through the API: the mirror
/// holds the server's versions after each.
async fn push_then_update_by_hand(svc: &TestService, token: &str, fake: &WriteFake, kind: &str) {
    push(svc, token, kind).await;
    assert_eq!(mirror(svc).await, fake.versions(), "after the pushed {kind}");
    update_through_the_api(svc, token, "by hand").await;
    assert_eq!(mirror(svc).await, fake.versions(), "after an update by hand");
}

/// A server that assigns a created record's `Version` and sets its own on every update,
/// answering each with the record: a pushed create kept the Version sent, a pushed update the
/// one it sent, and the next update through the API was refused as stale.
async fn pushed_writes_take_the_record_the_server_answered(db: Db) {
    let fake = WriteFake::new();
    *fake.first_version.lock().unwrap() = Some(1);
    *fake.updated.lock().unwrap() = Updated::Record;
    let (svc, token) = with_a_create_pending(db, &fake).await;
    push(&svc, &token, "create").await;
    assert_eq!(mirror(&svc).await, fake.versions(), "after the create");
    let id = mirror(&svc).await.into_keys().next().unwrap();
    let companies = generated::fieldreport::by_route("companies").unwrap();
    internal_writer(&svc).update_pending(companies, &id, json!({"Name": "from the ERP"})).await.unwrap();
    push_then_update_by_hand(&svc, &token, &fake, "update").await;
    svc.stop().await;
}

/// The same server answering a create `204` with only the new record's address: the record
/// takes the Id of the address, and the Version the server assigned, read back.
async fn a_pushed_create_answered_with_only_an_address_takes_the_servers_version(db: Db) {
    let fake = WriteFake::new();
    *fake.first_version.lock().unwrap() = Some(1);
    *fake.created.lock().unwrap() = Created::NoContent;
    let (svc, token) = with_a_create_pending(db, &fake).await;
    push_then_update_by_hand(&svc, &token, &fake, "create").await;
    svc.stop().await;
}

/// A record created here and not pushed yet has an Id the server does not know: an update
/// through the API is refused (409) without reaching the server, and the create stays for
/// `post`, which makes it. Sent on, the update was answered 404 and the record dropped.
async fn an_update_through_the_api_keeps_a_create_not_pushed_yet(db: Db) {
    let fake = WriteFake::new();
    let (svc, token) = with_a_create_pending(db, &fake).await;
    let path = "/api/v1/fieldreport/companies/local";
    let updated = svc.call(&token, Method::PATCH, path, Some(json!({"Name": "by hand"}))).await;
    assert_eq!(error_body(updated, 409).await["error_code"], "conflict");
    let kept = svc.store().mirror_get("companies", "local").await.unwrap();
    assert!(kept.is_some(), "the create is kept for `post`");
    push_then_update_by_hand(&svc, &token, &fake, "create").await;
    svc.stop().await;
}

on_both_databases!(
    an_update_through_the_api_keeps_a_create_not_pushed_yet,
    pushed_writes_take_the_record_the_server_answered,
    a_pushed_create_answered_with_only_an_address_takes_the_servers_version,
);
