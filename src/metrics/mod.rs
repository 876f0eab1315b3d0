//! The service's metrics, served at `GET /metrics` in the Prometheus text format.
//!
//! One [`Metrics`] per running service (tests start several in one process), shared by the
//! front (requests), the upstream clients (calls) and the leasing routes (flow outcomes).
//! Counters and histogram buckets are plain atomics updated with relaxed adds. A request's
//! series is found by walking the operation matcher and scanning the operation's status slots
//! (each claimed once, through a `OnceLock`), so once a series exists, recording it takes no
//! lock and no allocation: a few map lookups and three atomic adds. Queue depths and pool
//! usage are read when scraped: the database is the truth across instances and restarts,
//! which gauges kept in memory would not be.
//!
//! Label values are bounded by construction: operations come from the OpenAPI document
//! (`unmatched` for any other path), statuses are the service's own answers (at most
//! [`STATUS_SLOTS`] per operation, the rest as `other`), systems, outcomes and error codes are
//! fixed sets.

pub mod background;
pub mod database;
pub mod exposition;
pub mod jobs;
pub mod mirror;
pub mod operations;
pub mod process;
pub mod timing;
pub mod watch;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use database::DatabaseGauges;
use database::render_database;
use exposition::Exposition;
use operations::OperationMatcher;
use timing::Timing;
pub use watch::ObservationSource;

use crate::vocabulary::calls::{CallOutcome, System};
use crate::vocabulary::leasing_codes::LEASING_ERROR_CODES;

/// Distinct statuses kept per operation; further ones are counted as status `other`.
pub const STATUS_SLOTS: usize = 16;

/// The flows whose outcomes are counted by `error_code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeasingFlow {
    /// `POST /api/v1/leasing/leasing/request-flow`.
    RequestFlow,
    /// `GET /api/v1/leasing/{financingId}/wait-ready-to-sign`.
    WaitReadyToSign,
}

impl LeasingFlow {
    const ALL: [LeasingFlow; 2] = [LeasingFlow::RequestFlow, LeasingFlow::WaitReadyToSign];

    fn label(self) -> &'static str {
        match self {
            LeasingFlow::RequestFlow => "request_flow",
            LeasingFlow::WaitReadyToSign => "wait_ready_to_sign",
        }
    }
}

/// Outcome labels of a leasing flow: `ok`, then every `error_code`.
fn flow_outcomes() -> impl Iterator<Item = &'static str> {
    std::iter::once("ok").chain(LEASING_ERROR_CODES.iter().copied())
}

const FLOW_OUTCOMES: usize = 1 + LEASING_ERROR_CODES.len();

/// The requests of one operation, by status.
#[derive(Default)]
struct StatusTable {
    /// Claimed in order by the first request with a new status (a slot is never released).
    slots: [OnceLock<Box<(u16, Timing)>>; STATUS_SLOTS],
    other: Timing,
}

impl StatusTable {
    fn timing(&self, status: u16) -> &Timing {
        for slot in &self.slots {
            let (claimed, timing) = &**slot.get_or_init(|| Box::new((status, Timing::default())));
            if *claimed == status {
                return timing;
            }
        }
        &self.other
    }

    /// The statuses seen, ascending, then `other` if it was used.
    fn series(&self) -> Vec<(String, &Timing)> {
        let mut series: Vec<(u16, &Timing)> =
            self.slots.iter().filter_map(|slot| slot.get()).map(|entry| (entry.0, &entry.1)).collect();
        series.sort_by_key(|(status, _)| *status);
        let mut named: Vec<(String, &Timing)> = series.into_iter().map(|(s, t)| (s.to_string(), t)).collect();
        if self.other.count() > 0 {
            named.push(("other".to_string(), &self.other));
        }
        named
    }
}

/// Why the front refused a client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionRefusal {
    /// `MAX_CONNECTIONS` connections were open.
    Total,
    /// `MAX_CONNECTIONS_PER_ADDRESS` connections were open from the client's address.
    PerAddress,
}

impl ConnectionRefusal {
    const ALL: [ConnectionRefusal; 2] = [ConnectionRefusal::Total, ConnectionRefusal::PerAddress];

    fn label(self) -> &'static str {
        match self {
            ConnectionRefusal::Total => "total",
            ConnectionRefusal::PerAddress => "per_address",
        }
    }
}

