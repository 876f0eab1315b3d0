//! The leasing state watcher over real HTTP: subscriptions (the secret shown once), events
//! signed per Standard Webhooks and checked here by an HMAC written from the specification
//! (not the service's signing code), every change of every watched request delivered in
//! order per request, retries with the same `webhook-id` while a receiver is down, rotation,
//! the deliveries list and a retry, SSRF refusals at subscription and at delivery, a route's
//! read as an observation, and a SIGKILL between recording a change and delivering it.
//!
//! The leasing simulator's `[moves:S]` requests change state by themselves; the watcher reads
//! them every second here (`LEASING_WATCH_INTERVAL_SECONDS=1`). The tests wait for outcomes
//! (with a generous guard against a hang), never for a time.

use crate::common::{Api, JsonAnswer};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, empty, serve};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::{Db, TestService, error_body, leasing_request};

/// The settings of a service whose watcher reads every second and retries soon.
mod delivery;
mod gone;
mod in_flight;
mod receivers;
mod restart;
mod retries;
mod states;

const FAST: &[(&str, &str)] = &[
    ("CALLBACK_ALLOW_PRIVATE", "true"),
    ("LEASING_WATCH_INTERVAL_SECONDS", "1"),
    ("LEASING_DELIVERY_BACKOFF_MILLISECONDS", "100"),
];

/// A guard against a hang, not a timing claim.
const GUARD: Duration = Duration::from_secs(120);

/// One call the receiver got, and the status it answered.
#[derive(Clone, Debug)]
struct Received {
    id: String,
    timestamp: String,
    signature: String,
    content_type: String,
    body: String,
    answered: u16,
}

impl Received {
    fn event(&self) -> Value {
        serde_json::from_str(&self.body).expect("the body is JSON")
    }

    /// The call as `leasing_subscription_create`'s callback declares it: its media type, its
    /// required headers, and its body against the callback's schema.
    fn fits_the_callback(&self) -> Result<(), String> {
        let media = self.content_type.split(';').next().unwrap_or_default().trim();
        if media != "application/json" {
            return Err(format!("content type {:?}", self.content_type));
        }
        let unix_seconds = self.timestamp.parse::<u64>().is_ok();
        if !self.id.starts_with("msg_") || !unix_seconds || !self.signature.starts_with("v1,") {
            return Err("a webhook-id, webhook-timestamp or webhook-signature header missing or malformed".into());
        }
        crate::common::contract::fits(CALLBACK_BODY, &self.event())
    }
}

/// Where the document has the schema of the body a subscription receives.
const CALLBACK_BODY: &str = "/paths/~1api~1v1~1leasing~1subscriptions/post/callbacks/leasingStateChanged/{$request.body#~1url}/post/requestBody/content/application~1json/schema";

/// A subscriber's endpoint on loopback: records every call and answers with `answer` (a
/// status; 0 holds the call unanswered until another status is set).
struct Receiver {
    address: SocketAddr,
    answer: Arc<AtomicU16>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    async fn start(answer: u16) -> Receiver {
        let answer = Arc::new(AtomicU16::new(answer));
        let received: Arc<Mutex<Vec<Received>>> = Default::default();
        let (status, log) = (answer.clone(), received.clone());
        let handler = move |request: SimRequest| {
            let (status, log) = (status.clone(), log.clone());
            async move {
                let header = |name: &str| {
                    request.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
                };
                let code = status.load(Ordering::SeqCst);
                log.lock().unwrap().push(Received {
                    id: header("webhook-id"),
                    timestamp: header("webhook-timestamp"),
                    signature: header("webhook-signature"),
                    content_type: header("content-type"),
                    body: String::from_utf8_lossy(&request.body).into_owned(),
                    answered: code,
                });
                let mut code = code;
                while code == 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    code = status.load(Ordering::SeqCst);
                }
                empty(http::StatusCode::from_u16(code).unwrap())
            }
        };
        let bind = SocketAddr::from(([127, 0, 0, 1], 0));
        let log = integration_service::telemetry::discard();
        let address = serve(bind, Arc::new(Faults::default()), log, handler).await.unwrap();
        Receiver { address, answer, received }
    }

    fn url(&self) -> String {
        format!("http://{}/hooks/leasing", self.address)
    }

    fn answer(&self, status: u16) {
        self.answer.store(status, Ordering::SeqCst);
    }

    /// Every call so far, each held to the document's callback (a receiver is generated from it).
    fn calls(&self) -> Vec<Received> {
        let calls = self.received.lock().unwrap().clone();
        for call in &calls {
            if let Err(mismatch) = call.fits_the_callback() {
                panic!("a delivery does not fit the document's callback: {mismatch}\n{call:?}");
            }
        }
        calls
    }

    /// The events answered with a 2xx, in the order they arrived.
    fn delivered(&self) -> Vec<Received> {
        self.calls().into_iter().filter(|c| (200..300).contains(&c.answered)).collect()
    }
}

