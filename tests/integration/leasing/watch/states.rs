//! State names as another provider may spell them: a known state in another case is that
//! state, for the wait, the `meta`, the watch and the event.

use super::*;

/// A fault that makes the provider's next read of `id` answer `state`.
fn answering(id: &str, state: &str) -> Value {
    let lessee = json!({"CompanyName": "ACME GmbH", "Email": "office@acme.example"});
    let body = json!({"FinancingId": id, "RequestId": "180-1", "State": state, "Lessee": lessee}).to_string();
    json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 200, "body": body, "times": 1})
}

async fn a_known_state_in_another_case_is_that_state(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let receiver = Receiver::start(204).await;
    subscribe(&svc, &token, &receiver.url()).await;
    let id = create_request(&svc, &token, "ACME GmbH").await;

    svc.leasing_fault(answering(&id, "readyToSign")).await;
    let waited = svc.get(&token, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=1")).await;
    assert_eq!(waited.status(), 200);
    let waited: Value = waited.json_value().await;
    assert_eq!(waited["meta"], json!({"state": "ReadyToSign", "ready_to_sign": true, "terminal": false}));

    // The same state in another spelling is no change; a terminal one ends the watch.
    svc.leasing_fault(answering(&id, "READYTOSIGN")).await;
    svc.get(&token, &format!("/api/v1/leasing/{id}")).await;
    svc.leasing_fault(answering(&id, "DECLINED")).await;
    let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(shown["meta"]["terminal"], true, "{shown}");
    let states = until("both changes delivered", async || {
        let delivered = receiver.delivered();
        (delivered.len() >= 2).then(|| delivered.iter().map(|c| c.event()["data"].clone()).collect::<Vec<_>>())
    })
    .await;
    assert_eq!(states[0]["state"], "ReadyToSign");
    assert_eq!(states[1]["state"], "Declined");
    assert_eq!(states[1]["terminal"], true);
    assert_eq!(receiver.delivered().len(), 2);
    let watch = svc.store().watch(&id).await.unwrap().unwrap();
    assert!(watch.terminal && watch.next_poll_at.is_none(), "{watch:?}");
    svc.stop().await;
}

/// A terminal state is not always the last: a provider may report an earlier state again
/// (a reopened request). The watch then goes on, and the change back is announced.
async fn a_request_leaving_a_terminal_state_is_watched_again(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let receiver = Receiver::start(204).await;
    subscribe(&svc, &token, &receiver.url()).await;
    let id = create_request(&svc, &token, "ACME GmbH").await;
    svc.leasing_fault(answering(&id, "Cancelled")).await;
    let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(shown["meta"]["terminal"], true, "{shown}");
    assert_eq!(svc.store().watch(&id).await.unwrap().unwrap().next_poll_at, None);

    let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/{id}")).await;
    assert_eq!(shown["meta"]["terminal"], false, "{shown}");
    let watch = svc.store().watch(&id).await.unwrap().unwrap();
    assert!(!watch.terminal && watch.next_poll_at.is_some(), "polled again: {watch:?}");
    let states = until("both changes delivered", async || {
        let delivered = receiver.delivered();
        (delivered.len() >= 2).then(|| delivered.iter().map(|c| c.event()["data"]["state"].clone()).collect::<Vec<_>>())
    })
    .await;
    assert_eq!(states, [json!("Cancelled"), shown["meta"]["state"].clone()]);
    svc.stop().await;
}

on_both_databases!(a_known_state_in_another_case_is_that_state, a_request_leaving_a_terminal_state_is_watched_again);
