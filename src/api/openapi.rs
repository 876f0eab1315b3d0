//! The service's OpenAPI document: generated from the API description (the trait's endpoints
//! and the per-entity field-report endpoints; building it needs no running service), then
//! completed with what dropshot does not emit (security scheme, specific error responses) and
//! with the public paths of the front's rewrite table.

use serde_json::{Value, json};

use crate::front::rewrite::RewriteTable;

/// Operations that need no bearer token (`metrics` has a token of its own).
const PUBLIC_OPERATIONS: &[&str] = &["login", "healthz", "readyz", "metrics"];

const DESCRIPTION: &str = "One authenticated, documented HTTP API in front of three upstream systems: \
a leasing provider (financing requests, e-signature, contract documents), a field-report system \
mirrored locally, and a cloud ERP (webhooks, mirrored models, mail templates).\n\n\
Authenticate with `POST /api/v1/login` and send the token as `Authorization: Bearer <token>`. \
Every error body is JSON with `message`, `error_code` and `request_id`; every response carries \
an `x-request-id` header with the same id.";

/// The document as committed at `spec/openapi.json` and served at `/{DOCS_PATH}/openapi.json`.
pub fn document() -> String {
    let api = super::description();
    let version = semver::Version::parse(env!("CARGO_PKG_VERSION")).expect("the package version is semver");
    let mut definition = api.openapi("integration-service", version);
    definition.description(DESCRIPTION).contact_name("integration-service maintainers").license_name("MIT");
    let mut doc = definition.json().expect("the document serialises");
    complete(&mut doc, &RewriteTable::static_rules());
    let mut text = serde_json::to_string_pretty(&doc).expect("the document serialises");
    text.push('\n');
    text
}

fn complete(doc: &mut Value, rewrites: &RewriteTable) {
    let components = doc["components"].as_object_mut().expect("the document has components");
    components.insert(
        "securitySchemes".into(),
        json!({
            "bearerAuth": {
                "type": "http",
                "scheme": "bearer",
                "description": "A personal access token from `POST /api/v1/login`: `<id>|<40 characters>`."
            },
            "metricsToken": {
                "type": "http",
                "scheme": "bearer",
                "description": "The service's `METRICS_TOKEN` setting; `GET /metrics` is open when it is unset."
            }
        }),
    );
    let error_content = json!({"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}}});
    let responses = components.entry("responses").or_insert_with(|| json!({}));
    responses["ApiError"]["description"] = json!(
        "An error. The body says what went wrong (`message`), how to react (`error_code`) and which request it was (`request_id`)."
    );
    responses["ServiceUnavailable"] = json!({
        "description": "The database does not answer; retry later.",
        "content": error_content.clone()
    });
    responses["Unauthenticated"] = json!({
        "description": "The bearer token is missing, malformed, unknown, revoked or expired.",
        "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": "Unauthenticated.", "error_code": "unauthenticated", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
        }}
    });
    responses["ValidationFailed"] = json!({
        "description": "The body is well-formed JSON but a field is missing or invalid; `errors` lists messages per field.",
        "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": "email: The email field is required.", "error_code": "validation_failed", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11", "errors": {"email": ["The email field is required."]}}
        }}
    });
    responses["PayloadTooLarge"] = json!({
        "description": "The request body is larger than the configured limit (`MAX_BODY_BYTES`, 1 MiB by default).",
        "content": error_content.clone()
    });
    responses["TooManyRequests"] = json!({
        "description": "Too many attempts; retry after the number of seconds in `Retry-After`.",
        "headers": {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}},
        "content": error_content.clone()
    });

    for (name, description) in [
        ("NotFound", "No such record."),
        (
            "Conflict",
            "The record exists already, was changed by a concurrent request, or the upstream reports a version conflict (`upstream_conflict`).",
        ),
        (
            "BadGateway",
            "The upstream system refused or failed (`upstream_error`, `upstream_unavailable`, `upstream_invalid_response`); nothing was changed locally.",
        ),
        (
            "UpstreamNotConfigured",
            "The upstream system is not configured (`upstream_not_configured`; the message names the setting).",
        ),
        (
            "GatewayTimeout",
            "The upstream system did not answer in time (`upstream_timeout`); nothing was changed locally.",
        ),
    ] {
        responses[name] = json!({"description": description, "content": error_content.clone()});
    }
    let paths = std::mem::take(doc["paths"].as_object_mut().expect("the document has paths"));
    let mut public_paths = serde_json::Map::new();
    for (path, mut item) in paths {
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let op_id = op["operationId"].as_str().unwrap_or_default().to_string();
            let has_body = op.get("requestBody").is_some();
            if !PUBLIC_OPERATIONS.contains(&op_id.as_str()) {
                op["security"] = json!([{"bearerAuth": []}]);
                op["responses"]["401"] = json!({"$ref": "#/components/responses/Unauthenticated"});
            }
            if has_body {
                op["responses"]["413"] = json!({"$ref": "#/components/responses/PayloadTooLarge"});
                op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
            }
            let tags: Vec<String> =
                op["tags"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_string)).collect();
            if tags.iter().any(|t| t == "fieldreport") {
                complete_fieldreport_operation(op, &op_id);
            }
            if op_id == "metrics" {
                complete_metrics_operation(op, &error_content);
            }
            if op_id == "readyz" {
                op["responses"]["503"] = json!({"$ref": "#/components/responses/ServiceUnavailable"});
            }
            if op_id == "login" {
                op["responses"]["401"] = json!({
                    "description": "Unknown email or wrong password (the same answer for both).",
                    "content": error_content.clone()
                });
                op["responses"]["429"] = json!({"$ref": "#/components/responses/TooManyRequests"});
            }
        }
        public_paths.insert(rewrites.public_path_of(&path).unwrap_or(path), item);
    }
    doc["paths"] = Value::Object(public_paths);
}

