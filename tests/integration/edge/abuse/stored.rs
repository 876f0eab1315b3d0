//! What callers can make the service store, and show: bounded login digests, secrets masked in
//! mirrored ERP records, nothing after a JSON body and no key twice in it, and what one user may
//! store bounded.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, PASSWORD, TestService, error_body};
use serde_json::{Value, json};
use std::str::FromStr;

use super::injection::{percent_encode, sample};
use super::*;

/// A login's email and password are bounded before anything is stored, a failed login is
/// recorded by a fixed-size digest of the email (never the email), and one address trying many
/// emails (password spraying) is throttled like one email tried many times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_store_bounded_digests_and_spraying_is_throttled() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let pool = database(&svc).await;
    let login = |email: String, password: String| {
        svc.client.post(svc.url("/api/v1/login")).json(&json!({"email": email, "password": password})).checked()
    };
    let huge = format!("{}@example.com", "x".repeat(1_000_000));
    let body = error_body(login(huge, "whatever".into()).await.unwrap(), 422).await;
    assert!(body["errors"]["email"].is_array(), "{body}");
    let just_over = format!("{}@example.com", "x".repeat(255 - "@example.com".len()));
    error_body(login(just_over, "whatever".into()).await.unwrap(), 422).await;
    let body = error_body(login("a@example.com".into(), "p".repeat(4097)).await.unwrap(), 422).await;
    assert!(body["errors"]["password"].is_array(), "{body}");
    assert_eq!(count(&pool, "login_failures").await, 0, "refused input is not stored");

    error_body(login("Someone@Example.com".into(), "wrong password".into()).await.unwrap(), 401).await;
    let (stored,): (String,) = sqlx::query_as("SELECT email FROM login_failures").fetch_one(&pool).await.unwrap();
    assert_eq!(stored.len(), 64, "a digest: {stored}");
    assert!(!stored.contains('@') && stored.chars().all(|c| c.is_ascii_hexdigit()), "{stored}");

    // Spraying: one address, a new email each time.
    for n in 1..20 {
        error_body(login(format!("user{n}@example.com"), "Winter2026!".into()).await.unwrap(), 401).await;
    }
    let throttled = login("user20@example.com".into(), "Winter2026!".into()).await.unwrap();
    assert_eq!(throttled.status(), 429, "the 21st failure from one address within a minute");
    assert!(throttled.headers().contains_key("retry-after"));
    svc.stop().await;
}

/// The login limits count characters, as the document's `maxLength` does: the longest body a
/// client's validator lets through is not refused as too long (a password of 4,096 two-byte
/// characters; an email of 254 characters and more bytes, which no user has).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_limits_count_characters_as_the_document_does() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let login = |email: String, password: String| {
        svc.client.post(svc.url("/api/v1/login")).json(&json!({"email": email, "password": password})).checked()
    };
    error_body(login("a@example.com".into(), "é".repeat(4096)).await.unwrap(), 401).await;
    let wide = format!("{}@example.com", "é".repeat(254 - "@example.com".len()));
    error_body(login(wide, "whatever".into()).await.unwrap(), 401).await;
    let body = error_body(login("a@example.com".into(), "é".repeat(4097)).await.unwrap(), 422).await;
    assert!(body["errors"]["password"].is_array(), "{body}");
    svc.stop().await;
}

/// The secret in the URL of the ERP webhook registration the tests below look for.
const SECRET: &str = "s3cret-in-a-url";

/// A service whose ERP holds a webhook registration with `secret` in its URL; a user's token,
/// and the registration's id.
async fn with_a_registration_holding(secret: &str) -> (TestService, String, String) {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let registration = json!({"entityName": "customer", "atCreate": true, "atUpdate": true, "atDelete": true,
        "requestMethod": "POST", "url": format!("https://svc.example/api/v1/erp/webhooks?secret={secret}")});
    let created = svc.erp_api(reqwest::Method::POST, "/webhook").json(&registration).checked().await.unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    (svc, token, id)
}

