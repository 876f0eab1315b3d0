//! `scale`: a tenant-sized set (issue 51), in a service of its own so that the other scenarios
//! do not share its database. A million companies (`--scale`; small with `--quick`) synced from
//! the field-report simulator, then read back as a consumer does, and an ERP model of a quarter
//! of that size pulled whole. Measured against the database's own read of the same rows in key
//! order (`integration-service bench-read-set`, one streamed statement):
//! - the sync's rate and the service's peak memory (informative);
//! - a page read by key at the start of the set and at its end (target: the last costs at most
//!   1.5 × the first), and the same by position (informative: it costs what it skips);
//! - the whole read-back by key (500 a page) and the export's stream (target: 100,000
//!   records/s on SQLite, 50,000 on Postgres, on the project machine), each against the read
//!   straight from the database;
//! - the ERP model: its full pull (pages of 1,000), its pages by key at start and end.
//!
//! docs/performance.md ("Reading a set back") states the cost model these rows check.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hyper::Method;
use serde_json::{Value, json};

use super::load::{Call, Connection};
use super::scenarios::{median_by_rate, service_command};
use super::service::{Database, PeakRss, Service};
use super::{Row, Settings};

/// Records of the field-report set in a full run; the ERP model gets a quarter.
pub const FULL_SIZE: u64 = 1_000_000;
pub const QUICK_SIZE: u64 = 20_000;
/// Records of a page read back by key (the read-back a consumer does).
const PAGE: u32 = 500;
/// Pages compared at each end of a set (their median is a page's cost there). Each page is
/// read once: a page read again would be answered from the instance's page cache.
const PAGE_SAMPLES: usize = 21;
/// The simulators are seeded in parts of this many records (one request each).
const SEED_PART: u64 = 100_000;
const ERP_MODEL: &str = "article";

pub async fn scale(binary: &Path, db: Database, settings: &Settings, size: u64) -> Result<Vec<Row>> {
    let service = Service::start_with(binary, db, "-scale", &[]).await?;
    let rows = measure(&service, db, settings, size).await;
    service.stop();
    rows
}

async fn measure(service: &Service, db: Database, settings: &Settings, size: u64) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut seeded = 0;
    while seeded < size {
        let part = SEED_PART.min(size - seeded);
        let body = json!({"set": "Companies", "count": part});
        service.call(service.fieldreport, Call::json(Method::POST, "/__sandbox/seed", &body)).await?;
        seeded += part;
    }
    rows.push(
        pull(service, "scale-sync", "/api/v1/fieldreport/sync/companies", size, |answer| {
            answer["data"][0]["fetched"].as_u64()
        })
        .await?,
    );
    let db_read = database_read(service, "fieldreport", "companies", "scale-db-read")?;
    rows.extend(read_back(service, "scale", "/api/v1/fieldreport/companies", "data", size, &db_read).await?);
    rows.push(export(service, "scale-export", "/api/v1/fieldreport/companies/export", size, db, &db_read).await?);
    rows.push(db_read);

    let erp_size = (size / 4).max(1);
    let mut seeded = 0;
    while seeded < erp_size {
        let part = SEED_PART.min(erp_size - seeded);
        let body = json!({"model": ERP_MODEL, "count": part});
        service.call(service.erp, Call::json(Method::POST, "/__sandbox/seed", &body)).await?;
        seeded += part;
    }
    let erp_path = format!("/api/v1/erp/setup/{ERP_MODEL}");
    // The simulator starts with a few articles of its own.
    let erp_pull = pull(service, "scale-erp-pull", &erp_path, erp_size, |answer| {
        answer["data"].as_array()?.iter().map(|report| report["fetched"].as_u64()).sum()
    })
    .await?;
    let erp_records = erp_pull.requests;
    rows.push(erp_pull);
    let erp_read = database_read(service, "erp", ERP_MODEL, "scale-erp-db-read")?;
    let erp_list = format!("/api/v1/erp/show/{ERP_MODEL}");
    rows.extend(read_back(service, "scale-erp", &erp_list, "data", erp_records, &erp_read).await?);
    rows.push(erp_read);
    if settings.quick {
        for row in &mut rows {
            row.note.push_str(" (quick: a small set, not a measurement)");
        }
    }
    Ok(rows)
}

