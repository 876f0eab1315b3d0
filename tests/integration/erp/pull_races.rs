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
    // The pull's first call asks for the newest stamp; the page comes next.
    let late = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "answer_delay_ms": 3000, "after": 1});
    erp_fault(svc, late).await;
    let before = erp_calls(svc).await;
    let pull = svc.get_json(token, "/api/v1/erp/setup/customer");
    let meanwhile = async {
        erp_called_past(svc, before + 1).await;
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

/// Refreshing one record (`update/{model}/{id}`) whose answer is late: the ERP deletes the
/// customer after reading it for the refresh, and the delete webhook removes it meanwhile. The
/// late answer must not bring it back: no later call names it.
async fn a_refresh_answered_after_a_delete_leaves_the_record_removed(db: Db) {
    let (svc, token) = start_with_customer_5(db).await;
    let meanwhile = async {
        erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
        processed(&svc, &token, &json!({"entityName": "customer", "entityId": "5", "type": "deleted"})).await
    };
    let (refreshed, deleted) = while_a_refresh_is_late(&svc, &token, "5", meanwhile).await;
    assert_eq!(deleted["outcome"]["mirror"], "deleted", "{deleted}");
    assert_eq!(refreshed["data"][0]["removed"], 1, "asked again and removed: {refreshed}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    svc.stop().await;
}

/// Refreshes customer `id` (`update/customer/{id}`) with its answer 3 s late; `meanwhile` runs
/// once the ERP has read the customer for it. The refresh's report, and what `meanwhile` gave.
async fn while_a_refresh_is_late<T>(
    svc: &TestService,
    token: &str,
    id: &str,
    meanwhile: impl std::future::Future<Output = T>,
) -> (Value, T) {
    let path = format!("/webapp/api/v1/customer/id/{id}");
    erp_fault(svc, json!({"path_prefix": path, "status": 200, "answer_delay_ms": 3000})).await;
    let before = erp_calls(svc).await;
    let route = format!("/api/v1/erp/update/customer/{id}");
    let refresh = svc.get_json(token, &route);
    let after_the_read = async {
        erp_called_past(svc, before).await;
        meanwhile.await
    };
    tokio::join!(refresh, after_the_read)
}

/// A customer changed at the ERP while a full pull pages by id, after the pull read it: that
/// pull is past its id, so the next incremental pull must bring the change. The full pull's
/// cursor was the newest stamp it read, that of a customer changed later in the pull and read
/// at its greater id: more than the overlap after the first change, which no pull then asked
/// for (`lastModifiedDate-ge` the cursor less the overlap).
async fn a_record_changed_during_a_full_pull_is_brought_by_the_next_pull(db: Db) {
    let (svc, token) = start(db, &[("ERP_PULL_OVERLAP_SECONDS", "1")]).await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 1})).await;
    // Lists of customers, one a page, are answered 3 s after the ERP read them; calls by id
    // (the changes below) at once (the first rule that matches a call applies).
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/customer/id", "status": 200, "times": 50})).await;
    let late = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "answer_delay_ms": 3000, "times": 50});
    erp_fault(&svc, late).await;
    let pull = svc.get_json(&token, "/api/v1/erp/setup/customer");
    let meanwhile = async {
        // Customer 5's page is stored: the pull reads on after id 5, a page every 3 s.
        for _ in 0..1000 {
            if svc.store().erp_all("customer").await.unwrap().iter().any(|record| record.id == "5") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        erp_update(&svc, "customer", "5", json!({"email": "during@example.com"})).await;
        // Twice the overlap later, before the page of customer 7 is read.
        tokio::time::sleep(Duration::from_secs(2)).await;
        erp_update(&svc, "customer", "7", json!({"email": "later@example.com"})).await;
    };
    let (setup, ()) = tokio::join!(pull, meanwhile);
    assert_eq!(setup["data"][0]["errors"], json!([]), "{setup}");
    let seven = svc.get_json(&token, "/api/v1/erp/show/customer/7").await;
    assert_eq!(seven["email"], "later@example.com", "read after its change: {setup}");
    erp_clear_faults(&svc).await;

    let pull = erp_pull_report(&svc, &token, "customer").await;
    let customer = svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    assert_eq!(customer["email"], "during@example.com", "{pull}");
    svc.stop().await;
}

