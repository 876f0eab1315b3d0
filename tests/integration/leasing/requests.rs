//! The leasing step-by-step routes over real HTTP, against the leasing-provider simulator.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{Caller, Db, TestService, error_body};
use serde_json::{Value, json};

fn request_payload(company: &str) -> Value {
    json!({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit", "ResidualValue": 0, "HasRepurchase": false,
        "Lessee": {"CompanyName": company, "LegalFormId": 1, "Email": "lessee@example.com", "ExternalId": "C-1",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "main"}],
                   "Telephones": [{"Number": "+49 30 1234567", "Type": "Phone"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "Manufacturer": "Lenovo", "Details": "T14", "NetPricePerObject": 1299.0}],
        "ExternalReference": "order-77",
        "NotInAnySchema": {"kept": true}
    })
}

impl Caller<'_> {
    async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let response = self.send(method, path, body).await;
        let status = response.status();
        let body: Value = response.json_value().await;
        assert!(status.is_success(), "{path}: {status} {body}");
        assert_eq!(body["success"], true, "{body}");
        body
    }

    async fn create_request(&self, company: &str) -> String {
        let response = self.send(reqwest::Method::POST, "/api/v1/leasing", Some(request_payload(company))).await;
        assert_eq!(response.status(), 201);
        let body: Value = response.json_value().await;
        body["data"]["FinancingId"].as_str().unwrap().to_string()
    }

    async fn wait(&self, id: &str, query: &str) -> reqwest::Response {
        self.send(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?{query}"), None).await
    }
}

async fn client(svc: &TestService) -> Caller<'_> {
    Caller::signed_in(svc).await
}

async fn create_read_and_patch_a_request(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let response = api.send(reqwest::Method::POST, "/api/v1/leasing", Some(request_payload("ACME GmbH"))).await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json_value().await;
    assert_eq!(created["success"], true);
    assert_eq!(created["meta"], json!({"state": "RequestToGrenke", "ready_to_sign": false, "terminal": false}));
    let id = created["data"]["FinancingId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36);
    assert_eq!(created["data"]["Lessee"]["CompanyName"], "ACME GmbH");
    // The provider leaves RequestId out on create: the default fills it.
    assert_eq!(created["data"]["RequestId"], "");

    let first = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await;
    assert_eq!(first["meta"]["state"], "RequestToGrenke");
    assert!(first["data"]["RequestId"].as_str().unwrap().starts_with("180-"));
    // Unknown fields reached the provider and came back.
    assert_eq!(first["data"]["NotInAnySchema"], json!({"kept": true}));
    assert_eq!(first["data"]["ExternalReference"], "order-77");
    let second = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await;
    assert_eq!(second["meta"], json!({"state": "ReadyToSign", "ready_to_sign": true, "terminal": false}));

    let patched = api
        .ok(reqwest::Method::PATCH, &format!("/api/v1/leasing/{id}"), Some(json!({"PaymentMethod": "Invoice"})))
        .await;
    assert_eq!(patched["data"]["PaymentMethod"], "Invoice");
    let lessee = api
        .ok(
            reqwest::Method::PATCH,
            &format!("/api/v1/leasing/{id}/lessee"),
            Some(json!({"CompanyName": "ACME Holding GmbH"})),
        )
        .await;
    assert_eq!(lessee["data"]["Lessee"]["CompanyName"], "ACME Holding GmbH");
    assert_eq!(lessee["data"]["Lessee"]["Email"], "lessee@example.com");
    svc.stop().await;
}

/// The provider may leave out any field of a request it answers; the service fills each left
/// out (texts "", numbers 0, objects {}, lists []), and the answer still fits the document
/// (checked with formats asserted): the lessee's `Email` is an email address or null, never "".
async fn a_request_the_provider_answers_sparsely_fits_the_document(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let id = api.create_request("ACME GmbH").await;
    let sparse_answers = [
        json!({"FinancingId": id, "State": "New"}),
        json!({"FinancingId": id, "Lessee": {}}),
        json!({"FinancingId": id, "Lessee": {"Email": ""}}),
    ];
    for sparse in sparse_answers {
        let body = sparse.to_string();
        let rule = json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 200, "body": body});
        svc.leasing_fault(rule).await;
        let read = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await;
        assert_eq!(read["data"]["Lessee"]["Email"], Value::Null, "{read}");
        assert_eq!(read["data"]["FinancingObjects"], json!([]), "{read}");
    }
    svc.stop().await;
}

