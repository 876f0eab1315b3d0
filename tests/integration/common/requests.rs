//! The request helpers every test uses, so that a test reads as its scenario:
//! `svc.get_json(&token, "/api/v1/user")`, `svc.post_json(&token, path, body)`, … for a service
//! in this process ([`TestService`]) or the binary as a process ([`Instance`]), and
//! [`JsonAnswer::json_value`] for any other request (a simulator's, one with headers of its
//! own). Every answer from a service still goes through [`Checked`], so it is checked against
//! the document.

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;

use super::TestService;
use super::contract::Checked;
use super::process::Instance;

/// A request sent and its answer read as JSON, or an answer read as JSON.
pub trait JsonAnswer {
    fn json_value(self) -> impl Future<Output = Value> + Send;
}

impl JsonAnswer for RequestBuilder {
    async fn json_value(self) -> Value {
        self.checked().await.unwrap().json().await.unwrap()
    }
}

impl JsonAnswer for Response {
    async fn json_value(self) -> Value {
        self.json().await.unwrap()
    }
}

/// Calls to a running service with a bearer token: the answer, or (`…_json`) its JSON body
/// after asserting a 2xx status (200 for `GET`; the body is in the message when not).
pub trait Api: Sync {
    fn client(&self) -> &reqwest::Client;
    fn url(&self, path: &str) -> String;

    /// A call with a bearer token, and a JSON body when given.
    fn call(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Response> + Send {
        let mut request = self.client().request(method, self.url(path)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move { request.checked().await.unwrap() }
    }

    fn get(&self, token: &str, path: &str) -> impl Future<Output = Response> + Send {
        self.call(token, Method::GET, path, None)
    }

    fn post(&self, token: &str, path: &str, body: Value) -> impl Future<Output = Response> + Send {
        self.call(token, Method::POST, path, Some(body))
    }

    fn patch(&self, token: &str, path: &str, body: Value) -> impl Future<Output = Response> + Send {
        self.call(token, Method::PATCH, path, Some(body))
    }

    /// `POST path` with the body, and an `Idempotency-Key` when given.
    fn post_keyed(
        &self,
        token: &str,
        path: &str,
        key: Option<&str>,
        body: Value,
    ) -> impl Future<Output = Response> + Send {
        let mut request = self.client().post(self.url(path)).bearer_auth(token).json(&body);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        async move { request.checked().await.unwrap() }
    }

    /// A body sent as it is, declared JSON, with a bearer token when given.
    fn send_raw(
        &self,
        token: Option<&str>,
        method: Method,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> impl Future<Output = Response> + Send {
        let mut request = self.client().request(method, self.url(path)).header("content-type", "application/json");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let request = request.body(body);
        async move { request.checked().await.unwrap() }
    }

    fn delete(&self, token: &str, path: &str) -> impl Future<Output = Response> + Send {
        self.call(token, Method::DELETE, path, None)
    }

    /// A call answered with 2xx: its JSON body.
    fn call_json(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Value> + Send {
        let (what, answer) = (format!("{method} {path}"), self.call(token, method, path, body));
        async move { answered(&what, answer.await, None).await }
    }

    /// `GET path` answered 200: its JSON body.
    fn get_json(&self, token: &str, path: &str) -> impl Future<Output = Value> + Send {
        let (what, answer) = (format!("GET {path}"), self.get(token, path));
        async move { answered(&what, answer.await, Some(200)).await }
    }

    fn post_json(&self, token: &str, path: &str, body: Value) -> impl Future<Output = Value> + Send {
        self.call_json(token, Method::POST, path, Some(body))
    }
}

/// A signed-in user of a service in this process: its calls carry the user's token. Areas add
/// the calls their scenarios repeat (`impl Caller<'_>` in their own module).
pub struct Caller<'a> {
    pub svc: &'a TestService,
    pub token: String,
}

impl<'a> Caller<'a> {
    /// A new user of `svc`, signed in.
    pub async fn signed_in(svc: &'a TestService) -> Caller<'a> {
        Caller { svc, token: svc.user_token().await }
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        self.svc.call(&self.token, method, path, body).await
    }
}

/// Asserts the answer's status (`expected`, else any 2xx) and returns its JSON body.
pub async fn answered(what: &str, answer: Response, expected: Option<u16>) -> Value {
    let status = answer.status();
    let text = answer.text().await.unwrap();
    match expected {
        Some(expected) => assert_eq!(status.as_u16(), expected, "{what}: {text}"),
        None => assert!(status.is_success(), "{what}: {status} {text}"),
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: the answer is not JSON ({e}): {text}"))
}

impl Api for TestService {
    fn client(&self) -> &reqwest::Client {
        &self.client
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }
}

impl Api for Instance {
    fn client(&self) -> &reqwest::Client {
        &self.client
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }
}

/// Sends `request`, bytes as they go on the wire (what reqwest cannot send: a request target
/// over 65,534 bytes, a head of any form), over a fresh connection in one write, and reads the
/// answer to its end: its status, headers and body. The server may close with part of a huge
/// request unread (a reset): what came counts.
pub async fn raw_exchange(address: std::net::SocketAddr, request: &[u8]) -> (u16, http::HeaderMap, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {answer:?}"));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    let mut headers = http::HeaderMap::new();
    for (name, value) in lines.filter_map(|line| line.split_once(':')) {
        let name = http::HeaderName::from_bytes(name.trim().as_bytes()).unwrap();
        headers.append(name, http::HeaderValue::from_str(value.trim()).unwrap());
    }
    (status, headers, body.to_string())
}
