//! The one-shot request flow and idempotent retries over real HTTP.

use crate::common::{Api, JsonAnswer};
use crate::common::{Db, TestService, error_body, leasing_request};
use serde_json::{Value, json};

fn flow_body(company: &str) -> Value {
    json!({
        "request_payload": leasing_request(company),
        "e_signature_payload": {"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example",
                                "signees": [{"FirstName": "Max", "LastName": "Mustermann", "Email": "max@acme.example"}]},
        "sleep_milliseconds": 0
    })
}

const FLOW: &str = "/api/v1/leasing/leasing/request-flow";

async fn post(svc: &TestService, token: &str, path: &str, body: &Value, key: Option<&str>) -> reqwest::Response {
    svc.post_keyed(token, path, key, body.clone()).await
}

async fn flow_steps(svc: &TestService, flow_id: i64) -> (String, Option<String>, Vec<(String, String)>) {
    let (status, code): (String, Option<String>) =
        sqlx::query_as("SELECT status, error_code FROM leasing_flows WHERE id = $1")
            .bind(flow_id)
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
    let steps: Vec<(String, String)> =
        sqlx::query_as("SELECT action, outcome FROM leasing_flow_steps WHERE flow_id = $1 ORDER BY position")
            .bind(flow_id)
            .fetch_all(svc.store().pool())
            .await
            .unwrap();
    (status, code, steps)
}

async fn latest_flow_id(svc: &TestService) -> i64 {
    let (id,): (i64,) =
        sqlx::query_as("SELECT MAX(id) FROM leasing_flows").fetch_one(svc.store().pool()).await.unwrap();
    id
}

async fn e_signature_mode_runs_every_step_in_order(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let response = post(&svc, &token, FLOW, &flow_body("ACME GmbH"), None).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json_value().await;
    assert_eq!(body["success"], true);
    let data = &body["data"];
    assert_eq!(data["success"], true);
    assert_eq!(data["mode"], "e_signature");
    let id = data["financingId"].as_str().unwrap();
    assert_eq!(data["request"]["FinancingId"], id);
    assert_eq!(data["patchedRequest"], Value::Null);
    assert_eq!(data["patchedLessee"], Value::Null);
    assert_eq!(data["readyRequest"]["State"], "ReadyToSign");
    assert_eq!(data["configuration"]["DocuSign"]["MaxNumberOfCustomerSignees"], 2);
    assert_eq!(data["eSignature"]["State"], "AwaitingCustomerSignature");
    assert_eq!(data["contractDocumentBase64"], Value::Null);
    assert_eq!(data["contractDocumentDownloadLink"], Value::Null);
    assert!(data.get("cancelESignature").is_none());

    let (status, code, steps) = flow_steps(&svc, data["flowId"].as_i64().unwrap()).await;
    assert_eq!(status, "succeeded");
    assert_eq!(code, None);
    let actions: Vec<&str> = steps.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(actions, ["create", "wait_ready_to_sign", "e_signature_configuration", "start_e_signature"]);
    assert!(steps.iter().all(|(_, outcome)| outcome == "succeeded"));
    svc.stop().await;
}

async fn patches_and_contract_fetches_in_both_modes(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for cancel in [false, true] {
        let mut body = flow_body("ACME GmbH");
        body["patch_request_payload"] = json!({"PaymentMethod": "Invoice"});
        body["patch_lessee_payload"] = json!({"CompanyName": "ACME Holding GmbH"});
        body["fetch_contract_document_base64"] = json!(true);
        body["fetch_contract_document_download_link"] = json!(true);
        body["cancel_e_signature"] = json!(cancel);
        if cancel {
            body.as_object_mut().unwrap().remove("e_signature_payload");
        }
        let response = post(&svc, &token, FLOW, &body, None).await;
        assert_eq!(response.status(), 200);
        let data = response.json::<Value>().await.unwrap()["data"].clone();
        assert_eq!(data["patchedRequest"]["PaymentMethod"], "Invoice");
        assert_eq!(data["patchedLessee"]["Lessee"]["CompanyName"], "ACME Holding GmbH");
        assert!(data["contractDocumentBase64"]["Content"].as_str().unwrap().len() > 100);
        assert!(data["contractDocumentDownloadLink"]["Url"].as_str().is_some());
        let (_, _, steps) = flow_steps(&svc, data["flowId"].as_i64().unwrap()).await;
        let actions: Vec<&str> = steps.iter().map(|(a, _)| a.as_str()).collect();
        if cancel {
            assert_eq!(data["mode"], "cancel_e_signature");
            assert_eq!(data["cancelESignature"]["State"], "ReadyToSign");
            assert_eq!(data["paperContract"]["State"], "ContractPrinted");
            assert!(data.get("configuration").is_none() && data.get("eSignature").is_none());
            assert_eq!(
                actions,
                [
                    "create",
                    "patch_request",
                    "patch_lessee",
                    "wait_ready_to_sign",
                    "cancel_e_signature",
                    "switch_to_paper_contract",
                    "contract_document_base64",
                    "contract_document_link"
                ]
            );
        } else {
            assert_eq!(data["mode"], "e_signature");
            assert_eq!(actions.len(), 8, "{actions:?}");
        }
    }
    svc.stop().await;
}