/// The document types the lessee's `Email` `format: email` (an RFC 5321 mailbox, checked here
/// with formats asserted): the service refuses on create an address of another form (a non-ASCII
/// local part, a local part ending in a dot), and answers one the provider holds for a request
/// made elsewhere that is not a mailbox as null, as it does an empty one.
async fn a_lessee_s_email_is_a_mailbox_or_null(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    for email in ["jörg@acme.example", "a.@acme.example"] {
        let mut payload = request_payload("ACME GmbH");
        payload["Lessee"]["Email"] = json!(email);
        let response = api.send(reqwest::Method::POST, "/api/v1/leasing", Some(payload)).await;
        assert_eq!(response.status(), 422, "{email}");
        let body: Value = response.json_value().await;
        assert!(body["errors"]["Lessee.Email"].is_array(), "{email}: {body}");
    }
    let id = api.create_request("ACME GmbH").await;
    for kept in ["n/a", "jörg@acme.example"] {
        let body = json!({"FinancingId": id, "Lessee": {"Email": kept}}).to_string();
        svc.leasing_fault(json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 200, "body": body}))
            .await;
        let read = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await;
        assert_eq!(read["data"]["Lessee"]["Email"], Value::Null, "{kept}: {read}");
    }
    svc.stop().await;
}

async fn create_names_every_bad_field(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let mut payload = request_payload("ACME GmbH");
    payload["FinancingAmount"] = json!(2598.5);
    payload["Lessee"]["Addresses"] = json!([]);
    payload.as_object_mut().unwrap().remove("ProductType");
    let body = error_body(api.send(reqwest::Method::POST, "/api/v1/leasing", Some(payload)).await, 422).await;
    assert_eq!(body["success"], false);
    for field in ["FinancingAmount", "Lessee.Addresses", "ProductType"] {
        assert!(body["errors"][field].is_array(), "{field}: {body}");
    }
    // The provider's own rules (here: an unknown legal form) come back as a rejection.
    let mut payload = request_payload("ACME GmbH");
    payload["Lessee"]["LegalFormId"] = json!(999);
    let body = error_body(api.send(reqwest::Method::POST, "/api/v1/leasing", Some(payload)).await, 500).await;
    assert_eq!(body["error_code"], "upstream_rejected");
    assert!(body["message"].as_str().unwrap().contains("LegalFormId"), "{body}");
    svc.stop().await;
}

async fn wait_follows_every_row_of_the_table(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let id = api.create_request("ACME GmbH").await;
    let response = api.wait(&id, "sleep_milliseconds=0").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json_value().await;
    assert_eq!(body["meta"]["state"], "ReadyToSign");

    for (marker, code, state) in [
        ("[declined]", "declined", "Declined"),
        ("[cancelled]", "cancelled", "Cancelled"),
        ("[running-contract]", "already_past_signing", "RunningContract"),
        ("[contract-printed]", "already_past_signing", "ContractPrinted"),
    ] {
        let id = api.create_request(&format!("ACME {marker}")).await;
        let body = error_body(api.wait(&id, "sleep_milliseconds=0").await, 500).await;
        assert_eq!(body["success"], false);
        assert_eq!(body["error_code"], code, "{marker}");
        if code == "already_past_signing" {
            assert!(body["message"].as_str().unwrap().contains(state), "{body}");
        }
    }

    let id = api.create_request("ACME [never-ready]").await;
    let body = error_body(api.wait(&id, "max_attempts=3&sleep_milliseconds=0").await, 500).await;
    assert_eq!(body["error_code"], "not_ready_to_sign");
    assert!(body["message"].as_str().unwrap().contains("ApplicationReceived"), "{body}");
    assert!(body["message"].as_str().unwrap().contains("3 attempt"), "{body}");

    let id = api.create_request("ACME [slow:4]").await;
    let body = error_body(api.wait(&id, "max_attempts=2&sleep_milliseconds=0").await, 500).await;
    assert_eq!(body["error_code"], "not_ready_to_sign");
    let ready = api.wait(&id, "max_attempts=2&sleep_milliseconds=0").await;
    assert_eq!(ready.status(), 200, "the 4th read is ReadyToSign");

    for query in ["max_attempts=0", "max_attempts=101", "sleep_milliseconds=-1", "sleep_milliseconds=60001"] {
        let body = error_body(api.wait(&id, query).await, 422).await;
        assert_eq!(body["success"], false);
    }
    svc.stop().await;
}

