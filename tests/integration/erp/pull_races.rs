//! Webhooks processed while a pull's page is on its way: the page, read at the ERP before the
//! webhook's change, must not undo what the webhook did; a record the ERP lost leaves the
//! mirror with its mapped record, whichever way it is found out.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::{Db, error_body};
use serde_json::json;
use std::time::Duration;

use super::*;

/// A customer deleted at the ERP while a full pull's page holding it is answered late: the
/// delete webhook removes it from the mirror, and the late page must not bring it back (an
/// incremental pull never sees a deleted record again, so the mirror would keep it).
async fn a_record_deleted_while_a_pull_reads_it_stays_removed(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    svc.get_json(&token, "/api/v1/erp/show/customer/6").await;

    let (report, done) = delete_while_a_page_is_late(&svc, &token, "6").await;
    assert_eq!(done["outcome"]["mirror"], "deleted", "{done}");
    assert_eq!(report["data"][0]["errors"], json!([]), "{report}");

    error_body(svc.get(&token, "/api/v1/erp/show/customer/6").await, 404).await;
    assert_eq!(mirrored_customers(&svc, &token).await, 2);
    svc.stop().await;
}

/// A customer created and deleted at the ERP while a full pull's page holding it is answered
/// late: its delete webhook finds nothing in the mirror to remove, and the late page must not
/// store it all the same (nothing would ever remove it short of a reconciling).
async fn a_record_created_and_deleted_while_a_pull_reads_it_is_not_stored(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let body = json!({"customerNumber": "399999", "company": "Brief GmbH", "partyType": "ORGANIZATION"});
    let created = erp(&svc, reqwest::Method::POST, "/customer", Some(body)).await;
    let id = created["id"].as_str().unwrap().to_string();

    let (report, done) = delete_while_a_page_is_late(&svc, &token, &id).await;
    assert_eq!(done["outcome"]["mirror"], "absent", "{done}");
    assert_eq!(report["data"][0]["errors"], json!([]), "{report}");

    error_body(svc.get(&token, &format!("/api/v1/erp/show/customer/{id}")).await, 404).await;
    assert_eq!(mirrored_customers(&svc, &token).await, 3);
    svc.stop().await;
}

/// A full pull of the customers whose page is answered 3 s late; once the ERP has read the
/// page, customer `id` is deleted there and its delete webhook processed. The pull's report and
/// the webhook's inbox call.
async fn delete_while_a_page_is_late(svc: &TestService, token: &str, id: &str) -> (Value, Value) {
    let late = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "answer_delay_ms": 3000});
    erp_fault(svc, late).await;
    let before = erp_calls(svc).await;
    let pull = svc.get_json(token, "/api/v1/erp/setup/customer");
    let meanwhile = async {
        for _ in 0..500 {
            if erp_calls(svc).await > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The page is read at the ERP (with the customer) and waits to be answered.
        tokio::time::sleep(Duration::from_millis(200)).await;
        erp(svc, reqwest::Method::DELETE, &format!("/customer/id/{id}"), None).await;
        let call = json!({"entityName": "customer", "entityId": id, "type": "deleted"});
        let inbox_id = accepted(webhook(svc).json(&call).checked().await.unwrap()).await;
        inbox_call(svc, token, inbox_id, "done").await
    };
    tokio::join!(pull, meanwhile)
}

/// How many customers the mirror holds.
async fn mirrored_customers(svc: &TestService, token: &str) -> u64 {
    let overview = svc.get_json(token, "/api/v1/erp/show").await;
    let models = overview["models"].as_array().unwrap();
    models.iter().find(|m| m["model"] == "customer").unwrap()["records"].as_u64().unwrap()
}

/// Refreshing one record the ERP no longer has (`update/{model}/{id}`, e.g. after a lost delete
/// webhook) removes its mapped field-report record too, as a delete webhook or a full pull does.
async fn refreshing_a_record_the_erp_lost_removes_its_mapped_record(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    svc.get_json(&token, "/api/v1/fieldreport/companies/erp-customer-5").await;

    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let refreshed = svc.get_json(&token, "/api/v1/erp/update/customer/5").await;
    assert_eq!(refreshed["data"][0]["removed"], 1, "{refreshed}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    error_body(svc.get(&token, "/api/v1/fieldreport/companies/erp-customer-5").await, 404).await;
    svc.stop().await;
}

on_both_databases!(
    a_record_deleted_while_a_pull_reads_it_stays_removed,
    a_record_created_and_deleted_while_a_pull_reads_it_is_not_stored,
    refreshing_a_record_the_erp_lost_removes_its_mapped_record
);
