//! The bench behind `cargo xtask bench` (which builds this and the service in release and runs
//! this): starts the upstream simulators (`sandbox`) and the service on loopback, runs each
//! scenario with our own closed-loop load generator, and prints every figure beside a baseline
//! measured in the same run (shared machines drift; ratios travel better than absolute
//! numbers). The table is also written as JSON.
//!
//! `--quick` runs every scenario briefly and fails when one of them saw an error: CI runs it so
//! the bench cannot rot; it does not judge the numbers.

mod bare;
mod load;
mod scale;
mod scenarios;
mod service;
mod sync;
mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use serde::Serialize;

use service::{Database, Service};

#[derive(Parser)]
#[command(name = "integration-service-bench", about = "Run through `cargo xtask bench`")]
struct Cli {
    /// The release binary of the service.
    #[arg(long)]
    service_binary: PathBuf,
    /// Where the JSON report goes.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "sqlite")]
    db: Database,
    #[arg(long)]
    quick: bool,
    #[arg(long)]
    scenario: Option<String>,
    /// Records of the `scale` scenario's field-report set (its ERP model gets a quarter);
    /// default 1,000,000, or 20,000 with `--quick`.
    #[arg(long)]
    scale: Option<u64>,
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(bare::ARGUMENT) {
        return match bare::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = Cli::parse();
    let scale = cli.scale.unwrap_or(if cli.quick { scale::QUICK_SIZE } else { scale::FULL_SIZE });
    match run(&cli.service_binary, &cli.out, cli.db, cli.quick, cli.scenario.as_deref(), scale) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

pub const SCENARIOS: &[&str] = &[
    "baseline",
    "auth-read",
    "list",
    "forwarded-write",
    "waiting-flows",
    "sync",
    "webhook-ingest",
    "login",
    "mixed",
    "leasing-watch",
    "scale",
];

/// How long and how much.
#[derive(Debug, Clone)]
pub struct Settings {
    pub quick: bool,
    pub duration: Duration,
}

/// One line of the table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub scenario: String,
    /// How load was applied (closed loop and the number of connections, or what was measured).
    pub mode: String,
    pub requests: u64,
    pub throughput: f64,
    pub unit: String,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub peak_rss_mb: f64,
    pub errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The row this one is compared with, and its throughput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<(String, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub met: Option<bool>,
    pub note: String,
}

impl Row {
    /// Throughput over the baseline's.
    pub fn ratio(&self) -> Option<f64> {
        self.baseline.as_ref().map(|(_, base)| self.throughput / base.max(1e-9))
    }
}

#[derive(Serialize)]
struct Report<'a> {
    date: String,
    database: String,
    quick: bool,
    machine: String,
    load_generator: &'static str,
    rows: &'a [Row],
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string()))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1_048_576);
    format!("{cpus} CPUs, {memory} GiB")
}

fn run(binary: &Path, dir: &Path, db: Database, quick: bool, only: Option<&str>, scale: u64) -> Result<bool> {
    // `sync,mixed`: these scenarios, in the bench's order (a later one sees what an earlier one
    // left, as in a full run).
    let only: Option<Vec<&str>> = only.map(|names| names.split(',').map(str::trim).collect());
    for name in only.iter().flatten() {
        anyhow::ensure!(SCENARIOS.contains(name), "unknown scenario {name}; known: {}", SCENARIOS.join(", "));
    }
    let settings = Settings { quick, duration: Duration::from_secs(if quick { 1 } else { 10 }) };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let rows = runtime.block_on(async {
        let service = Service::start(binary, db).await?;
        let rows = scenarios(&service, &settings, db, only.as_deref(), scale).await;
        service.stop();
        rows
    })?;
    print_table(&rows, db, quick);
    std::fs::create_dir_all(dir)?;
    let database = format!("{db:?}").to_lowercase();
    let report = Report {
        date: chrono_like_now(),
        database: database.clone(),
        quick,
        machine: machine(),
        load_generator: "closed loop: one keep-alive HTTP/1.1 connection per client (hyper), next request on answer",
        rows: &rows,
    };
    let path = dir.join(format!("bench-{database}{}.json", if quick { "-quick" } else { "" }));
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("written to {}", path.display());
    let failed: Vec<&Row> = rows.iter().filter(|r| r.errors > 0).collect();
    for row in &failed {
        eprintln!("{}: {} errors; first: {}", row.scenario, row.errors, row.first_error.as_deref().unwrap_or("?"));
    }
    Ok(failed.is_empty())
}

