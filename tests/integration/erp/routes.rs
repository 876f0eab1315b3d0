//! The ERP helper routes (setup, get, update, show), custom attributes, the field-report
//! mapping, ERP mail templates, and the ERP client's handling of 429 and time-outs.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};

use crate::common::{Db, TestService, error_body};
use serde_json::{Value, json};

use super::*;

async fn setup_get_update_and_show(db: Db) {
    let (svc, token) = start(db, &[]).await;
    let setup = svc.get_json(&token, "/api/v1/erp/setup/customer").await;
    let report = &setup["data"][0];
    // Two pages: the three customers, then the query's empty answer that ends it.
    assert_eq!(
        (report["fetched"].as_u64(), report["inserted"].as_u64(), report["pages"].as_u64()),
        (Some(3), Some(3), Some(2)),
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
    erp_update(&svc, "customer", "6", json!({"email": "new@example.com"})).await;
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
    erp_update(&svc, "customer", "7", json!({"phone": "+49 40 999"})).await;
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
    erp_update(&svc, "customer", "6", json!({"phone": "+49 1"})).await;
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
    erp_update(&svc, "mailTemplate", &id, json!({"subject": "Changed"})).await;
    assert_eq!(templates.template("leasing-missing-info").await.unwrap(), first, "served from the cache");
    let fresh = ErpTemplates::new(integration_service::upstream::erp::ErpClient::from_config(&svc.config.erp));
    assert_eq!(fresh.template("leasing-missing-info").await.unwrap().subject, "Changed");
    let missing = fresh.template("nope").await.unwrap_err();
    assert!(missing.to_string().contains("not found"), "{missing}");
    svc.stop().await;
}

on_both_databases!(
    mail_templates_come_from_the_erp_and_are_cached,
    setup_get_update_and_show,
    custom_attributes_are_pulled_posted_and_pushed_with_version_checks,
    field_report_post_of_one_record_replaces_the_local_placeholder,
    erp_throttling_and_time_outs_are_handled,
    a_missing_template_is_reported_without_hiding_missing_info
);
