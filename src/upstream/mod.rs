//! The clients of the three upstream systems: configuration, time-outs, retries and the
//! mapping of every failure to one [`UpstreamError`].
//!
//! Only the leasing client wraps a generated client (progenitor, from the provider's OpenAPI
//! description): its operations are fixed. The ERP and field-report clients are generic by
//! design: one set of calls (`list`/`page`, `get`, `create`, `update`, `delete`) over any model or
//! entity set, on whole JSON documents (the mirrors store documents whole; the generated models
//! validate them), because ~150 ERP models and 15 field-report sets share the same paths, and a
//! generated client would give each its own copy of the same calls.

pub mod config;
pub mod erp;
pub mod fieldreport;
pub mod leasing;

use std::future::Future;
use std::time::Duration;

pub use crate::vocabulary::calls::{CallOutcome, System};
pub use crate::vocabulary::retry_after::requested_wait;

/// Why a call to an upstream system did not give a usable answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("the {system} is not configured: set {setting}")]
    NotConfigured { system: System, setting: &'static str },
    #[error("the {system} did not answer in time")]
    Timeout { system: System },
    #[error("the {system} could not be reached: {detail}")]
    Unreachable { system: System, detail: String },
    /// The upstream answered with an error status; `message` summarises its error body.
    /// `retry_after`: the wait a 5xx asked for (`Retry-After` on a 503 in maintenance).
    #[error("the {system} answered {status}: {message}")]
    Refused { system: System, status: u16, message: String, retry_after: Option<Duration> },
    /// 429: the upstream is over its limit; `retry_after` is its own estimate of the wait.
    #[error("the {system} is busy (429, too many requests){}", retry_after.map(|d| format!("; retry in {} s", d.as_secs().max(1))).unwrap_or_default())]
    Throttled { system: System, retry_after: Option<Duration> },
    #[error("the {system} sent an answer that could not be read: {detail}")]
    Malformed { system: System, detail: String },
    /// A create answered with a success (`status`: 201, 204, or 202 Accepted for later) that
    /// names no record, in its body or by an address: it applied, or will, under an Id not
    /// known here. Not finding it at once proves nothing (a 202's record may not exist yet).
    #[error("the {system} took the create ({status}) without naming the record it made: {detail}")]
    Unnamed { system: System, status: u16, detail: String },
    #[error("the {system} client is misconfigured: {detail}")]
    Client { system: System, detail: String },
}

impl UpstreamError {
    /// An error status: 429 is [`UpstreamError::Throttled`] with the wait the upstream asked
    /// for, anything else [`UpstreamError::Refused`] (with the wait a 5xx asked for); a
    /// redirect ([`no_redirects`]) is described by where it points.
    pub fn from_status(
        system: System,
        status: u16,
        headers: &reqwest::header::HeaderMap,
        message: impl FnOnce() -> String,
    ) -> UpstreamError {
        if status == 429 {
            UpstreamError::Throttled { system, retry_after: requested_wait(headers) }
        } else if (300..400).contains(&status) {
            UpstreamError::Refused { system, status, message: redirect_message(headers), retry_after: None }
        } else {
            let retry_after = if status >= 500 { requested_wait(headers) } else { None };
            UpstreamError::Refused { system, status, message: message(), retry_after }
        }
    }

    /// A refusal that asked for no wait, as tests build them.
    #[cfg(test)]
    pub(crate) fn refused(system: System, status: u16, message: &str) -> UpstreamError {
        UpstreamError::Refused { system, status, message: message.to_string(), retry_after: None }
    }

    /// The wait the upstream asked for before it is called again, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            UpstreamError::Throttled { retry_after, .. } | UpstreamError::Refused { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The upstream does not have the record: 404, or 410 Gone (a server that remembers it
    /// deleted it).
    pub fn is_gone(&self) -> bool {
        matches!(self, UpstreamError::Refused { status: 404 | 410, .. })
    }

    /// The upstream refused a write as stale: 409, or 412 Precondition Failed (a server
    /// checking its version as an ETag).
    pub fn is_stale(&self) -> bool {
        matches!(self, UpstreamError::Refused { status: 409 | 412, .. })
    }

