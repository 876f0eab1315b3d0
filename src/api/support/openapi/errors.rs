//! The document's error answers: the server errors every operation may answer, named by
//! status and area with their `error_code`s, the upstream ones, and the one-shot flow's
//! answers that say where it stood.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::api::support::answers::{Answer, Source};

/// The server errors the document states, as responses and schemas of the same name: name,
/// status, description. Each schema narrows `ApiError` to the `error_code`s that the operations
/// answering with it can send on its status, derived from their handlers' error types
/// ([`crate::api::support::answers`]); the description names every one of them (a test checks it).
pub(super) const SERVER_ERRORS: &[(&str, u16, &str)] = &[
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
pub(super) fn server_error_name(status: u16, sources: &BTreeSet<Source>) -> &'static str {
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
pub(super) fn complete_request_flow_operation(op: &mut Value) {
    let example = json!({
        "success": false, "message": "The financing request was declined by the leasing provider; the process is aborted.",
        "error_code": "declined", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11",
        "financingId": "a1b2c3d4-0000-4000-8000-000000000001", "flowId": 42, "failedStep": "wait_ready_to_sign"
    });
    op["responses"]["500"] = json!({
        "description": "The flow failed at `failedStep` (the causes of `LeasingFailure`); `financingId` names the request it created (null when the create failed) and `flowId` its record.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LeasingFlowFailure"}, "example": example}},
        "headers": retry_after()
    });
    for (status, name, description, _) in REQUEST_FLOW_ERRORS {
        op["responses"][*status] = json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}
        });
        if *status == "503" {
            op["responses"][*status]["headers"] = retry_after();
        }
    }
}

/// The `Retry-After` a 503, or a leasing failure's 500, carries when waiting helps
/// (`service_unavailable`, `upstream_busy`; the front sends it for every `retry_after_seconds`
/// in an error body), absent otherwise.
fn retry_after() -> Value {
    retry_after_header(
        "Seconds to wait before sending the request again; sent with `service_unavailable` and `upstream_busy`.",
    )
}

/// The `Retry-After` header, described for the answer that carries it: whole seconds, as the
/// front writes every `retry_after_seconds` (a `u64`, which the body's field bounds alike).
pub(super) fn retry_after_header(description: &str) -> Value {
    json!({"Retry-After": {
        "description": description,
        "schema": {"type": "integer", "format": "int64", "minimum": 0, "maximum": i64::MAX}
    }})
}

/// The conflict an upstream system can report (its server errors follow from the operation's
/// error types, see [`add_server_errors`]).
pub(super) fn upstream_errors(op: &mut Value) {
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
pub(super) fn add_server_errors(doc: &mut Value, server_codes: &BTreeMap<&str, BTreeSet<String>>) {
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
    for (name, status, description) in SERVER_ERRORS {
        if server_codes.contains_key(name) {
            let mut response = json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}
            });
            // A leasing failure keeps the seed's 500, `upstream_busy` included.
            if *status == 503 || *name == "LeasingFailure" {
                response["headers"] = retry_after();
            }
            responses.insert((*name).into(), response);
        }
    }
}

/// The client errors an operation can answer, each declared by its own status (a `4XX` range
/// is read by no generator that drops ranges, such as openapi-zod-client): every one its error
/// types give, and 400 wherever dropshot reads an input (malformed JSON, a body of another
/// content type, a parameter of the wrong form). A status the operation declares already, with
/// its own description, is kept. 403 `missing_ability` is answered only where an ability is
/// needed.
pub(super) fn declare_client_errors(
    op: &mut Value,
    answers: &BTreeSet<Answer>,
    takes_input: bool,
    states_ability: bool,
) {
    let derived = answers
        .iter()
        .filter(|(status, code)| *status < 500 && (states_ability || !(*status == 403 && code == "missing_ability")));
    let statuses: BTreeSet<u16> = derived.map(|(status, _)| *status).chain(takes_input.then_some(400)).collect();
    let responses = op["responses"].as_object_mut().expect("every operation has responses");
    for status in statuses {
        let name = client_error_name(status);
        responses
            .entry(status.to_string())
            .or_insert_with(|| json!({"$ref": format!("#/components/responses/{name}")}));
    }
}