async fn missing_info_sends_the_mail_then_fails(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let id = api.create_request("Needs More [missing-info]").await;
    let body = error_body(
        api.wait(&id, "sleep_milliseconds=0&technician_appointment_date=2026-12-01&technician_appointment_time=09:30")
            .await,
        500,
    )
    .await;
    assert_eq!(body["error_code"], "missing_info");
    assert!(body["message"].as_str().unwrap().contains("mail was sent"), "{body}");
    let mails: Vec<_> = std::fs::read_dir(svc.storage_dir.join("mail")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(mails.len(), 1);
    let mail = std::fs::read_to_string(&mails[0]).unwrap();
    assert!(mail.contains("To: lessee@example.com"), "{mail}");
    assert!(mail.contains("2026-12-01 at 09:30"), "{mail}");
    assert!(mail.contains(&id), "{mail}");
    svc.stop().await;
}

async fn e_signature_paper_contract_and_documents(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let id = api.create_request("ACME GmbH").await;
    assert_eq!(api.wait(&id, "sleep_milliseconds=0").await.status(), 200);

    let config = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/e-signature/configuration"), None).await;
    assert_eq!(config["data"]["DocuSign"]["MinNumberOfCustomerSignees"], 1);
    let signees = json!({"SignerName": "Max Mustermann", "SignerEmail": "max@acme.example",
                         "signees": [{"FirstName": "Max", "LastName": "Mustermann", "Email": "max@acme.example"}]});
    let started = api.ok(reqwest::Method::POST, &format!("/api/v1/leasing/{id}/e-signature"), Some(signees)).await;
    assert_eq!(started["data"]["State"], "AwaitingCustomerSignature");
    let cancelled = api.ok(reqwest::Method::PUT, &format!("/api/v1/leasing/{id}/cancel-e-signature"), None).await;
    assert_eq!(cancelled["data"]["State"], "ReadyToSign");
    let paper = api.ok(reqwest::Method::PUT, &format!("/api/v1/leasing/{id}/switch-to-paper-contract"), None).await;
    assert_eq!(paper["data"]["State"], "ContractPrinted");

    let document = api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/contractdocument/base64"), None).await;
    assert!(document.get("stored").is_none());
    let stored = api
        .ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=true"), None)
        .await;
    assert_eq!(stored["stored"]["path"], format!("contracts/{id}.pdf"));
    // Booleans as PHP and forms send them.
    let stored_too =
        api.ok(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=1"), None).await;
    assert_eq!(stored_too["stored"]["path"], format!("contracts/{id}.pdf"));
    let refused = api
        .send(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=yes"), None)
        .await;
    let body = error_body(refused, 422).await;
    assert!(body["errors"]["store_pdf"].is_array() && body["success"] == false, "{body}");
    let pdf = std::fs::read(svc.storage_dir.join(format!("contracts/{id}.pdf"))).unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    assert_eq!(stored["stored"]["bytes"], pdf.len());
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&pdf).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(stored["stored"]["sha256"], digest);
    use base64::Engine;
    assert_eq!(
        base64::engine::general_purpose::STANDARD.decode(document["data"]["Content"].as_str().unwrap()).unwrap(),
        pdf
    );

    let link = api.ok(reqwest::Method::POST, &format!("/api/v1/leasing/{id}/contractdocument/link"), None).await;
    assert!(link["data"]["Url"].as_str().unwrap().contains(&id));
    svc.stop().await;
}

async fn identifiers_that_could_escape_storage_are_refused(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    for id in ["..%2F..%2Fetc%2Fpasswd", "x.pdf", "a%20b", &"a".repeat(65)] {
        let body = error_body(
            api.send(
                reqwest::Method::GET,
                &format!("/api/v1/leasing/{id}/contractdocument/base64?store_pdf=true"),
                None,
            )
            .await,
            422,
        )
        .await;
        assert!(body["errors"]["financingId"].is_array(), "{id}: {body}");
    }
    assert!(!svc.storage_dir.join("contracts").exists());
    svc.stop().await;
}

async fn provider_failures_map_to_500_with_a_code(db: Db) {
    let svc = TestService::start(db, &[("LEASING_TIMEOUT_SECONDS", "1")]).await;
    let api = client(&svc).await;
    let id = api.create_request("ACME GmbH").await;

    // A 5xx on a write is not retried.
    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 503, "times": 1})).await;
    let body =
        error_body(api.send(reqwest::Method::POST, "/api/v1/leasing", Some(request_payload("ACME GmbH"))).await, 500)
            .await;
    assert_eq!(body["error_code"], "upstream_error");
    assert!(body["message"].as_str().unwrap().contains("503"), "{body}");

    // Reads are retried: two transient failures are absorbed, three are not.
    svc.leasing_fault(json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 502, "times": 2})).await;
    assert_eq!(api.send(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await.status(), 200);
    svc.leasing_fault(json!({"path_prefix": format!("/basic/v1/requests/{id}"), "status": 502, "times": 3})).await;
    let body = error_body(api.send(reqwest::Method::GET, &format!("/api/v1/leasing/{id}"), None).await, 500).await;
    assert_eq!(body["error_code"], "upstream_error");

    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 0, "times": 1})).await;
    let body = error_body(
        api.send(reqwest::Method::PATCH, &format!("/api/v1/leasing/{id}"), Some(json!({"PaymentMethod": "Invoice"})))
            .await,
        500,
    )
    .await;
    assert_eq!(body["error_code"], "upstream_unavailable");

    svc.leasing_fault(json!({"path_prefix": "/basic/v1/requests", "status": 200, "delay_ms": 2500, "times": 1})).await;
    let body = error_body(
        api.send(reqwest::Method::PATCH, &format!("/api/v1/leasing/{id}"), Some(json!({"PaymentMethod": "Invoice"})))
            .await,
        500,
    )
    .await;
    assert_eq!(body["error_code"], "upstream_timeout");

    svc.leasing_fault(
        json!({"path_prefix": "/basic/v1/requests", "status": 200, "body": "{\"FinancingId\": ", "times": 1}),
    )
    .await;
    let body = error_body(
        api.send(reqwest::Method::PATCH, &format!("/api/v1/leasing/{id}"), Some(json!({"PaymentMethod": "Invoice"})))
            .await,
        500,
    )
    .await;
    assert_eq!(body["error_code"], "upstream_invalid_response");
    svc.stop().await;
}

