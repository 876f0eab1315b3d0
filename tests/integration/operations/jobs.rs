//! Jobs over HTTP: queueing, following, the history, cancelling, conflicts, restarts and
//! take-overs, `SCHEDULE`, the job metrics, and `jobs run --follow` on the command line.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::time::{Duration, Instant};

use crate::common::binary::Binary;
use crate::common::{Db, TestService, add_fault, error_body};
use integration_service::store::{DatabaseUrl, Store};
use reqwest::Method;
use serde_json::{Value, json};

async fn create(svc: &TestService, token: &str, body: Value) -> reqwest::Response {
    svc.post(token, "/api/v1/jobs", body).await
}

async fn job(svc: &TestService, token: &str, id: i64) -> Value {
    let response = svc.get(token, &format!("/api/v1/jobs/{id}")).await;
    assert_eq!(response.status(), 200);
    response.json_value().await
}

/// The job once `done` says so (a guard of two minutes against a hang, not a timing claim).
async fn wait_for(svc: &TestService, token: &str, id: i64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = job(svc, token, id).await;
        if done(&job) {
            return job;
        }
        assert!(Instant::now() < deadline, "the job never got there: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ended(job: &Value) -> bool {
    !["queued", "running"].contains(&job["status"].as_str().unwrap())
}

/// Every page of the field-report simulator's tags waits `ms` first, for a while.
async fn slow_tags(svc: &TestService, ms: u64) {
    add_fault(
        &svc.client,
        &svc.fieldreport,
        json!({"path_prefix": "/odata/Tags", "status": 200, "delay_ms": ms, "times": 1000}),
    )
    .await;
}

async fn a_sync_job_runs_once_reports_like_the_tool_route_and_is_counted(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Tags", 750).await;
    let response = create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "Tags"})).await;
    assert_eq!(response.status(), 202);
    let queued: Value = response.json_value().await;
    assert_eq!((queued["kind"].as_str(), queued["target"].as_str()), (Some("fieldreport.sync"), Some("tags")));
    assert_eq!(queued["status"], "queued");
    let id = queued["id"].as_i64().unwrap();

    let done = wait_for(&svc, &token, id, ended).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["attempts"], 1);
    assert_eq!(done["result"][0]["entity"], "tags");
    assert_eq!((done["result"][0]["fetched"].clone(), done["result"][0]["inserted"].clone()), (json!(750), json!(750)));
    assert_eq!(done["progress"]["done"], 750, "{done}");
    assert!(done["finished_at"].as_str().is_some() && done["started_at"].as_str().is_some());
    let shown: Value = svc.get_json(&token, "/api/v1/fieldreport/show/tags").await;
    assert_eq!(shown["data"]["records"], 750);

    // The history, filtered.
    let page: Value = svc.get_json(&token, "/api/v1/jobs?kind=fieldreport.sync&status=succeeded").await;
    assert_eq!(page["meta"]["total"], 1, "{page}");
    assert_eq!(page["data"][0]["id"], id);
    let none: Value = svc.get_json(&token, "/api/v1/jobs?status=failed").await;
    assert_eq!(none["meta"]["total"], 0);

    // The whole mirror of every set: a job without a target.
    let all: Value = create(&svc, &token, json!({"kind": "fieldreport.sync"})).await.json_value().await;
    assert_eq!(all["target"], Value::Null);
    let all = wait_for(&svc, &token, all["id"].as_i64().unwrap(), ended).await;
    assert_eq!(all["status"], "succeeded", "{all}");
    assert_eq!(all["result"].as_array().unwrap().len(), 15);

    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(
            "integration_jobs_finished_total{kind=\"fieldreport.sync\",target=\"tags\",status=\"succeeded\"} 1\n"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "integration_jobs_finished_total{kind=\"fieldreport.sync\",target=\"*\",status=\"succeeded\"} 1\n"
        )
    );
    assert!(metrics.contains(
        "integration_job_duration_seconds_count{kind=\"fieldreport.sync\",target=\"tags\",status=\"succeeded\"} 1\n"
    ));
    let last_success = metrics
        .lines()
        .find(|l| {
            l.starts_with("integration_job_last_success_timestamp_seconds{kind=\"fieldreport.sync\",target=\"tags\"}")
        })
        .expect("the last success of the tags sync");
    let at: f64 = last_success.rsplit(' ').next().unwrap().parse().unwrap();
    let finished = chrono::DateTime::parse_from_rfc3339(done["finished_at"].as_str().unwrap()).unwrap();
    assert_eq!((at * 1000.0).round() as i64, finished.timestamp_millis());
    svc.stop().await;
}

