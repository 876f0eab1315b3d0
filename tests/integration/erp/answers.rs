//! ERP answers the sandbox does not give by itself, as a real ERP (or a proxy in front of it)
//! may: a record answered without its `id`. Such an answer says nothing about the record, so
//! it must never be taken for the record's absence.

use crate::common::contract::Checked;
use crate::common::{Api, Db, error_body};
use serde_json::json;

use super::*;

/// Customer 5 by id is answered 200 with a document that has no `id`, `times` times.
async fn customer_5_answered_without_id(svc: &TestService, times: u32) {
    let body = json!({"customerNumber": "1005", "company": "Proxy GmbH", "version": "9"}).to_string();
    let rule = json!({"path_prefix": "/webapp/api/v1/customer/id/5", "status": 200, "body": body, "times": times});
    erp_fault(svc, rule).await;
}

/// A webhook call whose fetch is answered without an id fails and is retried; the customer
/// and its mapped company stay (a removed company would be deleted at the field-report
/// system by the next `post`).
async fn a_webhook_fetch_answered_without_an_id_removes_nothing(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    customer_5_answered_without_id(&svc, 1).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let (seen, _) = first_attempt(&svc, &token, id).await;
    assert_eq!(seen["state"], "pending", "retried, not taken for a delete: {seen}");
    assert!(seen["last_error"].as_str().unwrap().contains("without an id"), "{seen}");
    svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    svc.get_json(&token, "/api/v1/fieldreport/companies/erp-customer-5").await;

    let done = inbox_call(&svc, &token, id, "done").await;
    assert_eq!(done["outcome"]["mirror"], "unchanged", "{done}");
    svc.stop().await;
}

/// A full pull whose page lacks customer 5 asks for it by id; an answer without an id does
/// not confirm its absence: the pull fails as an unreadable answer and the customer stays.
async fn a_full_pull_does_not_remove_a_record_answered_without_an_id(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    customer_5_answered_without_id(&svc, 1).await;
    // The pull's first call asks for the newest stamp; its page is answered empty, and the
    // count of the model none (a count of more would have the pull list the customers again).
    let none = json!({"path_prefix": "/webapp/api/v1/customer/count", "status": 200, "body": "{\"result\":0}"});
    erp_fault(&svc, none).await;
    let empty = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "body": "{\"result\":[]}", "after": 1});
    erp_fault(&svc, empty).await;
    let failed = error_body(svc.get(&token, "/api/v1/erp/setup/customer").await, 502).await;
    assert_eq!(failed["error_code"], "upstream_invalid_response", "{failed}");
    assert!(failed["message"].as_str().unwrap().contains("customer 5 came without an id"), "{failed}");
    svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    svc.get_json(&token, "/api/v1/fieldreport/companies/erp-customer-5").await;
    svc.stop().await;
}

on_both_databases!(
    a_webhook_fetch_answered_without_an_id_removes_nothing,
    a_full_pull_does_not_remove_a_record_answered_without_an_id
);
