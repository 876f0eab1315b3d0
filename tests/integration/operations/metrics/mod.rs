//! `GET /metrics` over real HTTP: after requests of every area, the exposition (parsed here,
//! strictly) shows exact counts with the right labels, upstream calls agree with what the
//! simulators received, histograms are cumulative, queue gauges read the database; the
//! optional token guards the route; label values are escaped.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::common::{Db, TestService, error_body};
use serde_json::{Value, json};

mod counts;

const METRICS_TOKEN: &str = "scrape-secret-1";
const WEBHOOK_SECRET: &str = "hook-secret-123";

#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed exposition.
#[derive(Debug)]
struct Exposition {
    types: HashMap<String, String>,
    samples: Vec<Sample>,
}

/// Reads a label value up to its closing quote, undoing `\\`, `\"` and `\n`.
fn label_value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut value = String::new();
    loop {
        match chars.next().expect("an unterminated label value") {
            '"' => return value,
            '\\' => match chars.next().expect("an escape at the end") {
                '\\' => value.push('\\'),
                '"' => value.push('"'),
                'n' => value.push('\n'),
                other => panic!("unknown escape \\{other}"),
            },
            c => value.push(c),
        }
    }
}

fn sample_line(line: &str) -> Sample {
    let mut chars = line.chars().peekable();
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if c == '{' || c == ' ' {
            break;
        }
        assert!(c.is_ascii_alphanumeric() || c == '_' || c == ':', "bad metric name in {line:?}");
        name.push(c);
        chars.next();
    }
    let mut labels = BTreeMap::new();
    if chars.peek() == Some(&'{') {
        chars.next();
        loop {
            let label: String = chars.by_ref().take_while(|c| *c != '=').collect();
            assert!(!label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{line:?}");
            assert_eq!(chars.next(), Some('"'), "label value must be quoted in {line:?}");
            assert!(labels.insert(label, label_value(&mut chars)).is_none(), "repeated label in {line:?}");
            match chars.next() {
                Some(',') => continue,
                Some('}') => break,
                other => panic!("unexpected {other:?} in {line:?}"),
            }
        }
    }
    assert_eq!(chars.next(), Some(' '), "one space before the value in {line:?}");
    let value: String = chars.collect();
    let value = match value.as_str() {
        "+Inf" => f64::INFINITY,
        text => text.parse().unwrap_or_else(|_| panic!("bad value in {line:?}")),
    };
    Sample { name, labels, value }
}

/// Parses the text format: every sample belongs to a family declared before it with HELP and
/// TYPE (histogram samples by their `_bucket`, `_sum`, `_count` suffixes).
fn parse(text: &str) -> Exposition {
    let mut types = HashMap::new();
    let mut helped = Vec::new();
    let mut samples = Vec::new();
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split_once(' ').expect("HELP has a text").0.to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE has a kind");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(helped.iter().any(|h| h == name), "TYPE {name} without HELP");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none(), "{name} declared twice");
        } else {
            assert!(!line.starts_with('#') && !line.is_empty(), "unexpected line {line:?}");
            let sample = sample_line(line);
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| {
                    sample.name.strip_suffix(suffix).filter(|base| types.get(*base).is_some_and(|t| t == "histogram"))
                })
                .unwrap_or(&sample.name);
            assert!(types.contains_key(family), "{} has no TYPE before it", sample.name);
            samples.push(sample);
        }
    }
    Exposition { types, samples }
}