async fn bad_jobs_are_refused_and_a_running_one_is_cancelled_at_its_next_page(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let unknown_kind = error_body(create(&svc, &token, json!({"kind": "fieldreport.pull"})).await, 422).await;
    assert_eq!(unknown_kind["error_code"], "validation_failed");
    assert!(unknown_kind["errors"]["kind"][0].as_str().unwrap().contains("fieldreport.sync"), "{unknown_kind}");
    let unknown_entity =
        error_body(create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "widgets"})).await, 422).await;
    assert!(unknown_entity["errors"]["target"][0].as_str().unwrap().contains("costCenters"), "{unknown_entity}");
    let unknown_stage =
        error_body(create(&svc, &token, json!({"kind": "fieldreport.setup", "target": "4"})).await, 422).await;
    assert!(unknown_stage["errors"]["target"].is_array());
    let bad_filter = error_body(svc.get(&token, "/api/v1/jobs?status=done").await, 422).await;
    assert!(bad_filter["errors"]["status"].is_array());
    error_body(svc.get(&token, "/api/v1/jobs/987654").await, 404).await;
    error_body(svc.call(&token, Method::POST, "/api/v1/jobs/987654/cancel", None).await, 404).await;
    error_body(svc.client.get(svc.url("/api/v1/jobs")).checked().await.unwrap(), 401).await;

    // A slow sync: a second one of the same set is refused naming it, another set's is not.
    svc.seed("Tags", 1500).await;
    slow_tags(&svc, 300).await;
    let first: Value =
        create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "tags"})).await.json_value().await;
    let id = first["id"].as_i64().unwrap();
    let second =
        error_body(create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "Tags"})).await, 409).await;
    assert_eq!(second["error_code"], "job_active");
    assert!(second["message"].as_str().unwrap().contains(&format!("job {id} ")), "{second}");
    let users = create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "users"})).await;
    assert_eq!(users.status(), 202);

    // Cancelled once it stored a page: it stops at the next one, keeping what it stored.
    wait_for(&svc, &token, id, |job| job["progress"]["done"].as_i64().unwrap() > 0).await;
    let asked = svc.call(&token, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
    assert_eq!(asked.status(), 200);
    let asked: Value = asked.json_value().await;
    assert_eq!(asked["cancel_requested"], true);
    let cancelled = wait_for(&svc, &token, id, ended).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let shown: Value = svc.get_json(&token, "/api/v1/fieldreport/show/tags").await;
    let stored = shown["data"]["records"].as_i64().unwrap();
    assert!(stored > 0 && stored < 1500, "{shown}");
    assert_eq!(shown["data"]["cursor"], Value::Null, "an incomplete sync moves no cursor");
    // The set is free again; an ended job cannot be cancelled, a cancelled one answers again.
    assert_eq!(create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "tags"})).await.status(), 202);
    let again = svc.call(&token, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
    assert_eq!(again.status(), 200);
    let users_id = users.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
    let users_done = wait_for(&svc, &token, users_id, ended).await;
    assert_eq!(users_done["status"], "succeeded", "{users_done}");
    let ended_one = svc.call(&token, Method::POST, &format!("/api/v1/jobs/{users_id}/cancel"), None).await;
    assert_eq!(error_body(ended_one, 409).await["error_code"], "job_ended");
    svc.stop().await;
}

async fn jobs_survive_a_restart_and_a_stopped_instances_job_is_taken_over(db: Db) {
    let mut svc = TestService::start(db, &[]).await;
    let token = svc.user_token().await;
    svc.seed("Tags", 750).await;

    // Queued while no instance runs: it runs after the start.
    svc.service.take().unwrap().shutdown().await;
    let store = Store::open(&DatabaseUrl::new(svc.database_url.clone())).await.unwrap();
    // A job an instance that died was running: its lease ran out.
    let abandoned = store.job_enqueue("erp.setup", "customer", false, None).await.unwrap().unwrap();
    assert_eq!(store.job_claim("a-dead-instance", 0).await.unwrap().unwrap().id, abandoned.id);
    let queued = store.job_enqueue("fieldreport.sync", "tags", false, None).await.unwrap().unwrap();
    store.close().await;
    svc.restart().await;
    let ran = wait_for(&svc, &token, queued.id, ended).await;
    assert_eq!((ran["status"].as_str(), ran["result"][0]["fetched"].as_i64()), (Some("succeeded"), Some(750)), "{ran}");
    let taken = wait_for(&svc, &token, abandoned.id, ended).await;
    assert_eq!(taken["status"], "succeeded", "{taken}");
    assert_eq!(taken["attempts"], 2, "{taken}");
    assert_eq!(taken["result"][0]["model"], "customer");

    // Running when its instance stops: handed back, and run again after the restart.
    slow_tags(&svc, 300).await;
    let job: Value =
        create(&svc, &token, json!({"kind": "fieldreport.reconcile", "target": "tags"})).await.json_value().await;
    let id = job["id"].as_i64().unwrap();
    wait_for(&svc, &token, id, |job| job["status"] == "running").await;
    svc.restart().await;
    crate::common::clear_faults(&svc.client, &svc.fieldreport).await;
    let resumed = wait_for(&svc, &token, id, ended).await;
    assert_eq!(resumed["status"], "succeeded", "{resumed}");
    assert_eq!(resumed["attempts"], 2, "{resumed}");
    assert!(resumed["result"][0]["reconcile"].is_object(), "{resumed}");
    svc.stop().await;
}

