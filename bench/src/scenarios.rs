//! The scenarios of `cargo xtask bench`. Each returns one or more rows; a row's baseline is a
//! figure measured in the same run, and its ratio is what the targets are stated in.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hyper::Method;
use serde_json::{Value, json};

use super::load::{self, Call, Measured};
use super::service::{PeakRss, Service, Usage, WEBHOOK_SECRET};
use super::{Row, Settings};

const CONNECTIONS: usize = 64;
const BASIC_SANDBOX: &str = "Basic c2FuZGJveDpzYW5kYm94LXBhc3N3b3Jk"; // sandbox:sandbox-password

fn factory(f: impl Fn(usize, u64) -> Call + Send + Sync + 'static) -> load::CallFactory {
    Arc::new(f)
}

/// Runs `calls` over `concurrency` connections and collects the JSON answers in order.
pub async fn collect(address: SocketAddr, calls: Vec<Call>, concurrency: usize) -> Result<Vec<Value>> {
    let total = calls.len();
    let queue = Arc::new(Mutex::new(calls.into_iter().enumerate().collect::<Vec<_>>()));
    let answers = Arc::new(Mutex::new(vec![Value::Null; total]));
    let mut tasks = Vec::new();
    for _ in 0..concurrency.min(total.max(1)) {
        let (queue, answers) = (queue.clone(), answers.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let next = queue.lock().expect("queue").pop();
                let Some((i, call)) = next else { return Ok::<(), String>(()) };
                let (status, body) = load::once(address, &call).await?;
                if !(200..300).contains(&status) {
                    return Err(format!("{} {}: {status} {body}", call.method, call.path));
                }
                answers.lock().expect("answers")[i] = body;
            }
        }));
    }
    for task in tasks {
        task.await?.map_err(anyhow::Error::msg)?;
    }
    Ok(Arc::try_unwrap(answers).map_err(|_| anyhow::anyhow!("answers still shared"))?.into_inner()?)
}

fn row(scenario: &str, mode: String, measured: &Measured, peak_rss: u64) -> Row {
    Row {
        scenario: scenario.into(),
        mode,
        requests: measured.requests,
        throughput: measured.throughput(),
        unit: "req/s".into(),
        p50_ms: measured.quantile_ms(0.5),
        p99_ms: measured.quantile_ms(0.99),
        peak_rss_mb: peak_rss as f64 / 1_048_576.0,
        errors: measured.errors,
        first_error: measured.first_error.clone(),
        ..Row::default()
    }
}

fn closed(connections: usize) -> String {
    let plural = if connections == 1 { "" } else { "s" };
    format!("closed loop, {connections} connection{plural}")
}

async fn measured_closed_loop(
    service: &Service,
    address: SocketAddr,
    connections: usize,
    duration: Duration,
    calls: load::CallFactory,
) -> (Measured, u64) {
    measured_closed_loop_of(service.pid(), address, connections, duration, calls).await
}

/// As [`measured_closed_loop`], with the peak memory of process `pid`.
async fn measured_closed_loop_of(
    pid: u32,
    address: SocketAddr,
    connections: usize,
    duration: Duration,
    calls: load::CallFactory,
) -> (Measured, u64) {
    let peak = PeakRss::start(pid);
    let measured = load::closed_loop(address, connections, duration, calls).await;
    (measured, peak.finish())
}

/// `baseline`: a constant answer from a plain dropshot server the bench starts itself (see
/// `bare`), and the same answer from the service (front and dropshot in one hop).
pub async fn baseline(service: &Service, settings: &Settings) -> Result<Vec<Row>> {
    let calls = factory(|_, _| Call::get("/bench/constant"));
    let (bare, bare_peak) =
        measured_closed_loop_of(service.bare_pid(), service.bare, CONNECTIONS, settings.duration, calls.clone()).await;
    let (front, front_peak) = measured_closed_loop(service, service.front, CONNECTIONS, settings.duration, calls).await;
    let mut bare_row = row("baseline-bare-dropshot", closed(CONNECTIONS), &bare, bare_peak);
    bare_row.note =
        "GET /bench/constant on a plain dropshot server of the bench's own: the ceiling of server library and load generator"
            .into();
    let mut front_row = row("baseline", closed(CONNECTIONS), &front, front_peak);
    front_row.baseline = Some(("baseline-bare-dropshot".into(), bare.throughput()));
    front_row.note = "the same answer from the service; ratio = service / bare dropshot".into();
    front_row.target = Some("ratio ≥ 0.80".into());
    front_row.met = Some(front_row.ratio().unwrap_or(0.0) >= 0.8);
    Ok(vec![bare_row, front_row])
}

