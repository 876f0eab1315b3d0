//! Complete flows through the Rust client that progenitor generates from our own
//! `spec/openapi.json` (the `clients/rust/` crate, written by `cargo xtask codegen`): what a consumer
//! who generates a client from the document gets must work against the real service, with
//! typed answers and typed errors.

use crate::common::JsonAnswer;
use crate::common::{Db, EMAIL, PASSWORD, TestService};
use client::types;
use client::{Client, Error, ResponseValue};
use serde_json::{Value, json};

/// A generated client for this service, with a bearer token when given.
fn api(svc: &TestService, token: Option<&str>) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = token {
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
    }
    let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
    Client::new_with_client(&svc.base, http)
}

/// Logs in through the client and returns a client carrying the token, and the token.
async fn logged_in(svc: &TestService) -> (Client, String) {
    svc.create_user(EMAIL, PASSWORD).await;
    let login = api(svc, None).login().body(login_request(EMAIL, PASSWORD)).send().await.expect("login").into_inner();
    (api(svc, Some(&login.access_token)), login.access_token)
}

/// The typed error answer of a call that must fail with `status`; checks the common error
/// shape (`message`, `error_code`, and `request_id` equal to the `x-request-id` header).
fn api_error<T: std::fmt::Debug>(
    result: Result<ResponseValue<T>, Error<types::ApiError>>,
    status: u16,
) -> types::ApiError {
    match result {
        Err(Error::ErrorResponse(answer)) => {
            assert_eq!(answer.status().as_u16(), status, "{answer:?}");
            let header_id = answer.headers()["x-request-id"].to_str().unwrap().to_string();
            let body = answer.into_inner();
            assert!(!body.message.is_empty() && !body.error_code.is_empty(), "{body:?}");
            assert_eq!(body.request_id, header_id);
            body
        }
        other => panic!("expected an error answer with status {status}, got {other:?}"),
    }
}

async fn login_current_user_and_logout(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let anonymous = api(&svc, None);
    let login = anonymous.login().body(login_request(EMAIL, PASSWORD)).send().await.expect("login");
    assert_eq!(login.status().as_u16(), 200);
    let login = login.into_inner();
    assert_eq!(login.token_type.to_string(), "Bearer");
    let (id, secret) = login.access_token.split_once('|').expect("<id>|<secret>");
    assert!(id.parse::<i64>().is_ok() && secret.len() == 40, "{}", login.access_token);

    let client = api(&svc, Some(&login.access_token));
    let user = client.current_user().send().await.expect("current user").into_inner();
    assert_eq!(user.email, EMAIL);
    assert_eq!(user.name, "Test User");
    assert!(user.id > 0);
    // `format: date-time`: the client parsed it as a timestamp.
    assert!(user.created_at <= chrono::Utc::now(), "{}", user.created_at);

    let logout = client.logout().send().await.expect("logout");
    assert_eq!(logout.status().as_u16(), 204);
    let after = api_error(client.current_user().send().await, 401);
    assert_eq!((after.error_code.as_str(), after.message.as_str()), ("unauthenticated", "Unauthenticated."));

    // Typed errors of the login itself.
    let wrong = api_error(anonymous.login().body(login_request(EMAIL, "wrong")).send().await, 401);
    assert_eq!(wrong.error_code, "invalid_credentials");
    // The document's bounds reach the client: an empty email cannot even be built.
    assert!(types::LoginRequestEmail::try_from("").is_err());
    svc.stop().await;
}