async fn the_schedule_queues_jobs_and_skips_a_tick_while_one_runs(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("SCHEDULE", "fieldreport.sync:tags=1s; erp.pull=1h")]).await;
    svc.seed("Tags", 1500).await;
    slow_tags(&svc, 300).await;
    // The first tick is due at once (it may find no tags yet); a later one finds the slow sync
    // running, and the ticks while it runs are skipped rather than queued.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !svc.log.text().contains("scheduled tick skipped") {
        assert!(Instant::now() < deadline, "no tick was skipped: {}", svc.log.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let running: Value = svc.get_json(&token, "/api/v1/jobs?kind=fieldreport.sync&status=running").await;
    assert_eq!(running["meta"]["total"], 1, "{running}");
    assert_eq!(
        (running["data"][0]["scheduled"].clone(), running["data"][0]["target"].clone()),
        (json!(true), json!("tags"))
    );
    let queued: Value = svc.get_json(&token, "/api/v1/jobs?kind=fieldreport.sync&status=queued").await;
    assert_eq!(queued["meta"]["total"], 0, "nothing piles up behind the running sync: {queued}");
    let pulls: Value = svc.get_json(&token, "/api/v1/jobs?kind=erp.pull").await;
    assert_eq!(pulls["meta"]["total"], 1, "one tick of the hourly pull: {pulls}");
    assert_eq!(pulls["data"][0]["target"], Value::Null);
    svc.stop().await;
}

#[test]
fn an_invalid_schedule_entry_stops_the_start_naming_it() {
    let output = Binary::new(["serve"]).env("SCHEDULE", "fieldreport.sync=5m; erp.push=1h").output();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("configuration error: SCHEDULE: entry \"erp.push=1h\""), "{stderr}");
}

async fn the_command_line_queues_a_job_and_follows_it(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.seed("Tags", 350).await;
    let output = svc.command(&["jobs", "run", "fieldreport.sync", "tags", "--follow"]).output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let last = stdout.lines().find(|l| l.ends_with("succeeded")).expect("the job's end");
    assert!(last.starts_with("job ") && last.contains("fieldreport.sync (tags)"), "{stdout}");
    assert!(stdout.contains("\"fetched\":350"), "{stdout}");
    let refused = svc.command(&["jobs", "run", "fieldreport.sync", "widgets"]).output();
    assert!(!refused.status.success());
    svc.stop().await;
}

