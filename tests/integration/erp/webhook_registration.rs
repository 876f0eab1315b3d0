//! `erp webhooks register|list|unregister` as processes of their own against the ERP
//! simulator: registering creates one webhook per mapped model whose URL carries the secret
//! the service checks (a change at the ERP then reaches the service), registering again keeps
//! them, a new secret updates them, unregistering removes only ours; the secret is never
//! printed; an unconfigured or refusing ERP is one line naming the reason.

use crate::common::JsonAnswer;
use crate::common::contract::Checked;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use integration_service::sandbox::erp::{API_KEY, API_ROOT};
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, json as json_answer, serve};

use serde_json::{Value, json};

use crate::common::binary::text;
use crate::common::{Db, TestService};

const SECRET: &str = "register-secret-4711";
const FOREIGN_URL: &str = "https://elsewhere.example/hook?secret=theirs-0815";

/// Runs `erp webhooks …` with the ERP simulator configured, and `settings` besides.
fn webhooks(svc: &TestService, args: &[&str], settings: &[(&str, &str)]) -> Output {
    svc.command(&["erp", "webhooks"])
        .args(args)
        .erp(svc)
        .env("ERP_WEBHOOK_SECRET", SECRET)
        .env("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32")
        .envs(settings.iter().copied())
        .output()
}

/// Succeeded, and printed no secret.
fn succeeded(output: &Output) -> String {
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}{stderr}");
    for secret in [SECRET, "theirs-0815", "a-new-secret"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "a secret was printed: {stdout}{stderr}");
    }
    stdout
}

/// Failed with one line on stderr, which is returned.
fn failed(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{}", text(&output.stdout));
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    stderr
}

/// The webhook records at the simulator, as the ERP's API lists them.
async fn registered(svc: &TestService) -> Vec<Value> {
    let answer: Value = svc.erp_api(reqwest::Method::GET, "/webhook?pageSize=1000").json_value().await;
    answer["result"].as_array().unwrap().clone()
}

fn ours(hooks: &[Value], url: &str) -> Vec<(String, String)> {
    let mut ours: Vec<(String, String)> = hooks
        .iter()
        .filter(|h| h["url"] == url)
        .map(|h| (h["entityName"].as_str().unwrap().to_string(), h["id"].as_str().unwrap().to_string()))
        .collect();
    ours.sort();
    ours
}

async fn register_list_and_unregister_at_the_erp(db: Db) {
    let svc =
        TestService::start(db, &[("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"), ("ERP_WEBHOOK_SECRET", SECRET)]).await;
    let url = svc.base.clone();
    let registered_url = format!("{url}/api/v1/erp/webhooks?secret={SECRET}");
    // Someone else's webhook, which none of the commands may touch.
    let foreign = svc
        .erp_api(reqwest::Method::POST, "/webhook")
        .json(&json!({"entityName": "customer", "atCreate": true, "atUpdate": false, "atDelete": false,
                      "requestMethod": "GET", "url": FOREIGN_URL}))
        .checked()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 201);

    let first = succeeded(&webhooks(&svc, &["register", "--url", &url], &[]));
    for model in ["customer", "contact", "article"] {
        assert!(first.contains(&format!("{model}: created")), "{first}");
    }
    assert!(first.contains(&format!("{url}/api/v1/erp/webhooks?secret=***")), "{first}");
    let hooks = registered(&svc).await;
    let mine = ours(&hooks, &registered_url);
    let models: Vec<&str> = mine.iter().map(|(model, _)| model.as_str()).collect();
    assert_eq!(models, ["article", "contact", "customer"], "one per mapped model: {hooks:?}");
    for hook in hooks.iter().filter(|h| h["url"] == registered_url.as_str()) {
        assert_eq!(
            (&hook["atCreate"], &hook["atUpdate"], &hook["atDelete"], &hook["requestMethod"]),
            (&json!(true), &json!(true), &json!(true), &json!("POST"))
        );
    }

    // Registering again keeps them: nothing doubled, also when the ERP serves fewer webhooks a
    // page than asked (two of the four: a short page is no end of the list).
    let sim_root = svc.erp_host().to_string();
    svc.erp_sandbox("behaviour", json!({"most_per_page": 2})).await;
    let second = succeeded(&webhooks(&svc, &["register", "--url", &format!("{url}/")], &[]));
    svc.erp_sandbox("behaviour", json!({"most_per_page": null})).await;
    for model in ["customer", "contact", "article"] {
        assert!(second.contains(&format!("{model}: kept")), "{second}");
    }
    let hooks = registered(&svc).await;
    assert_eq!(hooks.len(), 4, "three of ours and the foreign one: {hooks:?}");
    assert_eq!(ours(&hooks, &registered_url), mine, "the same registrations");

    // The URL carries the secret as the service checks it: a change at the ERP arrives.
    let changed = svc
        .erp_api(reqwest::Method::PUT, "/customer/id/6?ignoreMissingProperties=true")
        .json(&json!({"company": "Registered & Co"}))
        .checked()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let mut calls = Vec::new();
    for _ in 0..100 {
        let answer: Value = svc.client.get(format!("{sim_root}/__sandbox/webhook-calls")).json_value().await;
        calls = answer.as_array().unwrap().iter().filter(|c| c["url"] == registered_url.as_str()).cloned().collect();
        if !calls.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(calls.len(), 1, "one call for the one change: {calls:?}");
    assert_eq!(calls[0]["status"], 202, "the service admitted the call: {calls:?}");
    assert_eq!(svc.store().inbox_depths().await.unwrap().failed, 0);

    // Listing shows every webhook, secrets hidden.
    let listed = succeeded(&webhooks(&svc, &["list"], &[]));
    assert_eq!(listed.lines().filter(|l| l.starts_with("webhook ")).count(), 4, "{listed}");
    assert!(listed.contains("customer on create GET https://elsewhere.example/hook?secret=***"), "{listed}");
    assert!(
        listed.contains(&format!("article on create,update,delete POST {url}/api/v1/erp/webhooks?secret=***")),
        "{listed}"
    );

    // A new secret updates our registrations in place.
    let rotated = succeeded(&webhooks(&svc, &["register", "--url", &url], &[("ERP_WEBHOOK_SECRET", "a-new-secret")]));
    for model in ["customer", "contact", "article"] {
        assert!(rotated.contains(&format!("{model}: updated")), "{rotated}");
    }
    let rotated_url = format!("{url}/api/v1/erp/webhooks?secret=a-new-secret");
    let hooks = registered(&svc).await;
    assert_eq!(hooks.len(), 4, "{hooks:?}");
    let ids = |pairs: Vec<(String, String)>| pairs.into_iter().map(|(_, id)| id).collect::<Vec<_>>();
    assert_eq!(ids(ours(&hooks, &rotated_url)), ids(mine), "the same records, updated");

    // Unregistering removes ours only (whatever their secret).
    let removed = succeeded(&webhooks(&svc, &["unregister", "--url", &url], &[]));
    assert!(removed.contains("3 registration(s) of"), "{removed}");
    let hooks = registered(&svc).await;
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["url"], FOREIGN_URL);
    let again = succeeded(&webhooks(&svc, &["unregister", "--url", &url], &[]));
    assert!(again.contains("0 registration(s) of"), "{again}");

    // An ERP that is not configured, or refuses: one line naming the reason.
    let unconfigured = svc.command(&["erp", "webhooks", "list"]).output();
    assert!(failed(&unconfigured).contains("ERP_BASE_URL"));
    let refused = failed(&webhooks(&svc, &["register", "--url", &url], &[("ERP_API_KEY", "wrong-key")]));
    assert!(refused.contains("registering the ERP webhooks") && refused.contains("401"), "{refused}");
    let bad_url = failed(&webhooks(&svc, &["register", "--url", &format!("{url}/?secret={SECRET}")], &[]));
    assert!(bad_url.contains("without a query"), "{bad_url}");
    assert_eq!(registered(&svc).await.len(), 1, "nothing registered by the failed commands");
    svc.stop().await;
}

