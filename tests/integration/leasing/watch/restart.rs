//! A change recorded before the service was killed is delivered after the restart.

use crate::common::process::Instance;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, leasing_request};
use serde_json::{Value, json};

use super::*;

/// Killed (SIGKILL) after a change was recorded and before it was delivered, the service
/// delivers it after the restart: nothing recorded is lost.
async fn a_change_recorded_before_a_kill_is_delivered_after_the_restart(db: Db) {
    let settings: Vec<(&str, &str)> = FAST.to_vec();
    let (mut instance, _sandboxes, store) = Instance::start(db, &settings).await;
    let receiver = Receiver::start(0).await;
    let token = instance.token().await;
    let client = instance.client.clone();
    let created: Value = client
        .post(instance.url("/api/v1/leasing/subscriptions"))
        .bearer_auth(&token)
        .json(&json!({"url": receiver.url()}))
        .json_value()
        .await;
    let secret = created["secret"].as_str().unwrap().to_string();
    let answer: Value = client
        .post(instance.url("/api/v1/leasing"))
        .bearer_auth(&token)
        .json(&leasing_request("ACME [moves:1]"))
        .json_value()
        .await;
    let id = answer["data"]["FinancingId"].as_str().unwrap().to_string();
    // The receiver holds every call: the first change is recorded and its delivery in flight.
    until("a change recorded and its delivery under way", async || (!receiver.calls().is_empty()).then_some(())).await;
    instance.kill();
    let recorded: Vec<String> =
        sqlx::query_scalar("SELECT id FROM leasing_events WHERE financing_id = $1 ORDER BY seq")
            .bind(&id)
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert!(!recorded.is_empty());

    receiver.answer(204);
    instance.restart();
    until("the request's last change delivered", async || {
        let chains = chains(&receiver.delivered());
        chains.get(&id).is_some_and(|c| c.last().map(String::as_str) == Some("Contracted")).then_some(())
    })
    .await;
    let delivered = receiver.delivered();
    for event in &recorded {
        assert!(delivered.iter().any(|d| &d.id == event), "{event} recorded before the kill was never delivered");
    }
    assert!(delivered.iter().all(|d| verified(&secret, d)));
    // The receiver sees the last call before the service records its answer: every delivery
    // is recorded delivered once those answers are in.
    until("every delivery recorded delivered", async || {
        let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM leasing_deliveries WHERE status <> 'delivered'")
            .fetch_one(store.pool())
            .await
            .unwrap();
        (pending == 0).then_some(())
    })
    .await;
    instance.stop(&[&secret, &token]).await;
}

on_both_databases!(a_change_recorded_before_a_kill_is_delivered_after_the_restart);