/// The ERP's clock ran an hour ahead and was set right: a customer changed meanwhile carries a
/// stamp an hour ahead, and the pull that read it took that stamp as its cursor. A change made
/// after the correction, stamped by the right clock, must still be brought by the next pull,
/// which asked only for stamps after that cursor less the overlap.
async fn a_change_after_the_erp_clock_was_set_back_is_pulled(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    svc.erp_sandbox("behaviour", json!({"clock_offset_ms": 3_600_000})).await;
    erp_update(&svc, "customer", "6", json!({"email": "ahead@example.com"})).await;
    svc.get_json(&token, "/api/v1/erp/get").await;
    svc.erp_sandbox("behaviour", json!({"clock_offset_ms": 0})).await;
    erp_update(&svc, "customer", "7", json!({"email": "after@example.com"})).await;

    let pull = erp_pull_report(&svc, &token, "customer").await;
    assert_customer_emails(&svc, &token, &[("6", "ahead@example.com"), ("7", "after@example.com")], &pull).await;
    svc.stop().await;
}

/// The ERP's clock ran an hour ahead when customer 6 was changed, and was set right before its
/// next change: the later version carries the earlier stamp. A refresh that read the first
/// version and is answered after a webhook mirrored the second must not move the record back
/// (nothing names it again: the mirror would keep the older version until a reconciling).
async fn a_late_read_stamped_by_a_clock_that_ran_ahead_does_not_move_a_record_back(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.erp_sandbox("behaviour", json!({"clock_offset_ms": 3_600_000})).await;
    erp_update(&svc, "customer", "6", json!({"email": "ahead@example.com"})).await;
    svc.erp_sandbox("behaviour", json!({"clock_offset_ms": 0})).await;
    let meanwhile = async {
        erp_update(&svc, "customer", "6", json!({"email": "after@example.com"})).await;
        processed(&svc, &token, &json!({"entityName": "customer", "entityId": "6", "type": "updated"})).await
    };
    let (refreshed, updated) = while_a_refresh_is_late(&svc, &token, "6", meanwhile).await;
    assert_eq!(updated["outcome"]["mirror"], "inserted", "{updated}");
    let customer = svc.get_json(&token, "/api/v1/erp/show/customer/6").await;
    assert_eq!(
        (customer["version"].as_str(), customer["email"].as_str()),
        (Some("2"), Some("after@example.com")),
        "{refreshed}"
    );
    svc.stop().await;
}

/// Customer 5 changed at the ERP (no webhook reaches the service): a reconciling lists it at
/// a version the mirror does not hold, its list answered late, and meanwhile the ERP deletes
/// the customer. Its fetch by id answers nothing, which said it was gone; yet it stayed in the
/// mirror at its old version (listed, its absence was never confirmed), and the reconciling
/// completed. It is removed.
async fn a_stale_record_deleted_while_a_reconciling_lists_it_is_removed(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    erp_update(&svc, "customer", "5", json!({"email": "changed@example.com"})).await;
    let late = json!({"path_prefix": "/webapp/api/v1/customer", "status": 200, "answer_delay_ms": 2000});
    erp_fault(&svc, late).await;
    let before = erp_calls(&svc).await;
    let reconciling = svc.get_json(&token, "/api/v1/erp/update/customer");
    let meanwhile = async {
        erp_called_past(&svc, before).await;
        // The list is read at the ERP (with the customer) and waits to be answered.
        tokio::time::sleep(Duration::from_millis(200)).await;
        erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    };
    let (reconciled, ()) = tokio::join!(reconciling, meanwhile);
    assert_eq!(reconciled["data"][0]["errors"], json!([]), "{reconciled}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    assert_eq!(mirrored_customers(&svc, &token).await, 2, "{reconciled}");
    svc.stop().await;
}

on_both_databases!(
    a_stale_record_deleted_while_a_reconciling_lists_it_is_removed,
    a_late_read_stamped_by_a_clock_that_ran_ahead_does_not_move_a_record_back,
    a_record_deleted_while_a_pull_reads_it_stays_removed,
    a_record_created_and_deleted_while_a_pull_reads_it_is_not_stored,
    refreshing_a_record_the_erp_lost_removes_its_mapped_record,
    a_refresh_answered_after_a_delete_leaves_the_record_removed,
    a_record_changed_during_a_full_pull_is_brought_by_the_next_pull,
    a_change_after_the_erp_clock_was_set_back_is_pulled
);
