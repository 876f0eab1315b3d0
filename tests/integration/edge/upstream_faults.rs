//! Every fault the simulators can inject — status 500, 429, a dropped connection, a 30 s delay
//! against a 1 s time-out, malformed JSON, an HTML page instead of JSON — on every kind of
//! upstream call the service makes: each ends in a clear error (`error_code` naming the cause,
//! a message naming the upstream) and leaves the local state as it was.
//!
//! Runs on SQLite only: what is checked is the upstream handling; the local state checks use
//! the same store code on both databases, which the area tests cover on both.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, add_fault, clear_faults, error_body, leasing_request};
use serde_json::{Value, json};

/// One fault: its name, the rule posted to the simulator and the `error_code` it must give.
struct Fault {
    name: &'static str,
    rule: Value,
    error_code: &'static str,
}

fn faults(path_prefix: &str) -> Vec<Fault> {
    let rule = |extra: Value| {
        let mut rule = json!({"path_prefix": path_prefix, "times": 10});
        rule.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        rule
    };
    vec![
        Fault { name: "status 500", rule: rule(json!({"status": 500})), error_code: "upstream_error" },
        Fault { name: "status 429", rule: rule(json!({"status": 429})), error_code: "upstream_busy" },
        Fault { name: "dropped connection", rule: rule(json!({"status": 0})), error_code: "upstream_unavailable" },
        Fault {
            name: "30 s delay against a 1 s time-out",
            rule: rule(json!({"status": 200, "delay_ms": 30_000})),
            error_code: "upstream_timeout",
        },
        Fault {
            name: "malformed JSON",
            rule: rule(json!({"status": 200, "body": "{\"value\": [{\"Id\": "})),
            error_code: "upstream_invalid_response",
        },
        Fault {
            name: "wrong content type",
            rule: rule(
                json!({"status": 200, "body": "<html><body>502 Bad Gateway</body></html>", "content_type": "text/html"}),
            ),
            error_code: "upstream_invalid_response",
        },
    ]
}

async fn start() -> (TestService, String) {
    let svc = TestService::start(
        Db::Sqlite,
        &[
            ("LEASING_TIMEOUT_SECONDS", "1"),
            ("FIELDREPORT_TIMEOUT_SECONDS", "1"),
            ("ERP_TIMEOUT_SECONDS", "1"),
            ("ERP_WEBHOOK_SECRET", "fault-test-secret"),
            ("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"),
        ],
    )
    .await;
    let token = svc.user_token().await;
    (svc, token)
}

/// The answer must be a clear error for `fault` from `system`.
async fn assert_clear_error(response: reqwest::Response, fault: &Fault, system: &str, call: &str) {
    let status = response.status().as_u16();
    assert!(status >= 500, "{call} under {}: status {status}", fault.name);
    let body = error_body(response, status).await;
    assert_eq!(body["error_code"], fault.error_code, "{call} under {}: {body}", fault.name);
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(system), "{call} under {}: the message names the {system}: {message}", fault.name);
}

async fn show_company(svc: &TestService, token: &str, id: &str) -> (u16, Value) {
    let answer = svc.get(token, &format!("/api/v1/fieldreport/companies/{id}")).await;
    let status = answer.status().as_u16();
    (status, answer.json_value().await)
}

/// Creates a company through the service (forwarded); its Id.
async fn create_company(svc: &TestService, token: &str, company: &Value) -> String {
    let created = svc
        .client
        .post(svc.url("/api/v1/fieldreport/companies"))
        .bearer_auth(token)
        .json(company)
        .checked()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json_value().await;
    created["data"]["Id"].as_str().unwrap().to_string()
}

