//! Named tokens with abilities: made, listed and revoked from the command line, and each
//! operation refusing a token without the ability it names.

use crate::common::{Api, JsonAnswer};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::binary::{cli, text};
use crate::common::{Db, EMAIL, TestService, error_body};

/// `token create` for the test's user; returns the token printed.
fn create(url: &str, args: &[&str]) -> String {
    let mut all = vec!["token", "create", "--email", EMAIL];
    all.extend_from_slice(args);
    let created = cli(url, &all, None);
    assert!(created.status.success(), "{args:?}: {}", text(&created.stderr));
    let token = text(&created.stdout).trim().to_string();
    assert!(
        token.split_once('|').is_some_and(|(id, secret)| id.parse::<i64>().is_ok() && secret.len() == 40),
        "{token}"
    );
    token
}

/// `token create` that must fail; returns its standard error.
fn refused(url: &str, args: &[&str]) -> String {
    let mut all = vec!["token", "create", "--email", EMAIL];
    all.extend_from_slice(args);
    let created = cli(url, &all, None);
    assert!(!created.status.success(), "{args:?} was accepted");
    assert!(text(&created.stdout).is_empty(), "no token is printed");
    text(&created.stderr)
}

async fn status(svc: &TestService, token: &str, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
    svc.call(token, method, path, body).await
}

