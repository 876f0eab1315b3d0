//! The OData wire: error answers, query parameters, `Edm.Int64`.

use std::collections::HashMap;

use http::StatusCode;
use serde_json::{Value, json};

use crate::sandbox::http::{SimResponse, json};

pub(super) fn odata_error(status: StatusCode, code: &str, message: &str) -> SimResponse {
    json(status, &json!({"error": {"code": code, "message": message}}))
}

pub(super) fn query_params(query: Option<&str>) -> HashMap<String, String> {
    query
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

/// An `Edm.Int64` as OData JSON writes it: a number (v4), or its digits as a string (v3).
pub(super) fn edm_int64(value: &Value) -> Option<i64> {
    crate::vocabulary::json_integer::json_integer(value)
}