/// Leasing: create (with an idempotency key, which a failure must leave free) and read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leasing_calls_fail_clearly_and_change_nothing() {
    let (svc, token) = start().await;
    let created: Value = svc.post_json(&token, "/api/v1/leasing", leasing_request("ACME GmbH")).await;
    let financing_id = created["data"]["FinancingId"].as_str().expect("a request was created").to_string();
    for fault in faults("/basic/v1/requests") {
        add_fault(&svc.client, &svc.leasing, fault.rule.clone()).await;
        let key = format!("fault-{}", fault.name.replace(' ', "-"));
        let create = || {
            svc.client
                .post(svc.url("/api/v1/leasing"))
                .bearer_auth(&token)
                .header("idempotency-key", &key)
                .json(&leasing_request("ACME GmbH"))
                .checked()
        };
        assert_clear_error(create().await.unwrap(), &fault, "leasing provider", "create").await;
        let show = svc.get(&token, &format!("/api/v1/leasing/{financing_id}")).await;
        assert_clear_error(show, &fault, "leasing provider", "show").await;
        clear_faults(&svc.client, &svc.leasing).await;
        // The failed attempt left the key free: the retry is carried out.
        let retried = create().await.unwrap();
        assert_eq!(retried.status(), 201, "create after {}", fault.name);
    }
    svc.stop().await;
}

/// Field-report: create, update, delete (forwarded writes) and a sync (reads). Each fails
/// clearly: a refusal (429) with its own code and nothing changed; a fault after which the
/// write may have been applied (the upstream cannot be read back under the same fault) with
/// `upstream_outcome_unknown`. Once the fault is gone, sending the same write again succeeds
/// without a sync and creates nothing twice; a delete left pending is sent by `post`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fieldreport_calls_fail_clearly_and_converge_when_sent_again() {
    let (svc, token) = start().await;
    let write = |method: reqwest::Method, path: String, body: Option<Value>| {
        let request = svc.client.request(method, svc.url(&path)).bearer_auth(&token);
        match body {
            Some(body) => request.json(&body).checked(),
            None => request.checked(),
        }
    };
    let cursor = || async {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT cursor_value FROM fieldreport_sync_state WHERE entity = 'companies'")
                .fetch_optional(svc.store().pool())
                .await
                .unwrap();
        row.and_then(|(c,)| c)
    };
    for (n, mut fault) in faults("/odata/Companies").into_iter().enumerate() {
        // Every call of the round fails, the reads back and their retries included.
        fault.rule["times"] = json!(1000);
        let existing = json!({"Id": "0", "Version": 1, "Name": "Before GmbH", "ExternalId": format!("F-{n}-a")});
        let id = create_company(&svc, &token, &existing).await;
        let (_, before) = show_company(&svc, &token, &id).await;
        let cursor_before = cursor().await;
        let new = json!({"Id": "0", "Version": 1, "Name": "New GmbH", "ExternalId": format!("F-{n}-b")});
        let change = json!({"Name": "Changed GmbH"});
        let company_path = format!("/api/v1/fieldreport/companies/{id}");

        add_fault(&svc.client, &svc.fieldreport, fault.rule.clone()).await;
        let create =
            write(reqwest::Method::POST, "/api/v1/fieldreport/companies".into(), Some(new.clone())).await.unwrap();
        assert_clear_write_error(create, &fault, "create").await;
        let update = write(reqwest::Method::PATCH, company_path.clone(), Some(change.clone())).await.unwrap();
        let update_unknown = assert_clear_write_error(update, &fault, "update").await;
        let sync = svc.get(&token, "/api/v1/fieldreport/sync/companies").await;
        assert_clear_error(sync, &fault, "field-report", "sync").await;
        clear_faults(&svc.client, &svc.fieldreport).await;
        assert_eq!(cursor().await, cursor_before, "a failed sync records no cursor ({})", fault.name);
        if !update_unknown {
            assert_eq!(show_company(&svc, &token, &id).await, (200, before.clone()), "after {}", fault.name);
        }

        // Sent again: each write succeeds, and the create exists once upstream.
        let create =
            write(reqwest::Method::POST, "/api/v1/fieldreport/companies".into(), Some(new.clone())).await.unwrap();
        assert_eq!(create.status(), 201, "create again after {}: {}", fault.name, create.text().await.unwrap());
        let copies = upstream_companies(&svc, &format!("F-{n}-b")).await;
        assert_eq!(copies, 1, "the create exists once upstream after {}", fault.name);
        let update = write(reqwest::Method::PATCH, company_path.clone(), Some(change.clone())).await.unwrap();
        assert_eq!(update.status(), 200, "update again after {}: {}", fault.name, update.text().await.unwrap());
        let (_, shown) = show_company(&svc, &token, &id).await;
        assert_eq!(shown["Name"], "Changed GmbH", "after {}", fault.name);

        // A delete under the fault, then settled: sent again (refused before) or by post.
        add_fault(&svc.client, &svc.fieldreport, fault.rule.clone()).await;
        let delete = write(reqwest::Method::DELETE, company_path.clone(), None).await.unwrap();
        let delete_unknown = assert_clear_write_error(delete, &fault, "delete").await;
        clear_faults(&svc.client, &svc.fieldreport).await;
        if delete_unknown {
            assert_eq!(show_company(&svc, &token, &id).await.0, 404, "pending deletes stay deleted ({})", fault.name);
            let posted: Value = svc.get_json(&token, "/api/v1/fieldreport/post/2/delete/companies").await;
            let report = &posted["data"][0];
            let settled = report["pushed"].as_u64().unwrap() + report["recovered"].as_u64().unwrap();
            assert_eq!(settled, 1, "post settles the delete after {}: {posted}", fault.name);
        } else {
            let delete = write(reqwest::Method::DELETE, company_path.clone(), None).await.unwrap();
            assert_eq!(delete.status(), 204, "delete again after {}", fault.name);
        }
        assert_eq!(show_company(&svc, &token, &id).await.0, 404, "after {}", fault.name);
        assert_eq!(upstream_companies(&svc, &format!("F-{n}-a")).await, 0, "deleted upstream after {}", fault.name);
    }
    svc.stop().await;
}

