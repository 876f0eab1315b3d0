//! Authorization across areas and users, as a matrix: every operation of `spec/openapi.json`
//! that takes a bearer token (read from the document at test time, so a new one cannot slip
//! past) is called with no token, malformed ones, a revoked and an expired named token, a
//! token without the ability the operation names (`x-ability`), and, where the path names a
//! per-user resource, another user's token. Each must be refused as docs/api.md says, and
//! a refused call must change nothing. (`declared_answers.rs` checks that these answers are
//! declared; this checks who is let through.)

use reqwest::Method;
use serde_json::{Value, json};

use super::*;
use crate::common::binary::{cli, text};
use crate::common::contract::Checked;
use crate::common::{Api, DOCUMENT, EMAIL, error_body, execute, leasing_request};

/// One guarded operation of the document.
struct Guarded {
    method: Method,
    template: String,
    ability: Option<String>,
    body: Option<Value>,
}

fn guarded_operations() -> Vec<Guarded> {
    let document: Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut operations = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = Method::from_bytes(method.to_ascii_uppercase().as_bytes()) else { continue };
            let security = op["security"].as_array();
            if !security.is_some_and(|s| s.iter().any(|s| s.get("bearerAuth").is_some())) {
                continue;
            }
            operations.push(Guarded {
                method,
                template: template.clone(),
                ability: op["x-ability"].as_str().map(str::to_string),
                body: op.get("requestBody").map(|b| b["content"]["application/json"]["example"].clone()),
            });
        }
    }
    assert!(operations.len() > 150, "only {} guarded operations", operations.len());
    operations
}

/// Alice's resources, whose ids fill the path parameters.
struct Owned {
    financing: String,
    subscription: String,
    job: i64,
    record: String,
}

/// Who owns the resource a path names, by the parameter and the path before it: what another
/// (non-operator) user is answered there (docs/api.md, "Who sees what"); `None`: nothing of a
/// user's is named.
fn per_user_answer(template: &str, method: &Method) -> Option<(u16, &'static str)> {
    if template.contains("{financingId}") || template.starts_with("/api/v1/leasing/subscriptions/{id}") {
        return Some((404, "not_found"));
    }
    if template == "/api/v1/jobs/{id}/cancel" {
        return Some((403, "not_job_owner"));
    }
    // Jobs are the service's work, seen by every token with `jobs`; one-shot flows are their
    // runner's (checked in leasing's flow tests, which start one).
    assert!(
        template == "/api/v1/jobs/{id}" && method == Method::GET
            || !template.contains("{id}")
            || template.contains("{flowId}"),
        "{method} {template}: whose resource does it name?"
    );
    None
}

impl Guarded {
    fn path(&self, owned: &Owned) -> String {
        let mut path = String::new();
        let mut before = String::new();
        for segment in self.template.split('/').skip(1) {
            let value = match segment {
                "{financingId}" => owned.financing.clone(),
                "{id}" if before == "subscriptions" => owned.subscription.clone(),
                "{id}" if before == "jobs" => owned.job.to_string(),
                "{record}" => owned.record.clone(),
                "{delivery}" | "{monthlyInstalment}" | "{flowId}" => "1".into(),
                "{period}" => "48".into(),
                "{model}" => "customer".into(),
                "{stage}" => "companies".into(),
                other if other.starts_with('{') => "x".into(),
                other => other.to_string(),
            };
            path.push('/');
            path.push_str(&value);
            before = segment.to_string();
        }
        path
    }

    async fn send(&self, svc: &TestService, path: &str, authorization: Option<&str>) -> reqwest::Response {
        let mut request = svc.client.request(self.method.clone(), svc.url(path));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        if let Some(body) = &self.body {
            request = request.json(body);
        }
        request.checked().await.unwrap()
    }
}

