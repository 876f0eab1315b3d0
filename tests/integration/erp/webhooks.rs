//! ERP webhooks: only allowlisted sources with the secret are admitted; a call mirrors the record
//! and writes the mapped company locally; repeated, late and deleting calls, and a full pull, keep
//! the mirror and the field-report system in step.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::{Db, error_body};
use integration_service::store::erp::ErpRecord;
use integration_service::store::fieldreport::records::Upserted;
use serde_json::{Value, json};
use std::time::Duration;

use super::*;

async fn webhooks_admit_only_allowlisted_sources(db: Db) {
    // Direct peer (127.0.0.1) in the allowlist.
    let (svc, _) = start(db, &[]).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    svc.stop().await;

    // Direct peer outside the allowlist; a forged X-Forwarded-For from an untrusted peer does
    // not help.
    let (svc, _) = start(db, &[("ERP_WEBHOOK_ALLOWLIST", "203.0.113.7/32")]).await;
    let body = error_body(webhook(&svc).json(&call).checked().await.unwrap(), 403).await;
    assert_eq!(body["error_code"], "forbidden_source");
    let spoofed = webhook(&svc).header("X-Forwarded-For", "203.0.113.7").json(&call).checked().await.unwrap();
    error_body(spoofed, 403).await;
    // Nor does any other header: the client address reaches the handlers in-process.
    for header in ["x-client-address", "x-real-ip", "forwarded"] {
        let spoofed = webhook(&svc).header(header, "203.0.113.7").json(&call).checked().await.unwrap();
        error_body(spoofed, 403).await;
    }
    svc.stop().await;

    // Behind a trusted proxy the forwarded address counts.
    let (svc, _) = start(db, &[("ERP_WEBHOOK_ALLOWLIST", "203.0.113.0/24"), ("TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    let via_proxy = webhook(&svc).header("X-Forwarded-For", "203.0.113.7").json(&call).checked().await.unwrap();
    accepted(via_proxy).await;
    let outsider = webhook(&svc).header("X-Forwarded-For", "198.51.100.1").json(&call).checked().await.unwrap();
    error_body(outsider, 403).await;
    svc.stop().await;
}

async fn webhooks_need_the_secret(db: Db) {
    let (svc, _) = start(db, &[]).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let url = svc.url("/api/v1/erp/webhooks");
    let missing = svc.client.post(&url).json(&call).checked().await.unwrap();
    assert_eq!(error_body(missing, 401).await["error_code"], "invalid_webhook_secret");
    let wrong = svc.client.post(&url).header("X-Webhook-Secret", "hook-secret-12").json(&call).checked().await.unwrap();
    error_body(wrong, 401).await;
    let wrong_query =
        svc.client.get(format!("{url}?secret=nope&entityName=customer&entityId=5")).checked().await.unwrap();
    error_body(wrong_query, 401).await;
    accepted(
        svc.client
            .get(format!("{url}?secret={SECRET}&entityName=customer&entityId=5&type=updated"))
            .checked()
            .await
            .unwrap(),
    )
    .await;
    accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    // A client generated from the document sends the header form, which it declares.
    let generated = client::Client::new(&svc.base);
    let payload: client::types::WebhookPayload = serde_json::from_value(call.clone()).unwrap();
    let sent = generated.erp_webhook_post().x_webhook_secret(SECRET).body(payload.clone()).send().await.unwrap();
    assert_eq!(sent.status().as_u16(), 202);
    match generated.erp_webhook_post().x_webhook_secret("hook-secret-12").body(payload).send().await {
        Err(client::Error::ErrorResponse(refused)) => assert_eq!(refused.status().as_u16(), 401),
        other => panic!("a wrong header secret must answer 401: {other:?}"),
    }
    let invalid = webhook(&svc).json(&json!({"entityName": "customer"})).checked().await.unwrap();
    error_body(invalid, 422).await;
    // Entity names are refused before they are stored: on Postgres a NUL character would have
    // failed the batch of every call stored with it.
    for name in ["cus\u{0}tomer", "customer/../x", "kunde ä"] {
        let odd = webhook(&svc).json(&json!({"entityName": name, "entityId": "5"})).checked().await.unwrap();
        let body = error_body(odd, 422).await;
        assert!(body.to_string().contains("entityName: letters, digits"), "{name:?}: {body}");
    }
    assert!(!svc.log.text().contains(SECRET), "the secret never reaches the log");
    svc.stop().await;
}

/// The simulator fires a registered webhook when a customer changes through its API; the
/// service mirrors the record and writes the mapped company locally, without forwarding.
async fn a_webhook_mirrors_the_record_and_writes_the_company_locally(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let url = svc.url(&format!("/api/v1/erp/webhooks?secret={SECRET}"));
    erp(
        &svc,
        reqwest::Method::POST,
        "/webhook",
        Some(json!({"entityName": "customer", "atCreate": true, "atUpdate": true, "atDelete": true, "requestMethod": "POST", "url": url})),
    )
    .await;
    erp_update(&svc, "customer", "5", json!({"company": "Müller Bürotechnik AG"})).await;

    let mut company = Value::Null;
    for _ in 0..100 {
        let found = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
        if let Some(first) = found["data"].get(0) {
            company = first.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(company["Name"], "Müller Bürotechnik AG", "{company}");
    assert_eq!(company["Id"], "erp-customer-5");
    assert_eq!(company["Location"]["City"], "Berlin");
    let mirrored = svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    assert_eq!(mirrored["company"], "Müller Bürotechnik AG");
    assert_eq!(mirrored["version"], "1");

    let show = svc.get_json(&token, "/api/v1/erp/show").await;
    let call = &show["inbox"]["calls"][0];
    assert_eq!(call["state"], "done", "{show}");
    assert_eq!(call["outcome"]["mirror"], "inserted");
    assert_eq!(call["outcome"]["fieldReport"]["action"], "created");
    assert_eq!(call["outcome"]["fieldReport"]["fieldReportResponse"], Value::Null);
    assert!(svc.fieldreport_received().await.is_empty(), "nothing is sent to the field-report system");

    // The company is pending for the field-report post tooling, like every internal write.
    let pending = svc.store().mirror_pending("companies", "create").await.unwrap();
    assert_eq!(pending.len(), 1);
    svc.stop().await;
}

async fn repeated_and_late_deliveries_change_nothing(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let call = json!({"entityName": "contact", "entityId": "8", "type": "created"});
    let done = processed(&svc, &token, &call).await;
    assert_eq!(done["outcome"]["mirror"], "inserted");
    assert_eq!(done["outcome"]["fieldReport"]["action"], "created");
    let contact = svc.get_json(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await;

    let again = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let repeated = inbox_call(&svc, &token, again, "done").await;
    assert_eq!(repeated["outcome"]["mirror"], "unchanged");
    assert_eq!(repeated["outcome"]["fieldReport"]["action"], "unchanged");
    assert_eq!(svc.get_json(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await, contact);

    // A late "deleted" for a record the ERP still has: it is fetched again and kept.
    let late = json!({"entityName": "contact", "entityId": "8", "type": "deleted"});
    let late_id = accepted(webhook(&svc).json(&late).checked().await.unwrap()).await;
    assert_eq!(inbox_call(&svc, &token, late_id, "done").await["outcome"]["mirror"], "unchanged");
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/contact/8").await["id"], "8");

    // An older version arriving after a newer one is ignored by the mirror.
    let stored = svc.store().erp_get("contact", "8").await.unwrap().unwrap();
    let older =
        ErpRecord { version: stored.version - 1, document: json!({"id": "8", "firstName": "Old"}), ..stored.clone() };
    assert_eq!(svc.store().erp_upsert("contact", &[older]).await.unwrap(), vec![Upserted::Unchanged]);
    assert_eq!(svc.store().erp_get("contact", "8").await.unwrap().unwrap().document, stored.document);

    // Deleted at the ERP: an "updated" delivered afterwards removes it here too.
    erp(&svc, reqwest::Method::DELETE, "/contact/id/8", None).await;
    let after =
        accepted(webhook(&svc).json(&json!({"entityName": "contact", "id": "8"})).checked().await.unwrap()).await;
    let removed = inbox_call(&svc, &token, after, "done").await;
    assert_eq!(removed["outcome"]["mirror"], "deleted");
    assert_eq!(removed["outcome"]["fieldReport"]["action"], "deleted");
    error_body(svc.get(&token, "/api/v1/erp/show/contact/8").await, 404).await;
    error_body(svc.get(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await, 404).await;
    svc.stop().await;
}

/// A customer deleted at the ERP after its company reached the field-report system: the
/// webhook removes the company here without forwarding, `post` deletes it upstream once, and
/// the next sync does not bring it back.
async fn an_erp_delete_reaches_the_field_report_system_and_stays(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let created = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let call = accepted(webhook(&svc).json(&created).checked().await.unwrap()).await;
    assert_eq!(inbox_call(&svc, &token, call, "done").await["outcome"]["fieldReport"]["action"], "created");
    let pushed = svc.get_json(&token, "/api/v1/fieldreport/post/2/create/companies").await;
    assert_eq!(pushed["data"][0]["pushed"], 1, "{pushed}");
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    let id = company["data"][0]["Id"].as_str().unwrap().to_string();
    assert!(id.parse::<u64>().is_ok(), "the company has the upstream's Id: {company}");

    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let deleted = json!({"entityName": "customer", "entityId": "5", "type": "deleted"});
    let call = accepted(webhook(&svc).json(&deleted).checked().await.unwrap()).await;
    let removed = inbox_call(&svc, &token, call, "done").await;
    assert_eq!(removed["outcome"]["fieldReport"]["action"], "deleted", "{removed}");
    assert!(!svc.fieldreport_received().await.iter().any(|w| w["method"] == "DELETE"), "the webhook does not forward");

    let posted = svc.get_json(&token, "/api/v1/fieldreport/post").await;
    let deletes: Vec<&Value> = posted["data"].as_array().unwrap().iter().filter(|r| r["kind"] == "delete").collect();
    let sent: u64 = deletes.iter().map(|r| r["pushed"].as_u64().unwrap()).sum();
    assert_eq!(sent, 1, "{posted}");
    let writes = svc.fieldreport_received().await;
    let upstream_deletes: Vec<&Value> = writes.iter().filter(|w| w["method"] == "DELETE").collect();
    assert_eq!(upstream_deletes.len(), 1, "{writes:?}");
    assert!(upstream_deletes[0]["path"].as_str().unwrap().contains(&format!("Companies({id}L)")), "{writes:?}");

    let synced = svc.get_json(&token, "/api/v1/fieldreport/sync/companies").await;
    assert_eq!(synced["data"][0]["inserted"], 0, "{synced}");
    error_body(svc.get(&token, &format!("/api/v1/fieldreport/companies/{id}")).await, 404).await;
    svc.stop().await;
}

/// A full pull (`erp setup`) removes what the ERP no longer has, and the mapped field-report
/// record with it: deleted locally, pending for `post`.
async fn a_full_pull_removes_what_the_erp_lost_and_its_mapped_record(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    svc.get_json(&token, "/api/v1/fieldreport/post/2/create/companies").await;
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    let id = company["data"][0]["Id"].as_str().unwrap().to_string();

    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let pulled = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let removed: u64 = pulled["data"].as_array().unwrap().iter().map(|r| r["removed"].as_u64().unwrap()).sum();
    assert_eq!(removed, 1, "{pulled}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    error_body(svc.get(&token, &format!("/api/v1/fieldreport/companies/{id}")).await, 404).await;
    let posted = svc.get_json(&token, "/api/v1/fieldreport/post/2/delete/companies").await;
    assert_eq!(posted["data"][0]["pushed"], 1, "{posted}");
    svc.stop().await;
}

/// The ERP's spelling of an entity name may differ in case from the registry's (`Customer`,
/// `CONTACT`), and ids may come as numbers: the call is still the record's.
async fn entity_names_in_another_case_are_the_same_model(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let call = json!({"entityName": "Contact", "entityId": 8, "type": "created"});
    let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let done = inbox_call(&svc, &token, id, "done").await;
    assert_eq!(done["outcome"]["mirror"], "inserted", "{done}");
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/contact/8").await["id"], "8");
    let call = json!({"entityName": "CUSTOMER", "entityId": "5", "type": "updated"});
    let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    assert_eq!(inbox_call(&svc, &token, id, "done").await["outcome"]["mirror"], "inserted");
    svc.stop().await;
}

/// A NUL character (U+0000) in a text of an ERP record, which no text of Postgres holds: a
/// pull stores the record as the ERP wrote it, and so does a webhook's call, whose record is
/// mapped to the field-report system's company.
async fn a_nul_in_a_record_is_stored_as_written(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let name = "ACME\u{0}GmbH";
    erp_update(&svc, "customer", "6", json!({"company": name, "email": "a\u{0}b@example.com"})).await;
    let setup = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    assert_eq!(setup["data"][0]["inserted"], 3, "{setup}");
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/6").await["company"], name);
    erp_update(&svc, "customer", "7", json!({"company": name})).await;
    let call = json!({"entityName": "customer", "entityId": "7", "type": "updated"});
    let done = processed(&svc, &token, &call).await;
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/7").await["company"], name, "{done}");
    svc.stop().await;
}

/// A customer changed at the ERP after its company reached the field-report system: the
/// webhook writes every mapped field here, and `post` sends only those it changed, so a field
/// another client changed at the field-report system meanwhile (the company's telephone) stays
/// as it is there.
async fn an_erp_change_keeps_a_field_changed_at_the_field_report_system(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    let pushed = svc.get_json(&token, "/api/v1/fieldreport/post/2/create/companies").await;
    assert_eq!(pushed["data"][0]["pushed"], 1, "{pushed}");
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    let id = company["data"][0]["Id"].as_str().unwrap().to_string();
    let upstream = |svc: &TestService| {
        let request = svc.odata(reqwest::Method::GET, &format!("Companies({id}L)"));
        async move { request.json_value().await }
    };
    let mut elsewhere: Value = upstream(&svc).await;
    elsewhere["SupportTelephone"] = json!("+49 30 9999");
    elsewhere["Version"] = json!(elsewhere["Version"].as_i64().unwrap() + 1);
    let path = format!("Companies({id}L)");
    let answer = svc.odata(reqwest::Method::PUT, &path).json(&elsewhere).checked().await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());

    erp_update(&svc, "customer", "5", json!({"company": "Müller Bürotechnik AG"})).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    assert_eq!(processed(&svc, &token, &call).await["outcome"]["fieldReport"]["action"], "updated");
    let posted = svc.get_json(&token, "/api/v1/fieldreport/post/2/update/companies").await;
    assert_eq!(posted["data"][0]["pushed"], 1, "{posted}");
    let now: Value = upstream(&svc).await;
    assert_eq!(now["Name"], "Müller Bürotechnik AG", "{now}");
    assert_eq!(now["SupportTelephone"], "+49 30 9999", "the other client's change stays: {now}");
    svc.stop().await;
}

on_both_databases!(
    an_erp_change_keeps_a_field_changed_at_the_field_report_system,
    a_nul_in_a_record_is_stored_as_written,
    webhooks_admit_only_allowlisted_sources,
    webhooks_need_the_secret,
    entity_names_in_another_case_are_the_same_model,
    a_webhook_mirrors_the_record_and_writes_the_company_locally,
    repeated_and_late_deliveries_change_nothing,
    an_erp_delete_reaches_the_field_report_system_and_stays,
    a_full_pull_removes_what_the_erp_lost_and_its_mapped_record
);