/// HMAC-SHA256 (RFC 2104), written here from the definition so that the test does not trust
/// the service's own signing.
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().to_vec()
}

/// Whether one of the `v1` signatures of the header is the Standard Webhooks signature of the
/// call with `secret` (`whsec_<base64 key>`; signed content `<id>.<timestamp>.<body>`).
fn signed_with(secret: &str, id: &str, timestamp: &str, body: &str, header: &str) -> bool {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").expect("a whsec_ secret")).unwrap();
    let expected = STANDARD.encode(hmac_sha256(&key, format!("{id}.{timestamp}.{body}").as_bytes()));
    header.split(' ').filter_map(|s| s.strip_prefix("v1,")).any(|signature| signature == expected)
}

fn verified(secret: &str, call: &Received) -> bool {
    signed_with(secret, &call.id, &call.timestamp, &call.body, &call.signature)
}

async fn until<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < GUARD, "{what}: never happened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The states each request's delivered events announce, in arrival order, checked to be one
/// chain per request (each event's `previousState` is the state the one before announced).
/// Waits until every request's chain of delivered states ends `Contracted`; the chains.
async fn until_all_contracted(what: &str, receiver: &Receiver, ids: &[String]) -> BTreeMap<String, Vec<String>> {
    until(what, async || {
        let chains = chains(&receiver.delivered());
        ids.iter()
            .all(|id| chains.get(id).is_some_and(|c| c.last().map(String::as_str) == Some("Contracted")))
            .then_some(chains)
    })
    .await
}

fn chains(delivered: &[Received]) -> BTreeMap<String, Vec<String>> {
    let mut chains: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for call in delivered {
        if !seen.insert(call.id.clone()) {
            continue; // an event delivered again (a retry asked for) is the same event
        }
        let event = call.event();
        let data = &event["data"];
        let id = data["financingId"].as_str().unwrap().to_string();
        let chain = chains.entry(id.clone()).or_insert_with(|| vec![data["previousState"].as_str().unwrap().into()]);
        assert_eq!(chain.last().unwrap(), data["previousState"].as_str().unwrap(), "out of order for {id}: {chain:?}");
        chain.push(data["state"].as_str().unwrap().into());
    }
    chains
}

async fn subscribe(svc: &TestService, token: &str, url: &str) -> Value {
    let response = svc.post(token, "/api/v1/leasing/subscriptions", json!({"url": url, "description": "test"})).await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json_value().await;
    svc.remember_secret(created["secret"].as_str().unwrap());
    created
}

/// A service (private callback targets allowed) whose user subscribed a receiver answering
/// 204 and then created a financing request for `company`; the request's id.
async fn watched_request(db: Db, company: &str) -> (TestService, String, Receiver, String) {
    let (svc, token) = TestService::with_user(db, &[("CALLBACK_ALLOW_PRIVATE", "true")]).await;
    let receiver = Receiver::start(204).await;
    subscribe(&svc, &token, &receiver.url()).await;
    let id = create_request(&svc, &token, company).await;
    (svc, token, receiver, id)
}

async fn create_request(svc: &TestService, token: &str, company: &str) -> String {
    let response = svc.post(token, "/api/v1/leasing", leasing_request(company)).await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json_value().await;
    created["data"]["FinancingId"].as_str().unwrap().to_string()
}