/// A forwarded write under `fault` fails clearly: a refusal with the fault's own code, else
/// (the write may have been applied, and the upstream cannot be read back under the same
/// fault) 504 `upstream_outcome_unknown`. Whether the outcome is unknown.
async fn assert_clear_write_error(response: reqwest::Response, fault: &Fault, call: &str) -> bool {
    let status = response.status().as_u16();
    let body = error_body(response, status).await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("field-report"), "{call} under {}: the message names the system: {body}", fault.name);
    if body["error_code"] == "upstream_outcome_unknown" {
        assert_eq!(status, 504, "{call} under {}: {body}", fault.name);
        assert_ne!(fault.name, "status 429", "a 429 is a refusal: nothing was applied");
        return true;
    }
    assert!(status >= 500, "{call} under {}: status {status}", fault.name);
    assert_eq!(body["error_code"], fault.error_code, "{call} under {}: {body}", fault.name);
    false
}

/// How many companies with this `ExternalId` the field-report simulator holds.
async fn upstream_companies(svc: &TestService, external_id: &str) -> usize {
    let filter = [("$filter", format!("ExternalId eq '{external_id}'"))];
    let answer = svc.odata(reqwest::Method::GET, "Companies").query(&filter).json_value().await;
    answer["value"].as_array().unwrap().len()
}

