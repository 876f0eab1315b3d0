//! The service killed with SIGKILL in the middle of work, then started again on the same
//! database: a field-report sync, a burst of ERP webhooks, a one-shot leasing flow and a bulk
//! post each converge, with nothing lost and nothing done twice.
//!
//! The service runs as its own process (the real binary); the simulators run in the test, so
//! they outlive the kill and can tell what reached them. `WORK_LEASE_SECONDS=1` lets a new
//! process take over the dead one's claims after a second instead of a minute.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::common::process::{Instance, WEBHOOK_SECRET, odata_root, upstream_records};
use crate::common::{Db, add_fault, clear_faults, leasing_request, seed};
use integration_service::store::Store;
use serde_json::{Value, json};

/// Waits until `count()` reaches `at_least`; panics with `what` when it never does.
async fn wait_for<F, Fut>(what: &str, at_least: i64, mut count: F) -> i64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = i64>,
{
    for _ in 0..600 {
        let now = count().await;
        if now >= at_least {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never reached {at_least}");
}

async fn scalar(store: &Store, sql: &'static str, bind: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sql).bind(bind).fetch_one(store.pool()).await.unwrap();
    n
}

fn path_of(url: &str) -> String {
    url::Url::parse(url).unwrap().path().trim_end_matches('/').to_string()
}

/// Killed in the middle of a sync, the next sync (once the dead one's lease ran out) brings
/// the mirror to exactly the upstream's records.
async fn a_sync_killed_midway_resumes_and_converges(db: Db) {
    let (mut instance, sandboxes, store) = Instance::start(db, &[]).await;
    let client = &instance.client.clone();
    let root = odata_root(&sandboxes);
    seed(client, &root, "Companies", 2500).await;
    let upstream = upstream_records(client, &root, "Companies").await;
    // Every page is slow, so the kill lands between pages.
    add_fault(client, &root, json!({"path_prefix": "/odata/Companies", "status": 200, "delay_ms": 150, "times": 1000}))
        .await;
    let token = instance.token().await;
    let sync = {
        let request = client.get(instance.url("/api/v1/fieldreport/sync/companies")).bearer_auth(&token).checked();
        tokio::spawn(request)
    };
    let mirrored = || scalar(&store, "SELECT COUNT(*) FROM fieldreport_records WHERE entity = $1", "companies");
    let before_kill = wait_for("the mirrored companies", 500, mirrored).await;
    instance.kill();
    assert!(sync.await.unwrap().is_err(), "the killed service cannot have answered");
    assert!(before_kill < upstream.len() as i64, "the kill came before the sync completed");
    let cursor: Option<String> =
        sqlx::query_scalar("SELECT cursor_value FROM fieldreport_sync_state WHERE entity = $1")
            .bind("companies")
            .fetch_optional(store.pool())
            .await
            .unwrap()
            .flatten();
    assert_eq!(cursor, None, "an interrupted sync records no cursor");

    clear_faults(client, &root).await;
    instance.restart();
    let token = instance.token().await;
    let report = loop {
        let answer = client.get(instance.url("/api/v1/fieldreport/sync/companies")).bearer_auth(&token).checked().await;
        let answer = answer.unwrap();
        let status = answer.status();
        let body: Value = answer.json_value().await;
        if status == 200 {
            break body;
        }
        // The dead process's lease holds for a second.
        assert_eq!(status, 409, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let report = &report["data"][0];
    assert_eq!(report["fetched"].as_u64(), Some(upstream.len() as u64), "{report}");
    assert_eq!(report["inserted"].as_i64().unwrap() + report["unchanged"].as_i64().unwrap(), upstream.len() as i64);
    let local: Vec<(String, i64)> =
        sqlx::query_as("SELECT record_id, version FROM fieldreport_records WHERE entity = $1")
            .bind("companies")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let local_ids: BTreeSet<&str> = local.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(local.len(), local_ids.len(), "no record twice");
    assert_eq!(local_ids, upstream.keys().map(String::as_str).collect(), "exactly the upstream's records");
    instance.stop(&[&token]).await;
}

/// Killed while a burst of webhook calls is being received and processed: every call that
/// was answered 202 is in the inbox, and after the restart every stored call is processed,
/// each entity once, into exactly one local company.
async fn a_webhook_burst_survives_a_kill(db: Db) {
    let (mut instance, sandboxes, store) = Instance::start(db, &[]).await;
    let client = instance.client.clone();
    let erp = sandboxes.erp_base_url();
    let records: Vec<Value> = (0..60)
        .map(|n| json!({"id": (9000 + n).to_string(), "company": format!("Burst {n} GmbH"), "customerNumber": format!("B-{n}")}))
        .collect();
    let erp_host = erp.split("/webapp").next().unwrap().to_string();
    let seeded = client
        .post(format!("{erp_host}/__sandbox/seed"))
        .json(&json!({"model": "customer", "records": records}))
        .checked()
        .await
        .unwrap();
    assert_eq!(seeded.status(), 201);
    // Fetching each customer is slow, so the kill finds calls stored but not processed.
    add_fault(
        &client,
        &erp_host,
        json!({"path_prefix": format!("{}/customer", path_of(&erp)), "status": 200, "delay_ms": 100, "times": 1000}),
    )
    .await;

    let mut sends = Vec::new();
    for n in 0..60 {
        let request = client
            .post(instance.url("/api/v1/erp/webhooks"))
            .header("X-Webhook-Secret", WEBHOOK_SECRET)
            .json(&json!({"entityName": "customer", "entityId": (9000 + n).to_string(), "type": "update"}))
            .checked();
        sends.push(tokio::spawn(request));
    }
    let mut accepted = 0;
    for send in sends {
        let answer = send.await.unwrap().unwrap();
        assert_eq!(answer.status(), 202);
        accepted += 1;
    }
    let done = || scalar(&store, "SELECT COUNT(*) FROM erp_webhook_inbox WHERE state = $1", "done");
    wait_for("processed calls", 3, done).await;
    instance.kill();
    let (stored, finished): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END) FROM erp_webhook_inbox")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(stored, accepted, "every accepted call is stored");
    assert!(finished < stored, "the kill came before the burst was processed");

    clear_faults(&client, &erp_host).await;
    instance.restart();
    wait_for("processed calls", accepted, done).await;
    let states: Vec<(String, i64)> = sqlx::query_as("SELECT state, COUNT(*) FROM erp_webhook_inbox GROUP BY state")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(states, vec![("done".to_string(), accepted)], "each stored call processed, none failed");
    let companies: Vec<(String,)> = sqlx::query_as(
        "SELECT document FROM fieldreport_records WHERE entity = 'companies' AND record_id LIKE 'erp-customer-9%'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    let mut by_external: BTreeMap<String, Value> = BTreeMap::new();
    for (document,) in &companies {
        let document: Value = serde_json::from_str(document).unwrap();
        let external = document["ExternalId"].as_str().unwrap().to_string();
        assert!(by_external.insert(external, document).is_none(), "one company per customer");
    }
    assert_eq!(by_external.len(), 60);
    assert_eq!(by_external["9007"]["Name"], "Burst 7 GmbH");
    instance.stop(&[]).await;
}

/// Killed while a one-shot flow waits for the provider: the flow's record says it was
/// interrupted and shows the steps it had done, and a retry with its `Idempotency-Key` is told
/// so instead of creating a second financing request.
async fn a_flow_killed_midway_is_recorded_as_interrupted(db: Db) {
    let (mut instance, sandboxes, store) = Instance::start(db, &[]).await;
    let token = instance.token().await;
    let body = json!({
        "request_payload": leasing_request("ACME [slow:1000]"),
        "e_signature_payload": {"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example"},
        "sleep_milliseconds": 500,
        "max_attempts": 100
    });
    let flow = tokio::spawn(
        instance
            .client
            .post(instance.url("/api/v1/leasing/leasing/request-flow"))
            .bearer_auth(&token)
            .header("idempotency-key", "killed-flow")
            .json(&body)
            .checked(),
    );
    let steps = || scalar(&store, "SELECT COUNT(*) FROM leasing_flow_steps WHERE action <> $1", "");
    wait_for("the flow's first step", 1, steps).await;
    instance.kill();
    assert!(flow.await.unwrap().is_err());
    let running: String = sqlx::query_scalar("SELECT status FROM leasing_flows").fetch_one(store.pool()).await.unwrap();
    assert_eq!(running, "running", "nothing marked it yet");

    instance.restart();
    let interrupted = || scalar(&store, "SELECT COUNT(*) FROM leasing_flows WHERE status = $1", "interrupted");
    wait_for("the interrupted flow", 1, interrupted).await;
    let (code, financing_id): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT error_code, financing_id FROM leasing_flows").fetch_one(store.pool()).await.unwrap();
    assert_eq!(code.as_deref(), Some("interrupted"));
    assert!(financing_id.is_some(), "the request it created is named as soon as the create succeeded");
    let steps: Vec<(String, String)> =
        sqlx::query_as("SELECT action, outcome FROM leasing_flow_steps ORDER BY position")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(steps[0], ("create".to_string(), "succeeded".to_string()), "{steps:?}");

    let retry = instance.post_keyed(&token, "/api/v1/leasing/leasing/request-flow", Some("killed-flow"), body).await;
    assert_eq!(retry.status(), 409);
    let retry: Value = retry.json_value().await;
    assert_eq!(retry["error_code"], "idempotency_key_flow_ended", "{retry}");
    assert_eq!(retry["financingId"].as_str(), financing_id.as_deref());
    assert!(retry["flowId"].is_i64(), "{retry}");
    let stats: Value =
        instance.client.get(format!("{}/__sandbox/stats", sandboxes.leasing_base_url())).json_value().await;
    assert_eq!(stats["requests"], 1, "the retry created no second request");
    instance.stop(&[&token]).await;
}

/// How many creates the field-report simulator received, by `ExternalId`.
async fn upstream_creates(client: &reqwest::Client, root: &str) -> BTreeMap<String, usize> {
    let received: Value = client.get(format!("{root}/__sandbox/received")).json_value().await;
    let mut creates: BTreeMap<String, usize> = BTreeMap::new();
    for write in received.as_array().unwrap().iter().filter(|w| w["method"] == "POST") {
        if let Some(external) = write["body"]["ExternalId"].as_str() {
            *creates.entry(external.to_string()).or_default() += 1;
        }
    }
    creates
}

/// Killed in the middle of a bulk post whose current record the upstream had already
/// created (its answer was late): the next post finds that record at the upstream instead
/// of creating it again, and pushes the rest; every record reaches the upstream once.
async fn a_bulk_post_killed_midway_pushes_nothing_twice(db: Db) {
    let (mut instance, sandboxes, store) = Instance::start(db, &[]).await;
    let client = instance.client.clone();
    let root = odata_root(&sandboxes);
    for n in 0..20 {
        let document = json!({"Id": format!("local-{n}"), "Version": 1, "Name": format!("Pending {n}"), "ExternalId": format!("P-{n}")});
        let record = integration_service::store::fieldreport::records::MirrorRecord {
            id: format!("local-{n}"),
            version: 1,
            document,
        };
        store.mirror_insert("companies", &record, Some("create")).await.unwrap();
    }
    // The sixth create is carried out, but its answer comes late: the kill lands in between.
    add_fault(
        &client,
        &root,
        json!({"path_prefix": "/odata/Companies", "status": 200, "answer_delay_ms": 60000, "after": 5, "times": 1}),
    )
    .await;
    let token = instance.token().await;
    let post = tokio::spawn(
        client.get(instance.url("/api/v1/fieldreport/post/2/create/companies")).bearer_auth(&token).checked(),
    );
    // (Counted from the simulator's log of writes: reading the set would match the fault.)
    let created_upstream = || {
        let client = client.clone();
        let root = root.clone();
        async move { upstream_creates(&client, &root).await.values().sum::<usize>() as i64 }
    };
    wait_for("the upstream's created records", 6, created_upstream).await;
    instance.kill();
    assert!(post.await.unwrap().is_err());
    let pending = scalar(&store, "SELECT COUNT(*) FROM fieldreport_records WHERE pending_push = $1", "create").await;
    assert_eq!(pending, 15, "five marked pushed; the sixth reached the upstream but not the mark");

    clear_faults(&client, &root).await;
    instance.restart();
    // Posts until nothing is left to anyone else (the dead process's claim holds a second).
    let (mut pushed, mut recovered) = (0, 0);
    loop {
        let answer = client
            .get(instance.url("/api/v1/fieldreport/post/2/create/companies"))
            .bearer_auth(&token)
            .checked()
            .await
            .unwrap();
        let body: Value = answer.json_value().await;
        let report = &body["data"][0];
        assert_eq!(report["failed"], 0, "{report}");
        pushed += report["pushed"].as_u64().unwrap();
        recovered += report["recovered"].as_u64().unwrap();
        if report["skipped"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(recovered, 1, "the record created before the kill is found, not sent again");
    assert_eq!(pushed, 14);

    let creates = upstream_creates(&client, &root).await;
    assert_eq!(creates.len(), 20);
    assert!(creates.values().all(|n| *n == 1), "each record created once at the upstream: {creates:?}");
    let left = scalar(&store, "SELECT COUNT(*) FROM fieldreport_records WHERE pending_push = $1", "create").await;
    assert_eq!(left, 0);
    let upstream = upstream_records(&client, &root, "Companies").await;
    let local: Vec<(String,)> = sqlx::query_as("SELECT record_id FROM fieldreport_records WHERE entity = 'companies'")
        .fetch_all(store.pool())
        .await
        .unwrap();
    for (id,) in local {
        assert!(upstream.contains_key(&id), "local record {id} carries the upstream's Id");
    }
    instance.stop(&[&token]).await;
}

on_both_databases!(
    a_sync_killed_midway_resumes_and_converges,
    a_webhook_burst_survives_a_kill,
    a_flow_killed_midway_is_recorded_as_interrupted,
    a_bulk_post_killed_midway_pushes_nothing_twice,
);
