//! The service's OpenAPI document: generated from the API description (every endpoint and the
//! per-entity field-report endpoints; building it needs no running service), then completed
//! with what dropshot does not emit (security schemes, specific error responses).
//!
//! Which operations need a bearer token, and which ability, is read from the description
//! itself: an endpoint that takes a [`super::guard::BearerToken`] declares the `Authorization`
//! header parameter, which becomes the operation's `security` (OpenAPI ignores `Authorization`
//! header parameters), and the parameter's description names the ability.

use serde_json::{Value, json};

/// Leasing operations that never call the provider (so never answer its 500s).
const LOCAL_LEASING_OPERATIONS: &[&str] = &[
    "leasing_calculate_default",
    "leasing_calculate_instalment",
    "leasing_calculate",
    "leasing_request_flow_health",
    "leasing_subscription_create",
    "leasing_subscription_list",
    "leasing_subscription_show",
    "leasing_subscription_delete",
    "leasing_subscription_rotate_secret",
    "leasing_subscription_deliveries",
    "leasing_subscription_delivery_retry",
];

/// ERP operations that call the ERP (or, `fieldReportPost`, the field-report system).
const ERP_UPSTREAM_OPERATION_PREFIXES: &[&str] =
    &["erp_setup", "erp_get", "erp_update", "erp_pull_attribute", "erp_push_attribute", "erp_field_report_post"];

/// The server errors the document admits, as responses and schemas of the same name: name,
/// description, the `error_code`s the body may carry. `internal_error` is in none of them.
const SERVER_ERRORS: &[(&str, &str, &[&str])] = &[
    (
        "LeasingFailure",
        "A leasing failure (the seed's rule: every failure of a leasing route is answered 500 `{success: false, message}`), named by `error_code`: the request was `declined` or `cancelled`, is `missing_info` (the missing-info mail was sent or its failure is named in `message`), is `already_past_signing`, or was `not_ready_to_sign` when the attempts were used up; the provider refused (`upstream_rejected`), failed (`upstream_error`), did not answer in time (`upstream_timeout`), was unreachable (`upstream_unavailable`), busy (`upstream_busy`), answered something unreadable (`upstream_invalid_response`) or is not configured (`upstream_not_configured`); or the contract could not be stored (`storage_error`).",
        &[
            "declined",
            "cancelled",
            "missing_info",
            "already_past_signing",
            "not_ready_to_sign",
            "upstream_rejected",
            "upstream_error",
            "upstream_timeout",
            "upstream_unavailable",
            "upstream_busy",
            "upstream_invalid_response",
            "upstream_not_configured",
            "storage_error",
        ],
    ),
    (
        "BadGateway",
        "The upstream system refused or failed (`upstream_error`), was unreachable (`upstream_unavailable`) or answered something unreadable (`upstream_invalid_response`); nothing was changed locally.",
        &["upstream_error", "upstream_unavailable", "upstream_invalid_response"],
    ),
    (
        "ServiceUnavailable",
        "The database does not answer (`service_unavailable`); retry later.",
        &["service_unavailable"],
    ),
    (
        "UpstreamUnavailable",
        "The database does not answer (`service_unavailable`), the upstream system is not configured (`upstream_not_configured`; the message names the setting), or it stays busy (`upstream_busy`; retry after `Retry-After`).",
        &["service_unavailable", "upstream_not_configured", "upstream_busy"],
    ),
    (
        "GatewayTimeout",
        "The upstream system did not answer in time (`upstream_timeout`); nothing was changed locally. A forwarded field-report write that timed out is settled by reading the upstream back: not applied → `upstream_unavailable` (nothing changed; send it again); unknown, because the read failed too → `upstream_outcome_unknown`: sending the same write again is safe (a create is looked up by its `ExternalId` first, an update reads the record first), and a delete stays deleted here and pending, sent again by `post`.",
        &["upstream_timeout", "upstream_unavailable", "upstream_outcome_unknown"],
    ),
];

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
        "description": "The request body is larger than the configured limit (`MAX_BODY_BYTES`, 1 MiB by default).",
        "content": error_content.clone()
    });
    responses["TooManyRequests"] = json!({
        "description": "Too many attempts; retry after the number of seconds in `Retry-After`.",
        "headers": {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}},
        "content": error_content.clone()
    });

    responses["NotFound"] = json!({"description": "No such record.", "content": error_content.clone()});
    responses["Conflict"] = json!({
        "description": "The record exists already, was changed by a concurrent request, or the upstream reports a version conflict (`upstream_conflict`).",
        "content": error_content.clone()
    });
    // The server errors: each operation lists the ones it can give (dropshot's catch-all `5XX`
    // is removed), each with the error codes it may carry, so that an `internal_error` or an
    // unlisted status is a contract violation a client generator and the fuzzer (.ci/fuzz) see.
    let schemas = components.get_mut("schemas").and_then(Value::as_object_mut).expect("the document has schemas");
    for (name, description, codes) in SERVER_ERRORS {
        schemas.insert(
            (*name).into(),
            json!({
                "description": description,
                "allOf": [
                    {"$ref": "#/components/schemas/ApiError"},
                    {"type": "object", "properties": {"error_code": {"type": "string", "enum": codes}}}
                ]
            }),
        );
    }
    let responses = components.get_mut("responses").and_then(Value::as_object_mut).expect("responses were added");
    for (name, description, _) in SERVER_ERRORS {
        responses.insert(
            (*name).into(),
            json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}
            }),
        );
    }
    if let Value::Object(event_schemas) = event_schema() {
        let schemas = doc["components"]["schemas"].as_object_mut().expect("the document has schemas");
        for (name, schema) in event_schemas {
            schemas.entry(name).or_insert(schema);
        }
    }
    let paths = doc["paths"].as_object_mut().expect("the document has paths");
    for item in paths.values_mut() {
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let op_id = op["operationId"].as_str().unwrap_or_default().to_string();
            let has_body = op.get("requestBody").is_some();
            if let Some(ability) = take_bearer_token_parameter(op) {
                op["security"] = json!([{"bearerAuth": []}]);
                op["responses"]["401"] = json!({"$ref": "#/components/responses/Unauthenticated"});
                if let Some(ability) = ability {
                    state_ability(op, &ability);
                }
            }
            if has_body {
                op["responses"]["413"] = json!({"$ref": "#/components/responses/PayloadTooLarge"});
                op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
            }
            let tags: Vec<String> =
                op["tags"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_string)).collect();
            let responses = op["responses"].as_object_mut().expect("every operation has responses");
            responses.remove("5XX");
            let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
            if op_id != "healthz" {
                responses.insert("503".into(), reference("ServiceUnavailable"));
            }
            if tags.iter().any(|t| t == "leasing") && !LOCAL_LEASING_OPERATIONS.contains(&op_id.as_str()) {
                responses.insert("500".into(), reference("LeasingFailure"));
            }
            if ERP_UPSTREAM_OPERATION_PREFIXES.iter().any(|prefix| op_id.starts_with(prefix)) {
                upstream_errors(op);
            }
            if tags.iter().any(|t| t == "fieldreport") {
                complete_fieldreport_operation(op, &op_id);
            }
            if op_id == "metrics" {
                complete_metrics_operation(op, &error_content);
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
        }
    }
    bound_integers(doc);
}