/// Every counter and histogram of one running service.
pub struct Metrics {
    matcher: OperationMatcher,
    /// Indexed like `matcher.names()`.
    requests: Vec<StatusTable>,
    upstream: [[Timing; CallOutcome::ALL.len()]; System::ALL.len()],
    leasing: [[AtomicU64; FLOW_OUTCOMES]; LeasingFlow::ALL.len()],
    /// A flow ended with a code missing from `LEASING_ERROR_CODES` (a unit test prevents it).
    leasing_other: [AtomicU64; LeasingFlow::ALL.len()],
    connections_open: AtomicU64,
    connections_refused: [AtomicU64; ConnectionRefusal::ALL.len()],
    jobs: jobs::JobTimings,
    background: background::BackgroundMetrics,
    watch: watch::WatchMetrics,
    repairs: mirror::Repairs,
    /// Rows the janitor removed, by table (`crate::store::retention::PRUNED_TABLES`).
    pruned: [AtomicU64; crate::store::retention::PRUNED_TABLES.len()],
    started_at: SystemTime,
}

impl Metrics {
    pub fn new(matcher: OperationMatcher) -> Metrics {
        let requests = matcher.names().iter().map(|_| StatusTable::default()).collect();
        Metrics {
            matcher,
            requests,
            upstream: Default::default(),
            leasing: Default::default(),
            leasing_other: Default::default(),
            connections_open: AtomicU64::new(0),
            connections_refused: Default::default(),
            jobs: Default::default(),
            background: Default::default(),
            watch: Default::default(),
            repairs: Default::default(),
            pruned: Default::default(),
            started_at: SystemTime::now(),
        }
    }

    /// One answered request (the front calls this once per request, its own answers included).
    pub fn observe_request(&self, method: &str, path: &str, status: u16, elapsed: Duration) {
        let operation = self.matcher.operation(method, path);
        self.requests[operation].timing(status).observe(elapsed);
    }

    /// One call to an upstream system (each attempt of a retried call counts).
    pub fn observe_upstream(&self, system: System, outcome: CallOutcome, elapsed: Duration) {
        let s = System::ALL.iter().position(|s| *s == system).expect("every system is listed");
        let o = CallOutcome::ALL.iter().position(|o| *o == outcome).expect("every outcome is listed");
        self.upstream[s][o].observe(elapsed);
    }

    /// A leasing flow ended: `None` for success, else its `error_code`.
    pub fn leasing_flow_ended(&self, flow: LeasingFlow, error_code: Option<&str>) {
        let f = LeasingFlow::ALL.iter().position(|f| *f == flow).expect("every flow is listed");
        let outcome = error_code.unwrap_or("ok");
        match flow_outcomes().position(|o| o == outcome) {
            Some(o) => self.leasing[f][o].fetch_add(1, Ordering::Relaxed),
            None => self.leasing_other[f].fetch_add(1, Ordering::Relaxed),
        };
    }

    /// A job ended at this instance (`status`: succeeded, failed or cancelled).
    pub fn job_finished(&self, kind: &str, target: &str, status: &str, elapsed: Duration) {
        self.jobs.observe(kind, target, status, elapsed);
    }

    /// A background task was started: its series exist from now on.
    pub fn background_task(&self, task: &'static str) {
        self.background.started(task);
    }

    /// A background task ran (it claimed work, or its period came), `lag` after it was due.
    pub fn background_ran(&self, task: &'static str, lag: Duration) {
        self.background.ran(task, lag);
    }

    /// A background task's claim or run failed.
    pub fn background_failed(&self, task: &'static str) {
        self.background.failed(task);
    }

    /// A state of a financing request was read (and recorded when the request is watched).
    pub fn watch_observed(&self, source: ObservationSource) {
        self.watch.observed(source);
    }

    /// The janitor removed these rows, by table (in the order of `PRUNED_TABLES`).
    pub fn pruned(&self, rows: &[u64]) {
        for (counter, n) in self.pruned.iter().zip(rows) {
            counter.fetch_add(*n, Ordering::Relaxed);
        }
    }

    /// A state change was recorded with its event.
    pub fn watch_event_recorded(&self) {
        self.watch.event_recorded();
    }

