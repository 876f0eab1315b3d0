//! The command line: configuration errors, migrations, user and token management.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::binary::{Binary, cli, text};
use crate::common::{DOCUMENT, Db, TestService, add_fault, clear_faults, error_body};

async fn users_and_token_revocation_from_the_command_line(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let url = svc.database_url.clone();

    let created = cli(
        &url,
        &["user", "create", "--email", "Lin@Example.com", "--name", "Lin", "--password-stdin"],
        Some("a long passphrase\n"),
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(text(&created.stdout).contains("lin@example.com"));
    assert!(!text(&created.stdout).contains("a long passphrase"));

    let duplicate =
        cli(&url, &["user", "create", "--email", "lin@example.com", "--password-stdin"], Some("another passphrase\n"));
    assert!(!duplicate.status.success());
    assert!(text(&duplicate.stderr).contains("exists"), "{}", text(&duplicate.stderr));

    let short = cli(&url, &["user", "create", "--email", "x@example.com", "--password-stdin"], Some("short\n"));
    assert!(!short.status.success());
    assert!(text(&short.stderr).contains("password"), "{}", text(&short.stderr));

    let listed = cli(&url, &["user", "list"], None);
    assert!(text(&listed.stdout).contains("lin@example.com\tLin"), "{}", text(&listed.stdout));

    let first = svc.token("lin@example.com", "a long passphrase").await;
    let second = svc.token("lin@example.com", "a long passphrase").await;
    let neither = cli(&url, &["token", "revoke", "--email", "lin@example.com"], None);
    assert!(!neither.status.success(), "revoking needs --name or --all");
    assert!(text(&neither.stderr).contains("--all"), "{}", text(&neither.stderr));
    let revoked = cli(&url, &["token", "revoke", "--email", "lin@example.com", "--all"], None);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    assert!(text(&revoked.stdout).contains("revoked 2 token(s)"), "{}", text(&revoked.stdout));
    for token in [&first, &second] {
        let response = svc.get(token, "/api/v1/user").await;
        error_body(response, 401).await;
    }

    let unknown = cli(&url, &["token", "revoke", "--email", "ghost@example.com", "--all"], None);
    assert!(!unknown.status.success());

    // Deleting a user ends their tokens at once.
    let third = svc.token("lin@example.com", "a long passphrase").await;
    let deleted = cli(&url, &["user", "delete", "--email", "lin@example.com"], None);
    assert!(deleted.status.success(), "{}", text(&deleted.stderr));
    let response = svc.get(&third, "/api/v1/user").await;
    error_body(response, 401).await;
    svc.stop().await;
}

async fn migrate_creates_the_schema(db: Db) {
    let (url, _schema) = crate::common::fresh_database(db).await;
    let migrated = cli(&url, &["migrate"], None);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    let again = cli(&url, &["migrate"], None);
    assert!(again.status.success(), "migrations are idempotent: {}", text(&again.stderr));
    let listed = cli(&url, &["user", "list"], None);
    assert!(listed.status.success());
}

async fn fieldreport_sync_from_the_command_line(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.seed("Tags", 150).await;
    let output = svc.command(&["fieldreport", "sync", "tags"]).fieldreport(&svc).output();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("tags: fetched 150, inserted 150"), "{}", text(&output.stdout));
    // Not a terminal: plain progress lines, the last once everything is stored.
    let last = text(&output.stderr).lines().rev().find(|line| line.starts_with("tags: ")).map(str::to_string);
    assert!(
        last.as_deref().is_some_and(|line| line.starts_with("tags: 150 fetched, 2 pages")),
        "{}",
        text(&output.stderr)
    );
    let setup = svc.command(&["fieldreport", "setup", "1"]).fieldreport(&svc).output();
    assert!(setup.status.success(), "{}", text(&setup.stderr));
    assert_eq!(text(&setup.stdout).lines().count(), 6, "{}", text(&setup.stdout));
    let post = svc.command(&["fieldreport", "post", "1", "create", "tags"]).fieldreport(&svc).output();
    assert!(post.status.success(), "{}", text(&post.stderr));
    assert_eq!(text(&post.stdout).trim(), "tags create: pushed 0, recovered 0, skipped 0, failed 0");
    assert!(text(&post.stderr).contains("tags create: 0/0 records, 0 failed"), "{}", text(&post.stderr));
    let unknown = cli(&svc.database_url, &["fieldreport", "sync", "widgets"], None);
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("costCenters"), "{}", text(&unknown.stderr));
    svc.stop().await;
}

