//! Delivery: every change of every watched request arrives once, in order and signed; a
//! receiver that was down for a while gets everything after.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body, leasing_request};
use reqwest::Method;
use serde_json::{Value, json};

use super::*;

/// Every change of every watched request (created here, or at the provider and then watched)
/// reaches the subscriber once, in order, signed with the secret and, after a rotation, with
/// the old one too; the secret is shown only when created or rotated.
async fn every_change_arrives_signed_and_in_order(db: Db) {
    let (svc, token) = TestService::with_user(db, FAST).await;
    let receiver = Receiver::start(204).await;
    let created = subscribe(&svc, &token, &receiver.url()).await;
    let (sub, first_secret) = (created["id"].as_str().unwrap(), created["secret"].as_str().unwrap());
    assert!(first_secret.starts_with("whsec_") && sub.starts_with("sub_"), "{created}");
    assert_eq!(created["events"], json!(["leasing.state_changed"]));
    for path in ["/api/v1/leasing/subscriptions".to_string(), format!("/api/v1/leasing/subscriptions/{sub}")] {
        let text = svc.get(&token, &path).await.text().await.unwrap();
        assert!(text.contains(sub) && !text.contains(first_secret), "later reads never show the secret: {text}");
    }
    let rotated: Value = svc
        .call(&token, Method::POST, &format!("/api/v1/leasing/subscriptions/{sub}/rotate-secret"), None)
        .await
        .json_value()
        .await;
    let second_secret = rotated["secret"].as_str().unwrap();
    svc.remember_secret(second_secret);
    assert!(second_secret.starts_with("whsec_") && second_secret != first_secret);
    assert!(rotated["previous_secret_expires_at"].is_string(), "{rotated}");

    let mut ids = vec![
        create_request(&svc, &token, "ACME [moves:2]").await,
        create_request(&svc, &token, "Beta [moves:2]").await,
    ];
    // One created at the provider directly, then watched.
    let direct: Value = svc
        .client
        .post(format!("{}/basic/v1/requests", svc.leasing))
        .json(&leasing_request("Gamma [moves:2]"))
        .json_value()
        .await;
    let direct_id = direct["FinancingId"].as_str().unwrap().to_string();
    let watch = svc.call(&token, Method::POST, &format!("/api/v1/leasing/{direct_id}/watch"), None).await;
    assert_eq!(watch.status(), 200);
    let watch: Value = watch.json_value().await;
    assert_eq!((watch["financingId"].as_str(), watch["terminal"].as_bool()), (Some(direct_id.as_str()), Some(false)));
    ids.push(direct_id.clone());

    let done = until_all_contracted("every request's last change delivered", &receiver, &ids).await;
    for id in &ids {
        let first = if *id == direct_id { watch["state"].as_str().unwrap() } else { "RequestToGrenke" };
        assert_eq!(done[id].first().map(String::as_str), Some(first), "{done:?}");
    }
    for call in receiver.calls() {
        assert!(verified(first_secret, &call) && verified(second_secret, &call), "both secrets sign: {call:?}");
        assert_eq!(call.signature.split(' ').count(), 2, "{call:?}");
        assert!(call.content_type.starts_with("application/json"));
        let event = call.event();
        assert_eq!(
            (event["type"].as_str(), event["id"].as_str()),
            (Some("leasing.state_changed"), Some(call.id.as_str()))
        );
        assert_eq!(event["data"]["readyToSign"], event["data"]["state"] == "ReadyToSign");
        assert_eq!(event["data"]["terminal"], event["data"]["state"] == "Contracted");
        let age = chrono::Utc::now().timestamp() - call.timestamp.parse::<i64>().unwrap();
        assert!((0..600).contains(&age), "webhook-timestamp is the sending time in seconds: {call:?}");
    }

    // The deliveries list: one per event, delivered at the first attempt. The receiver has
    // the last call before the service has stored its answer, so the list is read until no
    // delivery is pending.
    let listed: Value = until("every delivery's answer stored", async || {
        let listed: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
        listed["items"].as_array().unwrap().iter().all(|d| d["status"] != "pending").then_some(listed)
    })
    .await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), receiver.delivered().len(), "{listed}");
    assert!(items.iter().all(|d| d["status"] == "delivered" && d["attempts"] == 1 && d["last_status_code"] == 204));
    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("integration_leasing_watched_requests{status=\"ended\"} 3"), "{metrics}");
    assert!(metrics.contains(&format!("integration_leasing_events{{status=\"delivered\"}} {}", items.len())));
    assert!(metrics.contains("integration_leasing_events{status=\"pending\"} 0"));

    let too_many = svc.get(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries?limit=501")).await;
    assert!(error_body(too_many, 422).await["errors"]["limit"].is_array());

    let deleted = svc.delete(&token, &format!("/api/v1/leasing/subscriptions/{sub}")).await;
    assert_eq!(deleted.status(), 204);
    let gone = svc.get(&token, &format!("/api/v1/leasing/subscriptions/{sub}")).await;
    let body = error_body(gone, 404).await;
    assert_eq!((body["error_code"].as_str(), body["success"].as_bool()), (Some("not_found"), Some(false)));
    svc.stop().await;
}