/// A forwarded write whose answer is lost is settled by reading the upstream before answering:
/// a create (found by its `ExternalId`), an update (at the version it carried) and a delete
/// (gone) that the upstream applied but answered after the service's time-out are successes,
/// and the next write needs no sync; a delete the upstream failed before applying (500, the
/// record still there) is `upstream_unavailable`, with the record back in the mirror.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_write_without_an_answer_is_settled_by_reading_the_upstream() {
    let (svc, token) = start().await;
    let create = |name: &str| json!({"Id": "0", "Version": 1, "Name": name});
    let delete = |id: String| {
        svc.client.delete(svc.url(&format!("/api/v1/fieldreport/companies/{id}"))).bearer_auth(&token).checked()
    };
    let patch = |id: &str, name: &str| {
        svc.client
            .patch(svc.url(&format!("/api/v1/fieldreport/companies/{id}")))
            .bearer_auth(&token)
            .json(&json!({"Name": name}))
            .checked()
    };
    // Carried out, then answered after the service's 1 s time-out.
    let late = |path: String| json!({"path_prefix": path, "status": 200, "answer_delay_ms": 3000});

    add_fault(&svc.client, &svc.fieldreport, late("/odata/Companies".into())).await;
    let created = svc
        .post(
            &token,
            "/api/v1/fieldreport/companies",
            json!({"Id": "0", "Version": 1, "Name": "Late GmbH", "ExternalId": "LATE-1"}),
        )
        .await;
    assert_eq!(created.status(), 201, "the create applied: {}", created.text().await.unwrap());
    clear_faults(&svc.client, &svc.fieldreport).await;
    assert_eq!(upstream_companies(&svc, "LATE-1").await, 1);
    let found: Value = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/LATE-1").await;
    let late_id = found["data"][0]["Id"].as_str().unwrap().to_string();

    add_fault(&svc.client, &svc.fieldreport, late(format!("/odata/Companies({late_id}L)"))).await;
    let updated = patch(&late_id, "Later GmbH").await.unwrap();
    assert_eq!(updated.status(), 200, "the update applied: {}", updated.text().await.unwrap());
    clear_faults(&svc.client, &svc.fieldreport).await;
    let (_, shown) = show_company(&svc, &token, &late_id).await;
    assert_eq!((shown["Name"].as_str(), shown["Version"].as_i64()), (Some("Later GmbH"), Some(2)));
    let again = patch(&late_id, "Latest GmbH").await.unwrap();
    assert_eq!(again.status(), 200, "the next update needs no sync: {}", again.text().await.unwrap());
    assert_eq!(show_company(&svc, &token, &late_id).await.1["Version"], 3);

    let first = create_company(&svc, &token, &create("Applied GmbH")).await;
    add_fault(&svc.client, &svc.fieldreport, late(format!("/odata/Companies({first}L)"))).await;
    let answer = delete(first.clone()).await.unwrap();
    assert_eq!(answer.status(), 204, "the delete applied: {}", answer.text().await.unwrap());
    clear_faults(&svc.client, &svc.fieldreport).await;
    assert_eq!(show_company(&svc, &token, &first).await.0, 404);
    let posted: Value = svc.get_json(&token, "/api/v1/fieldreport/post/2/delete/companies").await;
    assert_eq!(posted["data"][0]["pushed"], 0, "nothing left to send: {posted}");

    let second = create_company(&svc, &token, &create("Kept GmbH")).await;
    let (_, before) = show_company(&svc, &token, &second).await;
    let failing = json!({"path_prefix": format!("/odata/Companies({second}L)"), "status": 500, "times": 1});
    add_fault(&svc.client, &svc.fieldreport, failing).await;
    let answer = delete(second.clone()).await.unwrap();
    let body = error_body(answer, 502).await;
    assert_eq!(body["error_code"], "upstream_unavailable", "{body}");
    clear_faults(&svc.client, &svc.fieldreport).await;
    assert_eq!(show_company(&svc, &token, &second).await, (200, before), "the record is back as it was");
    let left: (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM fieldreport_deletes").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(left.0, 0, "no delete left pending");
    svc.stop().await;
}