/// A named token of the test's user, made with the command line.
fn named(url: &str, args: &[&str]) -> String {
    let mut all = vec!["token", "create", "--email", EMAIL];
    all.extend_from_slice(args);
    let created = cli(url, &all, None);
    assert!(created.status.success(), "{args:?}: {}", text(&created.stderr));
    text(&created.stdout).trim().to_string()
}

async fn own_resources(svc: &TestService, alice: &str) -> Owned {
    let created: Value = svc.post_json(alice, "/api/v1/leasing", leasing_request("Alice GmbH")).await;
    let financing = created["data"]["FinancingId"].as_str().unwrap().to_string();
    let hook = json!({"url": "http://127.0.0.1:9/hook", "description": "alice"});
    let subscription: Value = svc.post_json(alice, "/api/v1/leasing/subscriptions", hook).await;
    svc.remember_secret(subscription["secret"].as_str().unwrap());
    let company = json!({"Id": "c-1", "Version": 1, "Name": "ACME"});
    let record: Value = svc.post_json(alice, "/api/v1/fieldreport/companies", company).await;
    let job = json!({"kind": "fieldreport.sync", "target": "companies"});
    let job: Value = svc.post_json(alice, "/api/v1/jobs", job).await;
    let job = job["id"].as_i64().unwrap();
    // The job's own writes end before the counts are taken.
    for _ in 0..600 {
        let status: Value = svc.get_json(alice, &format!("/api/v1/jobs/{job}")).await;
        if ["succeeded", "failed"].contains(&status["status"].as_str().unwrap()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Owned {
        financing,
        subscription: subscription["id"].as_str().map_or_else(|| subscription["id"].to_string(), str::to_string),
        job,
        record: record["data"]["Id"].as_str().unwrap().to_string(),
    }
}

/// What a refused call could have changed: the rows of every table but those the service's
/// own background work writes meanwhile, and alice's resources as she sees them.
async fn state(svc: &TestService, pool: &sqlx::AnyPool, db: Db, alice: &str, owned: &Owned) -> Vec<String> {
    const BACKGROUND: [&str; 2] = ["leasing_events", "leasing_watches"];
    let mut seen = Vec::new();
    for table in tables(pool, db).await {
        if !BACKGROUND.contains(&table.as_str()) && !table.starts_with("_sqlx") {
            seen.push(format!("{table}: {}", count(pool, &table).await));
        }
    }
    let secret: String =
        sqlx::query_scalar(sqlx::AssertSqlSafe("SELECT CAST(secret AS TEXT) FROM leasing_subscriptions".to_string()))
            .fetch_one(pool)
            .await
            .unwrap();
    seen.push(format!("subscription secret {}", integration_service::digest::sha256_hex(secret.as_bytes())));
    for path in [
        format!("/api/v1/leasing/subscriptions/{}", owned.subscription),
        format!("/api/v1/fieldreport/companies/{}", owned.record),
    ] {
        seen.push(format!("{path}: {}", svc.get_json(alice, &path).await));
    }
    let job: Value = svc.get_json(alice, &format!("/api/v1/jobs/{}", owned.job)).await;
    seen.push(format!("job {}: {}", owned.job, job["status"]));
    seen
}

async fn every_guarded_operation_refuses_whom_it_must(db: Db) {
    // Alice's subscription calls a closed port on this machine.
    let svc = TestService::start(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let url = svc.database_url.clone();
    let alice = svc.user_token().await;
    let (bob, _root) = svc.bob_and_root().await;
    let owned = own_resources(&svc, &alice).await;
    let pool = database(&svc).await;

    let revoked = named(&url, &["--name", "gone"]);
    let revoke = cli(&url, &["token", "revoke", "--email", EMAIL, "--name", "gone"], None);
    assert!(revoke.status.success(), "{}", text(&revoke.stderr));
    let expired = named(&url, &["--name", "old", "--expires-in-days", "1"]);
    let expired_id: i64 = expired.split_once('|').unwrap().0.parse().unwrap();
    execute(&pool, &format!("UPDATE personal_access_tokens SET expires_at = 1 WHERE id = {expired_id}")).await;
    let jobs_only = named(&url, &["--name", "jobs-only", "--ability", "jobs"]);
    let leasing_only = named(&url, &["--name", "leasing-only", "--ability", "leasing"]);
    let (alice_id, _) = alice.split_once('|').unwrap();
    let wrong_secret = format!("{alice_id}|{}", "A".repeat(40));
    for secret in [&revoked, &expired, &jobs_only, &leasing_only] {
        svc.remember_secret(secret);
    }
    let unauthenticated: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("no scheme", Some(alice.clone())),
        ("basic", Some(format!("Basic {alice}"))),
        ("malformed", Some("Bearer not|a-token".into())),
        ("wrong secret", Some(format!("Bearer {wrong_secret}"))),
        ("revoked", Some(format!("Bearer {revoked}"))),
        ("expired", Some(format!("Bearer {expired}"))),
    ];

    let before = state(&svc, &pool, db, &alice, &owned).await;
    let mut wrong = Vec::new();
    let operations = guarded_operations();
    for op in &operations {
        let path = op.path(&owned);
        let what = format!("{} {}", op.method, path);
        for (case, header) in &unauthenticated {
            let answer = op.send(&svc, &path, header.as_deref()).await;
            if answer.status() != 401 {
                wrong.push(format!("{what} ({case}): {}", answer.status()));
                continue;
            }
            assert_eq!(error_body(answer, 401).await["error_code"], "unauthenticated", "{what} ({case})");
        }
        if let Some(ability) = &op.ability {
            let token = if ability == "jobs" { &leasing_only } else { &jobs_only };
            let answer = op.send(&svc, &path, Some(&format!("Bearer {token}"))).await;
            if answer.status() != 403 {
                wrong.push(format!("{what} (without `{ability}`): {}", answer.status()));
            } else {
                let body = error_body(answer, 403).await;
                assert_eq!(body["error_code"], "missing_ability", "{what}: {body}");
                assert!(body["message"].as_str().unwrap().contains(&format!("`{ability}`")), "{what}: {body}");
            }
        }
        if let Some((status, code)) = per_user_answer(&op.template, &op.method) {
            let answer = op.send(&svc, &path, Some(&format!("Bearer {bob}"))).await;
            if answer.status() != status {
                wrong.push(format!("{what} (bob): {}", answer.status()));
            } else {
                assert_eq!(error_body(answer, status).await["error_code"], code, "{what} (bob)");
            }
        }
    }
    assert!(wrong.is_empty(), "let through or answered otherwise:\n{}", wrong.join("\n"));
    let after = state(&svc, &pool, db, &alice, &owned).await;
    assert_eq!(before, after, "a refused call changed something");
    pool.close().await;
    svc.stop().await;
}

/// `METRICS_TOKEN` is the scraper's, not a user's: shaped like the first user's token, it
/// still opens no guarded operation. (A user's token on `/metrics` is refused in
/// operations/metrics.)
async fn the_metrics_token_opens_no_guarded_operation(db: Db) {
    let metrics_token = format!("1|{}", "m".repeat(40));
    let svc = TestService::start(db, &[("METRICS_TOKEN", metrics_token.as_str())]).await;
    svc.remember_secret(&metrics_token);
    svc.user_token().await;
    for path in ["/api/v1/user", "/api/v1/jobs", "/api/v1/leasing/subscriptions"] {
        let answer = svc.get(&metrics_token, path).await;
        assert_eq!(error_body(answer, 401).await["error_code"], "unauthenticated", "{path}");
    }
    assert_eq!(svc.get(&metrics_token, "/metrics").await.status(), 200);
    svc.stop().await;
}

on_both_databases!(every_guarded_operation_refuses_whom_it_must, the_metrics_token_opens_no_guarded_operation);
