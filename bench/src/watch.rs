//! `leasing-watch`: the leasing state watcher under load. A service of its own (reading every
//! watched request every few seconds, subscribers on loopback allowed) watches many requests
//! the simulator moves on by themselves (`[moves:S]`: `ReadyToSign` after S seconds,
//! `Contracted` after 2·S), with one subscription whose receiver runs here and answers 204.
//! Measured: provider reads (observations) per second while the requests move, events
//! delivered per second, the service's peak memory; the target is every recorded change
//! delivered, each request's last one (`Contracted`) included, within 300 MB.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Method, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::load::{Call, once_text};
use super::service::{PeakRss, Service};
use super::{Row, Settings};

/// What the receiver got: the distinct events, each request's states in arrival order.
#[derive(Default)]
struct Received {
    ids: std::collections::HashSet<String>,
    states: HashMap<String, Vec<String>>,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Serves the subscription's endpoint on loopback; answers every POST with 204.
async fn receiver(received: Arc<Mutex<Received>>) -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let received = received.clone();
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let received = received.clone();
                async move {
                    let id = request.headers().get("webhook-id").and_then(|v| v.to_str().ok()).map(str::to_string);
                    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let mut received = received.lock().expect("received");
                    if let Some(id) = id
                        && received.ids.insert(id)
                    {
                        let financing = event["data"]["financingId"].as_str().unwrap_or_default().to_string();
                        let state = event["data"]["state"].as_str().unwrap_or_default().to_string();
                        received.states.entry(financing).or_default().push(state);
                        let now = Instant::now();
                        received.first.get_or_insert(now);
                        received.last = Some(now);
                    }
                    Ok::<_, std::convert::Infallible>(
                        Response::builder().status(204).body(Full::new(Bytes::new())).unwrap(),
                    )
                }
            });
            tokio::spawn(async move {
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Ok(address)
}

fn moving_request(n: usize, step_seconds: u64) -> Value {
    json!({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit",
        "Lessee": {"CompanyName": format!("Bench {n} GmbH [moves:{step_seconds}]"), "LegalFormId": 1, "Email": "bench@example.com",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "main"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "NetPricePerObject": 1299.0}]
    })
}

/// A series' value in the exposition (the first line that starts with `series`).
fn metric(exposition: &str, series: &str) -> f64 {
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
        .unwrap_or(0.0)
}

async fn metrics(service: &Service) -> Result<String> {
    let (status, text) = once_text(service.front, &Call::get("/metrics")).await.map_err(anyhow::Error::msg)?;
    anyhow::ensure!(status == 200, "/metrics: {status}");
    Ok(text)
}

pub async fn leasing_watch(main: &Service, settings: &Settings, db: super::service::Database) -> Result<Vec<Row>> {
    let (requests, interval, step, concurrency) =
        if settings.quick { (200, "1", 2, "16") } else { (10_000, "10", 30, "64") };
    let service = Service::start_with(
        &main.binary,
        db,
        "-watch",
        &[
            ("CALLBACK_ALLOW_PRIVATE", "true"),
            ("LEASING_WATCH_INTERVAL_SECONDS", interval),
            ("LEASING_WATCH_CONCURRENCY", concurrency),
            ("LEASING_DELIVERY_BACKOFF_MILLISECONDS", "200"),
        ],
    )
    .await?;
    let result = measure(&service, requests, interval, step, concurrency).await;
    service.stop();
    result
}

async fn measure(service: &Service, requests: usize, interval: &str, step: u64, concurrency: &str) -> Result<Vec<Row>> {
    let received: Arc<Mutex<Received>> = Default::default();
    let address = receiver(received.clone()).await?;
    let subscribe = json!({"url": format!("http://{address}/events"), "description": "bench"});
    service
        .call(service.front, service.authorized(Call::json(Method::POST, "/api/v1/leasing/subscriptions", &subscribe)))
        .await?;

    let peak = PeakRss::start(service.pid());
    let started = Instant::now();
    let creates: Vec<Call> = (0..requests)
        .map(|n| service.authorized(Call::json(Method::POST, "/api/v1/leasing", &moving_request(n, step))))
        .collect();
    super::scenarios::collect(service.front, creates, 32).await.context("creating the watched requests")?;
    let created_in = started.elapsed();
    let before = metrics(service).await?;
    let polls_before = metric(&before, "integration_leasing_watch_observations_total{source=\"poll\"}");
    let watching = Instant::now();

    // Until every request's last change arrived (or a generous deadline: then it is missed).
    let deadline = Duration::from_secs(2 * step + 120) + created_in;
    let finished = loop {
        let done = {
            let received = received.lock().expect("received");
            received.states.values().filter(|s| s.last().map(String::as_str) == Some("Contracted")).count()
        };
        if done >= requests {
            break true;
        }
        if watching.elapsed() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let watched_for = watching.elapsed().as_secs_f64();
    let after = metrics(service).await?;
    let peak = peak.finish();
    let polls = metric(&after, "integration_leasing_watch_observations_total{source=\"poll\"}") - polls_before;
    let recorded = metric(&after, "integration_leasing_watch_events_total") as u64;
    let pending = metric(&after, "integration_leasing_events{status=\"pending\"}") as u64;
    let received = received.lock().expect("received");
    let delivered = received.ids.len() as u64;
    let complete = received.states.values().filter(|s| s.last().map(String::as_str) == Some("Contracted")).count();
    let delivery_seconds = match (received.first, received.last) {
        (Some(first), Some(last)) => (last - first).as_secs_f64().max(1e-3),
        _ => 1.0,
    };
    let peak_rss_mb = peak as f64 / 1_048_576.0;
    let all_delivered = finished && delivered == recorded && pending == 0 && complete == requests;
    let missing = recorded.saturating_sub(delivered) + (requests - complete.min(requests)) as u64;
    let first_error = (!all_delivered).then(|| {
        format!(
            "{delivered} of {recorded} events delivered, {complete} of {requests} requests complete, {pending} pending"
        )
    });
    let observations = Row {
        scenario: "leasing-watch".into(),
        mode: format!(
            "{requests} watched requests ([moves:{step}]), LEASING_WATCH_INTERVAL_SECONDS={interval}, \
             LEASING_WATCH_CONCURRENCY={concurrency}, one subscription on loopback"
        ),
        requests: polls as u64,
        throughput: polls / watched_for,
        unit: "obs/s".into(),
        peak_rss_mb,
        errors: missing,
        first_error,
        target: Some("every change delivered, peak RSS ≤ 300 MB".into()),
        met: Some(all_delivered && peak_rss_mb <= 300.0),
        note: format!(
            "provider reads by the watcher over {watched_for:.1} s until every request ended (offered: {requests} per \
             {interval} s); {recorded} changes recorded; creating the requests took {:.1} s",
            created_in.as_secs_f64()
        ),
        ..Row::default()
    };
    let deliveries = Row {
        scenario: "leasing-watch-delivery".into(),
        mode: "events posted to the loopback receiver (204), signed".into(),
        requests: delivered,
        throughput: delivered as f64 / delivery_seconds,
        unit: "events/s".into(),
        peak_rss_mb,
        note: format!("{delivered} distinct events between the first and the last delivery ({delivery_seconds:.1} s)"),
        ..Row::default()
    };
    Ok(vec![observations, deliveries])
}