impl Exposition {
    fn series(&self, name: &str) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.name == name).collect()
    }

    /// The value of the sample with exactly these labels.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let found: Vec<&Sample> = self.series(name).into_iter().filter(|s| s.labels == wanted).collect();
        assert!(found.len() <= 1, "{name} {labels:?} appears {} times", found.len());
        found.first().map(|s| s.value)
    }

    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels).unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
    }

    /// The series of a labelled counter as (label values in `keys` order) → value.
    fn counter(&self, name: &str, keys: &[&str]) -> BTreeMap<Vec<String>, f64> {
        assert_eq!(self.types.get(name).map(String::as_str), Some("counter"), "{name}");
        self.series(name)
            .into_iter()
            .map(|s| {
                assert_eq!(s.labels.len(), keys.len(), "{s:?}");
                (keys.iter().map(|k| s.labels[*k].clone()).collect(), s.value)
            })
            .collect()
    }

    /// Checks that `counter` has exactly the series `expected` (label values in `keys` order),
    /// and that `histogram` agrees with it (`check_histogram`).
    fn assert_counted(&self, counter: &str, histogram: &str, keys: &[&str], expected: &[(&[&str], f64)]) {
        let expected: BTreeMap<Vec<String>, f64> = expected.iter().map(|(values, n)| (labels(values), *n)).collect();
        assert_eq!(self.counter(counter, keys), expected, "{counter}");
        self.check_histogram(histogram, counter);
    }

    /// Checks every series of a histogram against its counter: the buckets are cumulative
    /// (never decreasing as `le` grows), end with `+Inf`, and `_count` equals both the `+Inf`
    /// bucket and the counter.
    fn check_histogram(&self, histogram: &str, counter: &str) {
        assert_eq!(self.types.get(histogram).map(String::as_str), Some("histogram"), "{histogram}");
        let totals = self.series(counter);
        assert!(!totals.is_empty(), "{counter} has series");
        assert_eq!(self.series(&format!("{histogram}_count")).len(), totals.len(), "one histogram per counter series");
        for total in totals {
            let labels: Vec<(&str, &str)> = total.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut buckets: Vec<(f64, f64)> = self
                .series(&format!("{histogram}_bucket"))
                .into_iter()
                .filter(|b| {
                    b.labels.len() == total.labels.len() + 1
                        && total.labels.iter().all(|(k, v)| b.labels.get(k) == Some(v))
                })
                .map(|b| {
                    let le = &b.labels["le"];
                    (if le == "+Inf" { f64::INFINITY } else { le.parse().expect("le is a number") }, b.value)
                })
                .collect();
            assert!(buckets.len() > 2, "{histogram} {labels:?} has buckets");
            assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0), "{histogram} buckets in ascending le order");
            assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{histogram} {labels:?} buckets are cumulative");
            let (last_le, inf) = buckets.pop().unwrap();
            assert_eq!(last_le, f64::INFINITY, "the last bucket is +Inf");
            let count = self.get(&format!("{histogram}_count"), &labels);
            assert_eq!(count, inf, "{histogram} {labels:?}: _count equals the +Inf bucket");
            assert_eq!(count, total.value, "{histogram} {labels:?}: _count equals {counter}");
            let sum = self.get(&format!("{histogram}_sum"), &labels);
            assert!(sum >= 0.0 && sum.is_finite(), "{histogram} {labels:?}: _sum {sum}");
        }
    }
}

async fn scrape(svc: &TestService) -> Exposition {
    let response = svc.get(METRICS_TOKEN, "/metrics").await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    parse(&response.text().await.unwrap())
}

/// Requests received by a simulator (outside its `/__sandbox/` routes).
async fn simulator_calls(svc: &TestService, root: &str) -> f64 {
    let body: Value = svc.client.get(format!("{root}/__sandbox/calls")).json_value().await;
    body["calls"].as_f64().unwrap()
}