    /// Worth another try for a read: the upstream may answer next time.
    pub fn is_transient(&self) -> bool {
        match self {
            UpstreamError::Unreachable { .. } | UpstreamError::Throttled { .. } => true,
            UpstreamError::Refused { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    /// A write that ended this way may have been applied all the same: the request may have
    /// arrived and the answer been lost (a time-out, a connection cut, a server error after
    /// the upstream had begun). Only a definite answer (4xx, 429) or a client fault says not.
    pub fn may_have_applied(&self) -> bool {
        match self {
            UpstreamError::Timeout { .. }
            | UpstreamError::Unreachable { .. }
            | UpstreamError::Malformed { .. }
            | UpstreamError::Unnamed { .. } => true,
            UpstreamError::Refused { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// Maps a transport error; the URL is left out (its query may carry secrets). A body cut
    /// at [`MAX_ANSWER_BYTES`] ([`bounded`]) is an unreadable answer.
    pub fn from_reqwest(system: System, error: reqwest::Error) -> UpstreamError {
        let error = error.without_url();
        if is_too_large(&error) {
            return UpstreamError::Malformed {
                system,
                detail: format!("an answer larger than {MAX_ANSWER_BYTES} bytes, the most the service reads"),
            };
        }
        if error.is_timeout() {
            return UpstreamError::Timeout { system };
        }
        if error.is_decode() {
            return UpstreamError::Malformed { system, detail: error_chain(&error) };
        }
        UpstreamError::Unreachable { system, detail: error_chain(&error) }
    }
}

impl CallOutcome {
    /// The outcome of a call that ended with `result`.
    pub fn of<T>(result: &Result<T, UpstreamError>) -> CallOutcome {
        match result {
            Ok(_) => CallOutcome::Ok,
            Err(UpstreamError::Refused { status, .. }) => CallOutcome::of_status(*status),
            Err(UpstreamError::Throttled { .. }) => CallOutcome::Http4xx,
            Err(UpstreamError::Timeout { .. }) => CallOutcome::Timeout,
            Err(UpstreamError::Unreachable { .. }) => CallOutcome::ConnectionError,
            Err(UpstreamError::Malformed { .. } | UpstreamError::Unnamed { .. }) => CallOutcome::InvalidResponse,
            Err(UpstreamError::Client { .. } | UpstreamError::NotConfigured { .. }) => CallOutcome::ClientError,
        }
    }
}

/// An error and its sources in one line.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    crate::vocabulary::redaction::scrub(&parts.join(": "))
}

/// Reads an upstream's answer: an error status becomes [`UpstreamError::from_status`] with
/// `describe(body)` as its message, an empty answer is `null`, anything else must be JSON.
pub async fn json_answer(
    system: System,
    response: reqwest::Response,
    describe: fn(&str) -> String,
) -> Result<serde_json::Value, UpstreamError> {
    let text = text_answer(system, response, describe).await?;
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Null);
    }
    parse_json(system, &text)
}

/// The body of a successful answer as text (empty for 204); an error status becomes its
/// [`UpstreamError`], `describe` summarising the body. Either body is read to
/// [`MAX_ANSWER_BYTES`] at most.
pub async fn text_answer(
    system: System,
    response: reqwest::Response,
    describe: fn(&str) -> String,
) -> Result<String, UpstreamError> {
    let response = bounded(response);
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await;
    if !status.is_success() {
        return Err(refusal(system, status.as_u16(), &headers, body, |body| describe(&utf8_text(body))));
    }
    Ok(utf8_text(&body.map_err(|e| UpstreamError::from_reqwest(system, e))?))
}

/// An error status as its [`UpstreamError`] whatever became of its body: the status decides
/// (a 503 stays worth another try, with the wait it asked for), the body, when it was read
/// whole, only gives the message (`describe`).
pub fn refusal<B: AsRef<[u8]>>(
    system: System,
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: reqwest::Result<B>,
    describe: impl FnOnce(&[u8]) -> String,
) -> UpstreamError {
    UpstreamError::from_status(system, status, headers, || match body {
        Ok(body) => describe(body.as_ref()),
        Err(e) if is_too_large(&e) => format!("a body over {MAX_ANSWER_BYTES} bytes, not read"),
        Err(e) => format!("its body could not be read: {}", error_chain(&e.without_url())),
    })
}

/// `response` with a body that fails, once more than [`MAX_ANSWER_BYTES`] have come, instead
/// of being read on: reqwest reads a body whole, however long. Every answer of an upstream
/// passes here before it is read (the leasing client's generated code calls it for each).
pub fn bounded(response: reqwest::Response) -> reqwest::Response {
    bounded_to(response, MAX_ANSWER_BYTES)
}

fn bounded_to(response: reqwest::Response, limit: usize) -> reqwest::Response {
    let (parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
    let body = reqwest::Body::wrap(http_body_util::Limited::new(body, limit));
    reqwest::Response::from(http::Response::from_parts(parts, body))
}

/// Whether reading a body failed because it passed the bound of [`bounded`].
pub fn is_too_large(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// A body as text, invalid UTF-8 replaced by U+FFFD. Valid UTF-8 (every JSON answer) is checked
/// by `str::from_utf8`, which runs over ASCII a word at a time, and copied once; reqwest's
/// `text()` without its charset feature goes through `from_utf8_lossy`'s byte-wise scan (in a
/// SQLite sync of 100,000 records: 1.5% of the service's samples, against 0.06% for this).
fn utf8_text(body: &[u8]) -> String {
    match std::str::from_utf8(body) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// An upstream's JSON text read into `T`; [`UpstreamError::Malformed`] when it does not fit.
pub fn parse_json<'a, T: serde::Deserialize<'a>>(system: System, text: &'a str) -> Result<T, UpstreamError> {
    serde_json::from_str(text)
        .map_err(|e| UpstreamError::Malformed { system, detail: format!("{e} in {}", summarise(text)) })
}

/// Shortens an upstream's error text for a `message`, without any secret of ours in it (an
/// upstream may echo what it received).
pub fn summarise(text: &str) -> String {
    let text = crate::vocabulary::redaction::scrub(text);
    let text = text.trim();
    if text.chars().count() <= 300 {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(300).collect::<String>())
    }
}

/// The most of one answer's body the service reads from an upstream, a success's or an
/// error's: 64 MiB. The largest answers expected are an ERP page of 1,000 records and a
/// contract PDF as base64, far below it; an answer over it (a proxy's or a broken upstream's
/// endless body) is [`UpstreamError::Malformed`] once that much has been read, so no upstream
/// can make the service buffer more.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// The clients' redirect policy: none is followed. A redirect would carry the request, and
/// our credentials with it (the leasing client certificate, the ERP key in its own header,
/// which reqwest does not strip across hosts), to wherever the upstream, or whoever answers
/// for it, points; no upstream is known to redirect (../shared/upstream/FACTS.md). A 3xx is an
/// [`UpstreamError::Refused`] naming where it points: the base URL setting is to be checked.
pub fn no_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::none()
}

/// A redirect's message: where it points (scheme, host and port only: its path and query may
/// carry what is not ours to log).
fn redirect_message(headers: &reqwest::header::HeaderMap) -> String {
    let location = headers.get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok());
    let target = match location.map(url::Url::parse) {
        Some(Ok(url)) => url.origin().ascii_serialization(),
        Some(Err(_)) => "a path of its own".to_string(),
        None => "nowhere (no Location)".to_string(),
    };
    summarise(&format!("a redirect to {target}, not followed: check the upstream's base URL setting"))
}

/// The longest wait a `Retry-After` may impose on one retry.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// Runs a read up to three times, backing off 100 ms then 400 ms, while it fails transiently;
/// after a 429 it waits as long as the upstream asked (at most [`MAX_RETRY_WAIT`]).
pub async fn retry_read<T, F, Fut>(call: F) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    retry_while(call, UpstreamError::is_transient).await
}

/// Runs a write again only when the upstream refused it unprocessed with 429.
pub async fn retry_throttled<T, F, Fut>(call: F) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    retry_while(call, |e| matches!(e, UpstreamError::Throttled { .. })).await
}

async fn retry_while<T, F, Fut>(mut call: F, retry: impl Fn(&UpstreamError) -> bool) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match call().await {
            Err(error) if retry(&error) && attempt < 3 => {
                let wait = match &error {
                    UpstreamError::Throttled { retry_after: Some(wait), .. } => (*wait).min(MAX_RETRY_WAIT),
                    _ => delay,
                };
                tokio::time::sleep(wait).await;
                delay *= 4;
                attempt += 1;
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_are_retried_only_while_transient() {
        let mut calls = 0;
        let result: Result<u8, _> = retry_read(|| {
            calls += 1;
            let n = calls;
            async move { if n < 3 { Err(UpstreamError::refused(System::Leasing, 503, "busy")) } else { Ok(7) } }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls, 3);

        let mut calls = 0;
        let result: Result<u8, _> = retry_read(|| {
            calls += 1;
            async { Err(UpstreamError::refused(System::Leasing, 404, "gone")) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls, 1, "a 404 is not retried");
    }

    #[tokio::test]
    async fn writes_are_retried_only_when_throttled() {
        let mut calls = 0;
        let result: Result<u8, _> = retry_throttled(|| {
            calls += 1;
            let n = calls;
            async move {
                if n == 1 {
                    Err(UpstreamError::Throttled { system: System::Erp, retry_after: Some(Duration::ZERO) })
                } else {
                    Err(UpstreamError::refused(System::Erp, 503, "busy"))
                }
            }
        })
        .await;
        assert!(matches!(result, Err(UpstreamError::Refused { status: 503, .. })));
        assert_eq!(calls, 2, "a 503 on a write is not retried");
    }

    #[test]
    fn call_outcomes_follow_the_error() {
        let system = System::Erp;
        let outcome = |error: UpstreamError| CallOutcome::of::<()>(&Err(error)).label();
        assert_eq!(CallOutcome::of(&Ok::<_, UpstreamError>(())).label(), "ok");
        assert_eq!(outcome(UpstreamError::refused(system, 302, "")), "http_3xx");
        assert_eq!(outcome(UpstreamError::refused(system, 409, "")), "http_4xx");
        assert_eq!(outcome(UpstreamError::Throttled { system, retry_after: None }), "http_4xx");
        assert_eq!(outcome(UpstreamError::refused(system, 503, "")), "http_5xx");
        assert_eq!(outcome(UpstreamError::refused(system, 999, "")), "invalid_response");
        assert_eq!(outcome(UpstreamError::Timeout { system }), "timeout");
        assert_eq!(outcome(UpstreamError::Unreachable { system, detail: String::new() }), "connection_error");
        assert_eq!(outcome(UpstreamError::Malformed { system, detail: String::new() }), "invalid_response");
        assert_eq!(outcome(UpstreamError::Client { system, detail: String::new() }), "client_error");
        let labels: std::collections::BTreeSet<&str> = CallOutcome::ALL.iter().map(|o| o.label()).collect();
        assert_eq!(labels.len(), CallOutcome::ALL.len(), "labels are distinct");
    }

    #[test]
    fn redirects_name_where_they_point_and_nothing_more() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        headers.insert("location", HeaderValue::from_static("https://elsewhere.example:8443/login?key=k-123"));
        let error = UpstreamError::from_status(System::Erp, 302, &headers, || unreachable!("no body is read"));
        let text = error.to_string();
        assert!(text.contains("redirect to https://elsewhere.example:8443, not followed"), "{text}");
        assert!(!text.contains("k-123") && !text.contains("login"), "{text}");
        assert!(!error.is_transient() && !error.may_have_applied());
    }

    #[test]
    fn summaries_are_bounded() {
        assert_eq!(summarise("  short "), "short");
        assert_eq!(summarise(&"x".repeat(500)).chars().count(), 301);
    }

    #[tokio::test]
    async fn bodies_are_read_up_to_the_bound_and_no_further() {
        let answer = |body: &'static str| reqwest::Response::from(http::Response::new(body));
        let read = bounded_to(answer("12345"), 5).bytes().await.unwrap();
        assert_eq!(&read[..], b"12345", "a body of exactly the bound is read");
        let error = bounded_to(answer("123456"), 5).bytes().await.unwrap_err();
        assert!(is_too_large(&error), "{error:?}");
        let mapped = UpstreamError::from_reqwest(System::Erp, error);
        assert!(
            matches!(&mapped, UpstreamError::Malformed { detail, .. } if detail.contains("larger than")),
            "{mapped}"
        );
    }

    #[test]
    fn bodies_become_text_with_invalid_bytes_replaced() {
        assert_eq!(utf8_text("{\"Name\":\"Müller\"}".as_bytes()), "{\"Name\":\"Müller\"}");
        assert_eq!(utf8_text(b""), "");
        assert_eq!(utf8_text(b"M\xfcller \xe2\x82"), "M\u{FFFD}ller \u{FFFD}");
    }
}
