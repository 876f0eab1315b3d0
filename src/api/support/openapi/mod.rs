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

use crate::api::support::answers::{self, Source};

mod examples;
mod leasing;

/// The server errors the document states, as responses and schemas of the same name: name,
/// status, description. Each schema narrows `ApiError` to the `error_code`s that the operations
/// answering with it can send on its status, derived from their handlers' error types
/// ([`crate::api::support::answers`]); the description names every one of them (a test checks it).
const SERVER_ERRORS: &[(&str, u16, &str)] = &[
    (
        "InternalError",
        500,
        "An unexpected failure (`internal_error`), such as a failed database query: the message is generic and the service logged the detail under `request_id`; quote it when reporting the problem.",
    ),
    (
        "LeasingFailure",
        500,
        "A leasing failure (the seed's rule: every failure of a leasing route is answered 500 `{success: false, message}`), named by `error_code`: the request was `declined` or `cancelled`, is `missing_info` (the missing-info mail was sent or its failure is named in `message`), is `already_past_signing`, or was `not_ready_to_sign` when the attempts were used up; the provider refused (`upstream_rejected`), failed (`upstream_error`), did not answer in time (`upstream_timeout`), was unreachable (`upstream_unavailable`), busy (`upstream_busy`), answered something unreadable (`upstream_invalid_response`) or is not configured (`upstream_not_configured`); the call to it could not be made (`upstream_client_error`); the contract could not be stored (`storage_error`); or an unexpected failure (`internal_error`, logged under `request_id`).",
    ),
    (
        "BadGateway",
        502,
        "The upstream system refused or failed (`upstream_error`), was unreachable (`upstream_unavailable`) or answered something unreadable (`upstream_invalid_response`); nothing was changed locally.",
    ),
    (
        "ServiceUnavailable",
        503,
        "The database does not answer (`service_unavailable`), or the service is shutting down and stopped the work the call held (`shutting_down`); send it again.",
    ),
    (
        "UpstreamUnavailable",
        503,
        "The database does not answer (`service_unavailable`), the service is shutting down and stopped the field-report work the call started (`interrupted`; send it again), the upstream system is not configured (`upstream_not_configured`; the message names the setting), or it stays busy (`upstream_busy`; retry after `Retry-After`).",
    ),
    (
        "GatewayTimeout",
        504,
        "The upstream system did not answer in time (`upstream_timeout`); nothing was changed locally. A forwarded field-report write that timed out is settled by reading the upstream back: not applied → `upstream_unavailable` (nothing changed; send it again); unknown, because the read failed too → `upstream_outcome_unknown`: sending the same write again is safe (a create is looked up by its `ExternalId` first, an update reads the record first), and a delete stays deleted here and pending, sent again by `post`.",
    ),
];

/// The server error an operation answers `status` with, by the error types it returns.
fn server_error_name(status: u16, sources: &BTreeSet<Source>) -> &'static str {
    let upstream = sources.contains(&Source::Erp) || sources.contains(&Source::FieldReport);
    match status {
        500 if sources.contains(&Source::Leasing) => "LeasingFailure",
        500 => "InternalError",
        502 => "BadGateway",
        503 if upstream => "UpstreamUnavailable",
        503 => "ServiceUnavailable",
        504 => "GatewayTimeout",
        other => panic!("no server error answers {other}: add one to SERVER_ERRORS"),
    }
}

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
                op["responses"]["413"] = json!({"$ref": "#/components/responses/PayloadTooLarge"});
                op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
            }
            let tags: Vec<String> =
                op["tags"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_string)).collect();
            let responses = op["responses"].as_object_mut().expect("every operation has responses");
            responses.remove("5XX");
            let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
            let sources = answers::sources(&op_id, &tags, guarded.is_some());
            for (status, code) in answers::answers(&sources).into_iter().filter(|(status, _)| *status >= 500) {
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
                complete_metrics_operation(op, &error_content);
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
        }
    }
    add_server_errors(doc, &server_codes);
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

/// A record's `Id` and `Version` have one type, read or written: a string and an integer, as
/// the write bodies (`New<Set>`, `<Set>Update`) take them. The description's `Edm.Int64`
/// union is what the upstream may send; the service normalizes it on the way in
/// (`crate::fieldreport::identity`), so every record schema (top-level or expanded) says so.
fn one_record_identity(doc: &mut Value) {
    let edm_int64 = json!([{"$ref": "#/components/schemas/EdmInt64"}]);
    for schema in doc["components"]["schemas"].as_object_mut().into_iter().flat_map(|s| s.values_mut()) {
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else { continue };
        let is_record =
            ["Id", "Version"].iter().all(|key| properties.get(*key).is_some_and(|p| p["allOf"] == edm_int64));
        if !is_record {
            continue;
        }
        let description = |property: &Value| property["description"].as_str().unwrap_or_default().to_string();
        let id = description(&properties["Id"]);
        properties["Id"] = json!({"type": "string", "description": format!("{id} Always a string here (an upstream's number is written out).")});
        let version = description(&properties["Version"]);
        properties["Version"] = json!({"type": "integer", "format": "int64", "description": format!("{version} Always an integer here (an upstream's string is read as one).")});
    }
}