async fn erp_setup_and_pull_from_the_command_line(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let erp = |args: &[&str]| svc.command(args).erp(&svc).output();
    let setup = erp(&["erp", "setup", "customer"]);
    assert!(setup.status.success(), "{}", text(&setup.stderr));
    assert!(text(&setup.stdout).contains("customer: fetched 3, inserted 3"), "{}", text(&setup.stdout));
    // Not a terminal: plain progress lines.
    assert!(text(&setup.stderr).contains("customer: 3 fetched"), "{}", text(&setup.stderr));
    let pull = erp(&["erp", "pull"]);
    assert!(pull.status.success(), "{}", text(&pull.stderr));
    let stdout = text(&pull.stdout);
    // The cursor holds: the records of the overlap window before it are read again, unchanged.
    let customers = stdout.lines().find(|line| line.starts_with("customer: ")).unwrap_or_default();
    assert!(customers.contains("inserted 0, updated 0"), "the cursor holds: {stdout}");
    assert!(stdout.contains("article: fetched 3, inserted 3"), "{stdout}");
    assert_eq!(stdout.lines().count(), generated::erp::MODELS.len() + 1, "{stdout}");
    let unknown = erp(&["erp", "setup", "widgets"]);
    assert!(!unknown.status.success());
    assert!(text(&unknown.stderr).contains("salesOrder"), "{}", text(&unknown.stderr));
    let unconfigured = cli(&svc.database_url, &["erp", "pull"], None);
    assert!(!unconfigured.status.success());
    assert!(text(&unconfigured.stderr).contains("ERP_BASE_URL"), "{}", text(&unconfigured.stderr));
    svc.stop().await;
}