on_both_databases!(register_list_and_unregister_at_the_erp);

/// A proxy before the ERP simulator for `GET` calls that, when the webhooks are listed the second
/// time (the list's second page), first removes the webhook `removed` at the simulator: a
/// registration removed at the ERP while a command reads the list.
async fn removing_proxy(svc: &TestService, removed: String) -> String {
    let (host, client, lists) = (svc.erp_host().to_string(), svc.client.clone(), Arc::new(AtomicUsize::new(0)));
    let log = slog::Logger::root(slog::Discard, slog::o!());
    let address = serve(([127, 0, 0, 1], 0).into(), Arc::new(Faults::default()), log, move |req: SimRequest| {
        let (host, client, lists, removed) = (host.clone(), client.clone(), lists.clone(), removed.clone());
        async move {
            if req.path.ends_with("/webhook") && lists.fetch_add(1, Ordering::SeqCst) == 1 {
                let url = format!("{host}{API_ROOT}/webhook/id/{removed}");
                let gone = client.delete(url).header("AuthenticationToken", API_KEY).checked().await.unwrap();
                assert_eq!(gone.status(), 204);
            }
            let url = format!("{host}{}?{}", req.path, req.query.unwrap_or_default());
            let key = req.headers.get("AuthenticationToken").cloned();
            let answer = client
                .get(url)
                .headers(key.into_iter().map(|k| ("authenticationtoken".parse().unwrap(), k)).collect())
                .checked()
                .await
                .unwrap();
            let status = answer.status();
            json_answer(status, &answer.json::<Value>().await.unwrap())
        }
    })
    .await
    .unwrap();
    format!("http://{address}{API_ROOT}")
}

/// A webhook removed at the ERP while `erp webhooks list` reads its pages moves every later
/// one a place forward; read by page number, the one that moves onto a page already read is
/// never listed. Every webhook that was there from the first page to the last is listed.
#[tokio::test]
async fn a_webhook_removed_while_listing_hides_none_of_the_others() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let mut ids = Vec::new();
    for n in 1..=4 {
        let hook = json!({"entityName": "customer", "atCreate": true, "atUpdate": true, "atDelete": true,
                          "requestMethod": "POST", "url": format!("https://elsewhere.example/hook-{n}")});
        let created = svc.erp_api(reqwest::Method::POST, "/webhook").json(&hook).json_value().await;
        ids.push(created["id"].as_str().unwrap().to_string());
    }
    // Two a page: the first page holds hooks 1 and 2, and hook 1 goes before the second.
    svc.erp_sandbox("behaviour", json!({"most_per_page": 2})).await;
    let proxy = removing_proxy(&svc, ids[0].clone()).await;
    // Awaited: the proxy answers on this test's runtime.
    let listed = svc.command(&["erp", "webhooks", "list"]).erp(&svc).env("ERP_BASE_URL", &proxy).output_async().await;
    let listed = succeeded(&listed);
    for (n, id) in ids.iter().enumerate().skip(1) {
        let hook =
            format!("webhook {id}: customer on create,update,delete POST https://elsewhere.example/hook-{}", n + 1);
        assert!(listed.contains(&hook), "{hook:?} is not listed:\n{listed}");
    }
    svc.stop().await;
}