/// Whether the operation takes a bearer token, and the ability the token needs (see
/// [`super::guard::needs`]): removes the `Authorization` header parameter that
/// [`super::guard::BearerToken`] declares (and `parameters` when it was the only one).
fn take_bearer_token_parameter(op: &mut Value) -> Option<Option<String>> {
    let parameters = op.get_mut("parameters").and_then(Value::as_array_mut)?;
    let position = parameters.iter().position(is_authorization_parameter)?;
    let parameter = parameters.remove(position);
    if parameters.is_empty() {
        op.as_object_mut().expect("an operation is an object").remove("parameters");
    }
    let description = parameter["description"].as_str().unwrap_or_default();
    let ability = description
        .split_once(super::guard::ABILITY_NOTE)
        .and_then(|(_, rest)| rest.strip_prefix('`'))
        .and_then(|rest| rest.split_once('`'))
        .map(|(ability, _)| ability.to_string());
    Some(ability)
}

/// States the ability an operation's token needs: in its description, as `x-ability`, and with
/// the 403 a token without it gets. (OpenAPI 3.0 allows scopes in a security requirement only
/// for OAuth 2 and OpenID Connect schemes, so `security` stays `bearerAuth: []`.)
fn state_ability(op: &mut Value, ability: &str) {
    let note = format!("Needs a token with the ability `{ability}` (login tokens hold every ability, `*`).");
    op["description"] = match op["description"].as_str() {
        Some(description) if !description.is_empty() => json!(format!("{description}\n\n{note}")),
        _ => json!(note),
    };
    op["x-ability"] = json!(ability);
    op["responses"]["403"] = json!({"$ref": "#/components/responses/MissingAbility"});
}