/// Two instances on one Postgres database: every job runs once, a second job of a kind and
/// target is refused at either, and a cancel asked at the instance that does not run the job
/// stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_run_each_job_once_and_a_cancel_reaches_the_other() {
    let Some((first, second, _sql)) = crate::common::two_instances_on_postgres().await else { return };
    let token = first.user_token().await;
    let stage_one = ["itemTypes", "itemUnits", "costCenters", "tags", "qualifications", "users"];
    let mut ids = Vec::new();
    for (n, entity) in stage_one.iter().enumerate() {
        let at = if n % 2 == 0 { &first } else { &second };
        let job: Value =
            create(at, &token, json!({"kind": "fieldreport.sync", "target": entity})).await.json_value().await;
        ids.push(job["id"].as_i64().unwrap());
    }
    for id in &ids {
        let done = wait_for(&first, &token, *id, ended).await;
        assert_eq!((done["status"].as_str(), done["attempts"].as_i64()), (Some("succeeded"), Some(1)), "{done}");
    }
    let ran_at = |svc: &TestService, id: i64| {
        svc.log.text().lines().any(|l| l.contains("\"msg\":\"job started\"") && l.contains(&format!("\"job\":{id},")))
    };
    for id in &ids {
        assert!(ran_at(&first, *id) != ran_at(&second, *id), "job {id} ran at exactly one instance");
    }

    for svc in [&first, &second] {
        svc.seed("Tags", 1500).await;
        slow_tags(svc, 300).await;
    }
    let job: Value =
        create(&first, &token, json!({"kind": "fieldreport.reconcile", "target": "tags"})).await.json_value().await;
    let id = job["id"].as_i64().unwrap();
    let refused =
        error_body(create(&second, &token, json!({"kind": "fieldreport.reconcile", "target": "tags"})).await, 409)
            .await;
    assert_eq!(refused["error_code"], "job_active");
    wait_for(&first, &token, id, |job| job["progress"]["done"].as_i64().unwrap() > 0).await;
    let other = if ran_at(&first, id) { &second } else { &first };
    let asked = other.call(&token, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
    assert_eq!(asked.status(), 200);
    let cancelled = wait_for(&first, &token, id, ended).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    first.stop().await;
    second.stop().await;
}

/// A job records who queued it; another user sees it but may not cancel it (403
/// `not_job_owner`), an operator may.
async fn a_job_records_its_creator_and_only_they_or_an_operator_cancel_it(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let (bob, root) = svc.bob_and_root().await;
    let me: Value = svc.get_json(&token, "/api/v1/user").await;
    slow_tags(&svc, 2_000).await;
    let queued: Value =
        create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "tags"})).await.json_value().await;
    let id = queued["id"].as_i64().unwrap();
    assert_eq!(queued["created_by"], me["id"], "{queued}");
    assert_eq!(job(&svc, &bob, id).await["created_by"], me["id"], "jobs are the service's work: all see them");
    let refused = svc.call(&bob, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
    assert_eq!(error_body(refused, 403).await["error_code"], "not_job_owner");
    assert!(!job(&svc, &token, id).await["cancel_requested"].as_bool().unwrap());
    let cancelled = svc.call(&root, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
    assert_eq!(cancelled.status(), 200);
    wait_for(&svc, &token, id, ended).await;
    svc.stop().await;
}

on_both_databases!(
    a_job_records_its_creator_and_only_they_or_an_operator_cancel_it,
    a_sync_job_runs_once_reports_like_the_tool_route_and_is_counted,
    bad_jobs_are_refused_and_a_running_one_is_cancelled_at_its_next_page,
    jobs_survive_a_restart_and_a_stopped_instances_job_is_taken_over,
    the_schedule_queues_jobs_and_skips_a_tick_while_one_runs,
    the_command_line_queues_a_job_and_follows_it,
);

/// A queue-and-cancel loop writes no faster than `JOBS_PER_MINUTE_PER_USER`: beyond it, 429
/// `too_many_jobs` with `Retry-After`; another user is not held up. The janitor's work is
/// counted in the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queueing_jobs_is_rate_limited_per_user() {
    let svc = TestService::start(Db::Sqlite, &[("JOBS_PER_MINUTE_PER_USER", "3")]).await;
    let token = svc.user_token().await;
    svc.create_user("bob@example.com", "bob-password-1").await;
    let bob = svc.token("bob@example.com", "bob-password-1").await;
    // The jobs cancelled are of the slowed set, so that each is still queued or running when
    // its cancel comes (a quick one would have ended: 409).
    slow_tags(&svc, 2_000).await;
    for _ in 0..3 {
        let queued = create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "tags"})).await;
        assert_eq!(queued.status(), 202);
        let id = queued.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
        let cancelled = svc.call(&token, Method::POST, &format!("/api/v1/jobs/{id}/cancel"), None).await;
        assert_eq!(cancelled.status(), 200);
        wait_for(&svc, &token, id, ended).await;
    }
    let fourth = create(&svc, &token, json!({"kind": "fieldreport.sync", "target": "tags"})).await;
    let retry_after = fourth.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
    assert_eq!(error_body(fourth, 429).await["error_code"], "too_many_jobs");
    assert!(retry_after.is_some_and(|s| (1..=60).contains(&s)), "{retry_after:?}");
    assert_eq!(create(&svc, &bob, json!({"kind": "fieldreport.sync", "target": "items"})).await.status(), 202);
    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("integration_service_janitor_pruned_rows_total{table=\"jobs\"}"), "{metrics}");
    svc.stop().await;
}
