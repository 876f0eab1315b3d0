//! The simulator's API root and key, and the shapes of its answers (problem JSON, `result`).

use http::StatusCode;
use serde_json::{Value, json};

use crate::sandbox::http::{SimResponse, json};

/// The value the header `AuthenticationToken` must carry.
pub const API_KEY: &str = "sandbox-erp-key";
/// The path of the API root on the simulator's address.
pub const API_ROOT: &str = "/webapp/api/v1";

/// A problem-style error answer; `kind` ends the `type` and is the `title`.
pub(super) fn problem(status: StatusCode, kind: &str, detail: &str) -> SimResponse {
    json(status, &problem_body(status.as_u16(), kind, detail))
}

pub(super) fn problem_body(status: u16, kind: &str, detail: &str) -> Value {
    json!({"type": format!("{API_ROOT}/problems/{kind}"), "title": kind, "status": status, "detail": detail,
           "validationErrors": []})
}

/// The body of an injected fault, e.g. `too_many_requests` for a 429.
pub(super) fn fault_problem(status: u16) -> Value {
    let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("injected fault");
    problem_body(status, &reason.to_lowercase().replace(' ', "_"), "injected fault")
}

pub(super) fn not_found(model: &str, id: &str) -> SimResponse {
    problem(StatusCode::NOT_FOUND, "not_found", &format!("{model} with id {id} does not exist"))
}

pub(super) fn bad_request(detail: &str) -> SimResponse {
    problem(StatusCode::BAD_REQUEST, "bad_request", detail)
}

pub(super) fn result(status: StatusCode, result: Value) -> SimResponse {
    json(status, &json!({ "result": result }))
}

pub(super) fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}
