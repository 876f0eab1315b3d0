//! The service's OpenAPI document: generated from the API description (every endpoint and the
//! per-entity field-report endpoints; building it needs no running service), then completed
//! with what dropshot does not emit (security schemes, specific error responses).
//!
//! Which operations need a bearer token, and which ability, is read from the description
//! itself: an endpoint that takes a [`crate::api::support::guard::BearerToken`] declares the `Authorization`
//! header parameter, which becomes the operation's `security` (OpenAPI ignores `Authorization`
//! header parameters), and the parameter's description names the ability.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use self::errors::{
    add_client_errors, add_server_errors, complete_request_flow_operation, declare_client_errors,
    declare_front_refusals, retry_after_header, server_error_name, upstream_errors,
};
use self::per_operation::{
    complete_export_operation, complete_fieldreport_operation, complete_jobs_operation, complete_metrics_operation,
    complete_subscription_operation, event_schema,
};
use self::schemas::{
    bound_integers, declare_request_id, express_nullable_references, give_request_examples, one_record_identity,
    type_timestamps,
};
use self::security::{state_ability, take_bearer_token_parameter};
use crate::api::support::answers::{self, Source};

#[cfg(test)]
mod closed_sets;
mod errors;
mod examples;
mod leasing;
mod per_operation;
mod schemas;
mod security;
#[cfg(test)]
mod tests;

const DESCRIPTION: &str = "One authenticated, documented HTTP API in front of three upstream systems: \
a leasing provider (financing requests, e-signature, contract documents), a field-report system \
mirrored locally, and a cloud ERP (webhooks, mirrored models, mail templates).\n\n\
Authenticate with `POST /api/v1/login` and send the token as `Authorization: Bearer <token>`. \
Every error body is JSON with `message`, `error_code` and `request_id`; every response carries \
an `x-request-id` header with the same id.";

/// The document as committed at `spec/openapi.json` and served at `/{DOCS_PATH}/openapi.json`.
pub fn document() -> String {
    let api = crate::api::description();
    let version = semver::Version::parse(env!("CARGO_PKG_VERSION")).expect("the package version is semver");
    let mut definition = api.openapi("integration-service", version);
    definition.description(DESCRIPTION).contact_name("integration-service maintainers").license_name("MIT");
    let mut doc = definition.json().expect("the document serialises");
    complete(&mut doc);
    let mut text = serde_json::to_string_pretty(&doc).expect("the document serialises");
    text.push('\n');
    text
}

