//! The ERP's REST API (weclapp style): `<root>/<model>`, `<root>/<model>/id/{id}`, the API key
//! in the `AuthenticationToken` header, lists as `{result: [...]}`.
//!
//! Reads are retried while the ERP fails transiently; a 429 (the ERP queues requests over its
//! concurrency limit for about 30 s, then refuses) is retried after the wait it asks for, for
//! writes too, since a refused write was not processed. Problem-style error bodies
//! (`{title, detail, validationErrors}`) are summarised into the error's message; the key never
//! appears in an error (it travels in a header, and URLs are left out of transport errors).

use std::sync::Arc;
use std::time::Instant;

use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use url::Url;

use super::config::ErpConfig;
use super::{CallOutcome, System, UpstreamError, error_chain, json_answer, retry_read, retry_throttled, summarise};
use crate::metrics::{CallRecorder, Metrics};
use crate::vocabulary::json_integer::json_integer;

const SYSTEM: System = System::Erp;

/// The largest page the ERP serves.
pub const MAX_PAGE_SIZE: usize = 1000;

#[derive(Clone)]
pub struct ErpClient {
    http: reqwest::Client,
    root: Url,
    api_key: SecretString,
    metrics: CallRecorder,
}

/// The message of a problem-style error body (`title: detail; validation messages`), or the
/// body itself, shortened.
pub fn problem_message(body: &str) -> String {
    let Ok(Value::Object(problem)) = serde_json::from_str::<Value>(body) else {
        return summarise(body);
    };
    let text = |key: &str| problem.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut parts: Vec<String> = Vec::new();
    match (text("title"), text("detail").or_else(|| text("error"))) {
        (Some(title), Some(detail)) if title != detail => parts.push(format!("{title}: {detail}")),
        (Some(one), _) | (None, Some(one)) => parts.push(one.to_string()),
        (None, None) => {}
    }
    if let Some(Value::Array(errors)) = problem.get("validationErrors") {
        for error in errors {
            let message = ["message", "detail", "title"].iter().find_map(|k| error.get(*k).and_then(Value::as_str));
            let location = error.get("location").and_then(Value::as_str);
            match (location, message) {
                (Some(location), Some(message)) => parts.push(format!("{location}: {message}")),
                (None, Some(message)) => parts.push(message.to_string()),
                _ => {}
            }
        }
    }
    if parts.is_empty() { summarise(body) } else { summarise(&parts.join("; ")) }
}

/// The ERP's `version` (a number sent as a string) as a number; 0 when absent.
pub fn version_of(record: &Value) -> i64 {
    record.get("version").and_then(json_integer).unwrap_or(0)
}

/// A record's `lastModifiedDate` (epoch ms); 0 when absent.
pub fn last_modified_of(record: &Value) -> i64 {
    record.get("lastModifiedDate").and_then(json_integer).unwrap_or(0)
}

/// A record's `id` as text.
pub fn id_of(record: &Value) -> Option<String> {
    match record.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

impl ErpClient {
    pub fn from_config(config: &ErpConfig) -> Result<ErpClient, UpstreamError> {
        let root =
            config.base_url.clone().ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "ERP_BASE_URL" })?;
        let api_key =
            config.api_key.clone().ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "ERP_API_KEY" })?;
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .redirect(super::no_redirects())
            .build()
            .map_err(|e| UpstreamError::Client { system: SYSTEM, detail: error_chain(&e) })?;
        Ok(ErpClient { http, root, api_key, metrics: CallRecorder::default() })
    }

    /// Counts every call in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = CallRecorder::new(metrics);
        self
    }

    fn url(&self, path: &str, query: &[(String, String)]) -> Result<Url, UpstreamError> {
        let base = self.root.as_str().trim_end_matches('/');
        let mut url = Url::parse(&format!("{base}/{}", path.trim_start_matches('/')))
            .map_err(|e| UpstreamError::Client { system: SYSTEM, detail: e.to_string() })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// One call, counted (every call to the ERP passes here); `Ok(None)` for a 404.
    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(String, String)],
        body: Option<&Value>,
    ) -> Result<Option<Value>, UpstreamError> {
        let started = Instant::now();
        let result = async {
            let mut request = self
                .http
                .request(method, self.url(path, query)?)
                .header("AuthenticationToken", self.api_key.expose_secret())
                .header(reqwest::header::ACCEPT, "application/json");
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request.send().await.map_err(|e| UpstreamError::from_reqwest(SYSTEM, e))?;
            if response.status() == StatusCode::NOT_FOUND {
                return Ok(None);
            }
            json_answer(SYSTEM, response, problem_message).await.map(Some)
        }
        .await;
        let outcome = match &result {
            Ok(None) => CallOutcome::of_status(StatusCode::NOT_FOUND.as_u16()),
            other => CallOutcome::of(other),
        };
        self.metrics.record(SYSTEM, outcome, started);
        result
    }

    fn not_found(path: &str) -> UpstreamError {
        UpstreamError::Refused { system: SYSTEM, status: 404, message: format!("{path} not found"), retry_after: None }
    }

    /// `GET /<model>?page&pageSize&<filters>`: one page of records.
    pub async fn list(&self, model: &str, query: &[(String, String)]) -> Result<Vec<Value>, UpstreamError> {
        let body =
            retry_read(|| self.call(Method::GET, model, query, None)).await?.ok_or_else(|| Self::not_found(model))?;
        match body.get("result") {
            Some(Value::Array(records)) => Ok(records.clone()),
            _ => Err(UpstreamError::Malformed {
                system: SYSTEM,
                detail: format!("a list without `result`: {}", summarise(&body.to_string())),
            }),
        }
    }

    /// `GET /<model>/count?<filters>`: how many records the filters select.
    pub async fn count(&self, model: &str, query: &[(String, String)]) -> Result<u64, UpstreamError> {
        let path = format!("{model}/count");
        let body =
            retry_read(|| self.call(Method::GET, &path, query, None)).await?.ok_or_else(|| Self::not_found(&path))?;
        match body.get("result").and_then(json_integer).and_then(|n| u64::try_from(n).ok()) {
            Some(count) => Ok(count),
            None => Err(UpstreamError::Malformed {
                system: SYSTEM,
                detail: format!("a count without a number in `result`: {}", summarise(&body.to_string())),
            }),
        }
    }

    /// `GET /<model>/id/{id}`: the record, or `None` when the ERP has no such record.
    pub async fn get(&self, model: &str, id: &str) -> Result<Option<Value>, UpstreamError> {
        let path = record_path(model, id)?;
        retry_read(|| self.call(Method::GET, &path, &[], None)).await
    }

    /// `POST /<model>`: the created record.
    pub async fn create(&self, model: &str, record: &Value) -> Result<Value, UpstreamError> {
        retry_throttled(|| self.call(Method::POST, model, &[], Some(record)))
            .await?
            .ok_or_else(|| Self::not_found(model))
    }

    /// `PUT /<model>/id/{id}?ignoreMissingProperties=true`: a partial update; with `version`
    /// in `fields` the ERP refuses a stale one with 409.
    pub async fn update_partial(&self, model: &str, id: &str, fields: &Value) -> Result<Value, UpstreamError> {
        let path = record_path(model, id)?;
        let query = [("ignoreMissingProperties".to_string(), "true".to_string())];
        retry_throttled(|| self.call(Method::PUT, &path, &query, Some(fields)))
            .await?
            .ok_or_else(|| Self::not_found(&path))
    }

    /// `DELETE /<model>/id/{id}`: `true` when deleted, `false` when the ERP had no such record
    /// (someone else deleted it: the outcome is the same).
    pub async fn delete(&self, model: &str, id: &str) -> Result<bool, UpstreamError> {
        let path = record_path(model, id)?;
        Ok(retry_throttled(|| self.call(Method::DELETE, &path, &[], None)).await?.is_some())
    }
}

