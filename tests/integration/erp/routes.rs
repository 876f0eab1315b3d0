//! The ERP area against the ERP simulator: webhooks (allowlist, secret, inbox, processing,
//! retries, restarts), the helper routes, custom attributes, the field-report mapping, ERP mail
//! templates, and the ERP client's handling of 429 and time-outs. Both databases.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use std::time::Duration;

use crate::common::{Db, TestService, add_fault, clear_faults, error_body};
use integration_service::store::Dialect;
use integration_service::store::erp::ErpRecord;
use integration_service::store::fieldreport::records::Upserted;
use serde_json::{Value, json};

const SECRET: &str = "hook-secret-123";
/// The sandbox ERP's seeded customers, contacts and articles.
const CUSTOMERS: [&str; 3] = ["5", "6", "7"];

async fn start(db: Db, extra: &[(&str, &str)]) -> (TestService, String) {
    let mut settings = vec![("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"), ("ERP_WEBHOOK_SECRET", SECRET)];
    settings.extend_from_slice(extra);
    let svc = TestService::start(db, &settings).await;
    let token = svc.user_token().await;
    (svc, token)
}

/// A call to the ERP simulator's API.
async fn erp(svc: &TestService, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let mut request = svc.erp_api(method, path);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.checked().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

async fn erp_fault(svc: &TestService, rule: Value) {
    add_fault(&svc.client, svc.erp_host(), rule).await;
}

async fn erp_clear_faults(svc: &TestService) {
    clear_faults(&svc.client, svc.erp_host()).await;
}

fn webhook(svc: &TestService) -> reqwest::RequestBuilder {
    svc.client.post(svc.url("/api/v1/erp/webhooks")).header("X-Webhook-Secret", SECRET)
}

/// Polls the inbox until the call is in `state`; the whole overview when it is.
async fn inbox_call(svc: &TestService, token: &str, inbox_id: i64, state: &str) -> Value {
    for _ in 0..100 {
        let show = svc.get_json(token, "/api/v1/erp/show").await;
        let call = show["inbox"]["calls"].as_array().unwrap().iter().find(|c| c["id"] == inbox_id).cloned();
        if let Some(call) = call
            && call["state"] == state
        {
            return call;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("inbox call {inbox_id} never reached {state}: {}", svc.get_json(token, "/api/v1/erp/show").await["inbox"]);
}

async fn accepted(response: reqwest::Response) -> i64 {
    let status = response.status();
    let body: Value = response.json_value().await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["accepted"], true);
    body["inbox_id"].as_i64().unwrap()
}

async fn webhooks_admit_only_allowlisted_sources(db: Db) {
    // Direct peer (127.0.0.1) in the allowlist.
    let (svc, _) = start(db, &[]).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    svc.stop().await;

    // Direct peer outside the allowlist; a forged X-Forwarded-For from an untrusted peer does
    // not help.
    let (svc, _) = start(db, &[("ERP_WEBHOOK_ALLOWLIST", "203.0.113.7/32")]).await;
    let body = error_body(webhook(&svc).json(&call).checked().await.unwrap(), 403).await;
    assert_eq!(body["error_code"], "forbidden_source");
    let spoofed = webhook(&svc).header("X-Forwarded-For", "203.0.113.7").json(&call).checked().await.unwrap();
    error_body(spoofed, 403).await;
    // Nor does any other header: the client address reaches the handlers in-process.
    for header in ["x-client-address", "x-real-ip", "forwarded"] {
        let spoofed = webhook(&svc).header(header, "203.0.113.7").json(&call).checked().await.unwrap();
        error_body(spoofed, 403).await;
    }
    svc.stop().await;

    // Behind a trusted proxy the forwarded address counts.
    let (svc, _) = start(db, &[("ERP_WEBHOOK_ALLOWLIST", "203.0.113.0/24"), ("TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    let via_proxy = webhook(&svc).header("X-Forwarded-For", "203.0.113.7").json(&call).checked().await.unwrap();
    accepted(via_proxy).await;
    let outsider = webhook(&svc).header("X-Forwarded-For", "198.51.100.1").json(&call).checked().await.unwrap();
    error_body(outsider, 403).await;
    svc.stop().await;
}

async fn webhooks_need_the_secret(db: Db) {
    let (svc, _) = start(db, &[]).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let url = svc.url("/api/v1/erp/webhooks");
    let missing = svc.client.post(&url).json(&call).checked().await.unwrap();
    assert_eq!(error_body(missing, 401).await["error_code"], "invalid_webhook_secret");
    let wrong = svc.client.post(&url).header("X-Webhook-Secret", "hook-secret-12").json(&call).checked().await.unwrap();
    error_body(wrong, 401).await;
    let wrong_query =
        svc.client.get(format!("{url}?secret=nope&entityName=customer&entityId=5")).checked().await.unwrap();
    error_body(wrong_query, 401).await;
    accepted(
        svc.client
            .get(format!("{url}?secret={SECRET}&entityName=customer&entityId=5&type=updated"))
            .checked()
            .await
            .unwrap(),
    )
    .await;
    accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let invalid = webhook(&svc).json(&json!({"entityName": "customer"})).checked().await.unwrap();
    error_body(invalid, 422).await;
    // Entity names are refused before they are stored: on Postgres a NUL character would have
    // failed the batch of every call stored with it.
    for name in ["cus\u{0}tomer", "customer/../x", "kunde ä"] {
        let odd = webhook(&svc).json(&json!({"entityName": name, "entityId": "5"})).checked().await.unwrap();
        let body = error_body(odd, 422).await;
        assert!(body.to_string().contains("entityName: letters, digits"), "{name:?}: {body}");
    }
    assert!(!svc.log.text().contains(SECRET), "the secret never reaches the log");
    svc.stop().await;
}

/// The simulator fires a registered webhook when a customer changes through its API; the
/// service mirrors the record and writes the mapped company locally, without forwarding.
async fn a_webhook_mirrors_the_record_and_writes_the_company_locally(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let url = svc.url(&format!("/api/v1/erp/webhooks?secret={SECRET}"));
    erp(
        &svc,
        reqwest::Method::POST,
        "/webhook",
        Some(json!({"entityName": "customer", "atCreate": true, "atUpdate": true, "atDelete": true, "requestMethod": "POST", "url": url})),
    )
    .await;
    erp(
        &svc,
        reqwest::Method::PUT,
        "/customer/id/5?ignoreMissingProperties=true",
        Some(json!({"company": "Müller Bürotechnik AG"})),
    )
    .await;

    let mut company = Value::Null;
    for _ in 0..100 {
        let found = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
        if let Some(first) = found["data"].get(0) {
            company = first.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(company["Name"], "Müller Bürotechnik AG", "{company}");
    assert_eq!(company["Id"], "erp-customer-5");
    assert_eq!(company["Location"]["City"], "Berlin");
    let mirrored = svc.get_json(&token, "/api/v1/erp/show/customer/5").await;
    assert_eq!(mirrored["company"], "Müller Bürotechnik AG");
    assert_eq!(mirrored["version"], "1");

    let show = svc.get_json(&token, "/api/v1/erp/show").await;
    let call = &show["inbox"]["calls"][0];
    assert_eq!(call["state"], "done", "{show}");
    assert_eq!(call["outcome"]["mirror"], "inserted");
    assert_eq!(call["outcome"]["fieldReport"]["action"], "created");
    assert_eq!(call["outcome"]["fieldReport"]["fieldReportResponse"], Value::Null);
    assert!(svc.fieldreport_received().await.is_empty(), "nothing is sent to the field-report system");

    // The company is pending for the field-report post tooling, like every internal write.
    let pending = svc.store().mirror_pending("companies", "create").await.unwrap();
    assert_eq!(pending.len(), 1);
    svc.stop().await;
}

async fn repeated_and_late_deliveries_change_nothing(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let call = json!({"entityName": "contact", "entityId": "8", "type": "created"});
    let first = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let done = inbox_call(&svc, &token, first, "done").await;
    assert_eq!(done["outcome"]["mirror"], "inserted");
    assert_eq!(done["outcome"]["fieldReport"]["action"], "created");
    let contact = svc.get_json(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await;

    let again = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let repeated = inbox_call(&svc, &token, again, "done").await;
    assert_eq!(repeated["outcome"]["mirror"], "unchanged");
    assert_eq!(repeated["outcome"]["fieldReport"]["action"], "unchanged");
    assert_eq!(svc.get_json(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await, contact);

    // A late "deleted" for a record the ERP still has: it is fetched again and kept.
    let late = json!({"entityName": "contact", "entityId": "8", "type": "deleted"});
    let late_id = accepted(webhook(&svc).json(&late).checked().await.unwrap()).await;
    assert_eq!(inbox_call(&svc, &token, late_id, "done").await["outcome"]["mirror"], "unchanged");
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/contact/8").await["id"], "8");

    // An older version arriving after a newer one is ignored by the mirror.
    let stored = svc.store().erp_get("contact", "8").await.unwrap().unwrap();
    let older =
        ErpRecord { version: stored.version - 1, document: json!({"id": "8", "firstName": "Old"}), ..stored.clone() };
    assert_eq!(svc.store().erp_upsert("contact", &[older]).await.unwrap(), vec![Upserted::Unchanged]);
    assert_eq!(svc.store().erp_get("contact", "8").await.unwrap().unwrap().document, stored.document);

    // Deleted at the ERP: an "updated" delivered afterwards removes it here too.
    erp(&svc, reqwest::Method::DELETE, "/contact/id/8", None).await;
    let after =
        accepted(webhook(&svc).json(&json!({"entityName": "contact", "id": "8"})).checked().await.unwrap()).await;
    let removed = inbox_call(&svc, &token, after, "done").await;
    assert_eq!(removed["outcome"]["mirror"], "deleted");
    assert_eq!(removed["outcome"]["fieldReport"]["action"], "deleted");
    error_body(svc.get(&token, "/api/v1/erp/show/contact/8").await, 404).await;
    error_body(svc.get(&token, "/api/v1/fieldreport/contacts/erp-contact-8").await, 404).await;
    svc.stop().await;
}

/// A customer deleted at the ERP after its company reached the field-report system: the
/// webhook removes the company here without forwarding, `post` deletes it upstream once, and
/// the next sync does not bring it back.
async fn an_erp_delete_reaches_the_field_report_system_and_stays(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let created = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let call = accepted(webhook(&svc).json(&created).checked().await.unwrap()).await;
    assert_eq!(inbox_call(&svc, &token, call, "done").await["outcome"]["fieldReport"]["action"], "created");
    let pushed = svc.get_json(&token, "/api/v1/fieldreport/post/2/create/companies").await;
    assert_eq!(pushed["data"][0]["pushed"], 1, "{pushed}");
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    let id = company["data"][0]["Id"].as_str().unwrap().to_string();
    assert!(id.parse::<u64>().is_ok(), "the company has the upstream's Id: {company}");

    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let deleted = json!({"entityName": "customer", "entityId": "5", "type": "deleted"});
    let call = accepted(webhook(&svc).json(&deleted).checked().await.unwrap()).await;
    let removed = inbox_call(&svc, &token, call, "done").await;
    assert_eq!(removed["outcome"]["fieldReport"]["action"], "deleted", "{removed}");
    assert!(!svc.fieldreport_received().await.iter().any(|w| w["method"] == "DELETE"), "the webhook does not forward");

    let posted = svc.get_json(&token, "/api/v1/fieldreport/post").await;
    let deletes: Vec<&Value> = posted["data"].as_array().unwrap().iter().filter(|r| r["kind"] == "delete").collect();
    let sent: u64 = deletes.iter().map(|r| r["pushed"].as_u64().unwrap()).sum();
    assert_eq!(sent, 1, "{posted}");
    let writes = svc.fieldreport_received().await;
    let upstream_deletes: Vec<&Value> = writes.iter().filter(|w| w["method"] == "DELETE").collect();
    assert_eq!(upstream_deletes.len(), 1, "{writes:?}");
    assert!(upstream_deletes[0]["path"].as_str().unwrap().contains(&format!("Companies({id}L)")), "{writes:?}");

    let synced = svc.get_json(&token, "/api/v1/fieldreport/sync/companies").await;
    assert_eq!(synced["data"][0]["inserted"], 0, "{synced}");
    error_body(svc.get(&token, &format!("/api/v1/fieldreport/companies/{id}")).await, 404).await;
    svc.stop().await;
}

/// A full pull (`erp setup`) removes what the ERP no longer has, and the mapped field-report
/// record with it: deleted locally, pending for `post`.
async fn a_full_pull_removes_what_the_erp_lost_and_its_mapped_record(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let call = json!({"entityName": "customer", "entityId": "5", "type": "updated"});
    let call = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    inbox_call(&svc, &token, call, "done").await;
    svc.get_json(&token, "/api/v1/fieldreport/post/2/create/companies").await;
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await;
    let id = company["data"][0]["Id"].as_str().unwrap().to_string();

    erp(&svc, reqwest::Method::DELETE, "/customer/id/5", None).await;
    let pulled = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let removed: u64 = pulled["data"].as_array().unwrap().iter().map(|r| r["removed"].as_u64().unwrap()).sum();
    assert_eq!(removed, 1, "{pulled}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/5").await, 404).await;
    error_body(svc.get(&token, &format!("/api/v1/fieldreport/companies/{id}")).await, 404).await;
    let posted = svc.get_json(&token, "/api/v1/fieldreport/post/2/delete/companies").await;
    assert_eq!(posted["data"][0]["pushed"], 1, "{posted}");
    svc.stop().await;
}

/// Calls that arrive together are stored together (one transaction per batch): each must still
/// get an id of its own, and the row behind that id must be its call. The inbox is held locked
/// while the calls arrive, so that they queue and go in as one batch.
async fn calls_stored_together_each_keep_their_own_id(db: Db) {
    let (svc, _) = start(db, &[]).await;
    let store = svc.store();
    let mut lock = store.write_transaction().await.unwrap();
    if store.dialect() == Dialect::Postgres {
        sqlx::query("LOCK TABLE erp_webhook_inbox IN EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    }
    let calls: Vec<_> = (0..120)
        .map(|n| {
            let call = json!({"entityName": "customer", "entityId": format!("9{n:03}"), "type": "updated"});
            let request = webhook(&svc).json(&call);
            tokio::spawn(async move { (n, accepted(request.checked().await.unwrap()).await) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    lock.commit().await.unwrap();
    let mut ids = std::collections::HashSet::new();
    for call in calls {
        let (n, id) = call.await.unwrap();
        assert!(ids.insert(id), "inbox id {id} was answered twice");
        let item = svc.store().inbox_item(id).await.unwrap().expect("the answered id is stored");
        assert_eq!(item.entity_id, format!("9{n:03}"), "inbox id {id}");
        assert_eq!((item.entity_name.as_str(), item.event.as_str()), ("customer", "updated"));
    }
    svc.stop().await;
}

/// The requests the ERP simulator has received.
async fn erp_calls(svc: &TestService) -> u64 {
    let root = svc.erp.trim_end_matches("/webapp/api/v1");
    let body: Value = svc.client.get(format!("{root}/__sandbox/calls")).json_value().await;
    body["calls"].as_u64().unwrap()
}

/// Calls for one record that wait together are processed together: one fetch from the ERP,
/// made after all of them arrived, answers for all, and each shows the outcome. The worker's
/// fetch for a first call is held at the simulator while the others arrive.
async fn waiting_calls_of_one_record_are_processed_with_one_fetch(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let customer = |id: &str, event: &str| json!({"entityName": "customer", "entityId": id, "type": event});
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/customer/id/6", "status": 200, "delay_ms": 5000})).await;
    let before = erp_calls(&svc).await;
    let first = accepted(webhook(&svc).json(&customer("6", "updated")).checked().await.unwrap()).await;
    for _ in 0..500 {
        if erp_calls(&svc).await > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(erp_calls(&svc).await, before + 1, "the worker is fetching the first call's record");

    let mut waiting = Vec::new();
    for event in ["updated", "updated", "deleted"] {
        waiting.push(accepted(webhook(&svc).json(&customer("6", event)).checked().await.unwrap()).await);
    }
    let other = accepted(webhook(&svc).json(&customer("7", "created")).checked().await.unwrap()).await;

    let done = inbox_call(&svc, &token, first, "done").await;
    assert_eq!(done["outcome"]["mirror"], "inserted", "{done}");
    for id in &waiting {
        let call = inbox_call(&svc, &token, *id, "done").await;
        assert_eq!(call["outcome"]["mirror"], "unchanged", "{call}");
        assert_eq!(call["outcome"]["fieldReport"]["action"], "unchanged", "{call}");
    }
    let seven = inbox_call(&svc, &token, other, "done").await;
    assert_eq!(seven["outcome"]["mirror"], "inserted", "{seven}");
    assert_eq!(seven["outcome"]["fieldReport"]["id"], "erp-customer-7", "{seven}");
    assert_eq!(
        erp_calls(&svc).await,
        before + 3,
        "one fetch for the first call, one for the three calls of customer 6 that waited, one for customer 7"
    );
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/6").await["id"], "6");
    svc.stop().await;
}

async fn failed_processing_is_retried_and_survives_a_restart(db: Db) {
    let (mut svc, token) = start(db, &[]).await;
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/article/id/11", "status": 503, "times": 1000})).await;
    let call = json!({"entityName": "article", "entityId": "11", "type": "updated"});
    let id = accepted(webhook(&svc).json(&call).checked().await.unwrap()).await;
    let mut pending = Value::Null;
    for _ in 0..100 {
        let show = svc.get_json(&token, "/api/v1/erp/show").await;
        pending = show["inbox"]["calls"].as_array().unwrap().iter().find(|c| c["id"] == id).cloned().unwrap();
        if pending["attempts"].as_i64() >= Some(1) {
            assert_eq!(show["inbox"]["pending"], 1);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pending["state"], "pending", "{pending}");
    assert!(pending["last_error"].as_str().unwrap().contains("503"), "{pending}");

    svc.restart().await;
    erp_clear_faults(&svc).await;
    let done = inbox_call(&svc, &token, id, "done").await;
    assert_eq!(done["outcome"]["fieldReport"]["entity"], "products");
    let product = svc.get_json(&token, "/api/v1/fieldreport/products/erp-article-11").await;
    assert_eq!(product["ExternalId"], "11");

    // An unknown entity type is given up at once and stays visible.
    let unknown =
        accepted(webhook(&svc).json(&json!({"entityName": "noSuchThing", "entityId": "1"})).checked().await.unwrap())
            .await;
    let failed = inbox_call(&svc, &token, unknown, "failed").await;
    assert!(failed["last_error"].as_str().unwrap().contains("unknown ERP model"), "{failed}");

    // Pruning forgets processed calls only.
    let pruned = svc.store().inbox_prune(integration_service::store::now_ms() + 1).await.unwrap();
    assert_eq!(pruned, 1);
    let inbox = svc.get_json(&token, "/api/v1/erp/show").await["inbox"].clone();
    assert_eq!((inbox["done"].as_i64(), inbox["failed"].as_i64()), (Some(0), Some(1)), "{inbox}");
    svc.stop().await;
}

async fn setup_get_update_and_show(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let setup = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let report = &setup["data"][0];
    assert_eq!(
        (report["fetched"].as_u64(), report["inserted"].as_u64(), report["pages"].as_u64()),
        (Some(3), Some(3), Some(1)),
        "{report}"
    );
    assert_eq!(svc.get_json(&token, "/api/v1/erp/setup/customer").await["data"][0]["unchanged"], 3);

    let page = svc.get_json(&token, "/api/v1/erp/show/customer?per_page=2&page=2").await;
    assert_eq!(page["meta"]["total"], 3);
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["id"], CUSTOMERS[2]);
    let found = svc.get_json(&token, "/api/v1/erp/show/customer/customerNumber/10002").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
    assert_eq!(found["data"][0]["id"], "6");
    let injection = svc.get_json(&token, "/api/v1/erp/show/customer/customerNumber/'%20OR%20'1'='1").await;
    assert!(injection["data"].as_array().unwrap().is_empty());
    let overview = svc.get_json(&token, "/api/v1/erp/show").await;
    let customer = overview["models"].as_array().unwrap().iter().find(|m| m["model"] == "customer").unwrap().clone();
    assert_eq!(customer["records"], 3);
    assert!(customer["last_pull_at"].as_i64().is_some());
    assert_eq!(overview["models"].as_array().unwrap().len(), generated::erp::MODELS.len());

    let unknown = error_body(svc.get(&token, "/api/v1/erp/show/noSuchModel").await, 404).await;
    assert!(unknown["message"].as_str().unwrap().contains("salesOrder"), "{unknown}");
    error_body(svc.get(&token, "/api/v1/erp/show/customer/99").await, 404).await;
    error_body(svc.client.get(svc.url("/api/v1/erp/show")).checked().await.unwrap(), 401).await;

    // Incremental: every model once, then only what changed.
    let first = svc.get_json(&token, "/api/v1/erp/get").await;
    assert_eq!(first["data"].as_array().unwrap().len(), generated::erp::MODELS.len());
    let articles = first["data"].as_array().unwrap().iter().find(|r| r["model"] == "article").unwrap().clone();
    assert_eq!(articles["inserted"], 3, "{articles}");
    erp(
        &svc,
        reqwest::Method::PUT,
        "/customer/id/6?ignoreMissingProperties=true",
        Some(json!({"email": "new@example.com"})),
    )
    .await;
    let second = svc.get_json(&token, "/api/v1/erp/get").await;
    let changed: Vec<(String, u64)> = second["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["inserted"].as_u64() != Some(0) || r["updated"].as_u64() != Some(0))
        .map(|r| (r["model"].as_str().unwrap().to_string(), r["updated"].as_u64().unwrap()))
        .collect();
    assert_eq!(changed, vec![("customer".to_string(), 1)]);
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/6").await["email"], "new@example.com");

    // update: by field, by id (and removal when the ERP no longer has it).
    erp(
        &svc,
        reqwest::Method::PUT,
        "/customer/id/7?ignoreMissingProperties=true",
        Some(json!({"phone": "+49 40 999"})),
    )
    .await;
    let matching = svc.get_json(&token, "/api/v1/erp/update/customer/customerNumber/10003").await;
    assert_eq!((matching["data"][0]["fetched"].as_u64(), matching["data"][0]["updated"].as_u64()), (Some(1), Some(1)));
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/customer/7").await["phone"], "+49 40 999");
    error_body(svc.get(&token, "/api/v1/erp/update/customer/customer-Number/1").await, 422).await;
    erp(&svc, reqwest::Method::DELETE, "/customer/id/7", None).await;
    assert_eq!(svc.get_json(&token, "/api/v1/erp/update/customer/7").await["data"][0]["removed"], 1);
    error_body(svc.get(&token, "/api/v1/erp/update/customer/7").await, 404).await;
    let one = svc.get_json(&token, "/api/v1/erp/update/customer/5").await;
    assert_eq!(one["data"][0]["unchanged"], 1);
    let refresh = svc.get_json(&token, "/api/v1/erp/update").await;
    assert!(refresh["data"].as_array().unwrap().iter().any(|r| r["model"] == "customer"), "{refresh}");
    svc.stop().await;
}

async fn custom_attributes_are_pulled_posted_and_pushed_with_version_checks(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let pulled = svc.get_json(&token, "/api/v1/erp/entityPullAttr/customer").await["data"].clone();
    assert_eq!(pulled["definitions"], 2, "{pulled}");
    assert_eq!(pulled["applicable"], json!(["fieldReportId", "serviceLevel"]));
    assert_eq!(pulled["records"], 3);
    let one = svc.get_json(&token, "/api/v1/erp/entityPullAttr/customer/serviceLevel").await["data"].clone();
    assert_eq!(one["values"], 3, "{one}");
    error_body(svc.get(&token, "/api/v1/erp/entityPullAttr/customer/nope").await, 404).await;

    // Post the customers to the field-report system; each new company's Id is kept on the
    // customer's fieldReportId attribute, pending a push.
    let posted = svc.get_json(&token, "/api/v1/erp/fieldReportPost/customer").await["data"][0].clone();
    assert_eq!(
        (posted["created"].as_u64(), posted["attributes_marked"].as_u64(), posted["failed"].as_u64()),
        (Some(3), Some(3), Some(0)),
        "{posted}"
    );
    let writes = svc.fieldreport_received().await;
    assert_eq!(writes.iter().filter(|w| w["method"] == "POST").count(), 3, "{writes:?}");
    let company = svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/6").await["data"][0].clone();
    let company_id = company["Id"].as_str().unwrap().to_string();
    assert!(company_id.chars().all(|c| c.is_ascii_digit()), "the upstream's Id: {company}");
    assert_eq!(svc.get_json(&token, "/api/v1/erp/fieldReportPost/customer").await["data"][0]["unchanged"], 3);

    // The ERP changes customer 6 meanwhile: its push is refused (409) and reported.
    erp(&svc, reqwest::Method::PUT, "/customer/id/6?ignoreMissingProperties=true", Some(json!({"phone": "+49 1"})))
        .await;
    let pushed = svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer").await["data"].clone();
    assert_eq!((pushed["pushed"].as_u64(), pushed["conflicts"].as_u64()), (Some(2), Some(1)), "{pushed}");
    assert_eq!(pushed["errors"][0]["id"], "6");
    assert!(pushed["errors"][0]["message"].as_str().unwrap().contains("version conflict"), "{pushed}");
    let at_erp = erp(&svc, reqwest::Method::GET, "/customer/id/5", None).await;
    let definition = pulled_definition_id(&svc, &token).await;
    let value = at_erp["customAttributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["attributeDefinitionId"] == definition)
        .unwrap()
        .clone();
    let company5 =
        svc.get_json(&token, "/api/v1/fieldreport/show/companies/ExternalId/5").await["data"][0]["Id"].clone();
    assert_eq!(value["stringValue"], company5, "the ERP has the field-report Id");

    // Pull again: the local value survives, the version is current, and the push goes through.
    svc.get_json(&token, "/api/v1/erp/entityPullAttr/customer").await;
    let retried = svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer/fieldReportId").await["data"].clone();
    assert_eq!((retried["pushed"].as_u64(), retried["conflicts"].as_u64()), (Some(1), Some(0)), "{retried}");
    let at_erp = erp(&svc, reqwest::Method::GET, "/customer/id/6", None).await;
    assert_eq!(at_erp["phone"], "+49 1", "the ERP's own change is kept");
    assert!(
        at_erp["customAttributes"].as_array().unwrap().iter().any(|v| v["stringValue"] == company_id.as_str()),
        "{at_erp}"
    );
    assert_eq!(svc.get_json(&token, "/api/v1/erp/entityPushAttr/customer").await["data"]["pushed"], 0);

    error_body(svc.get(&token, "/api/v1/erp/fieldReportPost/salesOrder").await, 422).await;
    error_body(svc.get(&token, "/api/v1/erp/fieldReportPost?id=5").await, 422).await;
    svc.stop().await;
}

async fn pulled_definition_id(svc: &TestService, token: &str) -> String {
    let found = svc.get_json(token, "/api/v1/erp/show/customAttributeDefinition/attributeKey/fieldReportId").await;
    found["data"][0]["id"].as_str().unwrap().to_string()
}

async fn field_report_post_of_one_record_replaces_the_local_placeholder(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let id = accepted(webhook(&svc).json(&json!({"entityName": "article", "entityId": "12"})).checked().await.unwrap())
        .await;
    inbox_call(&svc, &token, id, "done").await;
    svc.get_json(&token, "/api/v1/fieldreport/products/erp-article-12").await;
    let posted = svc.get_json(&token, "/api/v1/erp/fieldReportPost/article?id=12").await["data"][0].clone();
    assert_eq!(posted["created"], 1, "{posted}");
    error_body(svc.get(&token, "/api/v1/fieldreport/products/erp-article-12").await, 404).await;
    let found = svc.get_json(&token, "/api/v1/fieldreport/show/products/ExternalId/12").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "one product, with the upstream's Id: {found}");
    error_body(svc.get(&token, "/api/v1/erp/fieldReportPost/article?id=999").await, 404).await;
    svc.stop().await;
}

async fn erp_throttling_and_time_outs_are_handled(db: Db) {
    let (svc, token) = start(db, &[("ERP_TIMEOUT_SECONDS", "1")]).await;
    // One 429 with a wait: retried after it, the pull succeeds.
    erp_fault(
        &svc,
        json!({"path_prefix": "/webapp/api/v1/article", "status": 429, "retry_after_seconds": 1, "times": 1}),
    )
    .await;
    assert_eq!(svc.get_json(&token, "/api/v1/erp/setup/article").await["data"][0]["fetched"], 3);
    // Throttled on every attempt: 503 with the ERP's wait.
    erp_fault(
        &svc,
        json!({"path_prefix": "/webapp/api/v1/article", "status": 429, "retry_after_seconds": 1, "times": 10}),
    )
    .await;
    let response = svc.get(&token, "/api/v1/erp/setup/article").await;
    assert_eq!(response.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let body = error_body(response, 503).await;
    assert_eq!(body["error_code"], "upstream_busy");
    erp_clear_faults(&svc).await;
    // Slower than ERP_TIMEOUT_SECONDS: 504, the mirror as before.
    erp_fault(&svc, json!({"path_prefix": "/webapp/api/v1/article", "status": 200, "delay_ms": 3000, "times": 3}))
        .await;
    let body = error_body(svc.get(&token, "/api/v1/erp/setup/article").await, 504).await;
    assert_eq!(body["error_code"], "upstream_timeout");
    assert!(!body["message"].as_str().unwrap().contains("sandbox-erp-key"));
    assert_eq!(svc.get_json(&token, "/api/v1/erp/show/article").await["meta"]["total"], 3);
    // A problem-style refusal is summarised.
    erp_clear_faults(&svc).await;
    erp_fault(
        &svc,
        json!({"path_prefix": "/webapp/api/v1/article", "status": 400, "times": 1,
               "body": "{\"type\": \"x\", \"title\": \"invalid_query\", \"status\": 400, \"detail\": \"bad filter\"}"}),
    )
    .await;
    let body = error_body(svc.get(&token, "/api/v1/erp/setup/article").await, 502).await;
    assert!(body["message"].as_str().unwrap().contains("invalid_query: bad filter"), "{body}");
    assert!(!svc.log.text().contains("sandbox-erp-key"), "the API key never reaches the log");
    svc.stop().await;
}

async fn a_missing_template_is_reported_without_hiding_missing_info(db: Db) {
    let (svc, token) = start(db, &[("MISSING_INFO_TEMPLATE", "no-such-template")]).await;
    let request = json!({
        "ProductType": "ClassicLease", "FinancingAmount": 1000.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "Invoice",
        "Lessee": {"CompanyName": "Needs More [missing-info]", "LegalFormId": 1, "Email": "lessee@example.com",
                   "Addresses": [{"Line1": "A 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "main"}]},
        "FinancingObjects": [{"Quantity": 1, "ObjectTypeId": 1, "Name": "Copier", "NetPricePerObject": 1000.0}]
    });
    let created = svc.post(&token, "/api/v1/leasing", request.clone()).await;
    let created: Value = created.json_value().await;
    let id = created["data"]["FinancingId"].as_str().unwrap_or_else(|| panic!("{created}")).to_string();
    let body = error_body(
        svc.get(&token, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=1&sleep_milliseconds=1")).await,
        500,
    )
    .await;
    assert_eq!(body["error_code"], "missing_info");
    assert!(body["message"].as_str().unwrap().contains("mail template \"no-such-template\" not found"), "{body}");
    svc.stop().await;
}

/// Templates come from the ERP and are cached for a short time: a change at the ERP is seen
/// only after the TTL, and an ERP that fails meanwhile does not stop the mail.
async fn mail_templates_come_from_the_erp_and_are_cached(db: Db) {
    use integration_service::erp::templates::ErpTemplates;
    use integration_service::mail::TemplateSource;
    let (svc, _) = start(db, &[]).await;
    let client = integration_service::upstream::erp::ErpClient::from_config(&svc.config.erp);
    let templates = ErpTemplates::new(client);
    let first = templates.template("leasing-missing-info").await.unwrap();
    assert!(first.html);
    assert_eq!(first.bcc, vec!["leasing-archive@sandbox.example"]);
    let id =
        erp(&svc, reqwest::Method::GET, "/mailTemplate?name-eq=leasing-missing-info", None).await["result"][0]["id"]
            .as_str()
            .unwrap()
            .to_string();
    erp(
        &svc,
        reqwest::Method::PUT,
        &format!("/mailTemplate/id/{id}?ignoreMissingProperties=true"),
        Some(json!({"subject": "Changed"})),
    )
    .await;
    assert_eq!(templates.template("leasing-missing-info").await.unwrap(), first, "served from the cache");
    let fresh = ErpTemplates::new(integration_service::upstream::erp::ErpClient::from_config(&svc.config.erp));
    assert_eq!(fresh.template("leasing-missing-info").await.unwrap().subject, "Changed");
    let missing = fresh.template("nope").await.unwrap_err();
    assert!(missing.to_string().contains("not found"), "{missing}");
    svc.stop().await;
}

on_both_databases!(
    mail_templates_come_from_the_erp_and_are_cached,
    webhooks_admit_only_allowlisted_sources,
    webhooks_need_the_secret,
    a_webhook_mirrors_the_record_and_writes_the_company_locally,
    repeated_and_late_deliveries_change_nothing,
    an_erp_delete_reaches_the_field_report_system_and_stays,
    a_full_pull_removes_what_the_erp_lost_and_its_mapped_record,
    calls_stored_together_each_keep_their_own_id,
    waiting_calls_of_one_record_are_processed_with_one_fetch,
    failed_processing_is_retried_and_survives_a_restart,
    setup_get_update_and_show,
    custom_attributes_are_pulled_posted_and_pushed_with_version_checks,
    field_report_post_of_one_record_replaces_the_local_placeholder,
    erp_throttling_and_time_outs_are_handled,
    a_missing_template_is_reported_without_hiding_missing_info
);