/// The exposition's media type and the optional metrics token.
fn complete_metrics_operation(op: &mut Value, error_content: &Value) {
    op["security"] = json!([{"metricsToken": []}, {}]);
    op["responses"] = json!({
        "200": {
            "description": "The metrics in the Prometheus text exposition format, version 0.0.4.",
            "content": {"text/plain; version=0.0.4; charset=utf-8": {
                "schema": {"type": "string"},
                "example": "# HELP integration_service_http_requests_total HTTP requests answered, by operation (OpenAPI operationId; `unmatched` for any other path) and status.\n# TYPE integration_service_http_requests_total counter\nintegration_service_http_requests_total{operation=\"login\",status=\"200\"} 3\n"
            }}
        },
        "401": {
            "description": "`METRICS_TOKEN` is set and the request did not present it as `Authorization: Bearer <METRICS_TOKEN>`.",
            "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/ApiError"},
                "example": {"message": "Unauthenticated.", "error_code": "unauthenticated", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
            }}
        },
        "5XX": {"description": "An internal error.", "content": error_content.clone()}
    });
}

/// Error answers of the field-report routes, and the two answers of a delete.
fn complete_fieldreport_operation(op: &mut Value, op_id: &str) {
    let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
    let has_path_parameters = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["in"] == "path"));
    let reads = op_id.ends_with("_list") || op_id.ends_with("_show") || op_id.starts_with("fieldreport_show");
    if has_path_parameters {
        op["responses"]["404"] = reference("NotFound");
    }
    if !reads {
        op["responses"]["409"] = reference("Conflict");
        op["responses"]["502"] = reference("BadGateway");
        op["responses"]["503"] = reference("UpstreamNotConfigured");
        op["responses"]["504"] = reference("GatewayTimeout");
    }
    if op_id.ends_with("_delete") {
        let responses = op["responses"].as_object_mut().expect("every operation has responses");
        responses.remove("default");
        responses.insert("204".into(), json!({"description": "Deleted locally and at the field-report system."}));
        responses.insert(
            "200".into(),
            json!({
                "description": "Deleted; sent with `Prefer: return=representation`.",
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["data", "fieldReportResponse"],
                    "properties": {
                        "data": {"type": "boolean", "description": "The result of the local delete."},
                        "fieldReportResponse": {"nullable": true, "description": "The field-report system's answer."}
                    }
                }}}
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    /// The committed document must equal the one the code generates (`cargo xtask openapi`).
    #[test]
    fn committed_document_is_up_to_date() {
        let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json"))
            .expect("spec/openapi.json exists");
        let generated = super::document();
        assert!(committed == generated, "spec/openapi.json is stale: run `cargo xtask openapi` and commit the result");
    }

    #[test]
    fn guarded_operations_declare_bearer_and_401() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let user = &doc["paths"]["/api/v1/user"]["get"];
        assert_eq!(user["security"][0]["bearerAuth"], serde_json::json!([]));
        assert!(user["responses"]["401"].is_object());
        let login = &doc["paths"]["/api/v1/login"]["post"];
        assert!(login.get("security").is_none());
        let metrics = &doc["paths"]["/metrics"]["get"];
        assert_eq!(metrics["security"], serde_json::json!([{"metricsToken": []}, {}]));
        assert!(metrics["responses"]["200"]["content"]["text/plain; version=0.0.4; charset=utf-8"].is_object());
        assert!(login["responses"]["429"].is_object());
        for (_, item) in doc["paths"].as_object().unwrap() {
            for (_, op) in item.as_object().unwrap() {
                assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{op}");
                assert!(op["tags"].as_array().is_some_and(|t| !t.is_empty()), "{op}");
            }
        }
    }
}