async fn scenarios(
    service: &Service,
    settings: &Settings,
    db: Database,
    only: Option<&[&str]>,
    scale: u64,
) -> Result<Vec<Row>> {
    let wanted = |name: &str| only.is_none_or(|o| o.contains(&name));
    let mut rows = scenarios::baseline(service, settings).await?;
    let base = rows.iter().find(|r| r.scenario == "baseline").map_or(1.0, |r| r.throughput);
    let bare = rows.iter().find(|r| r.scenario == "baseline-bare-dropshot").map_or(1.0, |r| r.throughput);
    if !wanted("baseline") {
        rows.clear();
    }
    if wanted("auth-read") {
        rows.extend(scenarios::auth_read(service, settings, bare).await?);
    }
    if wanted("list") {
        rows.extend(scenarios::list(service, settings, base).await?);
    }
    if wanted("forwarded-write") {
        rows.extend(scenarios::forwarded_write(service, settings).await?);
    }
    if wanted("waiting-flows") {
        rows.extend(scenarios::waiting_flows(service, settings).await?);
    }
    if wanted("sync") {
        rows.extend(sync::sync(service, settings).await?);
    }
    if wanted("webhook-ingest") {
        rows.extend(scenarios::webhook_ingest(service, settings, base).await?);
    }
    if wanted("login") {
        rows.extend(scenarios::login(service, settings).await?);
    }
    if wanted("mixed") {
        rows.extend(scenarios::mixed(service, settings).await?);
    }
    if wanted("leasing-watch") {
        rows.extend(watch::leasing_watch(service, settings, db).await?);
    }
    if wanted("scale") {
        rows.extend(scale::scale(&service.binary, db, settings, scale).await?);
    }
    Ok(rows)
}

/// UTC now as `YYYY-MM-DD HH:MM` from the system clock (no date crate in the xtask).
fn chrono_like_now() -> String {
    let output = std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]).output();
    output.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

fn print_table(rows: &[Row], db: Database, quick: bool) {
    println!(
        "\nintegration-service bench ({db:?}{}, {}); load: closed loop, one keep-alive connection per client",
        if quick { ", quick" } else { "" },
        machine()
    );
    println!(
        "{:<26} {:>14} {:>12} {:>9} {:>9} {:>9} {:>7} {:>14} {:>7}  target",
        "scenario", "throughput", "unit", "p50 ms", "p99 ms", "RSS MB", "errors", "baseline", "ratio"
    );
    for r in rows {
        let baseline = r.baseline.as_ref().map_or(String::new(), |(_, b)| format!("{b:.0}"));
        let ratio = r.ratio().map_or(String::new(), |x| format!("{x:.2}"));
        let target = match (&r.target, r.met) {
            (Some(t), Some(true)) => format!("{t}: met"),
            (Some(t), Some(false)) => format!("{t}: MISSED"),
            (Some(t), None) => t.clone(),
            _ => String::new(),
        };
        println!(
            "{:<26} {:>14.1} {:>12} {:>9.2} {:>9.2} {:>9.1} {:>7} {:>14} {:>7}  {}",
            r.scenario, r.throughput, r.unit, r.p50_ms, r.p99_ms, r.peak_rss_mb, r.errors, baseline, ratio, target
        );
    }
    println!();
    for r in rows {
        println!(
            "{}: {}{}",
            r.scenario,
            r.mode,
            if r.note.is_empty() { String::new() } else { format!("; {}", r.note) }
        );
    }
}