fn complete(doc: &mut Value) {
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
    responses["Unauthenticated"] = json!({
        "description": "The bearer token is missing, malformed, unknown, revoked or expired.",
        "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": "Unauthenticated.", "error_code": "unauthenticated", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
        }}
    });
    responses["MissingAbility"] = json!({
        "description": "The token is valid but lacks the ability the operation needs (`x-ability`); the message names it.",
        "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": "This token lacks the ability `fieldreport:write` this operation needs.", "error_code": "missing_ability", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
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
        "description": "The request body is larger than the configured limit (`MAX_BODY_BYTES`, 1 MiB by default). A `Content-Length` over it is refused before any operation is chosen, whether the operation takes a body or not.",
        "content": error_content.clone()
    });
    responses["TooManyRequests"] = json!({
        "description": "Over a limit, named by `error_code`: failed logins for this email or from this address (`too_many_attempts`), or `MAX_HELD_CALLS_PER_USER` waits and flows of the caller's user running here (`too_many_held_calls`). Retry after the number of seconds in `Retry-After`.",
        "headers": retry_after_header("Seconds to wait before retrying."),
        "content": error_content.clone()
    });

    responses["NotFound"] = json!({"description": "No such record.", "content": error_content.clone()});
    responses["Conflict"] = json!({
        "description": "The record exists already, was changed by a concurrent request, or the upstream reports a version conflict (`upstream_conflict`); or a request with the same `Idempotency-Key` is still running (`idempotency_key_in_progress`).",
        "content": error_content.clone()
    });
    doc["components"]["schemas"]["RecordDeleted"] = json!({
        "description": "The answer of a field-report delete sent with `Prefer: return=representation`.",
        "type": "object",
        "required": ["data", "fieldReportResponse"],
        "properties": {
            "data": {"type": "boolean", "description": "The result of the local delete."},
            "fieldReportResponse": {
                "type": "object", "additionalProperties": true, "nullable": true,
                "description": "The field-report system's answer (null when it answered without a body)."
            }
        }
    });
    if let Value::Object(event_schemas) = event_schema() {
        let schemas = doc["components"]["schemas"].as_object_mut().expect("the document has schemas");
        for (name, schema) in event_schemas {
            schemas.entry(name).or_insert(schema);
        }
    }
    let mut server_codes = BTreeMap::<&str, BTreeSet<String>>::new();
    let paths = doc["paths"].as_object_mut().expect("the document has paths");
    for (path, item) in paths.iter_mut() {
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let op_id = op["operationId"].as_str().unwrap_or_default().to_string();
            let has_body = op.get("requestBody").is_some();
            let guarded = take_bearer_token_parameter(op);
            if let Some(ability) = &guarded {
                op["security"] = json!([{"bearerAuth": []}]);
                op["responses"]["401"] = json!({"$ref": "#/components/responses/Unauthenticated"});
                if let Some(ability) = ability {
                    state_ability(op, ability);
                }
            }
            if has_body {
                op["responses"]["408"] = json!({"$ref": "#/components/responses/RequestTimeout"});
                op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
            }
            let tags: Vec<String> =
                op["tags"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_string)).collect();
            let responses = op["responses"].as_object_mut().expect("every operation has responses");
            responses.remove("5XX");
            let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
            let sources = answers::sources(&op_id, &tags, guarded.is_some());
            let answers = answers::answers(&sources);
            for (status, code) in answers.iter().filter(|(status, _)| *status >= 500).cloned() {
                let name = server_error_name(status, &sources);
                server_codes.entry(name).or_default().insert(code);
                responses.insert(status.to_string(), reference(name));
            }
            if op_id == "leasing_request_flow" {
                complete_request_flow_operation(op);
            }
            leasing::complete(op, &op_id, path);
            if sources.contains(&Source::Erp) {
                upstream_errors(op);
            }
            if tags.iter().any(|t| t == "fieldreport") {
                complete_fieldreport_operation(op, &op_id);
            }
            if op_id == "metrics" {
                complete_metrics_operation(op);
            }
            if op_id.ends_with("_changes") || op_id == "erp_changes" {
                op["responses"]["410"] = json!({
                    "description": "The position `since` is older than the oldest removal kept (`RETAIN_FEED_REMOVALS_DAYS`), or was not answered by this database (restored from a backup since): copy the set again and follow from the copy's position (`cursor_expired`).",
                    "content": error_content.clone()
                });
            }
            if op_id.ends_with("_export") {
                complete_export_operation(op);
            }
            if tags.iter().any(|t| t == "jobs") {
                complete_jobs_operation(op, &op_id);
            }
            if op_id.starts_with("leasing_subscription_") {
                complete_subscription_operation(op, &op_id);
            }
            if op_id.starts_with("erp_webhook") {
                op["responses"]["401"] = json!({
                    "description": "`ERP_WEBHOOK_SECRET` is set and the call did not carry it as `?secret=` or `X-Webhook-Secret` (`invalid_webhook_secret`).",
                    "content": error_content.clone()
                });
                op["responses"]["403"] = json!({
                    "description": "The source address is not in `ERP_WEBHOOK_ALLOWLIST` (`forbidden_source`).",
                    "content": error_content.clone()
                });
            }
            if op_id == "login" {
                op["responses"]["401"] = json!({
                    "description": "Unknown email or wrong password (the same answer for both).",
                    "content": error_content.clone()
                });
                op["responses"]["429"] = json!({"$ref": "#/components/responses/TooManyRequests"});
            }
            declare_front_refusals(op, has_body);
            let states_ability = op.get("x-ability").is_some();
            let takes_input = has_body || op["parameters"].as_array().is_some_and(|ps| !ps.is_empty());
            declare_client_errors(op, &answers, takes_input, states_ability);
        }
    }
    add_server_errors(doc, &server_codes);
    add_client_errors(doc);
    one_record_identity(doc);
    bound_integers(doc);
    type_timestamps(doc);
    give_request_examples(doc);
    express_nullable_references(doc);
    examples::give_response_examples(doc);
    declare_request_id(doc);
    doc["servers"] = json!([{
        "url": "/",
        "description": "The service that serves this document (at `/docs/openapi.json`); `BIND_ADDRESS` sets where it listens, `http://127.0.0.1:8080` by default."
    }]);
}