/// Every `*_at` string of the API is an RFC 3339 instant (the service writes them with
/// `to_rfc3339_opts`): typed `format: date-time`, so that generated clients parse them as
/// timestamps. (Epoch-millisecond `*_at` fields are integers and stay so.)
fn type_timestamps(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (name, property) in object.get_mut("properties").and_then(Value::as_object_mut).into_iter().flatten() {
                if name.ends_with("_at") && property["type"] == "string" {
                    property["format"] = json!("date-time");
                }
            }
            object.values_mut().for_each(type_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(type_timestamps),
        _ => {}
    }
}

/// The example of each request body, beside its schema: the schema's own example where it
/// has one (the financing request, the login, the job), else [`request_example`]. Each one
/// succeeds against the sandbox (`tests/integration/examples.rs` sends every one).
fn give_request_examples(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            let op_id = op["operationId"].as_str().unwrap_or_default().to_string();
            let Some(content) = op.get_mut("requestBody").and_then(|b| b.get_mut("content")) else { continue };
            let Some(media) = content.get_mut("application/json") else { continue };
            let schema = match media["schema"]["$ref"].as_str() {
                Some(reference) => &schemas[reference.trim_start_matches("#/components/schemas/")],
                None => &media["schema"],
            };
            let example = match schema.get("example") {
                Some(example) => Some(example.clone()),
                None => request_example(&op_id, schema, &schemas),
            };
            if let Some(example) = example {
                media["example"] = example;
            }
        }
    }
}

/// The example of a request body whose schema has none.
fn request_example(op_id: &str, schema: &Value, schemas: &Value) -> Option<Value> {
    let signee = json!({"FirstName": "Erika", "LastName": "Mustermann", "Email": "erika.mustermann@acme.example", "Culture": "de-DE", "SigningOrder": 1});
    let e_signature = json!({"ESignatureType": "DocuSign", "CustomerContractSignees": [signee]});
    let example = match op_id {
        "leasing_provider_calculation" => json!({"FinancingAmount": 2598.0, "Period": 48}),
        "leasing_patch" => json!({"Period": 36}),
        "leasing_patch_lessee" => json!({"Email": "finance@acme.example"}),
        "leasing_start_e_signature" => e_signature,
        "leasing_request_flow" => json!({
            "request_payload": schemas["FinancingRequestPayload"]["example"],
            "e_signature_payload": e_signature,
            "max_attempts": 5,
            "sleep_milliseconds": 200
        }),
        "erp_webhook_post" => json!({"entityName": "customer", "entityId": "17", "type": "updated"}),
        _ if op_id.starts_with("fieldreport_") => return fieldreport_example(op_id, schema),
        _ => return None,
    };
    Some(example)
}

/// A field-report write: a create names `Id` and `Version`; an update the `Version` it read
/// (a create's record is at Version 1); both set the set's name-like field, if it has one.
fn fieldreport_example(op_id: &str, schema: &Value) -> Option<Value> {
    let properties = schema["properties"].as_object()?;
    let mut example = if op_id.ends_with("_create") {
        json!({"Id": "new-1", "Version": 1})
    } else if op_id.ends_with("_update") || op_id.ends_with("_replace") {
        json!({"Version": 1})
    } else {
        return None;
    };
    let named = ["Name", "Description", "Title", "Subject", "Email"]
        .into_iter()
        .find(|name| properties.get(*name).is_some_and(|p| p["type"] == "string"));
    if let Some(name) = named {
        example[name] = json!(if op_id.ends_with("_create") { "Example" } else { "Example, changed" });
    }
    Some(example)
}

/// An optional reference stays as schemars writes it, `{allOf: [{$ref}], nullable: true}`: the
/// form progenitor, openapi-typescript and openapi-python-client each read as a plain optional
/// value of the referenced type (no `{enum: [null]}` alternative, which other generators turn
/// into one-member enums; docs/architecture.md, "Optional values"). Only a `nullable` that
/// constrains nothing (an `Option<Value>`: any JSON value, `null` among them) goes.
fn express_nullable_references(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.get("nullable") == Some(&Value::Bool(true))
                && !["type", "allOf", "anyOf", "oneOf", "$ref", "enum"].iter().any(|k| object.contains_key(*k))
            {
                object.remove("nullable");
            }
            object.values_mut().for_each(express_nullable_references);
        }
        Value::Array(items) => items.iter_mut().for_each(express_nullable_references),
        _ => {}
    }
}

