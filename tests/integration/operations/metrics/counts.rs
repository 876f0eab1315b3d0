//! After requests of every area, the exposition shows exact counts with the right labels, upstream
//! calls agree with what the simulators received, and the queue gauges read the database.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, EMAIL, PASSWORD, error_body, leasing_request};
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

async fn counts_requests_upstream_calls_flows_and_queues(db: Db) {
    let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let svc = start(db).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let token = svc.token(EMAIL, PASSWORD).await;
    let get = |path: &str| svc.client.get(svc.url(path)).bearer_auth(&token).checked();

    assert_eq!(get("/api/v1/user").await.unwrap().status(), 200);
    error_body(get("/api/v1/no/such/route").await.unwrap(), 404).await;
    error_body(get("/__internal/docs/openapi.json").await.unwrap(), 404).await; // the front's own 404
    error_body(get("/api/v1/fieldreport/companies/4711").await.unwrap(), 404).await;
    assert_eq!(get("/api/v1/fieldreport/companies?per_page=5").await.unwrap().status(), 200);

    // A field-report write, forwarded to the simulator.
    let created =
        svc.post(&token, "/api/v1/fieldreport/companies", json!({"Id": "4711", "Version": 1, "Name": "ACME"})).await;
    assert_eq!(created.status(), 201);

    // A body over the limit, refused by the front itself, still under the route's operation.
    let too_large = svc
        .client
        .post(svc.url("/api/v1/fieldreport/companies"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(vec![b' '; 1024 * 1024 + 1])
        .checked()
        .await
        .unwrap();
    error_body(too_large, 413).await;

    // A financing request, and a wait whose first read the provider refuses with 503 (the
    // read is retried): one http_5xx call among the ok ones.
    let created = svc.client.post(svc.url("/api/v1/leasing")).bearer_auth(&token).json(&leasing_request("ACME GmbH"));
    let created = created.checked().await.unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    let id = created["data"]["FinancingId"].as_str().unwrap().to_string();
    svc.leasing_fault(json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 503, "times": 1})).await;
    let waited = get(&format!("/api/v1/leasing/{id}/wait-ready-to-sign?sleep_milliseconds=0")).await.unwrap();
    assert_eq!(waited.status(), 200);

    // A one-shot flow that ends in an error code.
    let flow = json!({
        "request_payload": leasing_request("Declined AG [declined]"),
        "e_signature_payload": {"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example", "signees": []},
        "sleep_milliseconds": 0
    });
    let declined =
        svc.client.post(svc.url("/api/v1/leasing/leasing/request-flow")).bearer_auth(&token).json(&flow).checked();
    assert_eq!(error_body(declined.await.unwrap(), 500).await["error_code"], "declined");

    // A webhook, accepted and processed: one ERP read, one company written locally, not pushed.
    let webhook = svc
        .client
        .post(svc.url("/api/v1/erp/webhooks"))
        .header("X-Webhook-Secret", WEBHOOK_SECRET)
        .json(&json!({"entityName": "customer", "entityId": "5", "type": "updated"}))
        .checked()
        .await
        .unwrap();
    assert_eq!(webhook.status(), 202);
    wait_for_processed_webhooks(&svc, 1).await;

    let metrics = scrape(&svc).await;

    // Requests: every one of the eleven above, once, under its operation; nothing else.
    metrics.assert_counted(
        "integration_service_http_requests_total",
        "integration_service_http_request_duration_seconds",
        &["operation", "status"],
        &[
            (&["login", "200"], 1.0),
            (&["current_user", "200"], 1.0),
            (&["unmatched", "404"], 2.0),
            (&["fieldreport_companies_show", "404"], 1.0),
            (&["fieldreport_companies_list", "200"], 1.0),
            (&["fieldreport_companies_create", "201"], 1.0),
            (&["fieldreport_companies_create", "413"], 1.0),
            (&["leasing_create", "201"], 1.0),
            (&["leasing_wait_ready_to_sign", "200"], 1.0),
            (&["leasing_request_flow", "500"], 1.0),
            (&["erp_webhook_post", "202"], 1.0),
        ],
    );

    // Upstream calls: each system's total equals what its simulator received.
    let leasing_calls = simulator_calls(&svc, &svc.leasing).await;
    let fieldreport_calls = simulator_calls(&svc, &svc.fieldreport).await;
    let erp_calls = simulator_calls(&svc, svc.erp.trim_end_matches("/webapp/api/v1")).await;
    // create, then the wait's reads (a refused one and its retry among them), then the flow's
    // create: at least four calls.
    assert!(leasing_calls >= 4.0, "{leasing_calls}");
    assert_eq!(fieldreport_calls, 1.0, "one forwarded create");
    assert_eq!(erp_calls, 1.0, "one read of the webhook's customer");
    metrics.assert_counted(
        "integration_service_upstream_requests_total",
        "integration_service_upstream_request_duration_seconds",
        &["system", "outcome"],
        &[
            (&["leasing", "ok"], leasing_calls - 1.0),
            (&["leasing", "http_5xx"], 1.0),
            (&["fieldreport", "ok"], fieldreport_calls),
            (&["erp", "ok"], erp_calls),
        ],
    );

    // Leasing flows: every outcome has a series; two flows ended.
    let flows = metrics.counter("integration_service_leasing_flow_outcomes_total", &["flow", "outcome"]);
    assert_eq!(flows[&labels(&["request_flow", "declined"])], 1.0);
    assert_eq!(flows[&labels(&["wait_ready_to_sign", "ok"])], 1.0);
    assert_eq!(flows[&labels(&["request_flow", "ok"])], 0.0);
    assert_eq!(flows[&labels(&["wait_ready_to_sign", "missing_info"])], 0.0);
    assert_eq!(flows.values().sum::<f64>(), 2.0, "{flows:?}");
    assert_eq!(flows.len(), 2 * 20, "ok and 19 error codes per flow: {flows:?}");

    // Queues, read from the database.
    let inbox = "integration_service_erp_webhook_inbox_calls";
    assert_eq!(metrics.types[inbox], "gauge");
    assert_eq!(metrics.get(inbox, &[("state", "pending")]), 0.0);
    assert_eq!(metrics.get(inbox, &[("state", "failed")]), 0.0);
    let oldest = "integration_service_erp_webhook_inbox_oldest_pending_age_seconds";
    assert_eq!(metrics.types[oldest], "gauge");
    assert_eq!(metrics.get(oldest, &[]), 0.0, "nothing pending: no age");
    let push = "integration_service_fieldreport_pending_push_records";
    assert_eq!(metrics.get(push, &[("entity", "companies")]), 1.0, "the webhook's company waits to be pushed");
    assert_eq!(metrics.get(push, &[("entity", "contacts")]), 0.0);
    assert_eq!(metrics.series(push).len(), 15, "every entity has a series");

    // Field-report pages are cached in memory on both databases (single records on Postgres).
    let cache = "integration_service_fieldreport_record_cache_lookups_total";
    assert_eq!(metrics.types[cache], "counter");
    let lookups = metrics.get(cache, &[("result", "hit")]) + metrics.get(cache, &[("result", "miss")]);
    assert!(lookups >= 1.0, "the page read above was looked up: {lookups}");

    // The pool, the process, the build.
    let max = metrics.get("integration_service_db_pool_max_connections", &[]);
    assert_eq!(max, if db == Db::Sqlite { 8.0 } else { 16.0 });
    let open = metrics.get("integration_service_db_pool_connections", &[]);
    let idle = metrics.get("integration_service_db_pool_idle_connections", &[]);
    assert!(open >= 1.0 && open <= max && idle <= open, "open {open}, idle {idle}, max {max}");
    assert_eq!(metrics.get("integration_service_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    let start = metrics.get("process_start_time_seconds", &[]);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    assert!(start >= started - 1.0 && start <= now, "start {start} outside [{started}, {now}]");
    // The process figures as the Prometheus client libraries name them (the test runs the
    // service in its own process, so they are this process's).
    for (name, kind) in [
        ("process_resident_memory_bytes", "gauge"),
        ("process_virtual_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_max_fds", "gauge"),
        ("process_cpu_seconds_total", "counter"),
    ] {
        assert_eq!(metrics.types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    let resident = metrics.get("process_resident_memory_bytes", &[]);
    assert!(resident > 1024.0 * 1024.0, "a running service holds over a MiB: {resident}");
    assert!(metrics.get("process_virtual_memory_bytes", &[]) >= resident);
    let (fds, max_fds) = (metrics.get("process_open_fds", &[]), metrics.get("process_max_fds", &[]));
    assert!(fds >= 4.0 && fds <= max_fds, "the database, the listener and the standard streams: {fds} of {max_fds}");
    let cpu = metrics.get("process_cpu_seconds_total", &[]);
    assert!(cpu > 0.0, "hashing the password alone took CPU time: {cpu}");

    // The scrape counts itself once it is answered.
    let again = scrape(&svc).await;
    assert_eq!(
        again.get("integration_service_http_requests_total", &[("operation", "metrics"), ("status", "200")]),
        1.0
    );
    svc.stop().await;
}

on_both_databases!(counts_requests_upstream_calls_flows_and_queues);