async fn a_failed_flow_is_recorded_where_it_stopped(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let body = error_body(post(&svc, &token, FLOW, &flow_body("Risky [declined]"), None).await, 500).await;
    assert_eq!(body["success"], false);
    assert_eq!(body["error_code"], "declined");
    let (status, code, steps) = flow_steps(&svc, latest_flow_id(&svc).await).await;
    assert_eq!((status.as_str(), code.as_deref()), ("failed", Some("declined")));
    assert_eq!(
        steps,
        [("create".to_string(), "succeeded".to_string()), ("wait_ready_to_sign".to_string(), "failed".to_string())]
    );

    // A provider failure in the middle.
    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests/", "status": 503, "times": 1})).await;
    let mut failing = flow_body("ACME GmbH");
    failing["patch_request_payload"] = json!({"PaymentMethod": "Invoice"});
    let body = error_body(post(&svc, &token, FLOW, &failing, None).await, 500).await;
    assert_eq!(body["error_code"], "upstream_error");
    let (status, code, steps) = flow_steps(&svc, latest_flow_id(&svc).await).await;
    assert_eq!((status.as_str(), code.as_deref()), ("failed", Some("upstream_error")));
    assert_eq!(steps.last().unwrap(), &("patch_request".to_string(), "failed".to_string()));
    svc.stop().await;
}

/// The body without its `request_id`, which differs between answers.
fn without_request_id(mut body: Value) -> Value {
    body.as_object_mut().unwrap().remove("request_id");
    body
}

async fn failed_flows_answer_where_they_stopped_and_can_be_read_back(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for (company, code) in [("Risky [declined]", "declined"), ("Unsure [missing-info]", "missing_info")] {
        let body = error_body(post(&svc, &token, FLOW, &flow_body(company), None).await, 500).await;
        assert_eq!((body["success"].clone(), body["error_code"].clone()), (json!(false), json!(code)), "{body}");
        assert_eq!(body["failedStep"], "wait_ready_to_sign", "{body}");
        let financing_id = body["financingId"].as_str().expect("financingId").to_string();
        let flow_id = body["flowId"].as_i64().expect("flowId");

        let record = svc.get(&token, &format!("{FLOW}/{flow_id}")).await;
        assert_eq!(record.status(), 200);
        let record: Value = record.json_value().await;
        assert_eq!(record["success"], true);
        let data = &record["data"];
        assert_eq!(
            (data["flowId"].as_i64(), data["financingId"].as_str()),
            (Some(flow_id), Some(financing_id.as_str()))
        );
        assert_eq!((data["status"].as_str(), data["error_code"].as_str()), (Some("failed"), Some(code)));
        let steps = data["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{data}");
        assert_eq!((steps[0]["action"].as_str(), steps[0]["outcome"].as_str()), (Some("create"), Some("succeeded")));
        assert_eq!(steps[0]["error_code"], Value::Null);
        assert_eq!(
            (steps[1]["action"].as_str(), steps[1]["outcome"].as_str(), steps[1]["error_code"].as_str()),
            (Some("wait_ready_to_sign"), Some("failed"), Some(code))
        );
        assert_eq!(steps[1]["message"], body["message"]);
    }

    // A create refused by the provider created nothing: no financing request to name.
    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 400, "times": 1})).await;
    let body = error_body(post(&svc, &token, FLOW, &flow_body("ACME GmbH"), None).await, 500).await;
    assert_eq!((body["failedStep"].as_str(), body["financingId"].clone()), (Some("create"), Value::Null), "{body}");
    assert!(body["flowId"].is_i64(), "{body}");

    let unknown = error_body(svc.get(&token, &format!("{FLOW}/999999")).await, 404).await;
    assert_eq!((unknown["success"].clone(), unknown["error_code"].clone()), (json!(false), json!("not_found")));
    // Another user's flow is not found either.
    svc.create_user("other@example.com", "another-password-1").await;
    let other = svc.token("other@example.com", "another-password-1").await;
    let flow_id = body["flowId"].as_i64().unwrap();
    error_body(svc.get(&other, &format!("{FLOW}/{flow_id}")).await, 404).await;
    svc.stop().await;
}