    /// A delivery attempt ended; `latency`, from the change to its delivery, when delivered.
    pub fn delivery_attempted(&self, delivered: bool, elapsed: Duration, latency: Option<Duration>) {
        self.watch.attempted(delivered, elapsed, latency);
    }

    /// A reconciling repaired `count` records of one kind (see [`mirror::REPAIR_KINDS`]).
    pub fn mirror_repaired(&self, system: &str, set: &str, kind: &'static str, count: u64) {
        self.repairs.add(system, set, kind, count);
    }

    pub fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn connection_refused(&self, refusal: ConnectionRefusal) {
        let r = ConnectionRefusal::ALL.iter().position(|r| *r == refusal).expect("every refusal is listed");
        self.connections_refused[r].fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition: in-memory metrics and the gauges read for this scrape.
    pub fn render(&self, database: &DatabaseGauges) -> String {
        let mut out = Exposition::default();
        self.render_requests(&mut out);
        self.render_upstream(&mut out);
        self.render_leasing(&mut out);
        render_database(&mut out, database);
        self.jobs.render(&mut out);
        if let Some(successes) = &database.job_last_successes {
            jobs::render_last_successes(&mut out, successes);
        }
        self.watch.render(&mut out, database.watch.as_ref());
        self.background.render(&mut out);
        if let Some(mirror) = &database.mirror {
            mirror.render(&mut out);
        }
        self.repairs.render(&mut out);
        let name = "integration_service_janitor_pruned_rows_total";
        out.family(name, "counter", "Rows of finished history the janitor removed by age (`RETAIN_*`), by table.");
        for (table, count) in crate::store::retention::PRUNED_TABLES.iter().zip(&self.pruned) {
            out.sample(name, &[("table", table)], count.load(Ordering::Relaxed));
        }
        self.render_process(&mut out);
        out.into_text()
    }

    fn render_requests(&self, out: &mut Exposition) {
        let series: Vec<(&str, String, &Timing)> = self
            .matcher
            .names()
            .iter()
            .zip(&self.requests)
            .flat_map(|(operation, table)| {
                table.series().into_iter().map(move |(status, timing)| (operation.as_str(), status, timing))
            })
            .collect();
        let name = "integration_service_http_requests_total";
        out.family(
            name,
            "counter",
            "HTTP requests answered, by operation (OpenAPI operationId; `unmatched` for any other path) and status.",
        );
        for (operation, status, timing) in &series {
            out.sample(name, &[("operation", operation), ("status", status)], timing.count());
        }
        let name = "integration_service_http_request_duration_seconds";
        out.family(name, "histogram", "Time to answer a request (until the response head), by operation and status.");
        for (operation, status, timing) in &series {
            out.histogram(name, &[("operation", operation), ("status", status)], &timing.snapshot());
        }
    }

    fn render_upstream(&self, out: &mut Exposition) {
        let mut series = Vec::new();
        for (system, row) in System::ALL.iter().zip(&self.upstream) {
            for (outcome, timing) in CallOutcome::ALL.iter().zip(row) {
                if timing.count() > 0 {
                    series.push((system.label(), outcome.label(), timing));
                }
            }
        }
        let name = "integration_service_upstream_requests_total";
        out.family(
            name,
            "counter",
            "Calls to the upstream systems (each attempt of a retried call), by system and outcome \
             (ok, http_3xx, http_4xx, http_5xx, timeout, connection_error, invalid_response, client_error).",
        );
        for (system, outcome, timing) in &series {
            out.sample(name, &[("system", system), ("outcome", outcome)], timing.count());
        }
        let name = "integration_service_upstream_request_duration_seconds";
        out.family(name, "histogram", "Time of one call to an upstream system, by system and outcome.");
        for (system, outcome, timing) in &series {
            out.histogram(name, &[("system", system), ("outcome", outcome)], &timing.snapshot());
        }
    }

    fn render_leasing(&self, out: &mut Exposition) {
        let name = "integration_service_leasing_flow_outcomes_total";
        out.family(
            name,
            "counter",
            "Leasing flows that ended (the one-shot request flow and wait-ready-to-sign), by outcome: ok or the error_code.",
        );
        for ((flow, counts), other) in LeasingFlow::ALL.iter().zip(&self.leasing).zip(&self.leasing_other) {
            for (outcome, count) in flow_outcomes().zip(counts) {
                out.sample(name, &[("flow", flow.label()), ("outcome", outcome)], count.load(Ordering::Relaxed));
            }
            let other = other.load(Ordering::Relaxed);
            if other > 0 {
                out.sample(name, &[("flow", flow.label()), ("outcome", "other")], other);
            }
        }
    }

    fn render_process(&self, out: &mut Exposition) {
        let started = self.started_at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let name = "process_start_time_seconds";
        out.family(name, "gauge", "Start time of the service since the Unix epoch, in seconds.");
        out.sample(name, &[], started.as_millis() as f64 / 1000.0);
        if let Some(figures) = process::ProcessFigures::read() {
            figures.render(out);
        }
        let name = "integration_service_client_connections";
        out.family(name, "gauge", "Client connections open at the front.");
        out.sample(name, &[], self.connections_open.load(Ordering::Relaxed));
        let name = "integration_service_client_connections_refused_total";
        out.family(
            name,
            "counter",
            "Client connections refused at once because a cap was reached: total (MAX_CONNECTIONS) or per_address (MAX_CONNECTIONS_PER_ADDRESS).",
        );
        for (refusal, count) in ConnectionRefusal::ALL.iter().zip(&self.connections_refused) {
            out.sample(name, &[("reason", refusal.label())], count.load(Ordering::Relaxed));
        }
        let name = "integration_service_build_info";
        out.family(name, "gauge", "Always 1; the labels name the running build.");
        out.sample(name, &[("version", env!("CARGO_PKG_VERSION"))], 1);
    }
}

/// Records upstream calls into a service's metrics; a client built without one (CLI, tests)
/// records nothing.
#[derive(Clone, Default)]
pub struct CallRecorder(Option<Arc<Metrics>>);

impl CallRecorder {
    pub fn new(metrics: Arc<Metrics>) -> CallRecorder {
        CallRecorder(Some(metrics))
    }

