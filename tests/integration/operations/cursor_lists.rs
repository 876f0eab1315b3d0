//! Cursor pages of the service's own lists (issue 51, item 1): jobs, leasing subscriptions and
//! a subscription's deliveries read by key (`?after=<cursor>&limit=N`). Every walk follows the
//! `next` links to the end and checks that what existed when it started is seen exactly once,
//! in the list's order, whatever is added or removed meanwhile; that a page read by key has no
//! count; and that the positional pages keep answering as before.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::common::{Api, Db, TestService, error_body, leasing_request};
use reqwest::Method;
use serde_json::{Value, json};

/// The items of every page of a walk from `first` (a path), following `next` to the end; each
/// page is checked to be read by key (no `meta`) and to name its next page consistently.
async fn walk(svc: &TestService, token: &str, first: &str, items: &str, between: impl AsyncFn(usize)) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut path = first.to_string();
    for page in 0.. {
        let answer = svc.get(token, &path).await;
        assert_eq!(answer.status(), 200, "{path}");
        let answer: Value = answer.json().await.unwrap();
        assert!(answer.get("meta").is_none(), "a page read by key has no count: {answer}");
        seen.extend(answer[items].as_array().unwrap().iter().cloned());
        match (answer["next"].as_str(), answer["next_cursor"].as_str()) {
            (Some(next), Some(cursor)) => {
                assert!(next.contains(&format!("after={cursor}")), "{answer}");
                path = next.to_string();
            }
            (None, None) => break,
            _ => panic!("next and next_cursor come together: {answer}"),
        }
        between(page).await;
        assert!(page < 1000, "the walk does not end");
    }
    seen
}

fn ids(items: &[Value], field: &str) -> Vec<String> {
    items.iter().map(|item| item[field].to_string()).collect()
}

/// A guard against a hang, not a timing claim.
async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check().await {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const SETS: [&str; 12] = [
    "companies",
    "contacts",
    "costCenters",
    "documents",
    "itemTypes",
    "itemUnits",
    "items",
    "products",
    "qualifications",
    "serviceObjects",
    "stepListTemplates",
    "tags",
];

async fn queue(svc: &TestService, token: &str, kind: &str, target: &str) -> i64 {
    let queued = svc.call(token, Method::POST, "/api/v1/jobs", Some(json!({"kind": kind, "target": target}))).await;
    assert_eq!(queued.status(), 202);
    queued.json::<Value>().await.unwrap()["id"].as_i64().unwrap()
}

/// The job history read by key: newest first, every job once, the filter kept on every page,
/// and jobs queued during the walk (newer than its cursor) neither shown nor shifting others.
async fn the_job_history_reads_by_key(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("JOBS_ACTIVE_PER_USER", "100")]).await;
    for set in SETS {
        queue(&svc, &token, "fieldreport.sync", set).await;
    }
    for set in &SETS[..3] {
        queue(&svc, &token, "fieldreport.post", set).await;
    }
    let everything: Value = svc.get(&token, "/api/v1/jobs?per_page=100").await.json().await.unwrap();
    assert_eq!(everything["meta"]["total"], 15, "by position the count stays: {everything}");
    let syncs: Vec<Value> = everything["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|job| job["kind"] == "fieldreport.sync")
        .cloned()
        .collect();

    // A sync and a reconcile queued after each page (targets of their own: one job of a kind
    // and target is active at a time).
    let walked = walk(&svc, &token, "/api/v1/jobs?kind=fieldreport.sync&limit=5", "data", async |page| {
        queue(&svc, &token, "fieldreport.reconcile", SETS[page]).await;
        queue(&svc, &token, "fieldreport.sync", ["timeEvents", "serviceRequests", "users"][page]).await;
    })
    .await;
    // Newer jobs queued during the walk lie before its cursor; the post jobs are filtered out.
    assert_eq!(ids(&walked, "id"), ids(&syncs, "id"), "{walked:?}");

    // A cursor this service did not write reads from the newest; a limit out of range is 422.
    let odd: Value = svc.get(&token, "/api/v1/jobs?after=bm90LWEta2V5&limit=1").await.json().await.unwrap();
    let newest: Value = svc.get(&token, "/api/v1/jobs?per_page=1").await.json().await.unwrap();
    assert_eq!(odd["data"][0]["id"], newest["data"][0]["id"], "{odd}");
    let refused = svc.get(&token, "/api/v1/jobs?limit=101").await;
    assert_eq!(error_body(refused, 422).await["error_code"], "validation_failed");
    svc.stop().await;
}