/// The ERP's webhook registrations carry the service's webhook secret in their URL: mirrored
/// and shown to any user, the secret is masked, in lists and single records alike, and never
/// reaches the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrored_erp_records_never_show_a_secret() {
    let (svc, token, id) = with_a_registration_holding(SECRET).await;
    let get = |path: String| svc.client.get(svc.url(&path)).bearer_auth(&token).checked();
    assert_eq!(get("/api/v1/erp/setup/webhook".into()).await.unwrap().status(), 200);
    for path in [
        "/api/v1/erp/show/webhook".to_string(),
        format!("/api/v1/erp/show/webhook/{id}"),
        "/api/v1/erp/show/webhook/entityName/customer".to_string(),
    ] {
        let answer = get(path.clone()).await.unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        let text = answer.text().await.unwrap();
        assert!(!text.contains(SECRET), "{path} shows the secret: {text}");
        assert!(text.contains("secret=***"), "{path}: {text}");
    }
    assert!(!svc.log.text().contains(SECRET), "the secret reached the log");
    // A lookup never matches a secret: the right guess finds as little as a wrong one. (The
    // guesses are the caller's own text, and the request log shows the path as sent.)
    for guess in [SECRET, "wrong-guess"] {
        let url = format!("https://svc.example/api/v1/erp/webhooks?secret={guess}");
        let answer = get(format!("/api/v1/erp/show/webhook/url/{}", percent_encode(&url))).await.unwrap();
        assert_eq!(answer.status(), 200);
        let found: Value = answer.json_value().await;
        assert_eq!(found["data"].as_array().map(Vec::len), Some(0), "{guess}: {found}");
    }
    svc.stop().await;
}

/// A refresh of ERP records by a field's value (`erp/update/{model}/{field}/{value}`) never
/// sends a filter on a secret: what the ERP finds for `url-eq=<URL with a guessed secret>`
/// (one record for the right guess, none for a wrong one) would confirm the guess. Each guess,
/// and a field named like a secret, is refused alike with 422; a plain value is still fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erp_refreshes_by_value_never_confirm_a_secret() {
    let (svc, token, _) = with_a_registration_holding(SECRET).await;
    let get = |path: String| svc.client.get(svc.url(&path)).bearer_auth(&token).checked();
    let mut answers = Vec::new();
    for guess in [SECRET, "wrong-guess"] {
        for url in [
            format!("https://svc.example/api/v1/erp/webhooks?secret={guess}"),
            format!("HTTPS://svc.example/api/v1/erp/webhooks?Secret={guess}"),
        ] {
            let answer = get(format!("/api/v1/erp/update/webhook/url/{}", percent_encode(&url))).await.unwrap();
            let error = error_body(answer, 422).await;
            assert!(error["errors"]["value"].is_array(), "{guess}: {error}");
            answers.push((error["message"].clone(), error["errors"].clone()));
        }
    }
    assert!(answers.windows(2).all(|pair| pair[0] == pair[1]), "the guesses are told apart: {answers:?}");
    error_body(get("/api/v1/erp/update/webhook/apiToken/abc".into()).await.unwrap(), 422).await;
    let plain = get("/api/v1/erp/update/webhook/entityName/customer".into()).await.unwrap();
    assert_eq!(plain.status(), 200);
    let report: Value = plain.json_value().await;
    assert!(report["data"][0]["fetched"].as_u64().is_some_and(|n| n >= 1), "{report}");
    svc.stop().await;
}

/// Every operation of the served document that takes a JSON body: its method, its path, the
/// path with its parameters filled in with values of the right shape (the body is read
/// first), and a sample body.
fn operations_with_a_body(doc: &Value) -> Vec<(reqwest::Method, String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(schema) = op.pointer("/requestBody/content/application~1json/schema") else { continue };
            let concrete: String = path
                .split('/')
                .map(|segment| if segment.starts_with('{') { "1" } else { segment })
                .collect::<Vec<_>>()
                .join("/");
            let method = reqwest::Method::from_str(&method.to_uppercase()).unwrap();
            found.push((method, path.clone(), concrete, sample(doc, schema, 0)));
        }
    }
    assert!(found.len() >= 10, "only {} operations take a body", found.len());
    found
}

/// A service on SQLite that admits webhooks from loopback, a user's token, and the operations
/// of its served document that take a JSON body ([`operations_with_a_body`]).
async fn a_service_and_its_operations_with_a_body()
-> (TestService, String, Vec<(reqwest::Method, String, String, Value)>) {
    let svc = TestService::start(Db::Sqlite, &[("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32")]).await;
    let token = svc.user_token().await;
    let doc: Value = svc.client.get(svc.url("/docs/openapi.json")).json_value().await;
    let operations = operations_with_a_body(&doc);
    (svc, token, operations)
}