/// Callback targets that are not https or not public are refused when subscribing; one
/// allowed then (a restart took the permission away) is refused at delivery, on the resolved
/// address, and never reached. The other bounds the document states are kept too.
async fn private_and_plain_http_targets_are_refused(db: Db) {
    let mut svc = TestService::start(db, FAST).await;
    let token = svc.user_token().await;
    let receiver = Receiver::start(204).await;
    subscribe(&svc, &token, &receiver.url()).await;
    svc.config.watch.allow_private = false;
    svc.restart().await;
    for url in [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://10.0.0.7/hook",
        "https://192.168.1.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[fd12:3456::1]/hook",
        "https://[fe80::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://localhost/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        let response = svc.post(&token, "/api/v1/leasing/subscriptions", json!({"url": url})).await;
        let body = error_body(response, 422).await;
        assert!(body["errors"]["url"].is_array(), "{url}: {body}");
        assert_eq!(body["success"], false);
    }
    let unknown = svc
        .post(
            &token,
            "/api/v1/leasing/subscriptions",
            json!({"url": "https://example.com/x", "events": ["leasing.nope"]}),
        )
        .await;
    assert!(error_body(unknown, 422).await["errors"]["events"].is_array());
    let none =
        svc.post(&token, "/api/v1/leasing/subscriptions", json!({"url": "https://example.com/x", "events": []})).await;
    assert!(error_body(none, 422).await["errors"]["events"].is_array(), "minItems 1");
    let long = svc
        .post(
            &token,
            "/api/v1/leasing/subscriptions",
            json!({"url": "https://example.com/x", "description": "é".repeat(501)}),
        )
        .await;
    assert!(error_body(long, 422).await["errors"]["description"].is_array(), "maxLength 500");

    let id = create_request(&svc, &token, "ACME [moves:1]").await;
    let subs: Value = svc.get_json(&token, "/api/v1/leasing/subscriptions").await;
    let sub = subs["items"][0]["id"].as_str().unwrap().to_string();
    let refused = until("a delivery attempt refused", async || {
        let listed: Value = svc.get_json(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries")).await;
        listed["items"].as_array().unwrap().iter().find(|d| d["attempts"].as_i64() >= Some(1)).cloned()
    })
    .await;
    assert_eq!(refused["financing_id"], id.as_str());
    assert!(refused["last_error"].as_str().unwrap().contains("refused"), "{refused}");
    assert!(refused["last_status_code"].is_null());
    assert!(receiver.calls().is_empty(), "the private target was never reached");
    svc.stop().await;
}

/// A state read by a route counts: with the watcher reading only every five minutes, a show
/// that finds the new state announces it.
async fn a_read_by_a_route_is_an_observation(db: Db) {
    let (svc, token, receiver, id) = watched_request(db, "ACME [moves:1]").await;
    until("the show finds the request ready to sign", async || {
        let shown: Value = svc.get_json(&token, &format!("/api/v1/leasing/{id}")).await;
        (shown["meta"]["state"] == "ReadyToSign").then_some(())
    })
    .await;
    // The same state read again announces nothing new.
    svc.get(&token, &format!("/api/v1/leasing/{id}")).await;
    let event = until("the change delivered", async || receiver.delivered().first().map(Received::event)).await;
    assert_eq!(event["data"]["previousState"], "RequestToGrenke");
    assert_eq!(event["data"]["state"], "ReadyToSign");
    assert_eq!(receiver.delivered().len(), 1);
    svc.stop().await;
}

/// only an operator may subscribe to every request, and then receives them all.
/// A subscription is its owner's: another user gets 404 on every route of it and never sees
/// it listed; it receives the events of the requests its owner created, not another user's;
async fn a_subscription_belongs_to_its_owner(db: Db) {
    let svc = TestService::start(db, FAST).await;
    let alice = svc.user_token().await;
    let (bob, root) = svc.bob_and_root().await;
    let (alice_receiver, bob_receiver, root_receiver) =
        (Receiver::start(204).await, Receiver::start(204).await, Receiver::start(204).await);
    let alice_sub = subscribe(&svc, &alice, &alice_receiver.url()).await;
    let alice_sub = alice_sub["id"].as_str().unwrap();
    let bob_sub = subscribe(&svc, &bob, &bob_receiver.url()).await;
    let bob_sub = bob_sub["id"].as_str().unwrap();

    let everything = json!({"url": root_receiver.url(), "all_requests": true});
    let refused = svc.post(&bob, "/api/v1/leasing/subscriptions", everything.clone()).await;
    assert!(error_body(refused, 422).await["errors"]["all_requests"].is_array());
    let root_sub = svc.post(&root, "/api/v1/leasing/subscriptions", everything).await;
    assert_eq!(root_sub.status(), 201);
    let root_sub: Value = root_sub.json_value().await;
    svc.remember_secret(root_sub["secret"].as_str().unwrap());
    assert_eq!(root_sub["all_requests"], true);

    let listed: Value = svc.get_json(&bob, "/api/v1/leasing/subscriptions").await;
    let ids: Vec<&str> = listed["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [bob_sub], "bob lists his own only");
    let routes = [
        (Method::GET, format!("/api/v1/leasing/subscriptions/{alice_sub}")),
        (Method::POST, format!("/api/v1/leasing/subscriptions/{alice_sub}/rotate-secret")),
        (Method::GET, format!("/api/v1/leasing/subscriptions/{alice_sub}/deliveries")),
        (Method::POST, format!("/api/v1/leasing/subscriptions/{alice_sub}/deliveries/1/retry")),
        (Method::DELETE, format!("/api/v1/leasing/subscriptions/{alice_sub}")),
    ];
    for (method, path) in &routes {
        let answer = svc.call(&bob, method.clone(), path, None).await;
        let text = error_body(answer, 404).await.to_string();
        assert!(text.contains("not_found"), "{method} {path}: {text}");
    }
    assert_eq!(svc.get(&alice, &format!("/api/v1/leasing/subscriptions/{alice_sub}")).await.status(), 200);

    let alices = create_request(&svc, &alice, "Alice [moves:1]").await;
    let bobs = create_request(&svc, &bob, "Bob [moves:1]").await;
    let announced = |receiver: &Receiver, id: &str| {
        chains(&receiver.delivered()).get(id).is_some_and(|c| c.last().map(String::as_str) == Some("Contracted"))
    };
    until("each owner's events delivered, and all of them to the operator", async || {
        (announced(&alice_receiver, &alices)
            && announced(&bob_receiver, &bobs)
            && announced(&root_receiver, &alices)
            && announced(&root_receiver, &bobs))
        .then_some(())
    })
    .await;
    // Every delivery of a change is written with its event: none was queued for the other user.
    assert!(!chains(&alice_receiver.delivered()).contains_key(&bobs));
    assert!(!chains(&bob_receiver.delivered()).contains_key(&alices));
    let deliveries = svc.get(&bob, &format!("/api/v1/leasing/subscriptions/{bob_sub}/deliveries")).await;
    let deliveries = deliveries.text().await.unwrap();
    assert!(deliveries.contains(&bobs) && !deliveries.contains(&alices), "{deliveries}");
    svc.stop().await;
}

/// A provider in maintenance answers 503 with `Retry-After`: the watcher stays away that long
/// rather than polling on its own back-off.
async fn a_503_with_retry_after_defers_the_next_read(db: Db) {
    let (svc, token) = TestService::with_user(db, FAST).await;
    let id = create_request(&svc, &token, "ACME GmbH").await;
    let rule = json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 503,
        "retry_after_seconds": 3600, "times": 1000});
    svc.leasing_fault(rule).await;
    let watch = until("a failed read", async || svc.store().watch(&id).await.unwrap().filter(|w| w.failures > 0)).await;
    let wait = watch.next_poll_at.unwrap() - integration_service::store::now_ms();
    assert!(wait > 3_000_000, "read again in {wait} ms");
    svc.stop().await;
}

on_both_databases!(
    a_subscription_belongs_to_its_owner,
    a_503_with_retry_after_defers_the_next_read,
    private_and_plain_http_targets_are_refused,
    a_read_by_a_route_is_an_observation,
);

/// The test's own HMAC agrees with the example of the specification's reference libraries.
#[test]
fn the_test_verifier_agrees_with_the_specification_example() {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let header = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    assert!(signed_with(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", r#"{"test": 2432232314}"#, header));
    assert!(!signed_with(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265331", r#"{"test": 2432232314}"#, header));
}