/// A company created through the service (forwarded to the simulator); its Id.
async fn create_company(service: &Service, name: &str) -> Result<String> {
    let body = json!({"Id": "new", "Version": 1, "Name": name, "IsPhysicalPerson": false});
    let answer = service
        .call(service.front, service.authorized(Call::json(Method::POST, "/api/v1/fieldreport/companies", &body)))
        .await?;
    Ok(answer["data"]["Id"].as_str().context("no Id in the answer")?.to_string())
}

/// `auth-read`: one company by id, with a bearer token.
pub async fn auth_read(service: &Service, settings: &Settings, bare_dropshot: f64) -> Result<Vec<Row>> {
    let id = create_company(service, "Bench Read GmbH").await?;
    let token = service.token.clone();
    let calls = factory(move |_, _| {
        Call::get(format!("/api/v1/fieldreport/companies/{id}")).header("authorization", format!("Bearer {token}"))
    });
    let (measured, peak) = measured_closed_loop(service, service.front, CONNECTIONS, settings.duration, calls).await;
    let mut r = row("auth-read", closed(CONNECTIONS), &measured, peak);
    r.baseline = Some(("baseline-bare-dropshot".into(), bare_dropshot));
    r.target = Some("ratio ≥ 0.50, p99 ≤ 10 ms".into());
    r.met = Some(r.ratio().unwrap_or(0.0) >= 0.5 && r.p99_ms <= 10.0);
    Ok(vec![r])
}

/// `list`: a page of 50 records.
pub async fn list(service: &Service, settings: &Settings, baseline: f64) -> Result<Vec<Row>> {
    seed(service, "Companies", 60).await?;
    service.call(service.front, service.authorized(Call::get("/api/v1/fieldreport/sync/companies"))).await?;
    let token = service.token.clone();
    let calls = factory(move |_, _| {
        Call::get("/api/v1/fieldreport/companies?per_page=50").header("authorization", format!("Bearer {token}"))
    });
    let (measured, peak) = measured_closed_loop(service, service.front, CONNECTIONS, settings.duration, calls).await;
    let mut r = row("list", closed(CONNECTIONS), &measured, peak);
    r.baseline = Some(("baseline".into(), baseline));
    r.target = Some("ratio ≥ 0.25".into());
    r.met = Some(r.ratio().unwrap_or(0.0) >= 0.25);
    Ok(vec![r])
}

pub(super) async fn seed(service: &Service, set: &str, count: u64) -> Result<()> {
    let body = json!({"set": set, "count": count});
    service.call(service.fieldreport, Call::json(Method::POST, "/__sandbox/seed", &body)).await?;
    Ok(())
}

/// `forwarded-write`: `PUT` on a company through the service, which forwards it to the
/// simulator, against the same `PUT` straight to the simulator at the same concurrency. The
/// target row sends one call at a time, so that its p50 is what a call adds. With 8 writers at
/// once (informative) the two cores, shared by the service, the simulator, the database and
/// this load generator, are the limit: each p50 is then about 8 / throughput, a measure of
/// throughput rather than of latency. Each connection writes its own record (no version
/// conflicts).
pub async fn forwarded_write(service: &Service, settings: &Settings) -> Result<Vec<Row>> {
    let mut rows = forwarded_write_with(service, settings, 1, "forwarded-write").await?;
    rows.extend(forwarded_write_with(service, settings, 8, "forwarded-write-8").await?);
    Ok(rows)
}