/// The subscriptions read by key: oldest first, each once, though one already read and one
/// not yet read are deleted and another is added during the walk; another user's never shown.
async fn subscriptions_read_by_key(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    svc.create_user("bob@example.com", "bob-password-1").await;
    let bob = svc.token("bob@example.com", "bob-password-1").await;
    let subscribe = async |token: &str, n: usize| -> String {
        let body = json!({"url": format!("{}/hooks/{n}", svc.leasing), "description": format!("hook {n}")});
        let created = svc.call(token, Method::POST, "/api/v1/leasing/subscriptions", Some(body)).await;
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.unwrap();
        svc.remember_secret(created["secret"].as_str().unwrap());
        created["id"].as_str().unwrap().to_string()
    };
    let mut mine = Vec::new();
    for n in 0..8 {
        mine.push(subscribe(&token, n).await);
    }
    subscribe(&bob, 100).await;
    let by_position: Value = svc.get(&token, "/api/v1/leasing/subscriptions").await.json().await.unwrap();
    assert_eq!(by_position["meta"]["total"], 8, "{by_position}");
    let quoted = |list: &[String]| list.iter().map(|id| json!(id).to_string()).collect::<Vec<_>>();
    assert_eq!(ids(by_position["items"].as_array().unwrap(), "id"), quoted(&mine), "oldest first");

    let (read_already, not_yet) = (mine[1].clone(), mine[6].clone());
    let walked = walk(&svc, &token, "/api/v1/leasing/subscriptions?limit=3", "items", async |page| {
        if page == 0 {
            for id in [&read_already, &not_yet] {
                let path = format!("/api/v1/leasing/subscriptions/{id}");
                assert_eq!(svc.call(&token, Method::DELETE, &path, None).await.status(), 204);
            }
            subscribe(&token, 50).await;
        }
    })
    .await;
    let walked = ids(&walked, "id");
    let unique: BTreeSet<&String> = walked.iter().collect();
    assert_eq!(unique.len(), walked.len(), "no subscription repeats: {walked:?}");
    let kept = quoted(&mine.iter().filter(|id| **id != not_yet).cloned().collect::<Vec<_>>());
    // Every subscription that was there throughout is seen, in order; the one added at the end
    // of the order is seen too, the one deleted before it was reached is not.
    assert_eq!(walked[..kept.len()], kept[..], "{walked:?}");
    assert_eq!(walked.len(), kept.len() + 1, "the new one, last: {walked:?}");
    svc.stop().await;
}

/// A subscription's deliveries read by key: newest first, every delivery that existed before
/// the walk seen once, in the order of the positional list.
async fn deliveries_read_by_key(db: Db) {
    let settings = [
        ("CALLBACK_ALLOW_PRIVATE", "true"),
        ("LEASING_WATCH_INTERVAL_SECONDS", "1"),
        ("LEASING_DELIVERY_BACKOFF_MILLISECONDS", "100"),
    ];
    let (svc, token) = TestService::with_user(db, &settings).await;
    let body = json!({"url": format!("{}/hooks/deliveries", svc.leasing)});
    let created: Value =
        svc.call(&token, Method::POST, "/api/v1/leasing/subscriptions", Some(body)).await.json().await.unwrap();
    svc.remember_secret(created["secret"].as_str().unwrap());
    let sub = created["id"].as_str().unwrap().to_string();
    let mut requests = Vec::new();
    for company in ["ACME [moves:2]", "Beta [moves:2]", "Gamma [moves:2]"] {
        let response = svc.call(&token, Method::POST, "/api/v1/leasing", Some(leasing_request(company))).await;
        assert_eq!(response.status(), 201);
        requests.push(response.json::<Value>().await.unwrap()["data"]["FinancingId"].as_str().unwrap().to_string());
    }
    let store = svc.store().clone();
    until("every request terminal", async || {
        let mut ended = true;
        for id in &requests {
            ended &= store.watch(id).await.unwrap().is_some_and(|w| w.terminal);
        }
        ended
    })
    .await;
    let path = format!("/api/v1/leasing/subscriptions/{sub}/deliveries");
    let before: Value = svc.get(&token, &format!("{path}?page=1&limit=500")).await.json().await.unwrap();
    assert!(before.get("next_cursor").is_none(), "a positional page names no cursor: {before}");
    let before = ids(before["items"].as_array().unwrap(), "id");
    assert!(before.len() >= 6, "at least two changes of each request: {before:?}");

    let walked = walk(&svc, &token, &format!("{path}?limit=2"), "items", async |_| {}).await;
    let walked: Vec<i64> = walked.iter().map(|d| d["id"].as_i64().unwrap()).collect();
    assert!(walked.windows(2).all(|w| w[0] > w[1]), "newest first, each once: {walked:?}");
    let walked_text: Vec<String> = walked.iter().map(i64::to_string).collect();
    assert!(before.iter().all(|id| walked_text.contains(id)), "{before:?} in {walked:?}");
    // Positional pages go on as they were.
    let second: Value = svc.get(&token, &format!("{path}?page=2&limit=2")).await.json().await.unwrap();
    assert_eq!(ids(second["items"].as_array().unwrap(), "id"), before[2..4]);
    svc.stop().await;
}

on_both_databases!(the_job_history_reads_by_key, subscriptions_read_by_key, deliveries_read_by_key);
