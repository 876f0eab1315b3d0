//! The service under test: the release binary's upstream simulators started in a process of
//! their own (`sandbox`), then the service (`serve`) pointed at them, both on loopback. Their
//! addresses are read from what they print, the service's memory and CPU from `/proc`: with the
//! simulators out of the service's process, its figures are its own (the simulators hold the
//! seeded records and every leasing request, and their sockets).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::load::{Call, once};

pub const PASSWORD: &str = "bench-password-1";
pub const EMAIL: &str = "bench@example.com";
pub const WEBHOOK_SECRET: &str = "bench-webhook-secret";

/// The database a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Database {
    Sqlite,
    Postgres,
}

/// A running service and its simulators.
pub struct Service {
    child: Process,
    // Held for their `Drop`: the simulators and the bare server stop with the service.
    _simulators: Process,
    bare_dropshot: Process,
    pub binary: PathBuf,
    pub database_url: String,
    pub dir: PathBuf,
    /// The public address (the front).
    pub front: SocketAddr,
    /// The bare-dropshot baseline's server (see `bare`), not part of the service.
    pub bare: SocketAddr,
    pub fieldreport: SocketAddr,
    /// The ERP simulator (its `/__sandbox` routes are at its root).
    pub erp: SocketAddr,
    pub token: String,
    postgres_database: Option<(String, String)>,
}

/// A child process that is killed when dropped (a run that fails half-way leaves none behind).
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a started child prints on stdout, line by line.
type Printed = std::io::Lines<BufReader<ChildStdout>>;

/// Starts `command` in `dir` with JSON logs to `<name>.log` there; its stdout is read.
fn spawn(mut command: Command, dir: &Path, name: &str) -> Result<(Process, Printed)> {
    let log = std::fs::File::create(dir.join(format!("{name}.log")))?;
    let mut child = Process(
        command
            .current_dir(dir)
            .env("LOG_FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting the {name}"))?,
    );
    let stdout = child.0.stdout.take().with_context(|| format!("{name}'s stdout"))?;
    Ok((child, BufReader::new(stdout).lines()))
}

/// The next line a starting child prints; an error once it has stopped.
fn next_line(printed: &mut Printed, dir: &Path, name: &str) -> Result<String> {
    match printed.next() {
        Some(line) => Ok(line?),
        None => bail!("the {name} stopped while starting; see {}/{name}.log", dir.display()),
    }
}

/// Keeps reading what a started child prints, so that it never blocks on a full pipe.
fn drain(printed: Printed) {
    std::thread::spawn(move || for _ in printed {});
}

/// The URL a line prints (up to the next space).
fn url_in(line: &str) -> Option<&str> {
    let start = line.find("http://")?;
    let rest = &line[start..];
    Some(&rest[..rest.find(' ').unwrap_or(rest.len())])
}

fn address_in(line: &str) -> Option<SocketAddr> {
    let rest = &url_in(line)?["http://".len()..];
    rest[..rest.find('/').unwrap_or(rest.len())].parse().ok()
}

/// The upstream simulators' base URLs, as `integration-service sandbox` prints them.
#[derive(Default)]
struct SimulatorUrls {
    leasing: Option<String>,
    fieldreport: Option<String>,
    erp: Option<String>,
}

/// Starts `integration-service sandbox` and reads the three base URLs it prints.
fn start_simulators(binary: &Path, dir: &Path) -> Result<(Process, SimulatorUrls)> {
    let mut command = Command::new(binary);
    command.arg("sandbox");
    let (child, mut printed) = spawn(command, dir, "simulators")?;
    let mut urls = SimulatorUrls::default();
    while urls.leasing.is_none() || urls.fieldreport.is_none() || urls.erp.is_none() {
        let line = next_line(&mut printed, dir, "simulators")?;
        let url = url_in(&line).map(str::to_string);
        if line.starts_with("leasing provider simulator") {
            urls.leasing = url;
        } else if line.starts_with("field-report simulator") {
            urls.fieldreport = url;
        } else if line.starts_with("ERP simulator") {
            urls.erp = url;
        }
    }
    drain(printed);
    Ok((child, urls))
}

/// Starts this binary as the bare-dropshot baseline's server and reads its address.
fn start_bare_dropshot(dir: &Path) -> Result<(Process, SocketAddr)> {
    let mut command = Command::new(std::env::current_exe()?);
    command.arg(super::bare::ARGUMENT);
    let (child, mut printed) = spawn(command, dir, "bare-dropshot")?;
    loop {
        let line = next_line(&mut printed, dir, "bare-dropshot")?;
        if line.starts_with(super::bare::LISTENING) {
            drain(printed);
            let address = address_in(&line).context("the bare server printed no address")?;
            return Ok((child, address));
        }
    }
}

/// A fresh database for the run: a SQLite file in `dir`, or a new Postgres database.
fn database(db: Database, dir: &Path, run: &str) -> Result<(String, Option<(String, String)>)> {
    match db {
        Database::Sqlite => Ok((format!("sqlite://{}/bench.db", dir.display()), None)),
        Database::Postgres => {
            let admin = std::env::var("BENCH_POSTGRES_URL")
                .or_else(|_| std::env::var("TEST_POSTGRES_URL"))
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
            let name = format!("bench_{}{}", std::process::id(), run.replace('-', "_"));
            psql(&admin, &format!("DROP DATABASE IF EXISTS {name}"))?;
            psql(&admin, &format!("CREATE DATABASE {name}"))?;
            let (base, _) = admin.rsplit_once('/').context("BENCH_POSTGRES_URL has no database part")?;
            Ok((format!("{base}/{name}"), Some((admin, name))))
        }
    }
}