fn is_authorization_parameter(parameter: &Value) -> bool {
    parameter["in"] == "header" && parameter["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case("authorization"))
}

/// Gives every integer the bounds of its Rust type (schemars states only `minimum: 0` of
/// unsigned ones), so the document says which numbers the service can read: a larger one is
/// refused (400 or 422), never taken modulo.
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let bounds: Option<(Value, Value)> = match object.get("format").and_then(Value::as_str) {
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("int64") => Some((i64::MIN.into(), i64::MAX.into())),
                Some("uint64") => Some((0.into(), u64::MAX.into())),
                Some("uint") => Some((0.into(), u64::MAX.into())),
                Some("int") => Some((i64::MIN.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((min, max)) = bounds
                && object.get("type").and_then(Value::as_str) == Some("integer")
            {
                object.entry("minimum").or_insert(min);
                object.entry("maximum").or_insert(max);
            }
            object.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// The answers of an operation that calls an upstream system when it fails.
fn upstream_errors(op: &mut Value) {
    let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
    op["responses"]["409"] = reference("Conflict");
    op["responses"]["502"] = reference("BadGateway");
    op["responses"]["503"] = reference("UpstreamUnavailable");
    op["responses"]["504"] = reference("GatewayTimeout");
}

/// The answers of the jobs routes besides success: an unknown job, an active or ended one, a
/// bad filter.
fn complete_jobs_operation(op: &mut Value, op_id: &str) {
    let example = |code: &str, message: &str| {
        json!({"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": message, "error_code": code, "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
        }})
    };
    if op_id == "jobs_show" || op_id == "jobs_cancel" {
        op["responses"]["404"] =
            json!({"description": "No such job (`not_found`).", "content": example("not_found", "no job 42")});
    }
    if op_id == "jobs_create" {
        op["responses"]["409"] = json!({
            "description": "A job of the same kind and target is queued or running (`job_active`); the message names it.",
            "content": example("job_active", "job 41 (fieldreport.sync of companies) is running; follow it at /api/v1/jobs/41 or cancel it first")
        });
    }
    if op_id == "jobs_cancel" {
        op["responses"]["409"] = json!({
            "description": "The job has already succeeded or failed (`job_ended`).",
            "content": example("job_ended", "job 42 has already ended (succeeded)")
        });
    }
    if op_id == "jobs_list" {
        op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
    }
}

/// The answers of the subscription routes besides success: an unknown subscription or
/// delivery, a refused URL.
fn complete_subscription_operation(op: &mut Value, op_id: &str) {
    let example = |code: &str, message: &str, errors: Option<Value>| {
        let mut body = json!({"message": message, "error_code": code, "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11", "success": false});
        if let Some(errors) = errors {
            body["errors"] = errors;
        }
        json!({"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}, "example": body}})
    };
    if !matches!(op_id, "leasing_subscription_create" | "leasing_subscription_list") {
        let what =
            if op_id == "leasing_subscription_delivery_retry" { "subscription or delivery" } else { "subscription" };
        op["responses"]["404"] = json!({
            "description": format!("No such {what} (`not_found`)."),
            "content": example("not_found", "There is no subscription sub_0123456789abcdef0123456789abcdef.", None)
        });
    }
    if op_id == "leasing_subscription_create" {
        op["responses"]["422"] = json!({
            "description": "A field is invalid (`validation_failed`, the fields named in `errors`): the `url` is not https, or resolves to a loopback, private, link-local or unique-local address (allowed only with `CALLBACK_ALLOW_PRIVATE`), or cannot be resolved; an event type is unknown; the description is too long.",
            "content": example("validation_failed", "url: 127.0.0.1 is not a public address", Some(json!({"url": ["127.0.0.1 is not a public address"]})))
        });
    }
    if op_id == "leasing_subscription_deliveries" {
        op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
    }
}

/// The schema of the event posted to subscriptions, which no operation answers: stated in
/// the document so that a consumer finds it (the `Subscription` schema names it).
fn event_schema() -> Value {
    let mut generator = schemars::r#gen::SchemaSettings::openapi3().into_generator();
    let root = generator.root_schema_for::<super::leasing_watch::LeasingStateChangedEvent>();
    let mut schemas = serde_json::to_value(generator.definitions()).expect("schemas serialise");
    schemas["LeasingStateChangedEvent"] = serde_json::to_value(root.schema).expect("a schema serialises");
    schemas
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
        upstream_errors(op);
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

    /// Every operation whose endpoint takes a `BearerToken` declares `bearerAuth` and the 401
    /// answer, and no longer lists the `Authorization` header it was derived from; the
    /// operations without one declare neither.
    #[test]
    fn security_follows_the_bearer_token_parameter() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let public = ["login", "healthz", "readyz", "metrics", "erp_webhook_get", "erp_webhook_post"];
        let mut guarded = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let op_id = op["operationId"].as_str().unwrap();
                let parameters = op["parameters"].as_array().into_iter().flatten();
                assert!(
                    parameters.clone().all(|p| !super::is_authorization_parameter(p)),
                    "{method} {path} lists the Authorization header"
                );
                assert!(!op.get("parameters").is_some_and(|p| p == &serde_json::json!([])), "{method} {path}");
                if public.contains(&op_id) {
                    let security = op.get("security");
                    assert!(security.is_none_or(|s| s[0].get("bearerAuth").is_none()), "{method} {path}");
                    continue;
                }
                assert!(path.starts_with("/api/v1/"), "{method} {path} is guarded");
                assert_eq!(op["security"], serde_json::json!([{"bearerAuth": []}]), "{method} {path}");
                assert_eq!(
                    op["responses"]["401"],
                    serde_json::json!({"$ref": "#/components/responses/Unauthenticated"}),
                    "{method} {path}"
                );
                guarded += 1;
            }
        }
        // The loop above checked each one; this, that the document has them at all.
        assert!(guarded > 6 * generated::fieldreport::ENTITIES.len(), "only {guarded} guarded operations");
    }

    /// Each guarded operation names the ability its token needs, by area and (for the mirror)
    /// by reading or writing: as `x-ability`, in its description, with the 403 answer.
    #[test]
    fn abilities_follow_the_bearer_token_s_need() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let tools = [
            "/api/v1/fieldreport/show",
            "/api/v1/fieldreport/sync",
            "/api/v1/fieldreport/setup",
            "/api/v1/fieldreport/post",
        ];
        let mut counted = std::collections::BTreeMap::<String, usize>::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if op.get("security") != Some(&serde_json::json!([{"bearerAuth": []}])) {
                    assert!(op.get("x-ability").is_none(), "{method} {path}");
                    continue;
                }
                let expected = if ["/api/v1/user", "/api/v1/logout"].contains(&path.as_str()) {
                    None
                } else if path.starts_with("/api/v1/leasing") {
                    Some("leasing")
                } else if path.starts_with("/api/v1/erp") {
                    Some("erp")
                } else if tools.iter().any(|tool| path == tool || path.starts_with(&format!("{tool}/"))) {
                    Some("fieldreport:tools")
                } else if path.starts_with("/api/v1/fieldreport/") && method == "get" {
                    Some("fieldreport:read")
                } else if path.starts_with("/api/v1/fieldreport/") {
                    Some("fieldreport:write")
                } else if path.starts_with("/api/v1/jobs") {
                    Some("jobs")
                } else {
                    panic!("{method} {path}: which ability?")
                };
                assert_eq!(op["x-ability"].as_str(), expected, "{method} {path}");
                if let Some(ability) = expected {
                    let description = op["description"].as_str().unwrap();
                    assert!(description.contains(&format!("ability `{ability}`")), "{method} {path}: {description}");
                    assert_eq!(op["responses"]["403"]["$ref"], "#/components/responses/MissingAbility");
                    *counted.entry(ability.to_string()).or_default() += 1;
                }
            }
        }
        for ability in ["leasing", "erp", "fieldreport:tools", "fieldreport:read", "fieldreport:write"] {
            assert!(counted.get(ability).is_some_and(|n| *n > 0), "no operation needs {ability}: {counted:?}");
        }
    }

    /// dropshot's own document states the token's header on exactly the guarded operations,
    /// the per-entity field-report ones among them.
    #[test]
    fn guarded_endpoints_declare_the_authorization_header() {
        let api = super::super::description();
        let version = semver::Version::parse("0.0.0").unwrap();
        let raw = api.openapi("integration-service", version).json().unwrap();
        let takes_token = |path: &str, method: &str| {
            raw["paths"][path][method]["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(super::is_authorization_parameter))
        };
        assert!(takes_token("/api/v1/user", "get"));
        assert!(takes_token("/api/v1/leasing/calculate", "get"));
        assert!(takes_token("/api/v1/leasing/{financingId}/wait-ready-to-sign", "get"));
        assert!(takes_token("/api/v1/fieldreport/companies", "get"));
        assert!(takes_token("/api/v1/fieldreport/companies", "post"));
        assert!(takes_token("/api/v1/fieldreport/companies/{record}", "delete"));
        assert!(!takes_token("/api/v1/login", "post"));
        assert!(!takes_token("/api/v1/erp/webhooks", "post"));
        assert!(!takes_token("/metrics", "get"));
        assert!(!takes_token("/healthz", "get"));
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
