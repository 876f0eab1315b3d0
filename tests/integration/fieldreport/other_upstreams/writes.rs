//! Forwarded writes against an OData server other than the simulator (see [`super::write_fake`]):
//! the mirror ends equal to the server, and a write sent again after a refusal succeeds
//! without a sync.

use crate::common::{Api, Db, TestService};
use reqwest::Method;
use serde_json::{Value, json};

use super::mirror;
use super::write_fake::{Created, WriteFake, start};

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

on_both_databases!(a_create_answered_without_a_body_takes_the_id_of_its_address,);