/// While the receiver fails, each delivery is retried with its `webhook-id`; once it answers
/// again, it gets every event, in order per request. A delivery can be sent again on request.
async fn a_receiver_down_for_a_while_gets_everything_after(db: Db) {
    let (svc, token) = TestService::with_user(db, FAST).await;
    let receiver = Receiver::start(503).await;
    let created = subscribe(&svc, &token, &receiver.url()).await;
    let sub = created["id"].as_str().unwrap().to_string();
    let ids =
        [create_request(&svc, &token, "ACME [moves:1]").await, create_request(&svc, &token, "Beta [moves:1]").await];
    let store = svc.store().clone();
    // Down until both requests ended and the first events were tried more than once.
    until("both requests terminal and retried", async || {
        let mut ended = true;
        for id in &ids {
            ended &= store.watch(id).await.unwrap().is_some_and(|w| w.terminal);
        }
        let calls = receiver.calls();
        let retried = calls.iter().any(|c| calls.iter().filter(|d| d.id == c.id).count() >= 3);
        (ended && retried).then_some(())
    })
    .await;
    let while_down = receiver.calls();
    assert!(while_down.iter().all(|c| c.answered == 503));
    let listed: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "pending" && d["next_attempt_at"].is_string()),
        "{listed}"
    );
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["attempts"].as_i64().unwrap() >= 3 && d["last_status_code"] == 503)
    );

    receiver.answer(200);
    let done = until_all_contracted("every event delivered after the receiver came back", &receiver, &ids).await;
    for id in &ids {
        assert_eq!(done[id].first().map(String::as_str), Some("RequestToGrenke"), "{done:?}");
    }
    // Each event tried while down arrived later under the same id, signed the same way.
    let secret = created["secret"].as_str().unwrap();
    let delivered = receiver.delivered();
    for failed in &while_down {
        assert!(delivered.iter().any(|d| d.id == failed.id && d.body == failed.body), "{failed:?} never arrived");
        assert!(verified(secret, failed));
    }
    let listed: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
    let items = listed["items"].as_array().unwrap();
    assert!(items.iter().all(|d| d["status"] == "delivered" && d["last_status_code"] == 200), "{listed}");

    // Sent again on request, with the same id.
    let first = items.last().unwrap();
    let path = format!("/api/v1/leasing/subscriptions/{sub}/deliveries/{}/retry", first["id"]);
    let retried = svc.call(&token, Method::POST, &path, None).await;
    assert_eq!(retried.status(), 202);
    let before = delivered.iter().filter(|d| d.id == first["event_id"].as_str().unwrap()).count();
    until("the retried delivery sent again", async || {
        let now = receiver.delivered().iter().filter(|d| d.id == first["event_id"].as_str().unwrap()).count();
        (now > before).then_some(())
    })
    .await;
    let missing = svc
        .call(&token, Method::POST, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries/999999/retry"), None)
        .await;
    assert_eq!(error_body(missing, 404).await["error_code"], "not_found");
    svc.stop().await;
}

on_both_databases!(every_change_arrives_signed_and_in_order, a_receiver_down_for_a_while_gets_everything_after);
