//! The ERP webhook inbox: calls stored together keep their own ids, calls of one record that
//! wait together are processed with one fetch, and failed processing is retried, across a restart.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::{Db, TestService, error_body};
use integration_service::store::Dialect;
use serde_json::json;
use std::time::Duration;

use super::*;

/// Calls that arrive together are stored together (one transaction per batch): each must still
/// get an id of its own, and the row behind that id must be its call. The inbox is held locked
/// while the calls arrive, so that they queue and go in as one batch.
async fn calls_stored_together_each_keep_their_own_id(db: Db) {
    let (svc, _) = start(db, &[]).await;
    let store = svc.store();
    let mut lock = store.write_transaction().await.unwrap();
    if store.dialect() == Dialect::Postgres {
        sqlx::query("LOCK TABLE erp_webhook_inbox IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    }
    let calls: Vec<_> = (0..120)
        .map(|n| {
            let call = json!({"entityName": "customer", "entityId": format!("9{n:03}"), "type": "updated"});
            let request = webhook(&svc).json(&call);
            tokio::spawn(async move { (n, accepted(request.checked().await.unwrap()).await) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    lock.commit().await.unwrap();
    let mut ids = std::collections::HashSet::new();
    for call in calls {
        let (n, id) = call.await.unwrap();
        assert!(ids.insert(id), "inbox id {id} was answered twice");
        let item = svc.store().inbox_item(id).await.unwrap().expect("the answered id is stored");
        assert_eq!(item.entity_id, format!("9{n:03}"), "inbox id {id}");
        assert_eq!((item.entity_name.as_str(), item.event.as_str()), ("customer", "updated"));
    }
    svc.stop().await;
}

/// Calls for one record that wait together are processed together: one fetch from the ERP,
/// made after all of them arrived, answers for all, and each shows the outcome. The worker's
/// fetch for a first call is held at the simulator while the others arrive.
async fn waiting_calls_of_one_record_are_processed_with_one_fetch(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let customer = |id: &str, event: &str| json!({"entityName": "customer", "entityId": id, "type": event});
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/customer/id/6", "status": 200, "delay_ms": 5000})).await;
    let before = erp_calls(&svc).await;
    let first = accepted(webhook(&svc).json(&customer("6", "updated")).checked().await.unwrap()).await;
    erp_called_past(&svc, before).await;
    assert_eq!(erp_calls(&svc).await, before + 1, "the worker is fetching the first call's record");

    let mut waiting = Vec::new();
    for event in ["updated", "updated", "deleted"] {
        waiting.push(accepted(webhook(&svc).json(&customer("6", event)).checked().await.unwrap()).await);
    }
    let other = accepted(webhook(&svc).json(&customer("7", "created")).checked().await.unwrap()).await;

    let done = inbox_call(&svc, &token, first, "done").await;
    assert_eq!(done["outcome"]["mirror"], "inserted", "{done}");
    for id in &waiting {
        let call = inbox_call(&svc, &token, *id, "done").await;
        assert_eq!(call["outcome"]["mirror"], "unchanged", "{call}");
        assert_eq!(call["outcome"]["fieldReport"]["action"], "unchanged", "{call}");
    }
    let seven = inbox_call(&svc, &token, other, "done").await;
    assert_eq!(seven["outcome"]["mirror"], "inserted", "{seven}");
    assert_eq!(seven["outcome"]["fieldReport"]["id"], "erp-customer-7", "{seven}");
    assert_eq!(
        erp_calls(&svc).await,
        before + 3,
        "one fetch for the first call, one for the three calls of customer 6 that waited, one for customer 7"
    );
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/6").await["id"], "6");
    svc.stop().await;
}

async fn failed_processing_is_retried_and_survives_a_restart(db: Db) {
    let (mut svc, token) = start(db, &[]).await;
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/article/id/11", "status": 503, "times": 1000})).await;
    let call = json!({"entityName": "article", "entityId": "11", "type": "updated"});
    let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let (pending, inbox) = first_attempt(&svc, &token, id).await;
    assert_eq!(inbox["pending"], 1, "{inbox}");
    assert_eq!(pending["state"], "pending", "{pending}");
    assert!(pending["last_error"].as_str().unwrap().contains("503"), "{pending}");

    svc.restart().await;
    erp_clear_faults(&svc).await;
    let done = inbox_call(&svc, &token, id, "done").await;
    assert_eq!(done["outcome"]["fieldReport"]["entity"], "products");
    let product = svc.get_json(&token, "/api/v1/fieldreport/products/erp-article-11").await;
    assert_eq!(product["ExternalId"], "11");

    // An unknown entity type is given up at once and stays visible.
    let unknown =
        accepted(webhook(&svc).json(&json!({"entityName": "noSuchThing", "entityId": "1"})).checked().await.unwrap())
            .await;
    let failed = inbox_call(&svc, &token, unknown, "failed").await;
    assert!(failed["last_error"].as_str().unwrap().contains("unknown ERP model"), "{failed}");

    // Pruning forgets processed calls only.
    let pruned = svc.store().inbox_prune(integration_service::store::now_ms() + 1).await.unwrap();
    assert_eq!(pruned, 1);
    let inbox = svc.get_json(&token, "/api/v1/erp/show").await["inbox"].clone();
    assert_eq!((inbox["done"].as_i64(), inbox["failed"].as_i64()), (Some(0), Some(1)), "{inbox}");
    svc.stop().await;
}

/// Two instances process the calls of one record at once: the first's fetch for an update
/// call reads the customer at the ERP, the ERP deletes it, and the second processes the delete
/// call before the first's answer arrives. The late answer must not bring the customer back
/// (nor its mapped company): no later call names it, and an incremental pull never sees a
/// deleted record. Postgres only (SQLite serves one instance).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_read_before_a_delete_another_instance_processed_is_undone() {
    if std::env::var("TEST_POSTGRES_URL").is_err() {
        eprintln!("skipped: TEST_POSTGRES_URL is not set");
        return;
    }
    let (url, schema) = crate::common::fresh_database(Db::Postgres).await;
    let (first, token) = {
        let svc = TestService::start_on(url.clone(), schema, &guard_settings()).await;
        let token = svc.user_token().await;
        (svc, token)
    };
    let mut shared = guard_settings();
    shared.extend([("ERP_BASE_URL", first.erp.as_str()), ("FIELDREPORT_BASE_URL", first.fieldreport.as_str())]);
    let second = TestService::start_on(url, None, &shared).await;
    let customer = |event: &str| json!({"entityName": "customer", "entityId": "5", "type": event});
    processed(&first, &token, &customer("updated")).await;

    let late = json!({"path_prefix": "/webapp/api/v1/customer/id/5", "status": 200, "answer_delay_ms": 3000});
    erp_fault(&first, late).await;
    let before = erp_calls(&first).await;
    let update = accepted(webhook(&first).json(&customer("updated")).checked().await.unwrap()).await;
    erp_called_past(&first, before).await;
    // The update's fetch has read the customer and waits to be answered.
    erp(&first, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let delete = accepted(webhook(&second).json(&customer("deleted")).checked().await.unwrap()).await;
    let deleted = inbox_call(&first, &token, delete, "done").await;
    assert_eq!(deleted["outcome"]["mirror"], "deleted", "{deleted}");
    let updated = inbox_call(&first, &token, update, "done").await;
    assert_eq!(updated["outcome"]["mirror"], "deleted", "the late answer was undone: {updated}");

    error_body(first.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    error_body(first.get(&token, "/api/v1/fieldreport/companies/erp-customer-5").await, 404).await;
    second.stop().await;
    first.stop().await;
}

on_both_databases!(
    calls_stored_together_each_keep_their_own_id,
    waiting_calls_of_one_record_are_processed_with_one_fetch,
    failed_processing_is_retried_and_survives_a_restart
);