async fn a_retried_failed_flow_answers_its_recorded_failure(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let declined = flow_body("Risky [declined]");
    let first = error_body(post(&svc, &token, FLOW, &declined, Some("flow-declined")).await, 500).await;
    assert_eq!(svc.provider_request_count().await, 1);
    let again = error_body(post(&svc, &token, FLOW, &declined, Some("flow-declined")).await, 500).await;
    assert_ne!(first["request_id"], again["request_id"]);
    assert_eq!(without_request_id(again), without_request_id(first.clone()));
    assert_eq!(svc.provider_request_count().await, 1, "the retry created no second request at the provider");
    let (flows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM leasing_flows").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(flows, 1, "the retry ran no flow");
    // The same key with another body is refused.
    let other = error_body(post(&svc, &token, FLOW, &flow_body("Other GmbH"), Some("flow-declined")).await, 422).await;
    assert_eq!(other["error_code"], "idempotency_key_reused");

    // A create the provider refused created nothing: the key is free and the retry runs.
    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 400, "times": 1})).await;
    let refused = error_body(post(&svc, &token, FLOW, &flow_body("ACME GmbH"), Some("flow-refused")).await, 500).await;
    assert_eq!(refused["failedStep"], "create");
    assert_eq!(svc.provider_request_count().await, 1);
    let retried = post(&svc, &token, FLOW, &flow_body("ACME GmbH"), Some("flow-refused")).await;
    assert_eq!(retried.status(), 200);
    assert_eq!(svc.provider_request_count().await, 2);
    svc.stop().await;
}

