//! The answers the service's edge gives whatever the operation, sent to every operation of the
//! served document: no token or an unknown one (401), a body over the limit (413, whether the
//! operation takes a body or not), malformed JSON (400), a body of another media type (415), a
//! path parameter that is not UTF-8 (400), a head too large (431), a header read once sent
//! twice (400) or a request target too long (414) and, with the database down, 503 with
//! `Retry-After`, and a body that stops arriving (408).
//! Each answer must be declared by the operation under its own status (openapi-zod-client, for
//! one, drops a `4XX` range), fit that status's schema (so its `error_code` is in the enum
//! there), have the headers it carries declared, and under `/api/v1/leasing` carry the leasing
//! envelope (`success: false`).

use futures::StreamExt;
use reqwest::{Method, RequestBuilder};
use serde_json::Value;

use crate::common::requests::raw_exchange;
use crate::common::{Api, Db, TestService, contract};

/// `MAX_BODY_BYTES` of these tests: small, so that a body over it is quick to send.
const LIMIT: usize = 2048;

/// One operation of the document, with what a request to it needs.
struct Operation {
    method: Method,
    template: String,
    guarded: bool,
    /// The example of its request body, when it takes one.
    body: Option<Value>,
    declared: Vec<String>,
}

impl Operation {
    /// Its path with every parameter set to `value` (already percent-encoded).
    fn path(&self, value: &str) -> String {
        let mut path = String::new();
        for segment in self.template.split_inclusive('/') {
            let variable = segment.starts_with('{');
            path.push_str(if variable { value } else { segment });
            if variable && segment.ends_with('/') {
                path.push('/');
            }
        }
        path
    }
}

fn operations(document: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = Method::from_bytes(method.to_ascii_uppercase().as_bytes()) else { continue };
            operations.push(Operation {
                method,
                template: template.clone(),
                guarded: op["security"].as_array().is_some_and(|s| s.iter().any(|s| s.get("bearerAuth").is_some())),
                body: op.get("requestBody").map(|b| b["content"]["application/json"]["example"].clone()),
                declared: op["responses"].as_object().unwrap().keys().cloned().collect(),
            });
        }
    }
    assert!(operations.len() > 150, "only {} operations", operations.len());
    operations
}

/// Sends `request` (to `op`, provoking `what`): its status, and whatever of its answer the
/// document does not say (see [`judge`]).
async fn answer(op: &Operation, what: &str, request: RequestBuilder, expected: Option<u16>) -> (u16, Vec<String>) {
    let (client, request) = request.build_split();
    let request = request.unwrap();
    let (method, url) = (request.method().clone(), request.url().clone());
    let response = client.execute(request).await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let body = response.bytes().await.unwrap();
    (status, judge(op, what, (&method, &url), status, &headers, &body, expected))
}

/// Whatever of an answer to `op` (its request `sent`, provoking `what`) the document does not
/// say: an `expected` status it is not, a status declared only by a range, a mismatch of the
/// contract, a leasing error without `success: false`.
fn judge(
    op: &Operation,
    what: &str,
    (method, url): (&Method, &reqwest::Url),
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
    expected: Option<u16>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut note = |problem: String| problems.push(format!("{what}: {method} {}: {problem}", op.template));
    if expected.is_some_and(|expected| expected != status) {
        note(format!("{status} instead of {expected:?}"));
    }
    if !op.declared.contains(&status.to_string()) {
        note(format!("{status} is declared only by a range (declared: {:?})", op.declared));
    }
    if let Err(mismatch) = contract::mismatch(method, url, status, headers, body) {
        note(mismatch);
    }
    if status >= 400 && op.template.starts_with("/api/v1/leasing") {
        let value: Value = serde_json::from_slice(body).unwrap_or_default();
        if value["success"] != false {
            note(format!("{status} without the leasing envelope: {value}"));
        }
    }
    problems
}

/// What did not fit, one line each, collected over every operation.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    /// [`answer`], its problems noted.
    async fn send(&mut self, op: &Operation, what: &str, request: RequestBuilder, expected: Option<u16>) -> u16 {
        let (status, problems) = answer(op, what, request, expected).await;
        self.0.extend(problems);
        status
    }

    fn assert_none(self) {
        assert!(self.0.is_empty(), "{} answers the document does not state:\n{}", self.0.len(), self.0.join("\n"));
    }
}

async fn served_document(svc: &TestService) -> Value {
    svc.client.get(svc.url("/docs/openapi.json")).send().await.unwrap().json().await.unwrap()
}