/// One call that brings a whole set into the mirror (a sync, a full pull): its rate and the
/// service's peak memory meanwhile; an error when it brought fewer than `expected` records.
async fn pull(
    service: &Service,
    scenario: &str,
    path: &str,
    expected: u64,
    fetched: impl Fn(&Value) -> Option<u64>,
) -> Result<Row> {
    let peak = PeakRss::start(service.pid());
    let started = Instant::now();
    let answer = service.call(service.front, service.authorized(Call::get(path))).await?;
    let seconds = started.elapsed().as_secs_f64();
    let peak = peak.finish();
    let got = fetched(&answer).unwrap_or(0);
    let failed = (got < expected).then(|| format!("fetched {got} of {expected}: {answer}"));
    Ok(Row {
        scenario: scenario.into(),
        mode: format!("GET {path}, once"),
        requests: got,
        throughput: got as f64 / seconds,
        unit: "records/s".into(),
        peak_rss_mb: peak as f64 / 1_048_576.0,
        errors: u64::from(failed.is_some()),
        first_error: failed,
        note: format!("{got} records in {seconds:.1} s; informative"),
        ..Row::default()
    })
}

/// The database's own read of a set, in key order: the median of three runs.
fn database_read(service: &Service, mirror: &str, set: &str, scenario: &str) -> Result<Row> {
    let mut runs = Vec::new();
    for _ in 0..3 {
        // "read N records in S s"
        let text = service_command(service, &["bench-read-set", mirror, set])?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let count: u64 = words.get(1).and_then(|w| w.parse().ok()).context("no count")?;
        let seconds: f64 = words.get(4).and_then(|w| w.parse().ok()).context("no time")?;
        runs.push((count, seconds));
    }
    let ((count, seconds), rates) = median_by_rate(runs, |(n, s)| *n as f64 / s);
    Ok(Row {
        scenario: scenario.into(),
        mode: "one streamed SELECT of (id, document) in key order, straight from the database".into(),
        requests: count,
        throughput: count as f64 / seconds,
        unit: "records/s".into(),
        note: format!("the median of 3 runs ({} records/s)", rates.join(", ")),
        ..Row::default()
    })
}