fn request_payload(company: &str) -> types::FinancingRequestPayload {
    types::FinancingRequestPayload {
        product_type: Some("ClassicLease".into()),
        financing_amount: Some(2598.0),
        period: std::num::NonZeroU32::new(48),
        currency: Some("EUR".into()),
        payment_frequency: Some("Monthly".into()),
        payment_method: Some("DirectDebit".into()),
        lessee: Some(types::Lessee {
            company_name: Some(company.into()),
            legal_form_id: Some(1),
            email: Some("office@acme.example".into()),
            addresses: Some(vec![types::Address {
                line1: Some("Hauptstr. 1".into()),
                post_code: Some("10115".into()),
                city: Some("Berlin".into()),
                country: Some("DE".into()),
                type_: Some("Main".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        financing_objects: Some(vec![types::FinancingObject {
            quantity: std::num::NonZeroU32::new(2),
            object_type_id: Some(1),
            name: Some("Laptop".into()),
            net_price_per_object: Some(1299.0),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn flow_request(company: &str) -> types::FlowRequest {
    types::FlowRequest {
        request_payload: request_payload(company),
        e_signature_payload: Some(types::ESignaturePayload {
            signer_name: Some("Max Mustermann".into()),
            signer_email: Some("max@acme.example".into()),
            signees: Some(vec![types::Signee {
                first_name: Some("Max".into()),
                last_name: Some("Mustermann".into()),
                email: Some("max@acme.example".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        sleep_milliseconds: Some(0),
        cancel_e_signature: false,
        fetch_contract_document_base64: false,
        fetch_contract_document_download_link: false,
        max_attempts: None,
        patch_lessee_payload: None,
        patch_request_payload: None,
        technician_appointment_date: None,
        technician_appointment_time: None,
    }
}

async fn leasing_create_show_patch_and_calculate(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let (client, _) = logged_in(&svc).await;
    let create_keyed =
        |company: &str| client.leasing_create().idempotency_key("order-4711").body(request_payload(company)).send();
    let created = create_keyed("ACME GmbH").await.expect("create");
    assert_eq!(created.status().as_u16(), 201);
    let created = created.into_inner();
    assert!(created.success);
    assert_eq!((created.meta.state.as_str(), created.meta.ready_to_sign), ("RequestToGrenke", false));
    let id = created.data.financing_id.clone();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(created.data.lessee.company_name.as_deref(), Some("ACME GmbH"));
    assert_eq!(created.data.financing_amount, 2598.0);

    // A retry with the same key and body answers the first answer and creates nothing.
    let again = create_keyed("ACME GmbH").await.expect("retried create").into_inner();
    assert_eq!(again.data.financing_id, id);
    assert_eq!(svc.provider_request_count().await, 1);
    let reused = api_error(create_keyed("Other GmbH").await, 422);
    assert_eq!(reused.error_code, "idempotency_key_reused");

    // The simulator: RequestToGrenke on the first read, ReadyToSign from the second.
    let first = client.leasing_show().financing_id(id.as_str()).send().await.expect("show").into_inner();
    assert_eq!(first.data.financing_id, id);
    assert!(first.data.request_id.starts_with("180-"), "{}", first.data.request_id);
    assert!(!first.meta.ready_to_sign);
    let second = client.leasing_show().financing_id(id.as_str()).send().await.expect("show").into_inner();
    assert_eq!(second.meta.state, "ReadyToSign");
    assert!(second.meta.ready_to_sign && !second.meta.terminal);

    let patched = client
        .leasing_patch()
        .financing_id(id.as_str())
        .body(types::PatchRequestPayload { payment_method: Some("Invoice".into()), ..Default::default() })
        .send()
        .await
        .expect("patch")
        .into_inner();
    assert_eq!(patched.data.payment_method, "Invoice");

    let calculated = client.leasing_calculate().monthly_instalment("299").period("84").send().await.expect("calculate");
    let calculated = calculated.into_inner();
    assert_eq!((calculated.data, calculated.monthly_instalment, calculated.period), (20340.14, 299.0, 84));

    let invalid = api_error(
        client
            .leasing_create()
            .body(types::FinancingRequestPayload { financing_amount: Some(1.0), ..request_payload("ACME GmbH") })
            .send()
            .await,
        422,
    );
    assert_eq!(invalid.success, Some(false));
    assert!(invalid.errors.expect("errors per field").contains_key("FinancingAmount"));
    // The provider's own rules (an unknown legal form) come back as a typed rejection.
    let mut payload = request_payload("ACME GmbH");
    payload.lessee.as_mut().unwrap().legal_form_id = Some(999);
    let rejected = api_error(client.leasing_create().body(payload).send().await, 500);
    assert_eq!((rejected.error_code.as_str(), rejected.success), ("upstream_rejected", Some(false)));
    assert!(rejected.message.contains("LegalFormId"), "{}", rejected.message);
    svc.stop().await;
}

async fn leasing_one_shot_flow_in_both_modes(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let (client, _) = logged_in(&svc).await;
    let mut request = flow_request("ACME GmbH");
    request.fetch_contract_document_base64 = true;
    let answer = client.leasing_request_flow().body(request).send().await.expect("flow").into_inner();
    assert!(answer.success && answer.data.success);
    let flow = answer.data;
    assert_eq!(flow.mode, "e_signature");
    assert_eq!(flow.request.financing_id, flow.financing_id);
    assert_eq!(flow.ready_request.state, "ReadyToSign");
    let limits = flow.configuration.expect("configuration").docu_sign.expect("DocuSign limits");
    assert_eq!(limits["MaxNumberOfCustomerSignees"], 2);
    assert_eq!(flow.e_signature.expect("e-signature answer")["State"], "AwaitingCustomerSignature");
    // The contract is a PDF, in base64.
    assert!(flow.contract_document_base64.expect("contract").content.starts_with("JVBERi0"));
    assert!(flow.patched_request.is_none() && flow.cancel_e_signature.is_none());
    let (status,): (String,) = sqlx::query_as("SELECT status FROM leasing_flows WHERE id = $1")
        .bind(flow.flow_id)
        .fetch_one(svc.store().pool())
        .await
        .unwrap();
    assert_eq!(status, "succeeded");

    let mut cancel = flow_request("ACME GmbH");
    cancel.cancel_e_signature = true;
    cancel.e_signature_payload = None;
    cancel.patch_lessee_payload =
        Some(types::PatchLesseePayload { company_name: Some("ACME Holding GmbH".into()), ..Default::default() });
    let flow = client.leasing_request_flow().body(cancel).send().await.expect("cancel flow").into_inner().data;
    assert_eq!(flow.mode, "cancel_e_signature");
    assert_eq!(flow.patched_lessee.expect("patched lessee").lessee.company_name.as_deref(), Some("ACME Holding GmbH"));
    assert_eq!(flow.cancel_e_signature.expect("cancel answer")["State"], "ReadyToSign");
    assert_eq!(flow.paper_contract.expect("paper contract answer")["State"], "ContractPrinted");
    assert!(flow.e_signature.is_none() && flow.configuration.is_none());

    // A documented simulator scenario: the provider declines.
    let declined = api_error(client.leasing_request_flow().body(flow_request("Risky [declined]")).send().await, 500);
    assert_eq!((declined.error_code.as_str(), declined.success), ("declined", Some(false)));
    svc.stop().await;
}

/// The record as the field-report simulator holds it (None when it has none).
async fn upstream_company(svc: &TestService, id: &str) -> Option<Value> {
    let response = svc.odata(reqwest::Method::GET, &format!("Companies({id}L)")).send().await.unwrap();
    match response.status().as_u16() {
        404 => None,
        200 => Some(response.json_value().await),
        other => panic!("the simulator answered {other}"),
    }
}

async fn received_writes(svc: &TestService) -> Vec<(String, String)> {
    let writes: Vec<Value> = svc.fieldreport_received().await;
    writes
        .iter()
        .map(|w| (w["method"].as_str().unwrap().to_string(), w["path"].as_str().unwrap().to_string()))
        .collect()
}

/// A record's `Id`: a plain string, as the document types it read and written.
fn text(value: &Option<String>) -> String {
    value.clone().expect("an Id")
}

fn login_request(email: &str, password: &str) -> types::LoginRequest {
    types::LoginRequest { email: email.try_into().unwrap(), password: password.try_into().unwrap() }
}

async fn fieldreport_create_show_update_delete(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let (client, _) = logged_in(&svc).await;
    let created = client
        .fieldreport_companies_create()
        .body(
            // A create needs Id and Version (the type has no default); the rest is optional.
            serde_json::from_value::<types::NewCompanies>(serde_json::json!({
                "Id": "new", "Version": 1, "Name": "ACME GmbH", "IsPhysicalPerson": false,
                "Location": {"City": "Berlin"}
            }))
            .unwrap(),
        )
        .send()
        .await
        .expect("create");
    assert_eq!(created.status().as_u16(), 201);
    let created = created.into_inner();
    // The upstream assigned the Id; the local record took it.
    let id = text(&created.data.id);
    assert!(id.parse::<i64>().is_ok(), "{id}");
    assert_eq!(created.field_report_response.as_ref().expect("forwarded")["Id"], id.as_str());
    assert_eq!(created.data.name.as_deref(), Some("ACME GmbH"));
    assert_eq!(created.data.version, Some(1));
    let upstream = upstream_company(&svc, &id).await.expect("created upstream");
    assert_eq!(upstream["Name"], "ACME GmbH");

    let shown = client.fieldreport_companies_show().record(&id).send().await.expect("show").into_inner();
    assert_eq!(serde_json::to_value(&shown).unwrap(), serde_json::to_value(&created.data).unwrap());
    let page = client.fieldreport_companies_list().send().await.expect("list").into_inner();
    let meta = page.meta.expect("read by position: the count");
    assert_eq!((meta.total, meta.current_page, meta.last_page), (1, 1, 1));
    assert_eq!(text(&page.data[0].id), id);
    // The whole set read by key, one record a page, each page's cursor passed on as typed.
    for extra in ["900001", "900002"] {
        let document = json!({"Id": extra, "Version": 1, "Name": extra});
        let record =
            integration_service::store::fieldreport::records::MirrorRecord { id: extra.into(), version: 1, document };
        svc.store().mirror_insert("companies", &record, None).await.unwrap();
    }
    let (mut ids, mut cursor) = (Vec::new(), None::<types::Cursor>);
    loop {
        let mut request = client.fieldreport_companies_list().limit(std::num::NonZeroU64::MIN);
        if let Some(cursor) = &cursor {
            request = request.after(cursor.as_str());
        }
        let page = request.send().await.expect("a page by key").into_inner();
        assert!(page.meta.is_none());
        ids.extend(page.data.iter().map(|record| text(&record.id)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(ids, [id.clone(), "900001".into(), "900002".into()]);
    for extra in ["900001", "900002"] {
        svc.store().mirror_delete("companies", extra).await.unwrap();
    }

    let updated = client
        .fieldreport_companies_update()
        .record(&id)
        .body(types::CompaniesUpdate { name: Some("ACME Holding GmbH".into()), ..Default::default() })
        .send()
        .await
        .expect("update")
        .into_inner();
    assert_eq!(updated.data.name.as_deref(), Some("ACME Holding GmbH"));
    assert_eq!(updated.data.version, Some(2));
    // Deep-merged: the location stayed.
    assert_eq!(updated.data.location.as_ref().and_then(|l| l.city.as_deref()), Some("Berlin"));
    let upstream = upstream_company(&svc, &id).await.expect("still upstream");
    assert_eq!((upstream["Name"].clone(), upstream["Version"].clone()), (json!("ACME Holding GmbH"), json!(2)));

    let deleted = client.fieldreport_companies_delete().record(&id).send().await.expect("delete");
    assert_eq!(deleted.status().as_u16(), 204);
    assert_eq!(api_error(client.fieldreport_companies_show().record(&id).send().await, 404).error_code, "not_found");
    assert!(upstream_company(&svc, &id).await.is_none(), "deleted upstream too");
    let item = format!("/odata/Companies({id}L)");
    assert_eq!(
        received_writes(&svc).await,
        [
            ("POST".to_string(), "/odata/Companies".to_string()),
            ("PUT".to_string(), item.clone()),
            ("DELETE".to_string(), item)
        ]
    );

    // The other answer of a delete (`Prefer: return=representation`, 200 with a body) is the
    // one the generated client does not type (progenitor takes one success type); the client
    // hands over the whole response.
    let tag = client
        .fieldreport_tags_create()
        .body(serde_json::from_value::<types::NewTags>(serde_json::json!({"Id": "1", "Version": 1})).unwrap())
        .send()
        .await
        .expect("create a tag")
        .into_inner();
    let tag_id = text(&tag.data.id);
    match client.fieldreport_tags_delete().record(&tag_id).prefer("return=representation").send().await {
        Err(Error::UnexpectedResponse(response)) => {
            assert_eq!(response.status().as_u16(), 200);
            let body: Value = response.json_value().await;
            assert_eq!(body["data"], true, "{body}");
        }
        other => panic!("expected the untyped 200 answer, got {other:?}"),
    }
    svc.stop().await;
}

on_both_databases!(
    login_current_user_and_logout,
    leasing_create_show_patch_and_calculate,
    leasing_one_shot_flow_in_both_modes,
    fieldreport_create_show_update_delete,
);