async fn every_operation_declares_the_edge_s_answers(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("MAX_BODY_BYTES", &LIMIT.to_string())]).await;
    let document = served_document(&svc).await;
    let unknown = format!("999999|{}", "a".repeat(40));
    let mut failures = Failures::default();
    for op in operations(&document) {
        let request = |path: &str| svc.client.request(op.method.clone(), svc.url(path));
        let path = op.path("1");
        if op.guarded {
            failures.send(&op, "no token", request(&path), Some(401)).await;
            // A token of the right form that no user holds, with a body the operation takes.
            let mut unknown_token = request(&path).bearer_auth(&unknown);
            if let Some(body) = &op.body {
                unknown_token = unknown_token.json(body);
            }
            failures.send(&op, "unknown token", unknown_token, None).await;
        }
        let authorized = |path: &str| request(path).bearer_auth(&token);
        let json = |path: &str| authorized(path).header("content-type", "application/json");
        // Refused by its length before any operation reads it, whether the operation takes one.
        let large = format!("[{}0]", "0,".repeat(LIMIT));
        failures.send(&op, "body over the limit", json(&path).body(large), Some(413)).await;
        if op.body.is_some() {
            failures.send(&op, "malformed JSON", json(&path).body("{\"a\": "), Some(400)).await;
            // RFC 9110: a body in a format the operation does not take is 415.
            for media in ["text/plain", "application/x-www-form-urlencoded"] {
                let other = authorized(&path).header("content-type", media).body("{}");
                failures.send(&op, &format!("a body of {media}"), other, Some(415)).await;
            }
        }
        if op.template.contains('{') {
            let mut bad = authorized(&op.path("%FF"));
            if let Some(body) = &op.body {
                bad = bad.json(body);
            }
            failures.send(&op, "path parameter not UTF-8", bad, Some(400)).await;
        }
    }
    failures.assert_none();
    svc.stop().await;
}

/// `MAX_HEADER_BYTES` of [`every_operation_declares_the_refusals_of_a_head`]: over 65,534, so
/// that a request target hyper refuses as too long (414) fits a head the front takes.
const HEAD_LIMIT: usize = 70_000;

/// Whatever the operation, the front refuses a head over `MAX_HEADER_BYTES` by itself (431) and
/// one that sends a header the service reads once twice (400), and hyper one with more headers
/// than it parses (431) or a request target over 65,534 bytes (414), both replaced by the
/// front's JSON: each must be declared by every operation under its own status, and under
/// `/api/v1/leasing` carry the leasing envelope like every error there.
async fn every_operation_declares_the_refusals_of_a_head(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("MAX_HEADER_BYTES", &HEAD_LIMIT.to_string())]).await;
    let document = served_document(&svc).await;
    let address = svc.service.as_ref().expect("running").address;
    let mut failures = Failures::default();
    for op in operations(&document) {
        let request = |path: &str| svc.client.request(op.method.clone(), svc.url(path)).bearer_auth(&token);
        let path = op.path("1");
        let padded = request(&path).header("x-pad", "p".repeat(HEAD_LIMIT));
        failures.send(&op, "a head over the limit", padded, Some(431)).await;
        let mut many = request(&path);
        for i in 0..120 {
            many = many.header(format!("x-h{i}"), "1");
        }
        failures.send(&op, "120 headers", many, Some(431)).await;
        // A header the service reads once, sent twice: refused by the front (400 `bad_request`).
        let twice = request(&path).header("authorization", format!("Bearer {token}"));
        failures.send(&op, "Authorization sent twice", twice, Some(400)).await;
        // Too long for reqwest's URLs: sent as bytes.
        let head = format!("{} {path}?pad={} HTTP/1.1\r\nhost: x\r\n\r\n", op.method, "p".repeat(66_000));
        let (status, headers, body) = raw_exchange(address, head.as_bytes()).await;
        let url = reqwest::Url::parse(&svc.url(&path)).unwrap();
        let what = "a request target over 65,534 bytes";
        failures.0.extend(judge(&op, what, (&op.method, &url), status, &headers, body.as_bytes(), Some(414)));
    }
    failures.assert_none();
    svc.stop().await;
}

/// With the database closed, operations that meet it answer 503 `service_unavailable` with
/// `Retry-After`; every answer, 503 or not, must be declared as sent. Not every operation
/// answers 503 (on SQLite 84 of 190 did when this was written).
async fn with_the_database_down_every_operation_declares_its_503(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let document = served_document(&svc).await;
    svc.store().close().await;
    let mut failures = Failures::default();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for op in operations(&document) {
        let mut request = svc.client.request(op.method.clone(), svc.url(&op.path("1"))).bearer_auth(&token);
        if let Some(body) = &op.body {
            request = request.json(body);
        }
        *statuses.entry(failures.send(&op, "database down", request, None).await).or_default() += 1;
    }
    failures.assert_none();
    assert!(statuses.get(&503).is_some_and(|n| *n > 60), "too few answered 503: {statuses:?}");
    svc.stop().await;
}

/// A body that stops arriving is answered 408 `request_timeout` once `BODY_READ_TIMEOUT_SECONDS`
/// have passed, whichever operation takes it (sent to all of them at once).
async fn every_operation_taking_a_body_declares_its_408(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("BODY_READ_TIMEOUT_SECONDS", "1")]).await;
    let document = served_document(&svc).await;
    let operations: Vec<Operation> = operations(&document).into_iter().filter(|op| op.body.is_some()).collect();
    let stalled = operations.iter().map(|op| {
        // The first byte, then nothing: the body never ends.
        let body =
            futures::stream::once(async { Ok::<_, std::io::Error>(b"{".to_vec()) }).chain(futures::stream::pending());
        let request = svc
            .client
            .request(op.method.clone(), svc.url(&op.path("1")))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(body));
        answer(op, "a body that stops arriving", request, Some(408))
    });
    let problems: Vec<String> = futures::future::join_all(stalled).await.into_iter().flat_map(|(_, p)| p).collect();
    Failures(problems).assert_none();
    svc.stop().await;
}

crate::on_both_databases!(
    every_operation_declares_the_edge_s_answers,
    every_operation_declares_the_refusals_of_a_head,
    with_the_database_down_every_operation_declares_its_503,
    every_operation_taking_a_body_declares_its_408
);
