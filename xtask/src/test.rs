//! `cargo xtask test`: the one test command. It sets up what the suite needs on a machine of
//! the project's kind (Debian, root, the package registries reachable, PostgreSQL installed),
//! says what it set up, and runs `cargo test --workspace` on SQLite and Postgres.
//!
//! - Python tools (aiosmtpd, moto; schemathesis with `--fuzz`) go into a virtual environment
//!   of the project's own under `target/test-tools/venv`, pinned by `xtask/python/`; never
//!   into the system's Python. The tests find them as `python3` on `PATH`.
//! - Chromium (tests/integration/edge/docs_page.rs) is Debian's package, installed when missing and running as
//!   root; otherwise the command stops before the tests and says what to install.
//! - Java runs openapi-generator (its jar comes in the pinned Python package
//!   `openapi-generator-cli`): Debian's `default-jre-headless`, installed when `java` is missing
//!   and running as root. The TypeScript compiler of tests/integration/edge/generated_clients.rs is
//!   the one `clients/typescript/package-lock.json` pins (`npm ci` there when it changed).
//! - PostgreSQL is started when installed and stopped; `TEST_POSTGRES_URL` is set for the run.
//!
//! Nothing is skipped quietly: a tool that cannot be set up stops the command with the step
//! that failed and what to do.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The pinned Python requirements, relative to the workspace root.
const REQUIREMENTS_TEST: &str = "xtask/python/requirements-test.txt";
const REQUIREMENTS_FUZZ: &str = "xtask/python/requirements-fuzz.txt";
const CONSTRAINTS: &str = "xtask/python/constraints.txt";
/// The project's own Python environment, relative to the workspace root.
const VENV: &str = "target/test-tools/venv";
/// The TypeScript client, whose pinned compiler tests/integration/edge/generated_clients.rs uses.
const TYPESCRIPT_CLIENT: &str = "clients/typescript";
const TSC: &str = "node_modules/.bin/tsc";
/// Where tests/integration/edge/docs_page.rs looks for the browser.
const CHROMIUM: &str = "/usr/bin/chromium";
/// The local PostgreSQL server the tests use when `TEST_POSTGRES_URL` is not set.
const LOCAL_POSTGRES: &str = "127.0.0.1:5432";
const LOCAL_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Sets everything up, then runs the suite (and, with `fuzz`, `.ci/fuzz` on the binary the
/// tests built). `cargo_args` go to `cargo test` after `--workspace`.
pub fn run(root: &Path, fuzz: bool, cargo_args: &[String]) -> Result<ExitCode> {
    let venv = python_tools(root, fuzz).context("setting up the Python test tools")?;
    chromium().context("setting up Chromium for tests/integration/edge/docs_page.rs")?;
    java().context("setting up Java for openapi-generator (tests/integration/edge/generated_clients.rs)")?;
    typescript(root).context("setting up the TypeScript compiler (tests/integration/edge/generated_clients.rs)")?;
    let postgres_url = postgres().context("setting up PostgreSQL for the Postgres half of the suite")?;

    let path = path_with(&venv.join("bin"))?;
    println!("==> cargo test --workspace --no-fail-fast {}", cargo_args.join(" "));
    let status = Command::new(cargo())
        .current_dir(root)
        .args(["test", "--workspace", "--no-fail-fast"])
        .args(cargo_args)
        .env("PATH", &path)
        .env("TEST_POSTGRES_URL", &postgres_url)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        return Ok(ExitCode::FAILURE);
    }
    if fuzz {
        println!("==> .ci/fuzz (contract fuzzing with the tests' debug binary)");
        let status = Command::new(root.join(".ci/fuzz"))
            .current_dir(root)
            .env("PATH", &path)
            .status()
            .context("running .ci/fuzz")?;
        if !status.success() {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cargo` as cargo itself names it to the programs it runs.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `PATH` with `dir` first, so that the tests' `python3` is the project environment's.
fn path_with(dir: &Path) -> Result<OsString> {
    let current = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&current));
    std::env::join_paths(paths).context("joining PATH")
}

/// Creates `target/test-tools/venv` when missing and installs the pinned requirements when
/// they changed since the last install (a hash of the files is kept in the environment).
fn python_tools(root: &Path, fuzz: bool) -> Result<PathBuf> {
    let venv = root.join(VENV);
    let python = venv.join("bin/python3");
    let mut files = vec![REQUIREMENTS_TEST];
    if fuzz {
        files.push(REQUIREMENTS_FUZZ);
    }
    let mut hash = Sha256::new();
    for file in files.iter().chain([&CONSTRAINTS]) {
        let text = std::fs::read(root.join(file)).with_context(|| format!("reading {file}"))?;
        hash.update(file.as_bytes());
        hash.update(&text);
    }
    let stamp_text = format!("{:x}\n", hash.finalize());
    let stamp = venv.join("installed-requirements.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|text| text == stamp_text) && python.exists() {
        println!("==> Python test tools: up to date in {VENV} ({})", files.join(", "));
        return Ok(venv);
    }
    if !python.exists() {
        println!("==> Python test tools: creating the virtual environment {VENV}");
        create_venv(&venv)?;
    }
    println!("==> Python test tools: installing {} into {VENV} (pinned by {CONSTRAINTS})", files.join(", "));
    let mut install = Command::new(&python);
    install.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-c"]).arg(root.join(CONSTRAINTS));
    for file in &files {
        install.arg("-r").arg(root.join(file));
    }
    check(&mut install, "pip install")?;
    std::fs::write(&stamp, stamp_text).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(venv)
}

/// `python3 -m venv`; on Debian's own Python the module needs the `python3-venv` package,
/// installed here when running as root.
fn create_venv(venv: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(venv);
    let attempt = Command::new("python3")
        .args(["-m", "venv"])
        .arg(venv)
        .output()
        .context("running python3 (install Python 3)")?;
    if attempt.status.success() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(venv);
    if !is_root() || !has_command("apt-get") {
        bail!(
            "python3 -m venv failed: {}\ninstall Python's venv module (on Debian: apt-get install -y python3-venv) and run again",
            String::from_utf8_lossy(&attempt.stderr).trim()
        );
    }
    println!("==> Python test tools: python3 -m venv failed; installing Debian's python3-venv");
    apt_install("python3-venv")?;
    check(Command::new("python3").args(["-m", "venv"]).arg(venv), "python3 -m venv")
}

/// Debian's Chromium at /usr/bin/chromium, installed when missing and running as root.
fn chromium() -> Result<()> {
    if !Path::new(CHROMIUM).exists() {
        if !is_root() || !has_command("apt-get") {
            bail!(
                "{CHROMIUM} is missing and cannot be installed here (needs root and apt-get); \
                 install Debian's chromium package (apt-get install -y chromium) and run again"
            );
        }
        println!("==> Chromium: {CHROMIUM} is missing; installing Debian's chromium");
        apt_install("chromium")?;
    }
    let version =
        Command::new(CHROMIUM).arg("--version").output().with_context(|| format!("running {CHROMIUM} --version"))?;
    if !version.status.success() {
        bail!("{CHROMIUM} --version failed: {}", String::from_utf8_lossy(&version.stderr).trim());
    }
    println!("==> Chromium: {}", String::from_utf8_lossy(&version.stdout).trim());
    Ok(())
}

/// `java` on `PATH`, Debian's `default-jre-headless` installed when it is missing and running
/// as root.
fn java() -> Result<()> {
    if !has_command("java") {
        if !is_root() || !has_command("apt-get") {
            bail!(
                "java is missing and cannot be installed here (needs root and apt-get); \
                 install a Java runtime (apt-get install -y default-jre-headless) and run again"
            );
        }
        println!("==> Java: java is missing; installing Debian's default-jre-headless");
        apt_install("default-jre-headless")?;
    }
    let version = Command::new("java").arg("-version").output().context("running java -version")?;
    if !version.status.success() {
        bail!("java -version failed: {}", String::from_utf8_lossy(&version.stderr).trim());
    }
    let text = String::from_utf8_lossy(&version.stderr);
    println!("==> Java: {}", text.lines().next().unwrap_or_default().trim());
    Ok(())
}

/// `clients/typescript/node_modules` as its `package-lock.json` pins it: `npm ci` (the npm
/// registry only) when the lock file changed since the last install.
fn typescript(root: &Path) -> Result<()> {
    let dir = root.join(TYPESCRIPT_CLIENT);
    if !has_command("npm") {
        bail!(
            "npm is missing: install Node.js 20 or newer with npm (Debian: apt-get install -y nodejs npm) and run again"
        );
    }
    let lock = std::fs::read(dir.join("package-lock.json")).context("reading clients/typescript/package-lock.json")?;
    let stamp_text = format!("{:x}\n", Sha256::digest(&lock));
    let stamp = dir.join("node_modules/.installed-lock.sha256");
    if std::fs::read_to_string(&stamp).is_ok_and(|text| text == stamp_text) && dir.join(TSC).exists() {
        println!("==> TypeScript: up to date in {TYPESCRIPT_CLIENT}/node_modules");
        return Ok(());
    }
    println!("==> TypeScript: npm ci in {TYPESCRIPT_CLIENT} (pinned by its package-lock.json)");
    check(Command::new("npm").current_dir(&dir).args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]), "npm ci")?;
    std::fs::write(&stamp, stamp_text).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}

/// The Postgres URL of the run: `TEST_POSTGRES_URL` when set, else the local server, started
/// with Debian's `pg_ctlcluster` when it is installed and not running.
fn postgres() -> Result<String> {
    if let Some(url) = std::env::var("TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty()) {
        println!("==> PostgreSQL: TEST_POSTGRES_URL is set; using it");
        return Ok(url);
    }
    let address: SocketAddr = LOCAL_POSTGRES.parse().expect("a socket address");
    let accepts = || TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok();
    if accepts() {
        println!("==> PostgreSQL: running at {LOCAL_POSTGRES}; TEST_POSTGRES_URL={LOCAL_POSTGRES_URL}");
        return Ok(LOCAL_POSTGRES_URL.to_string());
    }
    let cluster = local_cluster_version()?;
    println!("==> PostgreSQL: nothing listens at {LOCAL_POSTGRES}; starting the installed cluster {cluster}/main");
    check(
        Command::new("pg_ctlcluster").args(["--skip-systemctl-redirect", &cluster, "main", "start"]),
        "pg_ctlcluster start",
    )?;
    for _ in 0..30 {
        if accepts() {
            println!("==> PostgreSQL: started; TEST_POSTGRES_URL={LOCAL_POSTGRES_URL}");
            return Ok(LOCAL_POSTGRES_URL.to_string());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    bail!("PostgreSQL {cluster}/main was started but accepts no connection at {LOCAL_POSTGRES} after 30 s")
}

/// The version of the one cluster Debian's PostgreSQL packages set up (/etc/postgresql/<version>).
fn local_cluster_version() -> Result<String> {
    let missing = || {
        format!(
            "nothing listens at {LOCAL_POSTGRES} and no PostgreSQL installation was found (/etc/postgresql, pg_ctlcluster); \
             install Debian's postgresql package, or set TEST_POSTGRES_URL to a server whose user may create schemas"
        )
    };
    if !has_command("pg_ctlcluster") {
        bail!(missing());
    }
    let mut versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .with_context(missing)?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    versions.sort();
    versions.pop().with_context(missing)
}

/// Installs a Debian package; apt's and dpkg's output is shown only when they fail.
fn apt_install(package: &str) -> Result<()> {
    for (step, args) in
        [("apt-get update", &["update", "-qq"][..]), ("apt-get install", &["install", "-y", "-qq", package])]
    {
        let output = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .with_context(|| format!("{step}: cannot start"))?;
        if !output.status.success() {
            bail!(
                "{step} {package} failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == b"0")
}

fn has_command(name: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {name}")]).output().is_ok_and(|out| out.status.success())
}

/// Runs a set-up step; its failure names the step.
fn check(command: &mut Command, step: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("{step}: cannot start"))?;
    if !status.success() {
        bail!("{step} failed ({status})");
    }
    Ok(())
}