/// Every answer carries the request's id in `x-request-id` (the front sets it): declared on
/// each response, inline or shared.
fn declare_request_id(doc: &mut Value) {
    doc["components"]["headers"] = json!({
        "RequestId": {
            "description": "The request's id, also in every error body as `request_id`; quote it when reporting a problem.",
            "schema": {"type": "string", "format": "uuid"}
        }
    });
    let header = json!({"$ref": "#/components/headers/RequestId"});
    let declare = |response: &mut Value| {
        if response.get("$ref").is_none() {
            response["headers"]["x-request-id"] = header.clone();
        }
    };
    for response in doc["components"]["responses"].as_object_mut().into_iter().flat_map(|r| r.values_mut()) {
        declare(response);
    }
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            for response in op["responses"].as_object_mut().into_iter().flat_map(|r| r.values_mut()) {
                declare(response);
            }
        }
    }
}

/// Whether the operation takes a bearer token, and the ability the token needs (see
/// [`crate::api::support::guard::needs`]): removes the `Authorization` header parameter that
/// [`crate::api::support::guard::BearerToken`] declares (and `parameters` when it was the only one).
fn take_bearer_token_parameter(op: &mut Value) -> Option<Option<String>> {
    let parameters = op.get_mut("parameters").and_then(Value::as_array_mut)?;
    let position = parameters.iter().position(is_authorization_parameter)?;
    let parameter = parameters.remove(position);
    if parameters.is_empty() {
        op.as_object_mut().expect("an operation is an object").remove("parameters");
    }
    let description = parameter["description"].as_str().unwrap_or_default();
    let ability = description
        .split_once(crate::api::support::guard::ABILITY_NOTE)
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
/// refused (400 or 422), never taken modulo. Formats are OpenAPI's own, `int32` and `int64`:
/// an unsigned 32-bit integer is an `int64` from 0 to 2^32 - 1, and an unsigned 64-bit one an
/// `int64` from 0 (a count the service sends never passes `i64::MAX`, and generators type
/// `int64` as a signed 64-bit integer).
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let bounds: Option<(&str, Value, Value)> = match object.get("format").and_then(Value::as_str) {
                Some("int32") => Some(("int32", i32::MIN.into(), i32::MAX.into())),
                Some("uint32") => Some(("int64", 0.into(), u32::MAX.into())),
                Some("int64") | Some("int") => Some(("int64", i64::MIN.into(), i64::MAX.into())),
                Some("uint64") | Some("uint") => Some(("int64", 0.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((format, min, max)) = bounds
                && object.get("type").and_then(Value::as_str) == Some("integer")
            {
                object.insert("format".into(), json!(format));
                object.entry("minimum").or_insert(min);
                object.entry("maximum").or_insert(max);
            }
            object.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// The error answers of the one-shot flow (`leasing_request_flow`) that say where the flow
/// stood (`LeasingFlowPosition`), by status: schema name, description, `error_code`s. Each
/// schema narrows `ApiError` like [`SERVER_ERRORS`]; only that operation uses them.
const REQUEST_FLOW_ERRORS: &[(&str, &str, &str, &[&str])] = &[
    (
        "409",
        "LeasingFlowRetryConflict",
        "A retry with the same `Idempotency-Key` while the first attempt runs (`idempotency_key_in_progress`; `flowId` and `financingId` name its flow once it started), or after the first attempt's flow ended without an answer its client read: its instance stopped, or its client went away (`idempotency_key_flow_ended`; `failedStep` and the flow's record say where it stopped, `financingId` what it created). No financing request is created.",
        &["idempotency_key_in_progress", "idempotency_key_flow_ended"],
    ),
    (
        "422",
        "LeasingFlowInvalid",
        "The body is invalid (`validation_failed`, `errors` per field): refused before anything ran, or, for a payload the provider's schema checks only when it is sent (`e_signature_payload`), at that step, with `financingId`, `flowId` and `failedStep`; or the `Idempotency-Key` was used with another body (`idempotency_key_reused`).",
        &["validation_failed", "idempotency_key_reused"],
    ),
    (
        "503",
        "LeasingFlowUnavailable",
        "The database does not answer (`service_unavailable`; no flow position), or the service shut down while the flow ran (`shutting_down`): the flow stopped at `failedStep`, recorded as `interrupted`.",
        // The codes of `ServiceUnavailable`, derived (see `add_request_flow_schemas`).
        &[],
    ),
];

/// The schemas of the one-shot flow's error answers (see [`REQUEST_FLOW_ERRORS`]).
fn add_request_flow_schemas(
    schemas: &mut serde_json::Map<String, Value>,
    server_codes: &BTreeMap<&str, BTreeSet<String>>,
) {
    schemas.insert(
        "LeasingFlowPosition".into(),
        json!({
            "description": "Where a one-shot flow stood when it answered this error.",
            "type": "object",
            "properties": {
                "financingId": {"type": "string", "nullable": true, "description": "The financing request the flow created at the provider; null when its create step did not succeed."},
                "flowId": {"type": "integer", "format": "int64", "description": "The flow's record: `GET /api/v1/leasing/leasing/request-flow/{flowId}`."},
                "failedStep": {"type": "string", "description": "The action that failed, or that ran when the flow stopped: `create`, `patch_request`, `patch_lessee`, `wait_ready_to_sign`, `e_signature_configuration`, `start_e_signature`, `cancel_e_signature`, `switch_to_paper_contract`, `contract_document_base64` or `contract_document_link`."}
            }
        }),
    );
    let narrowing = |description: &str, codes: &[&str]| {
        let codes = json!({"type": "object", "properties": {"error_code": error_codes(codes)}});
        json!({
            "description": description,
            "allOf": [
                {"$ref": "#/components/schemas/ApiError"},
                {"$ref": "#/components/schemas/LeasingFlowPosition"},
                codes
            ]
        })
    };
    let derived = |name: &str| -> Vec<&str> {
        server_codes.get(name).expect("leasing operations answer it").iter().map(String::as_str).collect()
    };
    schemas.insert(
        "LeasingFlowFailure".into(),
        narrowing(
            "A failure of the one-shot flow (the causes of `LeasingFailure`) with where the flow stood (`financingId`, `flowId`, `failedStep`; absent when the call failed before the flow started, such as an `internal_error` of the token's check). A retry with the same `Idempotency-Key` gets this answer again (same status and body apart from `request_id`) and creates nothing, unless the create step itself was refused or never reached the provider.",
            &derived("LeasingFailure"),
        ),
    );
    for (status, name, description, codes) in REQUEST_FLOW_ERRORS {
        let codes = if *status == "503" { derived("ServiceUnavailable") } else { codes.to_vec() };
        schemas.insert((*name).into(), narrowing(description, &codes));
    }
}

/// The error answers of the one-shot flow (`leasing_request_flow`).
fn complete_request_flow_operation(op: &mut Value) {
    let example = json!({
        "success": false, "message": "The financing request was declined by the leasing provider; the process is aborted.",
        "error_code": "declined", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11",
        "financingId": "a1b2c3d4-0000-4000-8000-000000000001", "flowId": 42, "failedStep": "wait_ready_to_sign"
    });
    op["responses"]["500"] = json!({
        "description": "The flow failed at `failedStep` (the causes of `LeasingFailure`); `financingId` names the request it created (null when the create failed) and `flowId` its record.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LeasingFlowFailure"}, "example": example}}
    });
    for (status, name, description, _) in REQUEST_FLOW_ERRORS {
        op["responses"][*status] = json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}
        });
    }
}