fn psql(url: &str, statement: &str) -> Result<()> {
    let output = Command::new("psql").args([url, "-q", "-c", statement]).output().context("running psql")?;
    if !output.status.success() {
        bail!("psql {statement}: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

impl Service {
    pub async fn start(binary: &Path, db: Database) -> Result<Service> {
        Self::start_with(binary, db, "", &[]).await
    }

    /// A service of its own beside the main one (`run` names its folder and database) with
    /// `settings` on top of the bench's.
    pub async fn start_with(binary: &Path, db: Database, run: &str, settings: &[(&str, &str)]) -> Result<Service> {
        let dir = std::env::temp_dir().join(format!("integration-service-bench-{}{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let (database_url, postgres_database) = database(db, &dir, run)?;
        let (simulators, urls) = start_simulators(binary, &dir)?;
        let fieldreport = urls.fieldreport.as_deref().and_then(address_in);
        let erp = urls.erp.as_deref().and_then(address_in);
        let mut command = Command::new(binary);
        command
            .args(["serve", "--bind", "127.0.0.1:0"])
            .env("DATABASE_URL", &database_url)
            .env("STORAGE_URL", format!("file://{}/storage", dir.display()))
            .env("LEASING_BASE_URL", urls.leasing.unwrap_or_default())
            .env("FIELDREPORT_BASE_URL", urls.fieldreport.unwrap_or_default())
            .env("FIELDREPORT_USERNAME", "sandbox")
            .env("FIELDREPORT_PASSWORD", "sandbox-password")
            .env("ERP_BASE_URL", urls.erp.unwrap_or_default())
            .env("ERP_API_KEY", "sandbox-erp-key")
            .env("ERP_WEBHOOK_SECRET", WEBHOOK_SECRET)
            .env("ERP_WEBHOOK_ALLOWLIST", "127.0.0.0/8")
            // Every load comes from this host and one token: the caps meant for clients out
            // there would refuse the 10,000 held calls of `waiting-flows`,
            .env("MAX_CONNECTIONS", "30000")
            .env("MAX_CONNECTIONS_PER_ADDRESS", "30000")
            .env("MAX_HELD_CALLS_PER_USER", "30000")
            // Nor create the financing requests of `waiting-flows`, `mixed` and `leasing-watch`
            // at 60 a minute.
            .env("LEASING_CREATES_PER_MINUTE_PER_USER", "100000")
            .envs(settings.iter().copied());
        let (child, mut printed) = spawn(command, &dir, "service")?;
        let mut front = None;
        while front.is_none() {
            let line = next_line(&mut printed, &dir, "service")?;
            if line.contains("listening on") {
                front = address_in(&line);
            }
        }
        drain(printed);
        let (bare_dropshot, bare) = start_bare_dropshot(&dir)?;
        let missing = || anyhow::anyhow!("the service did not print every address");
        let mut service = Service {
            child,
            _simulators: simulators,
            binary: binary.to_path_buf(),
            database_url,
            dir,
            front: front.ok_or_else(missing)?,
            bare_dropshot,
            bare,
            fieldreport: fieldreport.ok_or_else(missing)?,
            erp: erp.ok_or_else(missing)?,
            token: String::new(),
            postgres_database,
        };
        service.token = service.login().await?;
        Ok(service)
    }

    async fn login(&self) -> Result<String> {
        let mut create = Command::new(&self.binary)
            .args(["user", "create", "--email", EMAIL, "--password-stdin"])
            .env("DATABASE_URL", &self.database_url)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        std::io::Write::write_all(&mut create.stdin.take().context("stdin")?, PASSWORD.as_bytes())?;
        anyhow::ensure!(create.wait()?.success(), "user create failed");
        let body = serde_json::json!({"email": EMAIL, "password": PASSWORD});
        let (status, answer) = once(self.front, &Call::json(hyper::Method::POST, "/api/v1/login", &body))
            .await
            .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(status == 200, "login: {status} {answer}");
        Ok(answer["access_token"].as_str().context("no access_token")?.to_string())
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// The bare-dropshot baseline's process.
    pub fn bare_pid(&self) -> u32 {
        self.bare_dropshot.0.id()
    }

    /// A set-up call that must succeed; its JSON answer.
    pub async fn call(&self, address: SocketAddr, call: Call) -> Result<serde_json::Value> {
        let (status, body) = once(address, &call).await.map_err(anyhow::Error::msg)?;
        anyhow::ensure!((200..300).contains(&status), "{} {}: {status} {body}", call.method, call.path);
        Ok(body)
    }

    /// A guarded call to the service.
    pub fn authorized(&self, call: Call) -> Call {
        call.header("authorization", format!("Bearer {}", self.token))
    }

    /// Stops the service gracefully (the simulators go when dropped), and removes the run's
    /// database and files.
    pub fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.0.id().to_string()]).status();
        let _ = self.child.0.wait();
        if let Some((admin, name)) = &self.postgres_database {
            let _ = psql(admin, &format!("DROP DATABASE IF EXISTS {name}"));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Resident memory and CPU time of a process, from `/proc`.
pub struct Usage;

impl Usage {
    /// Resident set size in bytes.
    pub fn rss(pid: u32) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    /// User plus system CPU time (the kernel's USER_HZ is 100 on Linux).
    pub fn cpu(pid: u32) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // After the name: state is field 0, utime field 11, stime field 12.
        Duration::from_millis((ticks(11) + ticks(12)) * 10)
    }
}

/// Samples the peak RSS of a process while a scenario runs.
pub struct PeakRss {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    pub fn start(pid: u32) -> PeakRss {
        let peak = Arc::new(AtomicU64::new(Usage::rss(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(Usage::rss(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        PeakRss { peak, stop, thread: Some(thread) }
    }

    /// The peak in bytes.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}
