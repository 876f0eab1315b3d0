//! State names and ids as another provider may spell them: a known state in another case is
//! that state, for the wait, the `meta`, the watch and the event; an id in another case is
//! that request, watched once.

use super::*;

/// A fault that makes the provider's next read of `id` answer `state`.
fn answering(id: &str, state: &str) -> Value {
    answering_as(id, id, state, 1)
}

/// A fault that makes the provider's next `times` reads of `spelling` answer the request `id`
/// in `state` (a provider that reads ids without regard to case).
pub(super) fn answering_as(spelling: &str, id: &str, state: &str, times: u32) -> Value {
    let lessee = json!({"CompanyName": "ACME GmbH", "Email": "office@acme.example"});
    let body = json!({"FinancingId": id, "RequestId": "180-1", "State": state, "Lessee": lessee}).to_string();
    json!({"path_prefix": format!("/basic/v1/requests/{spelling}"), "status": 200, "body": body, "times": times})
}

async fn a_known_state_in_another_case_is_that_state(db: Db) {
    let (svc, token, receiver, id) = watched_request(db, "ACME GmbH").await;

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
    let (svc, token, receiver, id) = watched_request(db, "ACME GmbH").await;
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

/// The provider's ids are UUIDs, one id in any case. Watching a watched request under another
/// spelling of its id is watching it again, which changes nothing: it made a second watch, and
/// the subscriber got every change of the request twice (once per spelling).
async fn a_request_is_watched_once_in_any_spelling(db: Db) {
    let (svc, token) = TestService::with_user(db, FAST).await;
    let receiver = Receiver::start(204).await;
    let sub = subscribe(&svc, &token, &receiver.url()).await;
    let sub = sub["id"].as_str().unwrap();
    let id = create_request(&svc, &token, "ACME GmbH").await;
    let upper = id.to_uppercase();
    svc.leasing_fault(answering_as(&upper, &id, "RequestToGrenke", 1)).await;
    let watched = svc.call(&token, Method::POST, &format!("/api/v1/leasing/{upper}/watch"), None).await;
    assert_eq!(watched.status(), 200);
    let watched: Value = watched.json_value().await;
    // The request is declined; the provider says so under either spelling.
    for spelling in [&id, &upper] {
        svc.leasing_fault(answering_as(spelling, &id, "Declined", 1000)).await;
    }
    until("the change recorded and delivered", async || {
        let (watching, _) = svc.store().watch_counts().await.unwrap();
        let listed: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
        let items = listed["items"].as_array().unwrap().clone();
        (watching == 0 && !items.is_empty() && items.iter().all(|d| d["status"] == "delivered")).then_some(())
    })
    .await;
    let announced: Vec<Value> = receiver.delivered().iter().map(|c| c.event()["data"].clone()).collect();
    assert_eq!(announced.len(), 1, "one change, announced once: {announced:?}");
    assert_eq!((announced[0]["financingId"].as_str(), announced[0]["state"].as_str()), (Some(&*id), Some("Declined")));
    assert_eq!(watched["financingId"], id.as_str(), "the watch is the request's own: {watched}");
    assert_eq!(svc.store().watch_counts().await.unwrap(), (0, 1));
    svc.stop().await;
}

on_both_databases!(
    a_known_state_in_another_case_is_that_state,
    a_request_leaving_a_terminal_state_is_watched_again,
    a_request_is_watched_once_in_any_spelling,
);