async fn forwarded_write_with(
    service: &Service,
    settings: &Settings,
    writers: usize,
    scenario: &str,
) -> Result<Vec<Row>> {
    let mut ids = Vec::new();
    for n in 0..2 * writers {
        ids.push(create_company(service, &format!("Bench Write {writers}/{n}")).await?);
    }
    let (service_ids, upstream_ids) = ids.split_at(writers);
    // Upstream alone: the simulator wants the stored Version + 1 on every PUT.
    let mut versions = Vec::new();
    for id in upstream_ids {
        let record = service
            .call(
                service.fieldreport,
                Call::get(format!("/odata/Companies({id}L)")).header("authorization", BASIC_SANDBOX),
            )
            .await?;
        versions.push(record["Version"].as_u64().unwrap_or(1));
    }
    let upstream_ids = upstream_ids.to_vec();
    let upstream_calls = factory(move |client, n| {
        let id = &upstream_ids[client];
        let body = json!({"Id": id, "Version": versions[client] + n + 1, "Name": format!("Upstream {n}")});
        Call::json(Method::PUT, format!("/odata/Companies({id}L)"), &body).header("authorization", BASIC_SANDBOX)
    });
    let (upstream, upstream_peak) =
        measured_closed_loop(service, service.fieldreport, writers, settings.duration, upstream_calls).await;
    let token = service.token.clone();
    let service_ids = service_ids.to_vec();
    let service_calls = factory(move |client, n| {
        let body = json!({"Name": format!("Service {n}")});
        Call::json(Method::PUT, format!("/api/v1/fieldreport/companies/{}", service_ids[client]), &body)
            .header("authorization", format!("Bearer {token}"))
    });
    let (through, peak) = measured_closed_loop(service, service.front, writers, settings.duration, service_calls).await;
    let upstream_scenario = format!("{scenario}-upstream");
    let mut alone = row(&upstream_scenario, closed(writers), &upstream, upstream_peak);
    alone.note = "PUT Companies(<Id>L) straight to the simulator".into();
    let mut r = row(scenario, closed(writers), &through, peak);
    let added = r.p50_ms - alone.p50_ms;
    r.baseline = Some((upstream_scenario, upstream.throughput()));
    r.note = format!("added latency over the upstream call: {added:.2} ms at p50");
    if writers == 1 {
        r.target = Some("added latency at p50 ≤ 2 ms".into());
        r.met = Some(added <= 2.0);
    } else {
        r.note.push_str(" (informative: the cores are the limit, p50 ≈ writers / throughput)");
    }
    Ok(vec![alone, r])
}

fn leasing_request(n: usize) -> Value {
    json!({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit",
        "Lessee": {"CompanyName": format!("[slow:5] Bench {n}"), "LegalFormId": 1, "Email": "bench@example.com",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "main"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "NetPricePerObject": 1299.0}]
    })
}

/// The open-files limit of a process, from `/proc`.
fn open_files_limit(pid: u32) -> Option<usize> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Descriptors of the service per held call: see [`waiting_flows`].
const SOCKETS_PER_HELD_CALL: usize = 1;

/// `waiting-flows`: many `wait-ready-to-sign` calls held at once (the simulator answers
/// `ReadyToSign` from the 5th read; one read per `sleep_milliseconds`).
pub async fn waiting_flows(service: &Service, settings: &Settings) -> Result<Vec<Row>> {
    let wanted = if settings.quick { 100 } else { 10_000 };
    // Each held call costs the service one socket, its client's: the front's streams to
    // dropshot and the polls to the simulator share pooled connections. Stay under the
    // process's open-files limit.
    let limit = open_files_limit(service.pid()).unwrap_or(usize::MAX);
    let flows = wanted.min(limit.saturating_sub(2_000) / SOCKETS_PER_HELD_CALL);
    let sleep = if settings.quick { 50 } else { 1000 };
    let creates: Vec<Call> = (0..flows)
        .map(|n| service.authorized(Call::json(Method::POST, "/api/v1/leasing", &leasing_request(n))))
        .collect();
    let created = collect(service.front, creates, 32).await?;
    let ids: Vec<String> =
        created.iter().map(|c| c["data"]["FinancingId"].as_str().unwrap_or_default().to_string()).collect();
    let token = service.token.clone();
    let ids = Arc::new(ids);
    let calls = factory(move |client, _| {
        Call::get(format!(
            "/api/v1/leasing/{}/wait-ready-to-sign?max_attempts=10&sleep_milliseconds={sleep}",
            ids[client]
        ))
        .header("authorization", format!("Bearer {token}"))
    });
    let cpu_before = Usage::cpu(service.pid());
    let peak = PeakRss::start(service.pid());
    let measured = load::fixed(service.front, flows, 1, calls).await;
    let peak = peak.finish();
    let cpu = Usage::cpu(service.pid()).saturating_sub(cpu_before);
    let mut r = row("waiting-flows", format!("{flows} calls held at once, one each"), &measured, peak);
    r.throughput = flows as f64;
    r.unit = "calls held".into();
    r.target = Some(format!("all {wanted} succeed, peak RSS ≤ 300 MB"));
    r.met = Some(flows == wanted && measured.errors == 0 && r.peak_rss_mb <= 300.0);
    let per_call = cpu.as_secs_f64() * 1000.0 / flows.max(1) as f64;
    r.note = format!("service CPU {per_call:.2} ms per waiting call (sleep_milliseconds={sleep}, 5 reads each)");
    if flows < wanted {
        r.note.push_str(&format!(
            "; only {flows}: the service's open-files limit is {limit} and each held call needs {SOCKETS_PER_HELD_CALL}"
        ));
    }
    Ok(vec![r])
}