/// What the front refuses before any operation is chosen, declared by every operation under
/// its own status: a head over `MAX_HEADER_BYTES` or with more than 100 headers (431), a
/// request target over 65,534 bytes (414, reachable when `MAX_HEADER_BYTES` is larger), a
/// header the service reads once sent twice or a head that cannot be read one way (400; an
/// operation's own 400 is kept), a `Content-Length` over `MAX_BODY_BYTES` whether the
/// operation takes a body or not (413), and, where a body is read, one of another media type
/// than JSON (415).
pub(super) fn declare_front_refusals(op: &mut Value, has_body: bool) {
    let reference = |name: &str| json!({"$ref": format!("#/components/responses/{name}")});
    let responses = op["responses"].as_object_mut().expect("every operation has responses");
    responses.entry("400").or_insert_with(|| reference("BadRequest"));
    responses.insert("413".into(), reference("PayloadTooLarge"));
    responses.insert("414".into(), reference("UriTooLong"));
    responses.insert("431".into(), reference("HeadersTooLarge"));
    if has_body {
        responses.insert("415".into(), reference("UnsupportedMediaType"));
    }
}

/// The shared response of a client error, by status.
fn client_error_name(status: u16) -> &'static str {
    match status {
        400 => "BadRequest",
        401 => "Unauthenticated",
        403 => "MissingAbility",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Gone",
        413 => "PayloadTooLarge",
        422 => "ValidationFailed",
        429 => "TooManyRequests",
        other => panic!("no shared response answers {other}: add one to client_error_name"),
    }
}

/// The shared client-error responses of their own: 400 (for both of the above), 410 (for
/// [`declare_client_errors`]), 408 (every operation that takes a body), 414, 415 and 431 (for
/// [`declare_front_refusals`]).
pub(super) fn add_client_errors(doc: &mut Value) {
    let content = json!({"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}}});
    let responses = doc["components"]["responses"].as_object_mut().expect("the document has responses");
    responses.insert(
        "BadRequest".into(),
        json!({
            "description": "The request could not be read (`bad_request`): malformed JSON, a path or query parameter of the wrong form, a NUL character (U+0000), which the database cannot hold, and, whatever the operation, a head that cannot be read one way (two `Content-Length`s) or a header the service reads once (`Authorization`, `Content-Type`, `Host`, `Idempotency-Key`) sent twice. The message names the problem; the same request will fail again.",
            "content": content.clone()
        }),
    );
    responses.insert(
        "RequestTimeout".into(),
        json!({
            "description": "The request's body did not arrive within `BODY_READ_TIMEOUT_SECONDS` of its start (`request_timeout`); the connection is closed.",
            "content": content.clone()
        }),
    );
    responses.insert(
        "UnsupportedMediaType".into(),
        json!({
            "description": "The body's `Content-Type` is not JSON (`unsupported_media_type`): send `application/json` (or another `application/*+json`), or no `Content-Type` at all.",
            "content": content.clone()
        }),
    );
    responses.insert(
        "HeadersTooLarge".into(),
        json!({
            "description": "The request line and headers together are larger than `MAX_HEADER_BYTES` (16 KiB by default), or there are more than 100 headers (`headers_too_large`); refused before anything else, whatever the operation. The connection is closed when the head outgrew the read buffer (`MAX_HEADER_BYTES` plus 1 KiB) or had too many headers.",
            "content": content.clone()
        }),
    );
    responses.insert(
        "UriTooLong".into(),
        json!({
            "description": "The request target (path and query) is longer than 65,534 bytes (`uri_too_long`); with the default `MAX_HEADER_BYTES` such a head is answered 431 first. The connection is closed.",
            "content": content.clone()
        }),
    );
    responses.insert(
        "Gone".into(),
        json!({
            "description": "The position is older than the oldest change kept, or was not answered by this database (`cursor_expired`): copy the set again and follow from the copy's position.",
            "content": content
        }),
    );
}