/// Sends `body` as it is, with `method`, to `concrete` (the operation `path` with its
/// parameters filled in), and asserts a 400 whose message holds each of `words`.
async fn assert_refused_as_sent(
    svc: &TestService,
    token: &str,
    (method, path, concrete): (&reqwest::Method, &str, &str),
    body: String,
    words: &[&str],
) {
    let answer = svc.send_raw(Some(token), method.clone(), concrete, body.clone()).await;
    let error = error_body(answer, 400).await;
    let message = error["message"].as_str().unwrap();
    assert!(words.iter().all(|word| message.contains(word)), "{method} {path} with {body:?}: {error}");
}

/// A body with anything but whitespace after its JSON value is refused with 400 naming the
/// position, on every operation that takes a body: a proxy that reads such a body otherwise
/// would see another request than the service. Whitespace after the value is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailing_data_after_a_json_body_is_400_on_every_route() {
    let (svc, token, operations) = a_service_and_its_operations_with_a_body().await;
    for (method, path, concrete, body) in operations {
        let body = body.to_string();
        for trailing in [format!("{body} garbage"), format!("{body}{body}"), format!("{body}\n]")] {
            let operation = (&method, path.as_str(), concrete.as_str());
            assert_refused_as_sent(&svc, &token, operation, trailing, &["trailing characters", "column"]).await;
        }
    }
    // Whitespace after the value is no trailing data.
    let login = svc
        .client
        .post(svc.url("/api/v1/login"))
        .header("content-type", "application/json")
        .body(format!("{} \r\n\t ", json!({"email": crate::common::EMAIL, "password": PASSWORD})))
        .checked()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    svc.stop().await;
}

/// A JSON object that names a key twice is refused with 400 on every operation that takes a
/// body, as the typed bodies and the query strings refused it already: the bodies passed on
/// as they came (provider payloads, field-report records, the webhook) kept the last value,
/// where a proxy or firewall that reads the first would have seen another request. The same
/// key in two objects is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_named_twice_in_a_json_body_is_400_on_every_route() {
    let (svc, token, operations) = a_service_and_its_operations_with_a_body().await;
    for (method, path, concrete, body) in operations {
        let Some((key, value)) = body.as_object().and_then(|fields| fields.iter().next()) else { continue };
        let twice = format!("{{{}:{value},{}", json!(key), &body.to_string()[1..]);
        let operation = (&method, path.as_str(), concrete.as_str());
        assert_refused_as_sent(&svc, &token, operation, twice, &["duplicate field"]).await;
    }
    // Inside a record or a payload too; the same key in two objects is no duplicate.
    let post = reqwest::Method::POST;
    let nested = r#"{"Id":"t-1","Version":1,"A":{"k":1,"k":2}}"#.to_string();
    let nested = svc.send_raw(Some(&token), post.clone(), "/api/v1/fieldreport/tags", nested).await;
    assert!(error_body(nested, 400).await["message"].as_str().unwrap().contains("duplicate field `k`"));
    let lessee = r#"{"Lessee":{"CompanyName":"A GmbH","CompanyName":"B GmbH"}}"#.to_string();
    let lessee = svc.send_raw(Some(&token), post.clone(), "/api/v1/leasing", lessee).await;
    assert!(error_body(lessee, 400).await["message"].as_str().unwrap().contains("duplicate field `CompanyName`"));
    let apart = r#"{"Id":"t-2","Version":1,"A":{"k":1},"B":{"k":1}}"#.to_string();
    let apart = svc.send_raw(Some(&token), post, "/api/v1/fieldreport/tags", apart).await;
    assert_eq!(apart.status(), 201, "one key in two objects");
    svc.stop().await;
}

