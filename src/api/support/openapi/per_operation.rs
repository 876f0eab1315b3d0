//! What particular operations answer beyond the common shape: the jobs', the leasing
//! subscriptions' (with the events they post as callbacks), the metrics', the exports' and
//! the field-report operations'.

use serde_json::{Value, json};

use super::errors::{retry_after_header, upstream_errors};

/// The answers of the jobs routes besides success: an unknown job, an active or ended one, a
/// bad filter.
pub(super) fn complete_jobs_operation(op: &mut Value, op_id: &str) {
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
            "headers": retry_after_header("Seconds to wait."),
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
/// delivery, a refused URL, too many retries.
pub(super) fn complete_subscription_operation(op: &mut Value, op_id: &str) {
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
    if op_id == "leasing_subscription_delivery_retry" {
        op["responses"]["429"] = json!({
            "description": "The caller asked for `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` deliveries to be sent again within the last minute (`too_many_delivery_retries`); nothing was queued. Retry after `Retry-After` seconds.",
            "headers": retry_after_header("Seconds to wait."),
            "content": example("too_many_delivery_retries", "You asked for 60 deliveries to be sent again within a minute, the most a user may; retry in 12 s.", None)
        });
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
pub(super) fn event_schema() -> Value {
    let mut generator = schemars::r#gen::SchemaSettings::openapi3().into_generator();
    let root = generator.root_schema_for::<crate::api::leasing::event::LeasingStateChangedEvent>();
    let mut schemas = serde_json::to_value(generator.definitions()).expect("schemas serialise");
    schemas["LeasingStateChangedEvent"] = serde_json::to_value(root.schema).expect("a schema serialises");
    schemas
}

/// The exposition's media type, the optional metrics token, and its one server error: 500
/// `internal_error` when the answer cannot be built (no range: a generator that drops `5XX`
/// would not know it).
pub(super) fn complete_metrics_operation(op: &mut Value) {
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
        "500": {"$ref": "#/components/responses/InternalError"}
    });
}

/// An export's answer: NDJSON, one change per line, then the position to follow from.
pub(super) fn complete_export_operation(op: &mut Value) {
    let erp = op["operationId"] == "erp_export";
    let item = if erp { "`ErpChange`" } else { "the set's `<Set>Change` schema" };
    let responses = op["responses"].as_object_mut().expect("every operation has responses");
    responses.remove("default");
    responses.insert("4XX".into(), json!({"$ref": "#/components/responses/ApiError"}));
    if erp {
        responses.insert("404".into(), json!({"$ref": "#/components/responses/NotFound"}));
    }
    op["responses"]["429"] = json!({
        "description": "The caller's user has `MAX_EXPORTS_PER_USER` exports streaming here already (`too_many_exports`): each holds pages of its set until its client reads them. Read one to its end or close it, then retry after `Retry-After` seconds.",
        "headers": retry_after_header("Seconds to wait."),
        "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/ApiError"},
            "example": {"message": "This user already has 4 exports streaming here; read one to its end or close it.", "error_code": "too_many_exports", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}
        }}
    });
    op["responses"]["200"] = json!({
        "description": format!("The records in key order, one JSON object per line, each a change as {item} describes it (`change` is `upsert`), then a last line `{{\"next_cursor\": <position>, \"records\": <count>}}`: the position to follow the change feed from. Without that last line the answer was cut short."),
        "content": {crate::api::support::feed::NDJSON: {
            "schema": {"type": "string"},
            "example": "{\"change\":\"upsert\",\"id\":\"1\",\"record\":{\"Id\":\"1\",\"Version\":1}}\n{\"next_cursor\":\"42\",\"records\":1}\n"
        }}
    });
}

/// Error answers of the field-report routes, and the two answers of a delete.
pub(super) fn complete_fieldreport_operation(op: &mut Value, op_id: &str) {
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