/// ERP: a pull (list) and a webhook's fetch by id (processed in the background: the call
/// stays in the inbox with the error, the mirror unchanged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erp_calls_fail_clearly_and_change_nothing() {
    let (svc, token) = start().await;
    let host = svc.erp_host().to_string();
    let mirrored = || async {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM erp_records").fetch_one(svc.store().pool()).await.unwrap();
        n
    };
    for fault in faults("/webapp/api/v1/customer") {
        add_fault(&svc.client, &host, fault.rule.clone()).await;
        let pull = svc.get(&token, "/api/v1/erp/setup/customer").await;
        assert_clear_error(pull, &fault, "ERP", "pull").await;
        assert_eq!(mirrored().await, 0, "nothing mirrored after {}", fault.name);

        let accepted = svc
            .client
            .post(svc.url("/api/v1/erp/webhooks"))
            .header("X-Webhook-Secret", "fault-test-secret")
            .json(&json!({"entityName": "customer", "entityId": "5", "type": "update"}))
            .checked()
            .await
            .unwrap();
        assert_eq!(accepted.status(), 202);
        let inbox_id = accepted.json::<Value>().await.unwrap()["inbox_id"].as_i64().unwrap();
        let mut last_error = None;
        for _ in 0..100 {
            let (error,): (Option<String>,) = sqlx::query_as("SELECT last_error FROM erp_webhook_inbox WHERE id = $1")
                .bind(inbox_id)
                .fetch_one(svc.store().pool())
                .await
                .unwrap();
            if error.is_some() {
                last_error = error;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let last_error =
            last_error.unwrap_or_else(|| panic!("the webhook call under {} records its error", fault.name));
        assert!(last_error.contains("ERP"), "{}: {last_error}", fault.name);
        let (state,): (String,) = sqlx::query_as("SELECT state FROM erp_webhook_inbox WHERE id = $1")
            .bind(inbox_id)
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
        assert_eq!(state, "pending", "the call waits for its retry after {}", fault.name);
        assert_eq!(mirrored().await, 0, "nothing mirrored after {}", fault.name);
        let (companies,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM fieldreport_records").fetch_one(svc.store().pool()).await.unwrap();
        assert_eq!(companies, 0, "nothing written to the field-report mirror after {}", fault.name);
        // Settle the call before the next fault, so its retry cannot see that fault.
        sqlx::query("DELETE FROM erp_webhook_inbox").execute(svc.store().pool()).await.unwrap();
        clear_faults(&svc.client, &host).await;
    }
    svc.stop().await;
}

/// An upstream that echoes what it received (its request line and headers), or that answers
/// with our secrets in its error text: no configured secret, nor the Basic header's form of
/// the field-report password, reaches an answer or the service's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_echoed_by_upstreams_reach_no_answer_and_no_log() {
    use secrecy::ExposeSecret;
    const WEBHOOK_SECRET: &str = "webhook-secret-4711";
    const METRICS_TOKEN: &str = "metrics-token-4711";
    let settings = [("ERP_WEBHOOK_SECRET", WEBHOOK_SECRET), ("METRICS_TOKEN", METRICS_TOKEN)];
    let svc = TestService::start(Db::Sqlite, &settings).await;
    let token = svc.user_token().await;
    let fieldreport = &svc.config.fieldreport;
    let user = fieldreport.username.clone().unwrap();
    let password = fieldreport.password.as_ref().unwrap().expose_secret().to_string();
    let basic = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{user}:{password}"));
    let api_key = svc.config.erp.api_key.as_ref().unwrap().expose_secret().to_string();
    let secrets = [password.as_str(), basic.as_str(), api_key.as_str(), WEBHOOK_SECRET, METRICS_TOKEN];
    svc.remember_secret(&basic);
    let every_secret = secrets.join(" | ");

    let financing_id = "0b5e8a4c-1d2f-4a7b-9c3e-5f6a7b8c9d0e";
    let calls = [
        (svc.fieldreport.as_str(), "/odata/", "/api/v1/fieldreport/sync/companies".to_string()),
        (svc.erp_host(), "/", "/api/v1/erp/update/customer/1".to_string()),
        (svc.leasing.as_str(), "/basic/v1/requests", format!("/api/v1/leasing/{financing_id}")),
    ];
    for (root, prefix, path) in &calls {
        for rule in [
            json!({"path_prefix": prefix, "status": 500, "echo": true, "times": 10}),
            json!({"path_prefix": prefix, "status": 400, "times": 10, "content_type": "text/plain",
                   "body": format!("rejected: {every_secret}")}),
            json!({"path_prefix": prefix, "status": 400, "times": 10,
                   "body": json!({"message": every_secret, "error": {"message": every_secret},
                                  "Message": every_secret, "detail": every_secret}).to_string()}),
        ] {
            add_fault(&svc.client, root, rule.clone()).await;
            let answer = svc.get(&token, path).await;
            let status = answer.status();
            let text = answer.text().await.unwrap();
            clear_faults(&svc.client, root).await;
            assert!(status.as_u16() >= 400, "{path} under {rule}: {status} {text}");
            for secret in secrets {
                assert!(!text.contains(secret), "{path} under {rule} shows a secret: {text}");
            }
            if rule["content_type"] == "text/plain" && !path.starts_with("/api/v1/leasing") {
                assert!(text.contains("rejected: ***"), "the upstream's text is shown, scrubbed: {text}");
            }
        }
    }
    // The echo really carried them: the field-report simulator saw the Basic header.
    add_fault(&svc.client, &svc.fieldreport, json!({"path_prefix": "/odata/", "status": 500, "echo": true})).await;
    let echoed =
        svc.client.get(format!("{}/odata/Companies", svc.fieldreport)).basic_auth(&user, Some(&password)).send().await;
    assert!(echoed.unwrap().text().await.unwrap().contains(&basic));
    svc.stop().await;
}