/// The conflict an upstream system can report (its server errors follow from the operation's
/// error types, see [`add_server_errors`]).
fn upstream_errors(op: &mut Value) {
    op["responses"]["409"] = json!({"$ref": "#/components/responses/Conflict"});
}

/// The `error_code` of an error answer that carries one of `codes`: each is explained in the
/// description of the schema that narrows `ApiError` with it.
fn error_codes<T: serde::Serialize>(codes: T) -> Value {
    json!({
        "type": "string",
        "enum": codes,
        "description": "How to react, for programs: one of these codes, each explained in this schema's description."
    })
}

/// The server errors the operations answer (see [`SERVER_ERRORS`]), each narrowed to the codes
/// `server_codes` collected for it, and the one-shot flow's schemas built on them.
fn add_server_errors(doc: &mut Value, server_codes: &BTreeMap<&str, BTreeSet<String>>) {
    let schemas = doc["components"]["schemas"].as_object_mut().expect("the document has schemas");
    for (name, _, description) in SERVER_ERRORS {
        let Some(codes) = server_codes.get(name) else { continue };
        schemas.insert(
            (*name).into(),
            json!({
                "description": description,
                "allOf": [
                    {"$ref": "#/components/schemas/ApiError"},
                    {"type": "object", "properties": {"error_code": error_codes(codes)}}
                ]
            }),
        );
    }
    add_request_flow_schemas(schemas, server_codes);
    let responses = doc["components"]["responses"].as_object_mut().expect("the document has responses");
    for (name, _, description) in SERVER_ERRORS {
        if server_codes.contains_key(name) {
            responses.insert(
                (*name).into(),
                json!({
                    "description": description,
                    "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}
                }),
            );
        }
    }
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
        op["responses"]["429"] = json!({
            "description": "The caller has `JOBS_ACTIVE_PER_USER` jobs queued or running (`too_many_active_jobs`), or queued `JOBS_PER_MINUTE_PER_USER` within the last minute (`too_many_jobs`); retry after `Retry-After` seconds.",
            "headers": {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}},
            "content": example("too_many_jobs", "you queued 60 jobs within a minute, the most a user may; retry in 12 s")
        });
        op["responses"]["409"] = json!({
            "description": "A job of the same kind and target is queued or running (`job_active`); the message names it.",
            "content": example("job_active", "job 41 (fieldreport.sync of companies) is running; follow it at /api/v1/jobs/41 or cancel it first")
        });
    }
    if op_id == "jobs_cancel" {
        op["responses"]["403"] = json!({
            "description": "The token lacks the ability `jobs` (`missing_ability`), or the job was queued by another user and the caller is not an operator (`not_job_owner`).",
            "content": example("not_job_owner", "job 42 was queued by another user; only they or an operator may cancel it")
        });
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
    if op_id == "leasing_subscription_list" {
        op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
    }
    if op_id == "leasing_subscription_create" {
        op["responses"]["409"] = json!({
            "description": "The caller has `LEASING_SUBSCRIPTIONS_PER_USER` subscriptions already (`too_many_subscriptions`).",
            "content": example("too_many_subscriptions", "You have 100 subscriptions, the most a user may have; delete one first.", None)
        });
        op["callbacks"] = event_callbacks();
        op["responses"]["422"] = json!({
            "description": "A field is invalid (`validation_failed`, the fields named in `errors`): the `url` is longer than 2,048 characters, is not https, or resolves to a loopback, private, link-local or unique-local address (allowed only with `CALLBACK_ALLOW_PRIVATE`), or cannot be resolved; an event type is unknown; the description is too long; `all_requests` asked for by a user who is not an operator.",
            "content": example("validation_failed", "url: 127.0.0.1 is not a public address", Some(json!({"url": ["127.0.0.1 is not a public address"]})))
        });
    }
    if op_id == "leasing_subscription_deliveries" {
        op["responses"]["422"] = json!({"$ref": "#/components/responses/ValidationFailed"});
    }
}

