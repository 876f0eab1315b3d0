//! Local custom attribute values and the pushes that carry them back to the ERP: a value set
//! while a push of an older one waits for its answer is neither undone by that answer nor
//! forgotten, and goes out with the next push.

use crate::common::Db;
use serde_json::{Value, json};

use super::*;

/// Customer 5 is posted to the field-report system, and the new company's Id waits on its
/// `fieldReportId` attribute for a push. The push's `PUT` is answered 3 s late; once the ERP has
/// taken it, the company is deleted and the customer posted again: a new company, a new Id set
/// locally. The late answer (the old Id) must not replace the new value nor clear its push.
async fn a_value_set_while_its_push_is_answered_late_is_pushed_next(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/entityPullAttr/customer").await;
    let posted = svc.get_json(&token, "/api/v1/erp/fieldReportPost/customer?id=5").await["data"][0].clone();
    assert_eq!(posted["attributes_marked"], 1, "{posted}");
    let first = company_of_customer_5(&svc, &token).await;

    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/customer/id/5", "status": 200, "answer_delay_ms": 3000}))
        .await;
    let before = erp_calls(&svc).await;
    let push = svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer");
    let meanwhile = async {
        erp_called_past(&svc, before).await;
        // The ERP has taken the push of the first Id and waits to answer it.
        let deleted = svc.delete(&token, &format!("/api/v1/fieldreport/companies/{first}")).await;
        assert_eq!(deleted.status(), 204);
        svc.get_json(&token, "/api/v1/erp/fieldReportPost/customer?id=5").await["data"][0].clone()
    };
    let (pushed, reposted) = tokio::join!(push, meanwhile);
    assert_eq!(pushed["data"]["pushed"], 1, "{pushed}");
    assert_eq!(reposted["attributes_marked"], 1, "{reposted}");
    let second = company_of_customer_5(&svc, &token).await;
    assert_ne!(first, second);

    let mirrored = svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    let definition = definition_of(&svc, &token).await;
    assert_eq!(attribute(&mirrored, &definition), Some(json!(second)), "kept locally: {mirrored}");
    let again = svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer").await["data"].clone();
    assert_eq!((again["pushed"].as_u64(), again["conflicts"].as_u64()), (Some(1), Some(0)), "{again}");
    let at_erp = erp(&svc, reqwest::Method::GET, "/customer/id/5", None).await;
    assert_eq!(attribute(&at_erp, &definition), Some(json!(second)), "the ERP has the new Id: {at_erp}");
    svc.stop().await;
}

/// Customer 5 is posted to the field-report system, and the company's Id waits on its
/// `fieldReportId` attribute for a push. The ERP then deletes customer 5 and creates another
/// record under its id (version 0, a later `createdDate`) before the mirror saw the delete, and
/// a refresh brings the new record. The value set for the deleted customer was kept over the
/// new one, still pending, and the push wrote it onto the new customer at the ERP: a value of
/// another record, which no pull or reconciling takes back.
async fn a_value_set_for_a_record_created_again_under_its_id_is_not_pushed(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/entityPullAttr/customer").await;
    let posted = svc.get_json(&token, "/api/v1/erp/fieldReportPost/customer?id=5").await["data"][0].clone();
    assert_eq!(posted["attributes_marked"], 1, "{posted}");
    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let again = json!({"id": "5", "company": "Another GmbH", "partyType": "ORGANIZATION"});
    svc.erp_sandbox("seed", json!({"model": "customer", "records": [again]})).await;
    let refreshed = svc.get_json(&token, "/api/v1/erp/update/customer/5").await;

    let definition = definition_of(&svc, &token).await;
    let mirrored = svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    assert_eq!(mirrored["company"], "Another GmbH", "{refreshed}");
    assert_eq!(attribute(&mirrored, &definition), None, "not the new record's value: {mirrored}");
    let pushed = svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer").await["data"].clone();
    assert_eq!(pushed["pushed"], 0, "{pushed}");
    let at_erp = erp(&svc, reqwest::Method::GET, "/customer/id/5", None).await;
    assert_eq!(attribute(&at_erp, &definition), None, "{at_erp}");
    svc.stop().await;
}

/// The Id of the company the field-report mirror holds for customer 5.
async fn company_of_customer_5(svc: &TestService, token: &str) -> String {
    let found = svc.get_json(token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    found["data"][0]["Id"].as_str().unwrap_or_else(|| panic!("one company: {found}")).to_string()
}

async fn definition_of(svc: &TestService, token: &str) -> String {
    let found = svc.get_json(token, "/api/v1/erp/show/customAttributeDefinition/attributeKey/fieldReportId").await;
    found["data"][0]["id"].as_str().unwrap().to_string()
}

/// The string value of a record's custom attribute `definition`.
fn attribute(record: &Value, definition: &str) -> Option<Value> {
    let values = record["customAttributes"].as_array()?;
    values.iter().find(|v| v["attributeDefinitionId"] == definition).map(|v| v["stringValue"].clone())
}

on_both_databases!(
    a_value_set_while_its_push_is_answered_late_is_pushed_next,
    a_value_set_for_a_record_created_again_under_its_id_is_not_pushed
);
