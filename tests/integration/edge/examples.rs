//! The document's request-body examples are ones a consumer can send: each is sent, verbatim,
//! to its operation against the simulators and must succeed (2xx). Path parameters are filled
//! with what the examples created: the financing request of `leasing_create`'s example, a
//! record of the set made with the set's own create example. One example is the consumer's own:
//! a subscription's receiver URL, replaced by a loopback one.

use crate::common::Api;
use serde_json::Value;

use crate::common::contract::{Checked, fits};
use crate::common::{Db, TestService};

/// An operation with an example body: method, path template, operationId, example.
#[derive(Clone)]
struct Example {
    method: reqwest::Method,
    path: String,
    op_id: String,
    body: Value,
}

fn examples(doc: &Value) -> Vec<Example> {
    let mut examples = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(body) = op.pointer("/requestBody/content/application~1json/example") else { continue };
            examples.push(Example {
                method: method.to_uppercase().parse().unwrap(),
                path: path.clone(),
                op_id: op["operationId"].as_str().unwrap().to_string(),
                body: body.clone(),
            });
        }
    }
    examples
}

async fn send(svc: &TestService, token: &str, example: &Example, path: &str) -> Value {
    let response = svc
        .client
        .request(example.method.clone(), svc.url(path))
        .bearer_auth(token)
        .json(&example.body)
        .checked()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert!((200..300).contains(&status), "{} {path} with its example answered {status}: {body}", example.op_id);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_body_example_succeeds_against_the_simulators() {
    // The ERP's webhook calls come from its addresses: the simulator's is loopback.
    let svc = TestService::start(
        Db::Sqlite,
        &[("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"), ("CALLBACK_ALLOW_PRIVATE", "true")],
    )
    .await;
    let doc: Value = serde_json::from_str(crate::common::DOCUMENT).unwrap();
    let examples = examples(&doc);
    let by_id =
        |op_id: &str| examples.iter().find(|e| e.op_id == op_id).unwrap_or_else(|| panic!("no example of {op_id}"));

    // The login example's user.
    let login = by_id("login");
    let (email, password) = (login.body["email"].as_str().unwrap(), login.body["password"].as_str().unwrap());
    svc.create_user(email, password).await;
    let token = send(&svc, "", login, &login.path).await["access_token"].as_str().unwrap().to_string();

    let create = by_id("leasing_create");
    let financing_id =
        send(&svc, &token, create, &create.path).await["data"]["FinancingId"].as_str().unwrap().to_string();
    let mut sent = 2;
    for example in &examples {
        if ["login", "leasing_create"].contains(&example.op_id.as_str()) {
            continue;
        }
        let mut path = example.path.replace("{financingId}", &financing_id);
        if path.contains("{record}") {
            // A record of this set, made with the set's create example.
            let collection = example.path.trim_end_matches("/{record}");
            let create = examples
                .iter()
                .find(|e| e.path == collection && e.method == reqwest::Method::POST)
                .unwrap_or_else(|| panic!("no create example for {collection}"));
            let record = send(&svc, &token, create, collection).await["data"]["Id"].as_str().unwrap().to_string();
            path = path.replace("{record}", &record);
        }
        assert!(!path.contains('{'), "{}: which value for the parameters of {path}?", example.op_id);
        if example.op_id == "leasing_start_e_signature" {
            // The provider starts an e-signature once the request is ready to sign.
            let ready = svc.get(&token, &format!("/api/v1/leasing/{financing_id}/wait-ready-to-sign")).await;
            assert_eq!(ready.status(), 200);
        }
        if example.op_id == "leasing_subscription_create" {
            // The example names the consumer's own public https receiver, which a test can
            // neither resolve nor reach: the same body with a loopback receiver instead (the
            // service runs with `CALLBACK_ALLOW_PRIVATE`, as `serve --sandbox` does).
            let mut body = example.body.clone();
            assert!(body["url"].as_str().is_some_and(|url| url.starts_with("https://")), "{body}");
            body["url"] = "http://127.0.0.1:9/hooks/leasing".into();
            send(&svc, &token, &Example { body, ..example.clone() }, &path).await;
        } else {
            send(&svc, &token, example, &path).await;
        }
        sent += 1;
    }
    // Every operation with a body has an example (a unit test of the document says so too).
    let bodies = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter(|op| op.get("requestBody").is_some())
        .count();
    assert_eq!(sent, bodies);
    svc.stop().await;
}

/// Every JSON success answer of the document has an example, and each example, of an answer
/// or of a schema, fits its schema by the rules the answers themselves are checked with
/// (`common::contract`).
#[test]
fn every_success_answer_has_an_example_that_fits_its_schema() {
    let doc: Value = serde_json::from_str(crate::common::DOCUMENT).unwrap();
    let token = |text: &str| text.replace('~', "~0").replace('/', "~1");
    let mut examples = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().unwrap() {
                let Some(media) = response.pointer("/content/application~1json") else { continue };
                if !status.starts_with('2') {
                    continue;
                }
                let op_id = op["operationId"].as_str().unwrap();
                let example = media.get("example").unwrap_or_else(|| panic!("{op_id} {status}: no example"));
                let schema =
                    format!("/paths/{}/{method}/responses/{status}/content/application~1json/schema", token(path));
                examples.push((format!("{op_id} {status}"), schema, example.clone()));
            }
        }
    }
    let answers = examples.len();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if let Some(example) = schema.get("example") {
            examples.push((name.clone(), format!("/components/schemas/{}", token(name)), example.clone()));
        }
    }
    for (what, schema, example) in &examples {
        if let Err(mismatch) = fits(schema, example) {
            panic!("{what}: the example does not fit its schema: {mismatch}\nexample: {example}");
        }
    }
    assert!(answers > 150, "only {answers} answers with examples");
    assert!(examples.len() > answers + 10, "only {} schemas with examples", examples.len() - answers);
}