/// Runs the service's binary with `args` on the service's database; what it printed.
pub(super) fn service_command(service: &Service, args: &[&str]) -> Result<String> {
    let output =
        std::process::Command::new(&service.binary).args(args).env("DATABASE_URL", &service.database_url).output()?;
    anyhow::ensure!(output.status.success(), "{}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
    Ok(String::from_utf8_lossy(&output.stdout).to_string())
}

/// The run of median rate, and every run's rate in the order run.
pub(super) fn median_by_rate<T>(mut runs: Vec<T>, rate: impl Fn(&T) -> f64) -> (T, Vec<String>) {
    let rates = runs.iter().map(|run| format!("{:.0}", rate(run))).collect();
    runs.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    (runs.swap_remove(runs.len() / 2), rates)
}

/// `webhook-ingest`: ERP webhook calls stored durably before the 202.
pub async fn webhook_ingest(service: &Service, settings: &Settings, baseline: f64) -> Result<Vec<Row>> {
    let body = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let calls = factory(move |_, _| {
        Call::json(Method::POST, "/api/v1/erp/webhooks", &body).header("x-webhook-secret", WEBHOOK_SECRET)
    });
    let (measured, peak) = measured_closed_loop(service, service.front, CONNECTIONS, settings.duration, calls).await;
    let mut r = row("webhook-ingest", closed(CONNECTIONS), &measured, peak);
    r.baseline = Some(("baseline".into(), baseline));
    r.target = Some("ratio ≥ 0.25".into());
    r.met = Some(r.ratio().unwrap_or(0.0) >= 0.25);
    r.note = "each call committed to the inbox before its 202; the worker processes them meanwhile".into();
    let drain = drain_inbox(service, settings).await?;
    Ok(vec![r, drain])
}

/// Waits for the webhook worker to work off what `webhook-ingest` left in the inbox (up to a
/// limit), so that later scenarios do not share the machine with it, and reports its rate.
/// Informative: intake outruns processing (each call is fetched from the ERP and mapped).
async fn drain_inbox(service: &Service, settings: &Settings) -> Result<Row> {
    let limit = Duration::from_secs(if settings.quick { 60 } else { 240 });
    let pending = || async {
        let show = service.call(service.front, service.authorized(Call::get("/api/v1/erp/show"))).await?;
        show["inbox"]["pending"].as_i64().context("no inbox.pending in /api/v1/erp/show")
    };
    let started = Instant::now();
    let at_start = pending().await?;
    let mut left = at_start;
    while left > 0 && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(500)).await;
        left = pending().await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let processed = at_start - left;
    Ok(Row {
        scenario: "webhook-drain".into(),
        mode: "the worker alone, after webhook-ingest".into(),
        requests: processed.max(0) as u64,
        throughput: processed as f64 / seconds.max(0.001),
        unit: "calls/s".into(),
        note: format!(
            "the inbox worker processed {processed} of the {at_start} calls webhook-ingest left in {seconds:.1} s \
             (each fetched from the ERP simulator, mirrored, mapped){}",
            if left > 0 { format!("; {left} still pending at the {} s limit", limit.as_secs()) } else { String::new() }
        ),
        ..Row::default()
    })
}

