//! The README's "Five-minute tour", executed verbatim: its `sh` blocks are read from README.md,
//! run by bash in an empty folder with `SERVICE` set to the debug binary and `BASE` to a free
//! loopback port, and every answer they print is checked. Beside it, every relative link of
//! README.md, CHANGELOG.md and docs/ resolves: a newcomer follows them from the front door.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::BINARY;
const README: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
const SECTION: &str = "## Five-minute tour";
/// Generous for a debug build on a busy machine; the tour itself waits a few seconds at most.
const DEADLINE: Duration = Duration::from_secs(240);

/// The `sh` code blocks of the tour section, in order, joined into one script.
fn tour_script() -> String {
    let start = README.find(SECTION).expect("README.md has a \"## Five-minute tour\" section");
    let section = &README[start + SECTION.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut script = String::new();
    let mut in_block = false;
    for line in section.lines() {
        match (in_block, line.trim_end()) {
            (false, "```sh") => in_block = true,
            (true, "```") => {
                in_block = false;
                script.push('\n');
            }
            (true, _) => {
                script.push_str(line);
                script.push('\n');
            }
            _ => {}
        }
    }
    assert!(!in_block, "an unclosed code block in the tour");
    script
}

/// Kills the tour's process group (bash and the service it started) however the test ends.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.0)]).stderr(Stdio::null()).status();
    }
}

/// What [`run_tour`] saw: bash's exit status, its standard output and its standard error, and
/// the guard of the tour's process group. The service the tour stopped with `kill $!` may
/// still be shutting down when bash exits: the caller keeps the guard until it has seen the
/// service stop (dropping it kills the group).
struct Tour {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    _group: Group,
}

