//! The leasing operations' answers of their own: 404 for a financing request or flow of
//! another user, 429 for too many financing requests created or new `Idempotency-Key`s.

use super::errors::retry_after_header;
use serde_json::{Value, json};

/// The example of an error answer under `/api/v1/leasing`.
fn example(code: &str, message: &str) -> Value {
    json!({"application/json": {
        "schema": {"$ref": "#/components/schemas/ApiError"},
        "example": {
            "success": false, "message": message, "error_code": code,
            "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"
        }
    }})
}

/// Adds the leasing answers of the operation `op_id` at `path`.
pub fn complete(op: &mut Value, op_id: &str, path: &str) {
    if op_id == "leasing_request_flow_show" {
        op["responses"]["404"] = json!({
            "description": "No flow with this id among the token's user's flows (`not_found`).",
            "content": example("not_found", "no flow 42")
        });
    }
    if path.starts_with("/api/v1/leasing") && path.contains("{financingId}") {
        op["responses"]["404"] = json!({
            "description": "The financing request was created (or first watched) through this service by another user (`not_found`); only its creator and operators reach it. A request this service has no creator of is reached by every token with the ability `leasing`.",
            "content": example("not_found", "There is no financing request 5d0c41a2-0000-4000-8000-000000000001.")
        });
    }
    if op_id == "leasing_create" || op_id == "leasing_request_flow" {
        let held = if op_id == "leasing_request_flow" {
            ", or the caller's user has `MAX_HELD_CALLS_PER_USER` waits and flows running here (`too_many_held_calls`)"
        } else {
            ""
        };
        op["responses"]["429"] = json!({
            "description": format!("The caller's user created `LEASING_CREATES_PER_MINUTE_PER_USER` financing requests within the last minute (`too_many_financing_requests`; nothing was sent to the provider), or the caller sent `IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER` new `Idempotency-Key`s within the last minute (`too_many_idempotency_keys`; a repeat of a stored key is not counted; or send the request without a key){held}; retry after `Retry-After` seconds."),
            "headers": retry_after_header("Seconds to wait."),
            "content": example(
                "too_many_idempotency_keys",
                "you sent 120 new Idempotency-Keys within a minute, the most a user may; retry in 12 s"
            )
        });
    }
}
