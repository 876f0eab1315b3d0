//! Incremental pulls from an ERP that does not page as asked: `sort` ignored (it ignores unknown
//! filter names silently, and may treat a sort it cannot apply alike) on pages shorter than
//! `pageSize`. No look at such a page tells that it is not the first records of the order.

use super::*;
use serde_json::json;

/// An ERP that ignores `sort` lists in id order, here one record a page. Customer 6 is changed,
/// then customer 5: the first page holds customer 5 alone, in key order as far as one record
/// can tell, and the pull went on after its key (the newest stamp), past customer 6, whose
/// change no later query selects. The pull completed, its cursor past the change, and every
/// later pull read the same way: the change never reached the mirror.
async fn a_change_an_erp_ignoring_sort_pages_past_is_pulled(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    erp_update(&svc, "customer", "6", json!({"email": "first@example.com"})).await;
    erp_update(&svc, "customer", "5", json!({"email": "second@example.com"})).await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 1, "sort": "ignored"})).await;

    let pull = erp_pull_report(&svc, &token, "customer").await;
    assert_eq!(pull["errors"], json!([]), "{pull}");
    assert_customer_emails(&svc, &token, &[("5", "second@example.com"), ("6", "first@example.com")], &pull).await;
    svc.stop().await;
}

/// An ERP that ignores `sort` and serves whole pages answers an incremental pull's first page
/// in id order: customer 5, changed last, before customer 6. Such a page is no reason to fail
/// the pull (it did, on every pull, and the mirror never caught up): the pull reads its
/// window again by id, which the ERP does honour.
async fn an_erp_ignoring_sort_on_whole_pages_is_pulled(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    erp_update(&svc, "customer", "6", json!({"email": "first@example.com"})).await;
    erp_update(&svc, "customer", "5", json!({"email": "second@example.com"})).await;
    svc.erp_sandbox("behaviour", json!({"sort": "ignored"})).await;

    for _ in 0..2 {
        let pull = erp_pull_report(&svc, &token, "customer").await;
        assert_eq!(pull["errors"], json!([]), "{pull}");
        assert_customer_emails(&svc, &token, &[("5", "second@example.com"), ("6", "first@example.com")], &pull).await;
        erp_update(&svc, "customer", "7", json!({"email": "third@example.com"})).await;
    }
    let customer = svc.get_json(&token, "/api/v1/erp/show/customer/7").await;
    assert_eq!(customer["email"], "third@example.com");
    svc.stop().await;
}

/// An ERP that ignores `sort` and lists its records in the order they were last written, one a
/// page: customer 5, changed last, comes after 6 and 7. A full pull reads by `id-gt`: its pages
/// held 6, then 7, and the query after 7 selects nothing before it. The pull completed without
/// customer 5, its cursor past 5's change (a reconciling lists the same way). The ERP's count
/// of the model tells of it.
async fn a_record_a_full_pull_pages_past_is_pulled(db: Db) {
    let (svc, token) = start(db, &[]).await;
    erp_update(&svc, "customer", "5", json!({"email": "changed@example.com"})).await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 1, "sort": "by-change"})).await;

    let setup = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    assert_eq!(setup["data"][0]["errors"], json!([]), "{setup}");
    assert_customer_emails(&svc, &token, &[("5", "changed@example.com")], &setup).await;
    svc.stop().await;
}

/// The same ERP: after a full pull, two customers are created there and the first is changed
/// (no webhook reaches the service). Listed in the order of their writes, one a page, a
/// reconciling's list of ids went from the second to the end, past the first: it completed
/// without the customer the mirror lacked.
async fn a_record_a_reconciling_lists_past_is_fetched(db: Db) {
    let (svc, token) = start(db, &[]).await;
    svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let mut created = Vec::new();
    for number in ["399001", "399002"] {
        let body = json!({"customerNumber": number, "company": "Brief GmbH", "partyType": "ORGANIZATION"});
        let customer = erp(&svc, reqwest::Method::POST, "/customer", Some(body)).await;
        created.push(customer["id"].as_str().unwrap().to_string());
    }
    erp_update(&svc, "customer", &created[0], json!({"email": "first@example.com"})).await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 1, "sort": "by-change"})).await;

    let reconciled = svc.get_json(&token, "/api/v1/erp/update/customer").await;
    assert_eq!(reconciled["data"][0]["errors"], json!([]), "{reconciled}");
    assert_eq!(reconciled["data"][0]["fetched_missing"], 2, "{reconciled}");
    assert_customer_emails(&svc, &token, &[(created[0].as_str(), "first@example.com")], &reconciled).await;
    svc.stop().await;
}

on_both_databases!(
    a_change_an_erp_ignoring_sort_pages_past_is_pulled,
    an_erp_ignoring_sort_on_whole_pages_is_pulled,
    a_record_a_full_pull_pages_past_is_pulled,
    a_record_a_reconciling_lists_past_is_fetched
);