/// Waits until the webhook inbox has processed `done` calls (read from the database, so the
/// wait itself sends no request to the service).
async fn wait_for_processed_webhooks(svc: &TestService, done: i64) {
    for _ in 0..200 {
        let counts = svc.store().inbox_counts().await.unwrap();
        if counts.done == done && counts.pending == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the webhook inbox did not process {done} call(s): {:?}", svc.store().inbox_counts().await.unwrap());
}

/// The service with the metrics token set and the ERP's webhooks admitted.
async fn start(db: Db) -> TestService {
    let settings = [
        ("METRICS_TOKEN", METRICS_TOKEN),
        ("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"),
        ("ERP_WEBHOOK_SECRET", WEBHOOK_SECRET),
    ];
    TestService::start(db, &settings).await
}

fn labels(pairs: &[&str]) -> Vec<String> {
    pairs.iter().map(|s| s.to_string()).collect()
}

/// A webhook call that cannot be processed (the ERP fails every read) stays pending, and the
/// age of the oldest pending call follows its arrival: an hour, once its arrival is moved an
/// hour back.
async fn the_inbox_age_shows_a_call_that_waits(db: Db) {
    let svc = start(db).await;
    let erp_root = svc.erp.trim_end_matches("/webapp/api/v1").to_string();
    let failing = json!({"path_prefix": "/webapp/api/v1/customer/id/5", "status": 503, "times": 100000});
    crate::common::add_fault(&svc.client, &erp_root, failing).await;
    let webhook = svc
        .client
        .post(svc.url("/api/v1/erp/webhooks?secret=hook-secret-123"))
        .json(&json!({"entityName": "customer", "entityId": "5", "type": "updated"}))
        .checked()
        .await
        .unwrap();
    assert_eq!(webhook.status(), 202);
    let hour_ms: i64 = 3_600_000;
    let moved = sqlx::query("UPDATE erp_webhook_inbox SET received_at = received_at - $1")
        .bind(hour_ms)
        .execute(svc.store().pool())
        .await
        .unwrap();
    assert_eq!(moved.rows_affected(), 1);

    let metrics = scrape(&svc).await;
    let inbox = "integration_service_erp_webhook_inbox_calls";
    assert_eq!(metrics.get(inbox, &[("state", "pending")]), 1.0, "the call waits for a retry");
    let age = metrics.get("integration_service_erp_webhook_inbox_oldest_pending_age_seconds", &[]);
    assert!((3600.0..3600.0 + 600.0).contains(&age), "an hour and the test's own time: {age}");
    crate::common::clear_faults(&svc.client, &erp_root).await;
    svc.stop().await;
}

async fn the_token_guards_metrics_when_set(db: Db) {
    let svc = TestService::start(db, &[("METRICS_TOKEN", METRICS_TOKEN)]).await;
    let url = svc.url("/metrics");
    let user_token = svc.user_token().await;
    let refused = [
        svc.client.get(&url),
        svc.client.get(&url).bearer_auth("scrape-secret-2"),
        svc.client.get(&url).bearer_auth(&user_token),
        svc.client.get(&url).header("authorization", format!("Basic {METRICS_TOKEN}")),
    ];
    for request in refused {
        let body = error_body(request.checked().await.unwrap(), 401).await;
        assert_eq!(body["error_code"], "unauthenticated");
    }
    let metrics = scrape(&svc).await;
    assert_eq!(
        metrics.get("integration_service_http_requests_total", &[("operation", "metrics"), ("status", "401")]),
        4.0
    );
    svc.stop().await;

    let open = TestService::start(db, &[]).await;
    let response = open.client.get(open.url("/metrics")).checked().await.unwrap();
    assert_eq!(response.status(), 200, "without METRICS_TOKEN the route is open");
    let metrics = parse(&response.text().await.unwrap());
    assert_eq!(metrics.get("integration_service_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    open.stop().await;
}

/// Entity names come from the database; one with a quote, a backslash and a line feed must
/// be escaped in the exposition and read back as it is.
async fn label_values_are_escaped(db: Db) {
    let svc = TestService::start(db, &[("METRICS_TOKEN", METRICS_TOKEN)]).await;
    let odd = "legacy \"entity\"\\with\na line feed";
    for (entity, id) in [(odd, "1"), (odd, "2"), ("contacts", "3")] {
        sqlx::query(
            "INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at) \
             VALUES ($1, $2, 1, '{}', 'create', 0, 0)",
        )
        .bind(entity)
        .bind(id)
        .execute(svc.store().pool())
        .await
        .unwrap();
    }
    let response = svc.get(METRICS_TOKEN, "/metrics").await;
    let text = response.text().await.unwrap();
    assert!(
        text.contains(
            "integration_service_fieldreport_pending_push_records{entity=\"legacy \\\"entity\\\"\\\\with\\na line feed\"} 2\n"
        ),
        "{text}"
    );
    let metrics = parse(&text);
    assert_eq!(metrics.get("integration_service_fieldreport_pending_push_records", &[("entity", odd)]), 2.0);
    assert_eq!(metrics.get("integration_service_fieldreport_pending_push_records", &[("entity", "contacts")]), 1.0);
    svc.stop().await;
}

on_both_databases!(the_inbox_age_shows_a_call_that_waits, the_token_guards_metrics_when_set, label_values_are_escaped);