/// Ctrl-C during a long sync: the command stops after its current page with exit code 130,
/// keeps what it stored, releases its lease, and the next run completes the sync at once.
async fn ctrl_c_stops_a_sync_cleanly_and_the_next_run_resumes(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.seed("Companies", 3000).await;
    let slow_pages =
        serde_json::json!({"path_prefix": "/odata/Companies", "status": 200, "delay_ms": 100, "times": 1000});
    add_fault(&svc.client, &svc.fieldreport, slow_pages).await;
    let sync = || svc.command(&["fieldreport", "sync", "companies"]).fieldreport(&svc).spawn();
    let child = sync();
    let mut stored = 0;
    for _ in 0..400 {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM fieldreport_records WHERE entity = 'companies'")
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
        stored = n;
        if stored >= 300 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(stored >= 300, "the sync got going");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let interrupted = child.wait_with_output().unwrap();
    assert_eq!(interrupted.status.code(), Some(130), "{}", text(&interrupted.stderr));
    assert!(
        text(&interrupted.stderr).contains("run the same command again to resume"),
        "{}",
        text(&interrupted.stderr)
    );
    let (kept,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM fieldreport_records WHERE entity = 'companies'")
        .fetch_one(svc.store().pool())
        .await
        .unwrap();
    assert!(kept >= stored && kept < 3000, "what was stored is kept: {kept}");

    clear_faults(&svc.client, &svc.fieldreport).await;
    let resumed = sync().wait_with_output().unwrap();
    assert!(resumed.status.success(), "the lease was released: {}", text(&resumed.stderr));
    let (total,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM fieldreport_records WHERE entity = 'companies'")
        .fetch_one(svc.store().pool())
        .await
        .unwrap();
    assert!(total >= 3000, "the sync completed: {total}");
    assert!(text(&resumed.stdout).contains(&format!("companies: fetched {total}")), "{}", text(&resumed.stdout));
    svc.stop().await;
}

on_both_databases!(
    ctrl_c_stops_a_sync_cleanly_and_the_next_run_resumes,
    users_and_token_revocation_from_the_command_line,
    migrate_creates_the_schema,
    fieldreport_sync_from_the_command_line,
    erp_setup_and_pull_from_the_command_line
);

/// `serve --sandbox` wires the ERP simulator to the service: a change made at the simulator
/// arrives by webhook and becomes a local field-report company.
#[tokio::test]
async fn serve_sandbox_receives_the_erp_simulators_webhooks() {
    let dir = std::env::temp_dir().join(format!("integration-service-sandbox-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Binary::new(["serve", "--sandbox", "--bind", &format!("127.0.0.1:{port}")])
        .current_dir(&dir)
        .env("CALLBACK_ALLOW_PRIVATE", "false")
        .stderr(Stdio::null())
        .spawn();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut erp_root = None;
    let mut registered = false;
    let mut expected_ports = std::collections::BTreeSet::from([port]);
    let mut warned = false;
    loop {
        let mut line = String::new();
        assert!(std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0, "serve --sandbox ended early");
        if let Some(url) = line.trim().strip_prefix("sandbox: ERP simulator at ") {
            erp_root = Some(url.to_string());
        }
        if let Some((_, url)) = line.trim().strip_prefix("sandbox: ").and_then(|rest| rest.split_once(" simulator at "))
        {
            expected_ports.insert(reqwest::Url::parse(url).unwrap().port().unwrap());
        }
        registered |= line.contains("ERP webhooks for customer, contact and article registered");
        warned |= line.starts_with("sandbox: warning: overrides CALLBACK_ALLOW_PRIVATE=false with true");
        if line.contains("listening on") {
            break;
        }
    }
    assert!(registered, "the webhook registration is announced before the service listens");
    assert!(warned, "the sandbox says that it overrides CALLBACK_ALLOW_PRIVATE=false");
    assert_eq!(expected_ports.len(), 4, "the service's port and three simulators': {expected_ports:?}");
    assert_eq!(listening_ports(child.id()), expected_ports, "only the public address and the simulators listen");
    let erp_root = erp_root.expect("the ERP simulator's address is printed");

    let database_url = format!("sqlite://{}/var/integration-service.db", dir.display());
    let created =
        cli(&database_url, &["user", "create", "--email", "ops@example.com", "--password-stdin"], Some("sandbox-pass"));
    assert!(created.status.success(), "{}", text(&created.stderr));
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    crate::common::contract::served_at(&base);
    let login: serde_json::Value = client
        .post(format!("{base}/api/v1/login"))
        .json(&serde_json::json!({"email": "ops@example.com", "password": "sandbox-pass"}))
        .json_value()
        .await;
    let token = login["access_token"].as_str().unwrap().to_string();
    let changed = client
        .put(format!("{erp_root}/customer/id/6?ignoreMissingProperties=true"))
        .header("AuthenticationToken", "sandbox-erp-key")
        .json(&serde_json::json!({"company": "Schmidt & Partner mbB"}))
        .checked()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let mut found = serde_json::Value::Null;
    for _ in 0..100 {
        let answer: serde_json::Value = client
            .get(format!("{base}/api/v1/fieldreport/show/companies/ExternalId/6"))
            .bearer_auth(&token)
            .json_value()
            .await;
        if answer["data"].get(0).is_some() {
            found = answer["data"][0].clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(found["Name"], "Schmidt & Partner mbB", "{found}");
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert!(child.wait().unwrap().success());
}

/// The TCP ports the process `pid` listens on: its sockets (`/proc/<pid>/fd`) that the
/// kernel's tables (`/proc/<pid>/net/tcp`, `tcp6`) list in state LISTEN.
fn listening_ports(pid: u32) -> std::collections::BTreeSet<u16> {
    let sockets: std::collections::BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut ports = std::collections::BTreeSet::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap();
        for row in text.lines().skip(1) {
            let columns: Vec<&str> = row.split_whitespace().collect();
            // local address, state (0A = LISTEN), inode
            let (local, state, inode) = (columns[1], columns[3], columns[9]);
            if state == "0A" && sockets.contains(inode) {
                let port = local.rsplit(':').next().unwrap();
                ports.insert(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports
}

#[test]
fn a_bad_setting_stops_with_one_line_naming_it() {
    let output = Binary::new(["serve"]).env("BIND_ADDRESS", "somewhere").output();
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("configuration error: BIND_ADDRESS:"), "{stderr}");
}

#[test]
fn openapi_prints_the_committed_document() {
    let output = Binary::new(["openapi"]).output();
    assert!(output.status.success());
    assert_eq!(text(&output.stdout), DOCUMENT);
}

#[test]
fn serve_starts_with_no_configuration_and_stops_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("integration-service-serve-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Binary::new(["serve", "--bind", &format!("127.0.0.1:{port}")]).current_dir(&dir).spawn();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert!(line.contains(&format!("listening on http://127.0.0.1:{port}")), "{line}");
    assert!(dir.join("var/integration-service.db").is_file(), "the SQLite file is created under ./var/");

    let health = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
        use std::io::Read;
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    });
    assert!(health.unwrap().starts_with("HTTP/1.1 200"));

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "exit after SIGTERM: {:?}", output.status);
    assert!(text(&output.stderr).contains("stopped"), "{}", text(&output.stderr));
}

#[test]
fn config_file_is_read_and_the_environment_wins() {
    let dir = std::env::temp_dir().join(format!("integration-service-config-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("service.toml");
    std::fs::write(&file, "database_url = \"sqlite::memory:\"\nlog_format = \"yaml\"\n").unwrap();
    // The file's bad value is reported with the setting's name ...
    let from_file = Binary::new(["--config", file.to_str().unwrap(), "migrate"]).output();
    assert_eq!(from_file.status.code(), Some(2));
    assert!(text(&from_file.stderr).starts_with("configuration error: LOG_FORMAT:"), "{}", text(&from_file.stderr));
    // ... and the environment overrides it.
    let overridden = Binary::new(["--config", file.to_str().unwrap(), "migrate"]).env("LOG_FORMAT", "json").output();
    assert!(overridden.status.success(), "{}", text(&overridden.stderr));
    assert!(text(&overridden.stdout).contains("sqlite::memory:"), "{}", text(&overridden.stdout));
    let missing = Binary::new(["--config", "/nonexistent/x.toml", "migrate"]).output();
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("/nonexistent/x.toml"));
}

/// A refused argument prints the field and reason the HTTP answer gives, and every message
/// once, not repeated by its own cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_print_their_reason_once() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let url = svc.database_url.clone();
    let stage = cli(&url, &["fieldreport", "post", "9"], None);
    assert!(!stage.status.success());
    let stderr = text(&stage.stderr);
    assert!(stderr.contains("stage: The stage is 1 (reference data)"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let unconfigured = cli(&url, &["fieldreport", "sync", "companies"], None);
    assert!(!unconfigured.status.success());
    let stderr = text(&unconfigured.stderr);
    assert_eq!(stderr.matches("not configured").count(), 1, "{stderr}");
    assert!(stderr.contains("FIELDREPORT_BASE_URL"), "{stderr}");
    let short = cli(&url, &["user", "create", "--email", "not-an-email", "--password-stdin"], Some("short\n"));
    let stderr = text(&short.stderr);
    assert!(stderr.contains("email: The email must be a valid email address."), "{stderr}");
    assert!(stderr.contains("password: The password must be at least 8 characters."), "{stderr}");
    svc.stop().await;
}

/// Every command's help names the environment variables it reads: `serve` all of them, the
/// database commands `DATABASE_URL`, the field-report and ERP tools their upstream's settings.
#[test]
fn each_command_names_the_environment_variables_it_reads() {
    let help = |args: &[&str]| {
        let output = Binary::new(args).args(["--help"]).output();
        assert!(output.status.success(), "{args:?} --help: {}", text(&output.stderr));
        text(&output.stdout)
    };
    assert!(help(&[]).contains("docs/configuration.md"));
    let serve = help(&["serve"]);
    for name in integration_service::config::SETTING_NAMES {
        assert!(serve.contains(name), "serve --help does not name {name}:\n{serve}");
    }
    assert!(serve.contains("[env: BIND_ADDRESS"), "{serve}");
    for command in [
        &["migrate"][..],
        &["user", "create"],
        &["user", "list"],
        &["token", "create"],
        &["token", "list"],
        &["token", "revoke"],
        &["fieldreport", "sync"],
        &["jobs", "run"],
    ] {
        assert!(help(command).contains("DATABASE_URL"), "{command:?} --help does not name DATABASE_URL");
    }
    for command in [&["fieldreport"][..], &["fieldreport", "post"], &["erp", "pull"]] {
        assert!(help(command).contains("FIELDREPORT_BASE_URL"), "{command:?}");
    }
    assert!(help(&["erp", "setup"]).contains("ERP_API_KEY"));
    for command in [&["erp", "webhooks"][..], &["erp", "webhooks", "register"], &["erp", "webhooks", "unregister"]] {
        assert!(help(command).contains("ERP_WEBHOOK_SECRET"), "{command:?}");
    }
    assert!(help(&["sandbox"]).contains("LOG_FORMAT"));
}

/// A setting in the environment is taken as written, as it is from the file: `0042` is not
/// read as the number 42, nor `"x"` stripped of its quotes; a value that is not UTF-8 stops
/// the start with one line naming the setting (and not its value).
#[tokio::test]
async fn environment_settings_are_taken_as_written() {
    let (instance, _sandboxes, store) =
        crate::common::process::Instance::start(Db::Sqlite, &[("METRICS_TOKEN", "0042")]).await;
    store.close().await;
    let scrape = instance.client.get(instance.url("/metrics")).bearer_auth("0042").send().await.unwrap();
    assert_eq!(scrape.status(), 200, "METRICS_TOKEN=0042 was read as another token");
    instance.stop(&[]).await;

    let quoted = Binary::new(["migrate"]).env("DATABASE_URL", "\"sqlite::memory:\"").output();
    assert_eq!(quoted.status.code(), Some(2), "{}", text(&quoted.stdout));
    assert!(text(&quoted.stderr).starts_with("configuration error: DATABASE_URL:"), "{}", text(&quoted.stderr));

    use std::os::unix::ffi::OsStrExt;
    let password = std::ffi::OsStr::from_bytes(b"secret-\xff-password");
    let output =
        Binary::new(["migrate"]).env("DATABASE_URL", "sqlite::memory:").env("FIELDREPORT_PASSWORD", password).output();
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(stderr, "configuration error: FIELDREPORT_PASSWORD: is not valid UTF-8\n");
}
