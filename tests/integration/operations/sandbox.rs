//! The upstream simulators over real HTTP: provider rules, scripted states, OData paging, faults.

use crate::common::JsonAnswer;
use crate::common::contract::Checked;
use crate::common::leasing_request;
use integration_service::sandbox;
use integration_service::telemetry;
use serde_json::{Value, json};

async fn start() -> (String, reqwest::Client) {
    let sandboxes = sandbox::start(None, &telemetry::discard()).await.unwrap();
    (sandboxes.leasing_base_url(), reqwest::Client::new())
}

#[tokio::test]
async fn requests_follow_their_scenario() {
    let (base, client) = start().await;
    let created: Value =
        client.post(format!("{base}/basic/v1/requests")).json(&leasing_request("ACME GmbH")).json_value().await;
    assert_eq!(created["State"], "RequestToGrenke");
    assert!(created.get("RequestId").is_none(), "RequestId appears only on GET");
    let id = created["FinancingId"].as_str().unwrap();
    let read = || async {
        let body: Value = client.get(format!("{base}/basic/v1/requests/{id}")).json_value().await;
        body
    };
    let first = read().await;
    assert_eq!(first["State"], "RequestToGrenke");
    assert!(first["RequestId"].as_str().unwrap().starts_with("180-"));
    assert_eq!(first["Lessee"]["CompanyName"], "ACME GmbH");
    let second = read().await;
    assert_eq!(second["State"], "ReadyToSign");

    let declined: Value =
        client.post(format!("{base}/basic/v1/requests")).json(&leasing_request("Risky [declined]")).json_value().await;
    let state: Value = client
        .get(format!("{base}/basic/v1/requests/{}", declined["FinancingId"].as_str().unwrap()))
        .json_value()
        .await;
    assert_eq!(state["State"], "Declined");

    let document: Value = client.get(format!("{base}/basic/v1/requests/{id}/contractdocument")).json_value().await;
    use base64::Engine;
    let pdf = base64::engine::general_purpose::STANDARD.decode(document["Content"].as_str().unwrap()).unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
}

#[tokio::test]
async fn provider_rules_answer_400_with_errors_per_field() {
    let (base, client) = start().await;
    let mut body = leasing_request("ACME GmbH");
    body["FinancingAmount"] = json!(2000.0);
    let response = client.post(format!("{base}/basic/v1/requests")).json(&body).checked().await.unwrap();
    assert_eq!(response.status(), 400);
    let errors: Value = response.json_value().await;
    assert!(errors["Errors"]["FinancingAmount"].is_array(), "{errors}");
    let missing = client.get(format!("{base}/basic/v1/requests/nope")).checked().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn the_fault_switch_fails_drops_and_clears() {
    let (base, client) = start().await;
    let fault = json!({"path_prefix": "/basic/v1/legalforms", "status": 503, "times": 1});
    assert_eq!(client.post(format!("{base}/__sandbox/faults")).json(&fault).checked().await.unwrap().status(), 204);
    assert_eq!(client.get(format!("{base}/basic/v1/legalforms")).checked().await.unwrap().status(), 503);
    assert_eq!(client.get(format!("{base}/basic/v1/legalforms")).checked().await.unwrap().status(), 200);

    let drop = json!({"path_prefix": "/basic/v1/objecttypes", "status": 0, "times": 5});
    client.post(format!("{base}/__sandbox/faults")).json(&drop).checked().await.unwrap();
    assert!(client.get(format!("{base}/basic/v1/objecttypes")).checked().await.is_err(), "the connection is dropped");
    assert_eq!(client.delete(format!("{base}/__sandbox/faults")).checked().await.unwrap().status(), 204);
    let types: Value = client.get(format!("{base}/basic/v1/objecttypes")).json_value().await;
    assert!(!types["Items"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn the_field_report_simulator_pages_filters_selects_and_expands() {
    let sandboxes = sandbox::start(None, &telemetry::discard()).await.unwrap();
    let base = sandboxes.fieldreport_base_url();
    let client = reqwest::Client::new();
    let seeded = client
        .post(format!("{base}/__sandbox/seed"))
        .json(&json!({"set": "Companies", "count": 150}))
        .checked()
        .await
        .unwrap();
    assert_eq!(seeded.status(), 200);
    let unauthorized = client.get(format!("{base}/odata/Companies")).checked().await.unwrap();
    assert_eq!(unauthorized.status(), 401);
    let get = |query: &str| {
        let url = format!("{base}/odata/Companies?{query}");
        let client = client.clone();
        async move {
            let body: Value = client.get(url).basic_auth("sandbox", Some("sandbox-password")).json_value().await;
            body
        }
    };
    let first = get("").await;
    assert_eq!(first["value"].as_array().unwrap().len(), 100);
    assert!(first["@odata.nextLink"].as_str().unwrap().contains("%24skip=100"));
    assert!(first["value"][0].get("Contacts").is_none(), "navigation only when expanded");
    let expanded = get("$expand=Contacts&$top=1").await;
    assert!(expanded["value"][0]["Contacts"].is_array());
    assert!(expanded.get("@odata.nextLink").is_none(), "$top=1 is one record");
    let selected = get("$select=Id,Name&$top=1").await;
    let keys: Vec<&String> = selected["value"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["Id", "Name"]);
    let filtered = get("$filter=Id eq 1005L").await;
    assert_eq!(filtered["value"].as_array().unwrap().len(), 1);
    // Every navigation property expanded: each record whole, as last written.
    let everything = "$expand=Contacts,Tags,ServiceObjects,MainContact";
    let whole = get(&format!("{everything}&$filter=Id eq 1005L")).await;
    let record = &whole["value"][0];
    for property in ["Contacts", "Tags", "ServiceObjects"] {
        assert!(record[property].is_array(), "{property} in {record}");
    }
    // A navigation to one record is that record, as the model types it.
    assert!(record["MainContact"].is_object(), "MainContact in {record}");
    assert_eq!(record["Id"], "1005");
    let updated = client
        .put(format!("{base}/odata/Companies(1005L)"))
        .basic_auth("sandbox", Some("sandbox-password"))
        .json(&json!({"Version": 2, "Name": "Renamed"}))
        .checked()
        .await
        .unwrap();
    assert_eq!(updated.status(), 200);
    let whole = get(&format!("{everything}&$filter=Id eq 1005L")).await;
    assert_eq!(whole["value"][0]["Name"], "Renamed", "{whole}");
    assert_eq!(whole["value"][0]["Version"], 2);
    assert!(whole["value"][0].get("Contacts").is_none(), "the update sent no contacts: {whole}");
    let metadata = client
        .get(format!("{base}/odata/$metadata"))
        .basic_auth("sandbox", Some("sandbox-password"))
        .checked()
        .await
        .unwrap();
    assert!(metadata.text().await.unwrap().contains("EntitySet Name=\"Companies\""));
}