/// What the service posts to a subscription's `url`, one callback per event type, so that a
/// generator can write the receiver: the event's schema and the Standard Webhooks headers. Each
/// has an `operationId` (`<event type>_receive`, snake case), which generators name the
/// receiver's method after (openapi-generator warns of an operation without one).
fn event_callbacks() -> Value {
    let header = |name: &str, description: &str| json!({"name": name, "in": "header", "required": true, "description": description, "schema": {"type": "string"}});
    let callback = |event_type: &str, schema: &str| {
        json!({"{$request.body#/url}": {"post": {
            "operationId": format!("{}_receive", event_type.replace('.', "_")),
            "summary": format!("The `{event_type}` event"),
            "description": format!("Posted to the subscription's `url` for each `{event_type}` event it subscribed to, at least once: a 2xx answer within 10 seconds ends the delivery; anything else is retried with the same `webhook-id` (see `Subscription`)."),
            "parameters": [
                header("webhook-id", "The event's id (`msg_…`), the same on every retry."),
                header("webhook-timestamp", "When this attempt was sent, in Unix seconds."),
                header("webhook-signature", "`v1,<base64 HMAC-SHA256 of \"<id>.<timestamp>.<body>\">`, keyed with the subscription's secret; two, space separated, after a rotation.")
            ],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}},
            "responses": {"2XX": {"description": "Received: the delivery ends."}}
        }}})
    };
    json!({"leasingStateChanged": callback(crate::leasing::watch::event::STATE_CHANGED, "LeasingStateChangedEvent")})
}

/// The schema of the event posted to subscriptions, which no operation answers: stated in
/// the document so that a consumer finds it (the `Subscription` schema names it, and the
/// subscription's create operation has it as a callback).
fn event_schema() -> Value {
    let mut generator = schemars::r#gen::SchemaSettings::openapi3().into_generator();
    let root = generator.root_schema_for::<crate::api::leasing::watch::LeasingStateChangedEvent>();
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
        "4XX": {"$ref": "#/components/responses/ApiError"},
        "5XX": {"description": "An internal error.", "content": error_content.clone()}
    });
}