/// What a record id keeps as it is in a path segment: RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `<model>/id/<id>`, the id one percent-encoded segment. Ids also come from the ERP's own
/// answers (its webhook list), unchecked: `.` and `..` (which `Url::parse` resolves, encoded
/// or not) would name another resource and an empty id the list, so they are refused.
fn record_path(model: &str, id: &str) -> Result<String, UpstreamError> {
    if matches!(id, "" | "." | "..") {
        return Err(UpstreamError::Client { system: SYSTEM, detail: format!("{id:?} is not a record id") });
    }
    Ok(format!("{model}/id/{}", percent_encoding::utf8_percent_encode(id, SEGMENT)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_are_summarised_with_their_validation_errors() {
        let body = json!({
            "type": "/webapp/view/api/errors.html#optimistic_lock", "title": "optimistic_lock",
            "status": 409, "detail": "the record was changed",
            "validationErrors": [{"location": "email", "message": "invalid address"}]
        });
        assert_eq!(
            problem_message(&body.to_string()),
            "optimistic_lock: the record was changed; email: invalid address"
        );
        assert_eq!(problem_message(r#"{"error": "not allowed"}"#), "not allowed");
        assert_eq!(problem_message("gateway down"), "gateway down");
    }

    #[test]
    fn versions_and_times_are_read_from_strings_or_numbers() {
        assert_eq!(version_of(&json!({"version": "12"})), 12);
        assert_eq!(version_of(&json!({"version": 3})), 3);
        assert_eq!(version_of(&json!({})), 0);
        assert_eq!(last_modified_of(&json!({"lastModifiedDate": 1700000000000_i64})), 1700000000000);
        assert_eq!(id_of(&json!({"id": "42"})).as_deref(), Some("42"));
        assert_eq!(id_of(&json!({"id": 42})).as_deref(), Some("42"));
        assert_eq!(id_of(&json!({"id": ""})), None);
    }

    /// The URL a call for record `id` of `customer` goes to.
    fn record_url(id: &str) -> Option<Url> {
        let root = Url::parse("http://erp.test/webapp/api/v1/").unwrap();
        let client =
            ErpClient { http: reqwest::Client::new(), root, api_key: "k".into(), metrics: CallRecorder::default() };
        record_path("customer", id).ok().map(|path| client.url(&path, &[]).unwrap())
    }

    #[test]
    fn a_record_id_stays_one_segment_of_its_own_path() {
        let path = |id: &str| record_url(id).map(|url| url.path().to_string());
        assert_eq!(path("12").as_deref(), Some("/webapp/api/v1/customer/id/12"));
        assert_eq!(path("a b").as_deref(), Some("/webapp/api/v1/customer/id/a%20b"), "`+` is a plus in a path");
        assert_eq!(path("x/../y?z#w").as_deref(), Some("/webapp/api/v1/customer/id/x%2F..%2Fy%3Fz%23w"));
        assert_eq!(path("...").as_deref(), Some("/webapp/api/v1/customer/id/..."));
        // Dots alone would name another resource (`customer/` itself, or the id route), and
        // an empty id the list: such an id is refused, not sent.
        for id in ["", ".", "..", "%2e%2e"] {
            let sent = path(id);
            assert!(
                sent.as_ref().is_none_or(|p| p.starts_with("/webapp/api/v1/customer/id/")
                    && p.len() > 27
                    && !p.ends_with("/id/")),
                "{id:?} went to {sent:?}"
            );
        }
    }
}