/// The answer to `GET path` once it is 401. A revocation made by another process reaches the
/// service's token cache on Postgres by a notification, milliseconds later (documented in
/// src/store/engine/token_cache.rs); the poll is a guard against a hang, not a timing claim.
async fn refused_once_revoked(svc: &TestService, token: &str, path: &str) -> reqwest::Response {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let answer = status(svc, token, Method::GET, path, None).await;
        if answer.status() == 401 || std::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn named_tokens_hold_only_their_abilities(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let url = svc.database_url.clone();
    let login = svc.user_token().await;

    let reader = create(&url, &["--name", "n8n", "--ability", "fieldreport:read"]);
    svc.remember_secret(&reader);
    // Reading the mirror is allowed; writing it, leasing and ERP routes are not.
    let listed = status(&svc, &reader, Method::GET, "/api/v1/fieldreport/companies", None).await;
    assert_eq!(listed.status(), 200);
    let write = json!({"Id": "c-1", "Version": 1, "Name": "ACME"});
    let body = error_body(
        status(&svc, &reader, Method::POST, "/api/v1/fieldreport/companies", Some(write.clone())).await,
        403,
    )
    .await;
    assert_eq!(body["error_code"], "missing_ability");
    assert!(body["message"].as_str().unwrap().contains("`fieldreport:write`"), "{body}");
    let body = error_body(status(&svc, &reader, Method::GET, "/api/v1/leasing/calculate", None).await, 403).await;
    assert_eq!(body["error_code"], "missing_ability");
    assert_eq!(body["success"], false, "the leasing envelope: {body}");
    assert!(body["message"].as_str().unwrap().contains("`leasing`"), "{body}");
    let body = error_body(status(&svc, &reader, Method::GET, "/api/v1/erp/setup", None).await, 403).await;
    assert!(body["message"].as_str().unwrap().contains("`erp`"), "{body}");
    let body = error_body(status(&svc, &reader, Method::GET, "/api/v1/fieldreport/show", None).await, 403).await;
    assert!(body["message"].as_str().unwrap().contains("`fieldreport:tools`"), "{body}");
    let job = json!({"kind": "fieldreport.sync", "target": "companies"});
    let body = error_body(status(&svc, &reader, Method::POST, "/api/v1/jobs", Some(job)).await, 403).await;
    assert!(body["message"].as_str().unwrap().contains("`jobs`"), "{body}");
    // Who am I needs no ability; the login token may do everything.
    let me: Value = status(&svc, &reader, Method::GET, "/api/v1/user", None).await.json_value().await;
    assert_eq!(me["email"], EMAIL);
    let created = status(&svc, &login, Method::POST, "/api/v1/fieldreport/companies", Some(write)).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    let record = format!("/api/v1/fieldreport/companies/{}", created["data"]["Id"].as_str().unwrap());
    let writer = create(&url, &["--name", "writer", "--ability", "fieldreport:write", "--ability", "leasing"]);
    svc.remember_secret(&writer);
    let patched = json!({"Name": "ACME 2"});
    let changed = status(&svc, &writer, Method::PATCH, &record, Some(patched)).await;
    assert_eq!(changed.status(), 200);
    error_body(status(&svc, &writer, Method::GET, &record, None).await, 403).await;
    assert_eq!(status(&svc, &writer, Method::GET, "/api/v1/leasing/calculate", None).await.status(), 200);
    // Without an ability named, a token may do everything (as Sanctum's default).
    let everything = create(&url, &["--name", "admin-script", "--expires-in-days", "30"]);
    svc.remember_secret(&everything);
    assert_ne!(status(&svc, &everything, Method::GET, "/api/v1/erp/setup", None).await.status(), 403);
    assert_eq!(status(&svc, &everything, Method::GET, "/api/v1/fieldreport/companies", None).await.status(), 200);

    // Refusals name what is wrong, once.
    let stderr = refused(&url, &["--name", "n8n"]);
    assert!(stderr.contains("already has a token named \"n8n\""), "{stderr}");
    let stderr = refused(&url, &["--name", "login"]);
    assert!(stderr.contains("name: The name `login` is kept"), "{stderr}");
    let stderr = refused(&url, &["--name", "x", "--ability", "fieldreport"]);
    assert!(stderr.contains("ability: Unknown ability \"fieldreport\""), "{stderr}");
    assert_eq!(stderr.matches("Unknown ability").count(), 1, "{stderr}");
    let stderr = refused(&url, &["--name", "x", "--expires-in-days", "0"]);
    assert!(stderr.contains("expires_in_days"), "{stderr}");
    let unknown = cli(&url, &["token", "create", "--email", "ghost@example.com", "--name", "x"], None);
    assert!(!unknown.status.success() && text(&unknown.stderr).contains("ghost@example.com"));

    // The list: names, abilities, times; never a secret. A use is written within seconds
    // (batched, not by the request that used the token).
    let mut listed = String::new();
    for _ in 0..30 {
        let output = cli(&url, &["token", "list", "--email", EMAIL], None);
        assert!(output.status.success(), "{}", text(&output.stderr));
        listed = text(&output.stdout);
        if listed.lines().any(|line| line.starts_with("n8n\t") && line.split('\t').nth(3).is_some_and(|t| t != "-")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    let lines: Vec<Vec<&str>> = listed.lines().map(|line| line.split('\t').collect()).collect();
    assert_eq!(lines[0], ["NAME", "ABILITIES", "CREATED", "LAST USED", "EXPIRES"]);
    let row = |name: &str| lines.iter().find(|row| row[0] == name).unwrap_or_else(|| panic!("{name} in {listed}"));
    assert_eq!(row("login")[1], "*");
    assert_eq!(row("n8n")[1], "fieldreport:read");
    assert_eq!(row("writer")[1], "leasing,fieldreport:write");
    assert_eq!(row("admin-script")[1], "*");
    assert_ne!(row("n8n")[3], "-", "a used token shows when it was last used");
    assert_eq!(row("n8n")[4], "-", "no expiry");
    assert_ne!(row("admin-script")[4], "-", "30 days");
    assert!(row("n8n")[2].ends_with('Z'), "{listed}");
    for token in [&login, &reader, &writer, &everything] {
        let secret = token.split_once('|').unwrap().1;
        assert!(!listed.contains(secret), "a secret in the list");
    }

    // Revoking one by name ends it at once and leaves the others.
    let revoked = cli(&url, &["token", "revoke", "--email", EMAIL, "--name", "n8n"], None);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    assert!(text(&revoked.stdout).contains("revoked 1 token(s) named \"n8n\""), "{}", text(&revoked.stdout));
    error_body(refused_once_revoked(&svc, &reader, "/api/v1/fieldreport/companies").await, 401).await;
    assert_eq!(status(&svc, &writer, Method::GET, "/api/v1/leasing/calculate", None).await.status(), 200);
    let again = cli(&url, &["token", "revoke", "--email", EMAIL, "--name", "n8n"], None);
    assert!(!again.status.success() && text(&again.stderr).contains("no token named \"n8n\""));
    let all = cli(&url, &["token", "revoke", "--email", EMAIL, "--all"], None);
    assert!(text(&all.stdout).contains("revoked 3 token(s)"), "{}", text(&all.stdout));
    error_body(refused_once_revoked(&svc, &login, "/api/v1/user").await, 401).await;
    svc.stop().await;
}

async fn queue(svc: &TestService, token: &str, kind: &str) -> reqwest::Response {
    svc.call(token, Method::POST, "/api/v1/jobs", Some(json!({"kind": kind}))).await
}

/// A job does the work of a route (a sync, a pull): queuing it needs that route's ability
/// besides `jobs`, or a token could do through a job what its abilities refuse it directly.
async fn a_job_needs_the_ability_of_its_work(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let url = svc.database_url.clone();
    svc.user_token().await;
    let jobs = create(&url, &["--name", "scheduler", "--ability", "jobs"]);
    svc.remember_secret(&jobs);
    for (kind, needed) in
        [("fieldreport.sync", "fieldreport:tools"), ("fieldreport.post", "fieldreport:tools"), ("erp.pull", "erp")]
    {
        let body = error_body(queue(&svc, &jobs, kind).await, 403).await;
        assert_eq!(body["error_code"], "missing_ability", "{kind}: {body}");
        assert!(body["message"].as_str().unwrap().contains(&format!("`{needed}`")), "{kind}: {body}");
    }
    assert_eq!(status(&svc, &jobs, Method::GET, "/api/v1/jobs", None).await.status(), 200, "following jobs");
    let unknown = queue(&svc, &jobs, "telepathy").await;
    assert_eq!(unknown.status(), 422, "an unknown kind is still 422");
    let syncer = create(&url, &["--name", "syncer", "--ability", "jobs", "--ability", "fieldreport:tools"]);
    svc.remember_secret(&syncer);
    assert_eq!(queue(&svc, &syncer, "fieldreport.sync").await.status(), 202);
    error_body(queue(&svc, &syncer, "erp.pull").await, 403).await;
    svc.stop().await;
}

on_both_databases!(named_tokens_hold_only_their_abilities, a_job_needs_the_ability_of_its_work);