/// A retry while the first attempt runs is told so, with the flow to follow; once the first
/// attempt ended (here: its client left), the retry gets its recorded answer. Neither creates.
async fn a_retry_while_the_flow_runs_names_it(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let mut body = flow_body("Patient GmbH [never-ready]");
    body["max_attempts"] = json!(100);
    body["sleep_milliseconds"] = json!(200);
    // The first attempt on a connection of its own, closed below: its client leaves.
    let first = {
        use tokio::io::AsyncWriteExt;
        let text = body.to_string();
        let head = format!(
            "POST {FLOW} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\n\
             idempotency-key: flow-slow\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        let address = svc.service.as_ref().expect("running").address;
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream
    };
    let created = wait_until(|| async {
        sqlx::query_as::<_, (i64, Option<String>)>(
            "SELECT id, financing_id FROM leasing_flows WHERE idempotency_key = 'flow-slow' AND financing_id IS NOT NULL",
        )
        .fetch_optional(svc.store().pool())
        .await
        .unwrap()
    })
    .await;
    let running = error_body(post(&svc, &token, FLOW, &body, Some("flow-slow")).await, 409).await;
    assert_eq!(running["error_code"], "idempotency_key_in_progress");
    assert_eq!((running["flowId"].as_i64(), running["financingId"].as_str()), (Some(created.0), created.1.as_deref()));

    drop(first);
    wait_until(|| async {
        let (status,): (String,) = sqlx::query_as("SELECT status FROM leasing_flows WHERE id = $1")
            .bind(created.0)
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
        (status == "abandoned").then_some(())
    })
    .await;
    // The first attempt's answer is kept once its handler ends, just after the flow's record.
    // Not the 499 the first attempt's gone client was given: where its flow stopped.
    let ended = wait_until(|| async {
        let ended = error_body(post(&svc, &token, FLOW, &body, Some("flow-slow")).await, 409).await;
        (ended["error_code"] != "idempotency_key_in_progress").then_some(ended)
    })
    .await;
    assert_eq!(
        (ended["error_code"].as_str(), ended["failedStep"].as_str()),
        (Some("idempotency_key_flow_ended"), Some("wait_ready_to_sign"))
    );
    assert_eq!(ended["flowId"].as_i64(), Some(created.0));
    assert_eq!(ended["financingId"].as_str(), created.1.as_deref());
    assert_eq!(svc.provider_request_count().await, 1, "no retry created a request");
    svc.stop().await;
}

/// What `probe` finds, asked again every 20 ms until it finds something (at most 30 s).
async fn wait_until<T, F, Fut>(mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..1500 {
        if let Some(found) = probe().await {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("not found within 30 s");
}

async fn invalid_flow_input_is_refused_before_any_call(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let mut body = flow_body("ACME GmbH");
    body.as_object_mut().unwrap().remove("e_signature_payload");
    body["request_payload"]["FinancingAmount"] = json!(-1);
    body["max_attempts"] = json!(500);
    let errors = error_body(post(&svc, &token, FLOW, &body, None).await, 422).await;
    assert_eq!(errors["success"], false);
    assert!(errors["errors"]["max_attempts"].is_array(), "{errors}");
    body["max_attempts"] = json!(3);
    let errors = error_body(post(&svc, &token, FLOW, &body, None).await, 422).await;
    assert!(errors["errors"]["e_signature_payload"].is_array(), "{errors}");
    assert!(errors["errors"]["request_payload.FinancingAmount"].is_array(), "{errors}");
    let (flows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM leasing_flows").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(flows, 0, "nothing is recorded for refused input");
    assert_eq!(svc.provider_request_count().await, 0);
    svc.stop().await;
}

async fn retried_creates_and_flows_run_once(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let first = post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), Some("create-1")).await;
    assert_eq!(first.status(), 201);
    let first: Value = first.json_value().await;
    let again = post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), Some("create-1")).await;
    assert_eq!(again.status(), 201);
    let again: Value = again.json_value().await;
    assert_eq!(first, again);
    assert_eq!(svc.provider_request_count().await, 1, "the retry created nothing new");

    let other =
        error_body(post(&svc, &token, "/api/v1/leasing", &leasing_request("Other GmbH"), Some("create-1")).await, 422)
            .await;
    assert_eq!(other["error_code"], "idempotency_key_reused");

    // A failed attempt frees its key: the retry runs.
    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 503, "times": 1})).await;
    error_body(post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), Some("create-2")).await, 500).await;
    assert_eq!(
        post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), Some("create-2")).await.status(),
        201
    );
    assert_eq!(svc.provider_request_count().await, 2);

    let flow_first: Value = post(&svc, &token, FLOW, &flow_body("ACME GmbH"), Some("flow-1")).await.json_value().await;
    let flow_again: Value = post(&svc, &token, FLOW, &flow_body("ACME GmbH"), Some("flow-1")).await.json_value().await;
    assert_eq!(flow_first["data"]["financingId"], flow_again["data"]["financingId"]);
    assert_eq!(svc.provider_request_count().await, 3);
    let (flows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM leasing_flows").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(flows, 1);

    // Without the header every call creates.
    post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), None).await;
    post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), None).await;
    assert_eq!(svc.provider_request_count().await, 5);
    svc.stop().await;
}

async fn health_and_test_flow(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let health: Value = svc.get_json(&token, FLOW).await;
    assert_eq!(health["success"], true);
    assert_eq!(health["provider_configured"], true);
    let created: Value =
        post(&svc, &token, "/api/v1/leasing", &leasing_request("ACME GmbH"), None).await.json_value().await;
    let id = created["data"]["FinancingId"].as_str().unwrap();
    let stored: Value = svc.get_json(&token, &format!("{FLOW}/test-flow/{id}")).await;
    assert_eq!(stored["data"]["stored"]["path"], format!("contracts/{id}.pdf"));
    assert!(svc.storage_dir.join(format!("contracts/{id}.pdf")).is_file());
    let refused = svc.get(&token, &format!("{FLOW}/test-flow/..%2Fescape")).await;
    error_body(refused, 422).await;
    svc.stop().await;
}

on_both_databases!(
    e_signature_mode_runs_every_step_in_order,
    patches_and_contract_fetches_in_both_modes,
    a_failed_flow_is_recorded_where_it_stopped,
    failed_flows_answer_where_they_stopped_and_can_be_read_back,
    a_retried_failed_flow_answers_its_recorded_failure,
    a_retry_while_the_flow_runs_names_it,
    invalid_flow_input_is_refused_before_any_call,
    retried_creates_and_flows_run_once,
    health_and_test_flow,
);