/// An export's answer: NDJSON, one change per line, then the position to follow from.
fn complete_export_operation(op: &mut Value) {
    let erp = op["operationId"] == "erp_export";
    let item = if erp { "`ErpChange`" } else { "the set's `<Set>Change` schema" };
    let responses = op["responses"].as_object_mut().expect("every operation has responses");
    responses.remove("default");
    responses.insert("4XX".into(), json!({"$ref": "#/components/responses/ApiError"}));
    if erp {
        responses.insert("404".into(), json!({"$ref": "#/components/responses/NotFound"}));
    }
    op["responses"]["200"] = json!({
        "description": format!("The records in key order, one JSON object per line, each a change as {item} describes it (`change` is `upsert`), then a last line `{{\"next_cursor\": <position>, \"records\": <count>}}`: the position to follow the change feed from. Without that last line the answer was cut short."),
        "content": {crate::api::support::feed::NDJSON: {
            "schema": {"type": "string"},
            "example": "{\"change\":\"upsert\",\"id\":\"1\",\"record\":{\"Id\":\"1\",\"Version\":1}}\n{\"next_cursor\":\"42\",\"records\":1}\n"
        }}
    });
}

/// Error answers of the field-report routes, and the two answers of a delete.
fn complete_fieldreport_operation(op: &mut Value, op_id: &str) {
    let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
    let has_path_parameters = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["in"] == "path"));
    let reads = op_id.ends_with("_list")
        || op_id.ends_with("_show")
        || op_id.starts_with("fieldreport_show")
        || op_id.ends_with("_changes")
        || op_id.ends_with("_export");
    if has_path_parameters {
        op["responses"]["404"] = reference("NotFound");
    }
    if !reads {
        upstream_errors(op);
    }
    if op_id.ends_with("_delete") {
        let responses = op["responses"].as_object_mut().expect("every operation has responses");
        responses.remove("default");
        responses.insert("4XX".into(), reference("ApiError"));
        responses.insert("204".into(), json!({"description": "Deleted locally and at the field-report system."}));
        responses.insert(
            "200".into(),
            json!({
                "description": "Deleted; sent with `Prefer: return=representation`.",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RecordDeleted"}}}
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
                    let forbidden = &op["responses"]["403"];
                    if op["operationId"] == "jobs_cancel" {
                        // Its own 403 names both reasons: the ability, and another user's job.
                        let text = forbidden["description"].as_str().unwrap();
                        assert!(text.contains("missing_ability") && text.contains("not_job_owner"), "{text}");
                    } else {
                        assert_eq!(forbidden["$ref"], "#/components/responses/MissingAbility", "{method} {path}");
                    }
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
        let api = crate::api::description();
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

    /// Every object of the document with its JSON pointer.
    fn schema_objects<'a>(
        value: &'a serde_json::Value,
        at: String,
        found: &mut Vec<(String, &'a serde_json::Map<String, serde_json::Value>)>,
    ) {
        match value {
            serde_json::Value::Object(object) => {
                found.push((at.clone(), object));
                let token = |k: &str| k.replace('~', "~0").replace('/', "~1");
                object.iter().for_each(|(k, v)| schema_objects(v, format!("{at}/{}", token(k)), found));
            }
            serde_json::Value::Array(items) => {
                items.iter().enumerate().for_each(|(i, v)| schema_objects(v, format!("{at}/{i}"), found))
            }
            _ => {}
        }
    }

    /// Optional values are plain to every generator: `nullable` beside a `type`, or beside an
    /// `allOf` of one `$ref` (an optional reference); never an `{enum: [null]}` alternative.
    #[test]
    fn optional_values_are_nullable_not_null_enums() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let mut objects = Vec::new();
        schema_objects(&doc, String::new(), &mut objects);
        let mut references = 0;
        for (at, object) in objects {
            assert!(object.get("enum") != Some(&serde_json::json!([null])), "enum: [null] at {at}");
            if object.get("nullable") != Some(&serde_json::Value::Bool(true)) || object.contains_key("type") {
                continue;
            }
            let all = object.get("allOf").and_then(|all| all.as_array());
            let one_reference = all.is_some_and(|all| all.len() == 1 && all[0].get("$ref").is_some());
            assert!(one_reference, "nullable without a type or one reference at {at}");
            assert!(!object.contains_key("oneOf") && !object.contains_key("anyOf"), "{at}");
            references += 1;
        }
        assert!(references > 100, "only {references} optional references");
        let billing = &doc["components"]["schemas"]["Company"]["properties"]["BillingAddress"];
        assert_eq!(billing["allOf"], serde_json::json!([{"$ref": "#/components/schemas/Location"}]));
        assert_eq!(billing["nullable"], true);
    }

    /// The timestamps of the API are typed as such: every `*_at` string is `format: date-time`
    /// (the integration tests assert the format on every answer they receive).
    #[test]
    fn timestamps_are_typed_date_time() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let mut objects = Vec::new();
        schema_objects(&doc, String::new(), &mut objects);
        let mut timestamps = 0;
        for (at, object) in objects {
            for (name, property) in object.get("properties").and_then(|p| p.as_object()).into_iter().flatten() {
                if name.ends_with("_at") && property["type"] == "string" {
                    assert_eq!(property["format"], "date-time", "{at}/properties/{name}");
                    timestamps += 1;
                }
            }
        }
        assert!(timestamps >= 17, "only {timestamps} timestamps");
    }

    /// What a generator reads without guessing: only OpenAPI's own integer formats, every enum
    /// described, every answer's schema named (a `$ref`), no two schemas alike, a `servers`
    /// entry, and no two operationIds that differ only by a plural `s`.
    #[test]
    fn the_document_is_plain_to_generators() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let mut objects = Vec::new();
        schema_objects(&doc, String::new(), &mut objects);
        for (at, object) in &objects {
            if object.get("type") == Some(&serde_json::json!("integer")) {
                let format = object.get("format").and_then(|f| f.as_str());
                assert!(matches!(format, None | Some("int32") | Some("int64")), "{at}: format {format:?}");
            }
            if object.contains_key("enum") && !at.contains("/example") {
                // A parameter's schema is described by the parameter.
                let owner = match at.strip_suffix("/schema") {
                    Some(parameter) if parameter.contains("/parameters/") => doc.pointer(parameter).unwrap(),
                    _ => &serde_json::Value::Object((*object).clone()),
                };
                assert!(owner.get("description").is_some_and(|d| d != ""), "{at}: an enum without description");
            }
        }
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for (a, first) in schemas {
            for (b, second) in schemas {
                assert!(a == b || first != second, "{a} and {b} are the same schema");
            }
        }
        let mut confusable = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let op_id = op["operationId"].as_str().unwrap();
                let singular: Vec<&str> = op_id.split('_').map(|part| part.trim_end_matches('s')).collect();
                confusable.entry(singular.join("_")).or_default().push(op_id.to_string());
                for (status, response) in op["responses"].as_object().unwrap() {
                    for (media, content) in response["content"].as_object().into_iter().flatten() {
                        if media == "application/json" {
                            assert!(
                                content["schema"].get("$ref").is_some(),
                                "{method} {path} {status}: unnamed schema"
                            );
                        }
                    }
                }
            }
        }
        for ids in confusable.values() {
            assert!(ids.len() == 1, "operationIds that differ only by an s: {ids:?}");
        }
        assert!(doc["servers"][0]["url"].is_string());
    }

    /// Each event type a subscription can receive has a schema of its own (its `type` allows
    /// that event's name only) and is posted as a callback of the subscription's create.
    #[test]
    fn each_event_type_is_a_callback_of_the_subscription() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let create = &doc["paths"]["/api/v1/leasing/subscriptions"]["post"];
        assert_eq!(create["operationId"], "leasing_subscription_create");
        let callbacks = create["callbacks"].as_object().expect("the create has callbacks");
        for event_type in crate::leasing::watch::event::EVENT_TYPES {
            let posted = callbacks.values().find_map(|callback| {
                let body = &callback["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"];
                let name = body["schema"]["$ref"].as_str()?.trim_start_matches("#/components/schemas/");
                let schema = &doc["components"]["schemas"][name];
                (schema["properties"]["type"]["enum"] == serde_json::json!([event_type])).then_some(name)
            });
            assert!(posted.is_some(), "no callback posts a schema of its own for {event_type}");
        }
    }

    /// A record read and a record written have one identity: the `Id` and `Version` of each
    /// set's record schema (the answers of its list and show) are those of its update body.
    #[test]
    fn records_read_and_written_have_one_identity() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let kind = |schema: &serde_json::Value| {
            (schema["type"].clone(), schema["format"].clone(), schema.get("nullable").cloned())
        };
        for entity in generated::fieldreport::ENTITIES {
            let show = &doc["paths"][format!("/api/v1/fieldreport/{}/{{record}}", entity.route)]["get"];
            let read = show["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap();
            let read = &schemas[read.trim_start_matches("#/components/schemas/")];
            let update = &schemas[format!("{}Update", entity.set)];
            for field in ["Id", "Version"] {
                let (read, written) = (&read["properties"][field], &update["properties"][field]);
                assert_eq!(kind(read), kind(written), "{}: {field} read {read} and written {written}", entity.set);
            }
            assert_eq!(read["properties"]["Id"]["type"], "string", "{}", entity.set);
        }
    }

    /// What client generators and strict validators need of every operation and schema: a
    /// description, snake-case operationIds, an example of each request body, the `4XX` range,
    /// and `x-request-id` on each answer.
    #[test]
    fn every_operation_is_described_for_generators() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let header = serde_json::json!({"$ref": "#/components/headers/RequestId"});
        for (name, response) in doc["components"]["responses"].as_object().unwrap() {
            assert_eq!(response["headers"]["x-request-id"], header, "components/responses/{name}");
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let op_id = op["operationId"].as_str().unwrap();
                assert!(op_id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{op_id}");
                let description = op["description"].as_str().unwrap_or_default();
                assert!(
                    !description.is_empty() && !description.starts_with("Needs a token"),
                    "{op_id}: no description"
                );
                assert!(op["responses"].get("4XX").is_some(), "{method} {path}: no 4XX");
                for (status, response) in op["responses"].as_object().unwrap() {
                    if response.get("$ref").is_none() {
                        assert_eq!(response["headers"]["x-request-id"], header, "{op_id} {status}");
                    }
                }
                if let Some(body) = op.get("requestBody") {
                    let content = &body["content"]["application/json"];
                    assert!(content.get("example").is_some(), "{op_id}: no example of its request body");
                }
            }
        }
    }

    /// The `error_code`s a response allows: its schema's `error_code` enum, following `$ref`s
    /// and `allOf`; `None` when any code is allowed (plain `ApiError`).
    fn allowed_codes(doc: &serde_json::Value, value: &serde_json::Value) -> Option<Vec<String>> {
        if let Some(reference) = value["$ref"].as_str() {
            return allowed_codes(doc, doc.pointer(&reference[1..]).expect("a $ref resolves"));
        }
        if let Some(codes) = value["properties"]["error_code"]["enum"].as_array() {
            return Some(codes.iter().map(|c| c.as_str().unwrap().to_string()).collect());
        }
        let schema = &value["content"]["application/json"]["schema"];
        if !schema.is_null() {
            return allowed_codes(doc, schema);
        }
        value["allOf"].as_array().into_iter().flatten().find_map(|part| allowed_codes(doc, part))
    }

    /// Every answer an operation's error types can give (each variant of each, through the
    /// service's one mapping) is declared by the operation: its status, or the `4XX` range for a
    /// client error, and its `error_code` in that status's enum. And every operation that meets
    /// the database declares 500 `internal_error`.
    #[test]
    fn error_answers_follow_the_error_types() {
        use super::answers::{self, Source};
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let mut checked = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let op_id = op["operationId"].as_str().unwrap();
                let tags: Vec<String> =
                    op["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
                let guarded = op.get("security") == Some(&serde_json::json!([{"bearerAuth": []}]));
                let sources = answers::sources(op_id, &tags, guarded);
                let responses = &op["responses"];
                for (status, code) in answers::answers(&sources) {
                    let response = match responses.get(status.to_string()) {
                        Some(response) => response,
                        None if status < 500 => {
                            assert!(responses.get("4XX").is_some(), "{method} {path}: {status} `{code}` undeclared");
                            continue;
                        }
                        None => panic!("{method} {path}: {status} `{code}` undeclared"),
                    };
                    if let Some(allowed) = allowed_codes(&doc, response) {
                        assert!(allowed.contains(&code), "{method} {path}: {status} `{code}` not in {allowed:?}");
                    }
                    checked += 1;
                }
                let meets_the_database = sources.iter().any(|s| *s != Source::Probe);
                if meets_the_database {
                    let allowed = allowed_codes(&doc, &responses["500"]);
                    assert!(
                        allowed.is_some_and(|codes| codes.iter().any(|c| c == "internal_error")),
                        "{method} {path}: no 500 `internal_error`"
                    );
                }
            }
        }
        assert!(checked > 1000, "only {checked} answers checked");
        let update = &doc["paths"]["/api/v1/erp/update/{model}"]["get"]["responses"]["503"];
        assert!(allowed_codes(&doc, update).unwrap().contains(&"interrupted".to_string()));
    }

    /// Each server error's description names every `error_code` its enum allows.
    #[test]
    fn server_errors_describe_their_codes() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let names = super::SERVER_ERRORS.iter().map(|(name, _, _)| *name);
        let flow = ["LeasingFlowFailure", "LeasingFlowRetryConflict", "LeasingFlowInvalid", "LeasingFlowUnavailable"];
        for name in names.chain(flow) {
            // The flow's failure has "the causes of `LeasingFailure`", described there.
            let described_in = if name == "LeasingFlowFailure" { "LeasingFailure" } else { name };
            let description = schemas[described_in]["description"].as_str();
            let description = description.unwrap_or_else(|| panic!("{described_in} is not stated"));
            for code in allowed_codes(&doc, &schemas[name]).unwrap() {
                assert!(description.contains(&format!("`{code}`")), "{name} does not describe `{code}`: {description}");
            }
        }
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