/// Runs the tour in `dir`.
fn run_tour(dir: &Path, script: &str) -> Tour {
    use std::os::unix::process::CommandExt;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script_path = dir.join("tour.sh");
    std::fs::write(&script_path, script).unwrap();
    let stdout_path = dir.join("tour.out");
    let stderr_path = dir.join("tour.err");
    let mut child = Command::new("bash")
        .args(["-eu", "-o", "pipefail"])
        .arg(&script_path)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SERVICE", BINARY)
        .env("BIND_ADDRESS", format!("127.0.0.1:{port}"))
        .env("BASE", format!("http://127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let group = Group(child.id());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!(
                "the tour did not finish within {DEADLINE:?}\nstdout:\n{}\nstderr:\n{}\nservice log:\n{}",
                read(&stdout_path),
                read(&stderr_path),
                read(&dir.join("var/serve.log"))
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Tour { status, stdout: read(&stdout_path), stderr: read(&stderr_path), _group: group }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The printed answers, one per line, read in order: each step takes the next line.
struct Answers<'a> {
    lines: std::str::Lines<'a>,
}

impl Answers<'_> {
    fn text(&mut self) -> &str {
        self.lines.next().expect("the tour printed fewer answers than it has steps")
    }

    fn json(&mut self) -> Value {
        let line = self.text();
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON answer ({e}): {line}"))
    }
}

/// Run before the tour's last command stops the service: a sync and a pull as jobs (so that
/// the job and mirror metrics have series), then a scrape of `/metrics` that
/// [`super::operator_files`] holds the alerting rules and the dashboard to.
const SCRAPE_BEFORE_THE_STOP: &str = "\
$SERVICE jobs run fieldreport.sync companies --follow > /dev/null 2>&1
$SERVICE jobs run erp.pull --follow > /dev/null 2>&1
curl -sf \"$BASE/metrics\" > metrics.txt
";
const THE_STOP: &str = "kill $RECEIVER $SERVER";

#[test]
fn the_readme_tour_runs_as_written() {
    let script = tour_script();
    assert!(script.contains("$SERVICE serve --sandbox"), "the tour starts the service through $SERVICE");
    let (tour, after_the_stop) = script.rsplit_once(THE_STOP).expect("the tour ends by stopping the service");
    let script = format!("{tour}{SCRAPE_BEFORE_THE_STOP}{THE_STOP}{after_the_stop}");
    let dir: PathBuf = std::env::temp_dir().join(format!("integration-service-tour-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let tour = run_tour(&dir, &script);
    let (status, stdout, stderr) = (tour.status, &tour.stdout, &tour.stderr);
    let log = read(&dir.join("var/serve.log"));
    assert!(status.success(), "the tour failed ({status})\nstdout:\n{stdout}\nstderr:\n{stderr}\nservice log:\n{log}");
    let context = format!("\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let mut answers = Answers { lines: stdout.lines() };

    // Log in.
    assert_eq!(answers.text(), "created user Ops <ops@example.com> (id 1)", "{context}");
    let login = answers.json();
    assert_eq!(login["token_type"], "Bearer", "{context}");
    let token = login["access_token"].as_str().unwrap();
    let (id, secret) = token.split_once('|').unwrap();
    assert!(id.parse::<u64>().is_ok() && secret.len() == 40, "{token}");
    let user = answers.json();
    assert_eq!((user["email"].as_str(), user["name"].as_str()), (Some("ops@example.com"), Some("Ops")), "{context}");

    // A leasing flow.
    let created = answers.json();
    assert_eq!(created["success"], true, "{context}");
    assert_eq!(created["meta"]["state"], "RequestToGrenke", "{context}");
    assert_eq!(created["data"]["Lessee"]["CompanyName"], "ACME GmbH", "{context}");
    let financing_id = created["data"]["FinancingId"].as_str().unwrap().to_string();
    let ready = answers.json();
    assert_eq!(ready["data"]["FinancingId"], financing_id.as_str(), "{context}");
    assert_eq!(
        (ready["meta"]["state"].as_str(), ready["meta"]["ready_to_sign"].as_bool()),
        (Some("ReadyToSign"), Some(true))
    );
    let flow = answers.json();
    assert_eq!(flow["success"], true, "{context}");
    assert_eq!(flow["data"]["mode"], "e_signature", "{context}");
    assert_eq!(flow["data"]["readyRequest"]["State"], "ReadyToSign", "{context}");
    assert_eq!(flow["data"]["eSignature"]["State"], "AwaitingCustomerSignature", "{context}");
    assert_ne!(flow["data"]["financingId"], financing_id.as_str(), "the flow creates a request of its own");
    let declined = answers.json();
    assert_eq!((declined["success"].as_bool(), declined["error_code"].as_str()), (Some(false), Some("declined")));

    // A field-report write.
    let company = answers.json();
    let company_id = company["data"]["Id"].as_str().unwrap().to_string();
    assert!(company_id.parse::<u64>().is_ok(), "the field-report system assigned the Id: {company}");
    assert_eq!(company["fieldReportResponse"]["Id"], company_id.as_str(), "{context}");
    assert_eq!((company["data"]["Name"].as_str(), company["data"]["Version"].as_u64()), (Some("ACME GmbH"), Some(1)));
    let updated = answers.json();
    assert_eq!(updated["data"]["Name"], "ACME Holding GmbH", "{context}");
    assert_eq!(updated["data"]["Version"], 2, "{context}");
    assert_eq!(updated["fieldReportResponse"]["Version"], 2, "the update was forwarded: {updated}");
    let shown = answers.json();
    assert_eq!(shown["Id"], company_id.as_str(), "{context}");
    assert_eq!((shown["Name"].as_str(), shown["Version"].as_u64()), (Some("ACME Holding GmbH"), Some(2)));
    assert_eq!(shown["Location"]["City"], "Berlin", "{context}");

    // A webhook.
    let customer = answers.json();
    assert_eq!(customer["company"], "Tour Bikes GmbH", "{context}");
    let customer_id = customer["id"].as_str().unwrap().to_string();
    let arrived = answers.json();
    let local = &arrived["data"][0];
    assert_eq!(local["ExternalId"], customer_id.as_str(), "{context}");
    assert_eq!(local["Name"], "Tour Bikes GmbH", "{context}");
    assert_eq!(local["SupportMail"], "hello@tour-bikes.example", "{context}");
    // Told of a change: the subscription (its secret shown), the moving request, its event.
    let subscription = answers.json();
    assert!(subscription["secret"].as_str().is_some_and(|s| s.starts_with("whsec_")), "{context}");
    assert_eq!(subscription["events"], serde_json::json!(["leasing.state_changed"]), "{context}");
    let moving = answers.json();
    assert_eq!(moving["meta"]["state"], "RequestToGrenke", "{context}");
    let moving_id = moving["data"]["FinancingId"].as_str().unwrap();
    let (webhook_id, event) = answers.text().split_once(' ').expect("the webhook-id, then the event");
    let event: Value = serde_json::from_str(event).unwrap_or_else(|e| panic!("not an event ({e}): {context}"));
    assert_eq!((event["type"].as_str(), event["id"].as_str()), (Some("leasing.state_changed"), Some(webhook_id)));
    assert_eq!(event["data"]["financingId"], moving_id, "{context}");
    assert_eq!(event["data"]["previousState"], "RequestToGrenke", "{context}");
    assert_eq!(event["data"]["state"], "ReadyToSign", "{context}");
    assert!(answers.lines.next().is_none(), "more output than steps: {context}");

    // Every metric and label the alerting rules and the dashboard name was in the scrape.
    let metrics = super::operator_files::exposed(&read(&dir.join("metrics.txt")));
    assert!(metrics.contains_key("integration_job_last_success_timestamp_seconds"), "{metrics:?}");
    let problems = super::operator_files::operator_files_against(&metrics);
    assert!(problems.is_empty(), "deploy/ names what the service does not expose:\n{}", problems.join("\n"));
    // docs/operations.md's table of metrics is the scrape's, family by family.
    let problems = super::operator_files::documented_metrics_against(&read(&dir.join("metrics.txt")));
    assert!(problems.is_empty(), "docs/operations.md and /metrics differ:\n{}", problems.join("\n"));

    // The service ran on the tour's database under ./var, had the webhook registered, and was
    // stopped by the tour's last command.
    assert!(dir.join("var/integration-service.db").is_file());
    assert!(log.contains("sandbox: ERP webhooks for customer, contact and article registered"), "{log}");
    let started = Instant::now();
    while !read(&dir.join("var/serve.log")).contains("stopped") {
        assert!(
            started.elapsed() < DEADLINE,
            "the service did not stop after `kill $!`:\n{}",
            read(&dir.join("var/serve.log"))
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Markdown files a reader reaches from the front door: README.md, CHANGELOG.md, docs/*.md.
fn documentation_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("a docs/ folder")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The targets of the inline links `[text](target)` of a Markdown text, outside code blocks
/// and code spans.
fn link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Code spans hold examples, not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push(target.to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut in_block = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_in_the_documentation_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in documentation_files() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !linked.exists() {
                broken.push(format!("{}: {target} (no such file)", file.display()));
                continue;
            }
            if !fragment.is_empty() && linked.extension().is_some_and(|ext| ext == "md") {
                let headings = anchors(&std::fs::read_to_string(&linked).unwrap());
                if !headings.iter().any(|h| h == fragment) {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} relative links found: is the link reader right?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_reader_sees_links_and_skips_code() {
    let text = "See [a](docs/a.md) and [b](b.md#part \"title\").\n`[c](c.md)`\n```\n[d](d.md)\n```\n";
    assert_eq!(link_targets(text), ["docs/a.md", "b.md#part"]);
    assert_eq!(anchor(" Run it: the service (SQLite)"), "run-it-the-service-sqlite");
}