/// The set read back by key to its end, 500 a page, on one connection as a consumer does,
/// against the database's read, each page timed: the first [`PAGE_SAMPLES`] pages against
/// the last as many. Then the same number of pages at each end read by position, in turns.
async fn read_back(
    service: &Service,
    prefix: &str,
    list: &str,
    items: &str,
    expected: u64,
    db_read: &Row,
) -> Result<Vec<Row>> {
    let mut connection = Connection::open(service.front).await.map_err(anyhow::Error::msg)?;
    let first = format!("{list}?limit={PAGE}");
    let mut path = first;
    let (mut read, mut pages) = (0u64, 0u64);
    // Each full page's time; the last, possibly short, page is left out.
    let mut times = Vec::new();
    let started = Instant::now();
    loop {
        let asked = Instant::now();
        let answer = json_of(&mut connection, service, &path).await?;
        let took = asked.elapsed();
        read += answer[items].as_array().map_or(0, Vec::len) as u64;
        pages += 1;
        match answer["next"].as_str() {
            Some(next) => {
                times.push(took);
                path = next.to_string();
            }
            None => break,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let failed = (read < expected).then(|| format!("read {read} of {expected} records"));
    let mut walk = Row {
        scenario: format!("{prefix}-read-back"),
        mode: format!("every page by key, {PAGE} a page, one connection"),
        requests: read,
        throughput: read as f64 / seconds,
        unit: "records/s".into(),
        errors: u64::from(failed.is_some()),
        first_error: failed,
        baseline: Some((db_read.scenario.clone(), db_read.throughput)),
        note: format!("{read} records in {pages} pages, {seconds:.1} s; informative"),
        ..Row::default()
    };
    let full_pages = times.len();
    // A small set (`--quick`) compares fewer pages.
    let samples = PAGE_SAMPLES.min(full_pages / 2);
    if samples == 0 {
        walk.note.push_str("; too few pages to compare the first and the last");
        return Ok(vec![walk]);
    }
    let by_key = (median_ms(&times[..samples]), median_ms(&times[full_pages - samples..]));
    let mut key_row = depth_row(&format!("{prefix}-last-page"), samples, "by key, once each in the walk", by_key);
    key_row.target = Some("ratio ≥ 0.67 (the last page costs at most 1.5 × the first)".into());
    key_row.met = Some(key_row.ratio().unwrap_or(0.0) >= 1.0 / 1.5);
    // By position: pages 1, 2, … against the last full pages, one of each in turns.
    let (mut firsts, mut lasts) = (Vec::new(), Vec::new());
    for n in 0..samples {
        let ends = [(n + 1, &mut firsts), (full_pages - n, &mut lasts)];
        for (page, times) in ends {
            let asked = Instant::now();
            json_of(&mut connection, service, &format!("{list}?per_page={PAGE}&page={page}")).await?;
            times.push(asked.elapsed());
        }
    }
    let by_position = (median_ms(&firsts), median_ms(&lasts));
    let name = format!("{prefix}-last-page-by-position");
    let mut position_row = depth_row(&name, samples, "by position, in turns", by_position);
    position_row.note.push_str("; informative: a page by position costs what it skips");
    Ok(vec![walk, key_row, position_row])
}

/// The median of `times`, in milliseconds.
fn median_ms(times: &[Duration]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2].as_secs_f64() * 1000.0
}

/// A row comparing the last page's cost with the first's: throughput in pages/s, so that
/// the ratio is the first page's cost over the last's.
fn depth_row(scenario: &str, samples: usize, how: &str, (first_ms, last_ms): (f64, f64)) -> Row {
    Row {
        scenario: scenario.into(),
        mode: format!("the last {samples} pages of {PAGE} {how} against the first {samples}"),
        requests: samples as u64,
        throughput: 1000.0 / last_ms,
        unit: "pages/s".into(),
        p50_ms: last_ms,
        baseline: Some((format!("the first page {how}"), 1000.0 / first_ms)),
        note: format!("median: first pages {first_ms:.2} ms, last pages {last_ms:.2} ms"),
        ..Row::default()
    }
}

async fn json_of(connection: &mut Connection, service: &Service, path: &str) -> Result<Value> {
    let (status, body) = connection.send(&service.authorized(Call::get(path))).await.map_err(anyhow::Error::msg)?;
    anyhow::ensure!(status == 200, "GET {path}: {status} {}", String::from_utf8_lossy(&body));
    Ok(serde_json::from_slice(&body)?)
}

/// The set's export streamed to its end, counted line by line as it arrives.
async fn export(
    service: &Service,
    scenario: &str,
    path: &str,
    expected: u64,
    db: Database,
    db_read: &Row,
) -> Result<Row> {
    let address: SocketAddr = service.front;
    let mut connection = Connection::open(address).await.map_err(anyhow::Error::msg)?;
    let peak = PeakRss::start(service.pid());
    let started = Instant::now();
    let call = service.authorized(Call::get(path)).header("accept", "application/x-ndjson");
    let (status, lines, bytes, last) = connection.lines(&call).await.map_err(anyhow::Error::msg)?;
    let seconds = started.elapsed().as_secs_f64();
    let peak = peak.finish();
    let end: Value = serde_json::from_str(&last).unwrap_or(Value::Null);
    let records = lines.saturating_sub(1);
    let failed = if status != 200 || records < expected || end["records"].as_u64() != Some(records) {
        Some(format!("status {status}, {records} record lines of {expected}, last line {last}"))
    } else {
        None
    };
    let target = match db {
        Database::Sqlite => 100_000.0,
        Database::Postgres => 50_000.0,
    };
    let throughput = records as f64 / seconds;
    Ok(Row {
        scenario: scenario.into(),
        mode: format!("GET {path}, NDJSON read as it streams"),
        requests: records,
        throughput,
        unit: "records/s".into(),
        peak_rss_mb: peak as f64 / 1_048_576.0,
        errors: u64::from(failed.is_some()),
        first_error: failed,
        baseline: Some((db_read.scenario.clone(), db_read.throughput)),
        target: Some(format!("≥ {target:.0} records/s")),
        met: Some(throughput >= target),
        note: format!("{records} records, {:.0} MB in {seconds:.1} s", bytes as f64 / 1_048_576.0),
        ..Row::default()
    })
}