/// Errors dropshot raises itself (an unreadable query or body) carry the leasing envelope too.
async fn dropshots_own_errors_carry_the_leasing_envelope(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let id = api.create_request("ACME GmbH").await;
    let bad_query = api
        .send(reqwest::Method::GET, &format!("/api/v1/leasing/{id}/wait-ready-to-sign?max_attempts=abc"), None)
        .await;
    let bad_body = api
        .svc
        .client
        .post(api.svc.url("/api/v1/leasing"))
        .bearer_auth(&api.token)
        .header("content-type", "application/json")
        .body("{not json")
        .checked()
        .await
        .unwrap();
    for answer in [bad_query, bad_body] {
        let status = answer.status().as_u16();
        assert!((400..500).contains(&status), "{status}");
        let body = error_body(answer, status).await;
        assert_eq!(body["success"], false, "{body}");
        assert!(body["message"].is_string() && body["error_code"].is_string() && body["request_id"].is_string());
    }
    svc.stop().await;
}

async fn leasing_routes_need_a_token_and_a_configured_provider(db: Db) {
    let svc = TestService::start(db, &[("LEASING_BASE_URL", "")]).await;
    let body = error_body(svc.client.get(svc.url("/api/v1/leasing/abc")).checked().await.unwrap(), 401).await;
    assert_eq!(body["success"], false);
    assert_eq!(body["message"], "Unauthenticated.");
    let body = error_body(
        svc.client.post(svc.url("/api/v1/leasing")).json(&request_payload("x")).checked().await.unwrap(),
        401,
    )
    .await;
    assert_eq!(body["success"], false);

    let api = client(&svc).await;
    let body = error_body(api.send(reqwest::Method::GET, "/api/v1/leasing/abc", None).await, 500).await;
    assert_eq!(body["error_code"], "upstream_not_configured");
    assert!(body["message"].as_str().unwrap().contains("LEASING_BASE_URL"), "{body}");
    svc.stop().await;
}

async fn provider_calculation_validates_its_body(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let api = client(&svc).await;
    let result = api
        .ok(
            reqwest::Method::POST,
            "/api/v1/leasing/calculate",
            Some(json!({"FinancingAmount": 10000, "Period": 48, "Currency": "EUR"})),
        )
        .await;
    assert_eq!(result["data"]["Items"][0]["MonthlyTotalInstalment"], 231.0);
    let all = api.ok(reqwest::Method::POST, "/api/v1/leasing/calculate", Some(json!({"FinancingAmount": 10000}))).await;
    assert_eq!(all["data"]["Items"].as_array().unwrap().len(), 4);
    let body = error_body(
        api.send(reqwest::Method::POST, "/api/v1/leasing/calculate", Some(json!({"FinancingAmount": -1}))).await,
        422,
    )
    .await;
    assert!(body["errors"]["FinancingAmount"].is_array());
    svc.stop().await;
}

on_both_databases!(
    create_read_and_patch_a_request,
    a_request_the_provider_answers_sparsely_fits_the_document,
    a_lessee_s_email_is_a_mailbox_or_null,
    create_names_every_bad_field,
    wait_follows_every_row_of_the_table,
    missing_info_sends_the_mail_then_fails,
    e_signature_paper_contract_and_documents,
    identifiers_that_could_escape_storage_are_refused,
    provider_failures_map_to_500_with_a_code,
    leasing_routes_need_a_token_and_a_configured_provider,
    dropshots_own_errors_carry_the_leasing_envelope,
    provider_calculation_validates_its_body,
);