    /// Records one call that started at `started` and ended with `outcome`.
    pub fn record(&self, system: System, outcome: CallOutcome, started: Instant) {
        if let Some(metrics) = &self.0 {
            metrics.observe_upstream(system, outcome, started.elapsed());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metrics() -> Metrics {
        let document = json!({"paths": {"/api/v1/user": {"get": {"operationId": "current_user"}}}});
        Metrics::new(OperationMatcher::new(&document, &[]))
    }

    #[test]
    fn statuses_beyond_the_slots_are_counted_as_other() {
        let metrics = metrics();
        for status in 200..(200 + STATUS_SLOTS as u16 + 2) {
            metrics.observe_request("GET", "/api/v1/user", status, Duration::from_millis(1));
        }
        metrics.observe_request("GET", "/api/v1/user", 200, Duration::from_millis(1));
        let text = metrics.render(&DatabaseGauges::default());
        assert!(
            text.contains("integration_service_http_requests_total{operation=\"current_user\",status=\"200\"} 2\n")
        );
        assert!(
            text.contains("integration_service_http_requests_total{operation=\"current_user\",status=\"other\"} 2\n")
        );
        assert_eq!(text.matches("integration_service_http_requests_total{").count(), STATUS_SLOTS + 1);
    }

    #[test]
    fn every_leasing_error_code_has_a_series() {
        let metrics = metrics();
        metrics.leasing_flow_ended(LeasingFlow::RequestFlow, Some("declined"));
        metrics.leasing_flow_ended(LeasingFlow::RequestFlow, Some("no_such_code"));
        let text = metrics.render(&DatabaseGauges::default());
        let line = |flow: &str, outcome: &str, n: u64| {
            format!("integration_service_leasing_flow_outcomes_total{{flow=\"{flow}\",outcome=\"{outcome}\"}} {n}\n")
        };
        assert!(text.contains(&line("request_flow", "declined", 1)));
        assert!(text.contains(&line("request_flow", "other", 1)));
        assert!(text.contains(&line("wait_ready_to_sign", "ok", 0)));
        for code in LEASING_ERROR_CODES {
            assert!(text.contains(&line("wait_ready_to_sign", code, 0)), "{code}");
        }
    }
}