/// `login`: password logins (informative).
pub async fn login(service: &Service, settings: &Settings) -> Result<Vec<Row>> {
    const CLIENTS: usize = 4;
    let body = json!({"email": super::service::EMAIL, "password": super::service::PASSWORD});
    let calls = factory(move |_, _| Call::json(Method::POST, "/api/v1/login", &body));
    let (measured, peak) = measured_closed_loop(service, service.front, CLIENTS, settings.duration, calls).await;
    let mut r = row("login", closed(CLIENTS), &measured, peak);
    r.note = "argon2id m=19456 KiB, t=2, p=1 (the argon2 crate's defaults); one token written per login".into();
    Ok(vec![r])
}

/// `mixed`: 200 clients for 60 s, each cycling through reads, a page, forwarded writes to its
/// own company, webhook calls and one-shot leasing flows; zero errors, and the service's
/// memory after warm-up compared with its memory at the end.
pub async fn mixed(service: &Service, settings: &Settings) -> Result<Vec<Row>> {
    const CLIENTS: usize = 200;
    // `BENCH_MIXED_SECONDS` makes it a longer soak run.
    let seconds = std::env::var("BENCH_MIXED_SECONDS").ok().and_then(|s| s.parse::<u64>().ok());
    let duration = Duration::from_secs(seconds.unwrap_or(if settings.quick { 3 } else { 60 }));
    let mut ids = Vec::with_capacity(CLIENTS);
    for n in 0..CLIENTS {
        ids.push(create_company(service, &format!("Bench Mixed {n}")).await?);
    }
    let token = service.token.clone();
    let webhook = json!({"entityName": "customer", "entityId": "6", "type": "updated"});
    let calls = factory(move |client, n| {
        let bearer = format!("Bearer {token}");
        let id = &ids[client];
        match n % 10 {
            0..=3 => Call::get(format!("/api/v1/fieldreport/companies/{id}")).header("authorization", bearer),
            4 => Call::get("/api/v1/fieldreport/companies?per_page=50").header("authorization", bearer),
            5 | 6 => {
                let body = json!({"Name": format!("Mixed {client} write {n}")});
                Call::json(Method::PATCH, format!("/api/v1/fieldreport/companies/{id}"), &body)
                    .header("authorization", bearer)
            }
            7 | 8 => {
                Call::json(Method::POST, "/api/v1/erp/webhooks", &webhook).header("x-webhook-secret", WEBHOOK_SECRET)
            }
            _ => {
                let mut request = leasing_request(client);
                request["Lessee"]["CompanyName"] = json!(format!("Mixed {client}"));
                let body = json!({
                    "request_payload": request,
                    "e_signature_payload": {"SignerName": "Max Mustermann", "SignerEmail": "max@example.com"},
                    "sleep_milliseconds": 0
                });
                Call::json(Method::POST, "/api/v1/leasing/leasing/request-flow", &body).header("authorization", bearer)
            }
        }
    });
    let pid = service.pid();
    let warm_up = duration / 6;
    // The service's RSS at the end of each sixth of the run: warm-up, then five more.
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        for _ in 0..6 {
            tokio::time::sleep(warm_up).await;
            samples.push(Usage::rss(pid));
        }
        samples
    });
    let (measured, peak) = measured_closed_loop(service, service.front, CLIENTS, duration, calls).await;
    let end_rss = Usage::rss(pid);
    let samples = sampler.await?;
    let warm_rss = samples.first().copied().unwrap_or(end_rss);
    let mut r = row("mixed", closed(CLIENTS), &measured, peak);
    let mb = |bytes: u64| bytes as f64 / 1_048_576.0;
    r.target = Some("zero errors; RSS at the end ≤ 1.2 × after warm-up".into());
    r.met = Some(measured.errors == 0 && end_rss as f64 <= 1.2 * warm_rss as f64);
    let series: Vec<String> = samples.iter().map(|&b| format!("{:.0}", mb(b))).collect();
    r.note = format!(
        "{} s: reads 40%, page 10%, forwarded PATCH 20%, webhooks 20%, one-shot flows 10%; RSS after {} s warm-up {:.1} MB, at the end {:.1} MB; every {} s: {} MB",
        duration.as_secs(),
        warm_up.as_secs(),
        mb(warm_rss),
        mb(end_rss),
        warm_up.as_secs_f64(),
        series.join(", ")
    );
    Ok(vec![r])
}
