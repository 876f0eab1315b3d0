//! Bounds per user that hold for requests sent at once, not only for requests sent in turn:
//! each request of a burst is counted with the others before it is let through.

use crate::common::contract::Checked;
use crate::common::{Api, Db, TestService, error_body, leasing_request};
use serde_json::{Value, json};

/// Twenty subscriptions asked for at once by a user allowed three: three are stored, the
/// others are 409 `too_many_subscriptions`. Each request counted the user's subscriptions
/// before any of the burst was stored, so every one of them was.
async fn subscriptions_asked_for_at_once_stay_within_the_bound(db: Db) {
    let settings = [("CALLBACK_ALLOW_PRIVATE", "true"), ("LEASING_SUBSCRIPTIONS_PER_USER", "3")];
    let (svc, token) = TestService::with_user(db, &settings).await;
    let subscribe = |n: usize| {
        let request = svc
            .client
            .post(svc.url("/api/v1/leasing/subscriptions"))
            .bearer_auth(&token)
            .json(&json!({"url": format!("http://127.0.0.1:9/hook/{n}")}));
        async move { request.checked().await.unwrap() }
    };
    let answers = futures::future::join_all((0..20).map(subscribe)).await;
    let created = admitted(answers, 201, 409, "too_many_subscriptions").await;
    assert_eq!(created.len(), 3);
    for answer in created {
        svc.remember_secret(answer.json::<Value>().await.unwrap()["secret"].as_str().unwrap());
    }
    let page: Value = svc.get_json(&token, "/api/v1/leasing/subscriptions").await;
    assert_eq!(page["meta"]["total"].as_i64(), Some(3), "{page}");
    svc.stop().await;
}

/// Syncs of all fifteen entities queued at once by a user allowed two active jobs, while the
/// field-report system is slow: two are queued, the others are 429 `too_many_active_jobs`.
async fn jobs_queued_at_once_stay_within_the_active_bound(db: Db) {
    let svc = TestService::start(db, &[("JOBS_ACTIVE_PER_USER", "2")]).await;
    assert_eq!(queue_every_sync_at_once(&svc, "too_many_active_jobs").await, 2);
    svc.stop().await;
}

/// Queues a sync of every entity at once while the field-report system is slow (so none ends
/// before the others are asked for); how many were queued, the others being 429 `refused_as`.
async fn queue_every_sync_at_once(svc: &TestService, refused_as: &str) -> usize {
    let token = svc.user_token().await;
    crate::common::add_fault(
        &svc.client,
        &svc.fieldreport,
        json!({"path_prefix": "/odata/", "status": 200, "delay_ms": 3000, "times": 1000}),
    )
    .await;
    let queue =
        |route: &'static str| svc.post(&token, "/api/v1/jobs", json!({"kind": "fieldreport.sync", "target": route}));
    let answers = futures::future::join_all(generated::fieldreport::ENTITIES.iter().map(|e| queue(e.route))).await;
    admitted(answers, 202, 429, refused_as).await.len()
}

/// The answers of a burst with status `admitted_as`; every other one must be `refused_status`
/// with `error_code` `refused_as`.
async fn admitted(
    answers: Vec<reqwest::Response>,
    admitted_as: u16,
    refused_status: u16,
    refused_as: &str,
) -> Vec<reqwest::Response> {
    let mut admitted = Vec::new();
    for answer in answers {
        if answer.status() == admitted_as {
            admitted.push(answer);
        } else {
            assert_eq!(error_body(answer, refused_status).await["error_code"], refused_as);
        }
    }
    admitted
}

/// Twenty financing requests sent at once, each with a new `Idempotency-Key`, by a user
/// allowed three new keys a minute: three are created, the others are 429
/// `too_many_idempotency_keys`, and three keys are stored.
async fn new_idempotency_keys_sent_at_once_stay_within_the_rate(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER", "3")]).await;
    let keys: Vec<String> = (0..20).map(|n| format!("burst-{n}")).collect();
    let answers = futures::future::join_all(
        keys.iter().map(|key| svc.post_keyed(&token, "/api/v1/leasing", Some(key), leasing_request("Burst GmbH"))),
    )
    .await;
    assert_eq!(admitted(answers, 201, 429, "too_many_idempotency_keys").await.len(), 3);
    let (stored,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM idempotency_keys").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(stored, 3);
    svc.stop().await;
}

/// Syncs of all fifteen entities queued at once by a user allowed two jobs a minute (and
/// fifteen active), while the field-report system is slow: two are queued, the others are 429
/// `too_many_jobs`.
async fn jobs_queued_at_once_stay_within_the_rate(db: Db) {
    let settings = [("JOBS_PER_MINUTE_PER_USER", "2"), ("JOBS_ACTIVE_PER_USER", "15")];
    let svc = TestService::start(db, &settings).await;
    assert_eq!(queue_every_sync_at_once(&svc, "too_many_jobs").await, 2);
    svc.stop().await;
}

crate::on_both_databases!(
    subscriptions_asked_for_at_once_stay_within_the_bound,
    jobs_queued_at_once_stay_within_the_active_bound,
    jobs_queued_at_once_stay_within_the_rate,
    new_idempotency_keys_sent_at_once_stay_within_the_rate,
);