/// What one user may store is bounded: a callback URL of at most 2,048 characters,
/// `LEASING_SUBSCRIPTIONS_PER_USER` subscriptions (another user keeps their own allowance),
/// lists by pages of a bounded size, and `JOBS_ACTIVE_PER_USER` jobs queued or running (429
/// with `Retry-After` beyond).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_lists_and_jobs_are_bounded_per_user() {
    let settings =
        [("CALLBACK_ALLOW_PRIVATE", "true"), ("LEASING_SUBSCRIPTIONS_PER_USER", "3"), ("JOBS_ACTIVE_PER_USER", "2")];
    let service = TestService::start(Db::Sqlite, &settings).await;
    let svc = &service;
    let token = svc.user_token().await;
    svc.create_user("bob@example.com", "bob-password-1").await;
    let bob = svc.token("bob@example.com", "bob-password-1").await;
    let subscribe = |token: String, url: String| async move {
        svc.client
            .post(svc.url("/api/v1/leasing/subscriptions"))
            .bearer_auth(token)
            .json(&json!({"url": url}))
            .checked()
            .await
            .unwrap()
    };
    let long = format!("http://127.0.0.1:9/{}", "a".repeat(2049));
    let refused = error_body(subscribe(token.clone(), long).await, 422).await;
    assert!(refused["errors"]["url"][0].as_str().unwrap().contains("2048"), "{refused}");
    for n in 0..3 {
        let created = subscribe(token.clone(), format!("http://127.0.0.1:9/hook/{n}")).await;
        assert_eq!(created.status(), 201);
        svc.remember_secret(created.json::<Value>().await.unwrap()["secret"].as_str().unwrap());
    }
    let fourth = error_body(subscribe(token.clone(), "http://127.0.0.1:9/hook/4".into()).await, 409).await;
    assert_eq!(fourth["error_code"], "too_many_subscriptions");
    let bobs = subscribe(bob.clone(), "http://127.0.0.1:9/hook/bob".into()).await;
    assert_eq!(bobs.status(), 201);
    svc.remember_secret(bobs.json::<Value>().await.unwrap()["secret"].as_str().unwrap());

    let page: Value = svc.get_json(&token, "/api/v1/leasing/subscriptions?per_page=2").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!((page["meta"]["total"].as_i64(), page["meta"]["last_page"].as_i64()), (Some(3), Some(2)));
    let last: Value = svc.get_json(&token, "/api/v1/leasing/subscriptions?per_page=2&page=2").await;
    assert_eq!(last["items"].as_array().unwrap().len(), 1);
    for path in ["/api/v1/leasing/subscriptions?per_page=101", "/api/v1/jobs?per_page=101"] {
        error_body(svc.get(&token, path).await, 422).await;
    }
    let sub = page["items"][0]["id"].as_str().unwrap();
    let deliveries = svc.get(&token, &format!("/api/v1/leasing/subscriptions/{sub}/deliveries?limit=501")).await;
    error_body(deliveries, 422).await;

    // Two jobs kept queued behind a slow one: the third of one user is refused.
    crate::common::add_fault(
        &svc.client,
        &svc.fieldreport,
        json!({"path_prefix": "/odata/", "status": 200, "delay_ms": 3000, "times": 1000}),
    )
    .await;
    let queue = |token: String, target: &'static str| async move {
        svc.post(&token, "/api/v1/jobs", json!({"kind": "fieldreport.sync", "target": target})).await
    };
    assert_eq!(queue(token.clone(), "tags").await.status(), 202);
    assert_eq!(queue(token.clone(), "users").await.status(), 202);
    let third = queue(token.clone(), "items").await;
    assert!(third.headers().contains_key("retry-after"));
    assert_eq!(error_body(third, 429).await["error_code"], "too_many_active_jobs");
    assert_eq!(queue(bob.clone(), "items").await.status(), 202, "another user's allowance is their own");
    service.stop().await;
}

/// A message that echoes the caller's own input (an unknown job kind, model or entity, a path
/// that does not parse) echoes a guess at a configured secret as it echoes any other text:
/// showing the right guess as `***` and a wrong one as sent would confirm the guess, on any
/// route, as fast as a client can ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_input_never_tells_a_right_guess_at_a_secret() {
    const SECRET: &str = "webhook-secret-4711";
    const WRONG: &str = "webhook-secret-4712";
    let svc = TestService::start(Db::Sqlite, &[("ERP_WEBHOOK_SECRET", SECRET)]).await;
    let token = svc.user_token().await;
    let answer = |guess: &'static str| {
        let svc = &svc;
        let token = token.clone();
        async move {
            let mut bodies = Vec::new();
            for request in [
                svc.client.post(svc.url("/api/v1/jobs")).json(&json!({"kind": format!("x{guess}")})),
                svc.client.get(svc.url(&format!("/api/v1/erp/show/x{guess}"))),
                svc.client.get(svc.url(&format!("/api/v1/fieldreport/show/x{guess}"))),
                svc.client.get(svc.url(&format!("/api/v1/jobs/{guess}"))),
            ] {
                let answer = request.bearer_auth(&token).checked().await.unwrap();
                let mut body: Value = answer.json_value().await;
                body["request_id"] = Value::Null;
                bodies.push(body.to_string().replace(guess, "<guess>"));
            }
            bodies
        }
    };
    let (right, wrong) = (answer(SECRET).await, answer(WRONG).await);
    assert!(right.iter().all(|body| body.contains("<guess>")), "{right:?}");
    assert_eq!(right, wrong, "the right guess is told apart from a wrong one");
    svc.stop().await;
}
