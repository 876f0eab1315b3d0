//! GET /api/v1/leasing/calculate/{monthlyInstalment?}/{period?} over real HTTP.

use crate::common::contract::Checked;
use crate::common::{Api, JsonAnswer};
use crate::common::{DOCUMENT, Db, TestService, error_body};
use serde_json::{Value, json};

async fn inverse_calculation_with_defaults_and_every_period(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for (path, expected) in [
        ("/api/v1/leasing/calculate", json!({"data": 20340.14, "monthlyInstalment": 299.0, "period": 84})),
        ("/api/v1/leasing/calculate/299", json!({"data": 20340.14, "monthlyInstalment": 299.0, "period": 84})),
        ("/api/v1/leasing/calculate/299/84", json!({"data": 20340.14, "monthlyInstalment": 299.0, "period": 84})),
        ("/api/v1/leasing/calculate/299/48", json!({"data": 12943.72, "monthlyInstalment": 299.0, "period": 48})),
        ("/api/v1/leasing/calculate/299/60", json!({"data": 15654.45, "monthlyInstalment": 299.0, "period": 60})),
        ("/api/v1/leasing/calculate/299/72", json!({"data": 18231.71, "monthlyInstalment": 299.0, "period": 72})),
        ("/api/v1/leasing/calculate/150.25/84", json!({"data": 10221.09, "monthlyInstalment": 150.25, "period": 84})),
    ] {
        let response = svc.get(&token, path).await;
        assert_eq!(response.status(), 200, "{path}");
        let body: Value = response.json_value().await;
        assert_eq!(body, expected, "{path}");
    }
    svc.stop().await;
}

async fn inverse_calculation_refuses_bad_input_with_422(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for (path, field) in [
        ("/api/v1/leasing/calculate/0/84", "monthlyInstalment"),
        ("/api/v1/leasing/calculate/-10/84", "monthlyInstalment"),
        ("/api/v1/leasing/calculate/lots/84", "monthlyInstalment"),
        ("/api/v1/leasing/calculate/299/36", "period"),
        ("/api/v1/leasing/calculate/299/eighty", "period"),
    ] {
        let body = error_body(svc.get(&token, path).await, 422).await;
        assert_eq!(body["success"], false, "{path}");
        assert!(body["errors"][field].is_array(), "{path}: {body}");
    }
    svc.stop().await;
}

async fn inverse_calculation_requires_a_token(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let response = svc.client.get(svc.url("/api/v1/leasing/calculate/299/84")).checked().await.unwrap();
    let body = error_body(response, 401).await;
    assert_eq!(body["message"], "Unauthenticated.");
    assert_eq!(body["success"], false);
    svc.stop().await;
}

async fn configured_factors_replace_the_defaults(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("LEASING_FACTORS", "36=3.00,84=1.50")]).await;
    let body: Value = svc.get_json(&token, "/api/v1/leasing/calculate/300/36").await;
    assert_eq!(body["data"], 10000.0);
    error_body(svc.get(&token, "/api/v1/leasing/calculate/300/48").await, 422).await;
    svc.stop().await;
}

#[test]
fn the_document_lists_the_public_paths() {
    let doc: Value = serde_json::from_str(DOCUMENT).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/api/v1/leasing/calculate",
        "/api/v1/leasing/calculate/{monthlyInstalment}",
        "/api/v1/leasing/calculate/{monthlyInstalment}/{period}",
    ] {
        assert!(paths.contains_key(path), "{path} missing");
        assert_eq!(paths[path]["get"]["security"][0]["bearerAuth"], json!([]));
    }
    assert!(!paths.keys().any(|p| p.starts_with("/__internal")), "internal paths leaked into the document");
}

on_both_databases!(
    inverse_calculation_with_defaults_and_every_period,
    inverse_calculation_refuses_bad_input_with_422,
    inverse_calculation_requires_a_token,
    configured_factors_replace_the_defaults,
);
