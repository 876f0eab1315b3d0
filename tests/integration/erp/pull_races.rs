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

    let late = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "answer_delay_ms": 3000});
    erp_fault(&svc, late).await;
    let before = erp_calls(&svc).await;
    let pull = svc.get_json(&token, "/api/v1/erp/setup/customer");
    let meanwhile = async {
        for _ in 0..500 {
            if erp_calls(&svc).await > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The page is read at the ERP (with customer 6) and waits to be answered.
        tokio::time::sleep(Duration::from_millis(200)).await;
        erp(&svc, reqwest::Method::DELETE, "/customer/id/6", None).await;
        let call = json!({"entityName": "customer", "entityId": "6", "type": "deleted"});
        let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
        inbox_call(&svc, &token, id, "done").await
    };
    let (report, done) = tokio::join!(pull, meanwhile);
    assert_eq!(done["outcome"]["mirror"], "deleted", "{done}");
    assert_eq!(report["data"][0]["errors"], json!([]), "{report}");

    error_body(svc.get(&token, "/api/v1/erp/show/customer/6").await, 404).await;
    let overview = svc.get_json(&token, "/api/v1/erp/show").await;
    let customer = overview["models"].as_array().unwrap().iter().find(|m| m["model"] == "customer").unwrap().clone();
    assert_eq!(customer["records"], 2, "{customer}");
    svc.stop().await;
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
    refreshing_a_record_the_erp_lost_removes_its_mapped_record
);
