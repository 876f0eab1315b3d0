//! The tiny HTTP server every simulator runs on, with the fault switch in front.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use slog::Logger;
use tokio::net::TcpListener;

use super::faults::{Fault, FaultRule, Faults};

pub type SimResponse = Response<Full<Bytes>>;

/// A request as a simulator sees it: method, path split into segments, query, JSON body.
pub struct SimRequest {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl SimRequest {
    pub fn segments(&self) -> Vec<&str> {
        self.path.trim_matches('/').split('/').collect()
    }

    /// The body as JSON; `Err` is a ready 400 answer.
    pub fn json(&self) -> Result<Value, SimResponse> {
        if self.body.is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| json(StatusCode::BAD_REQUEST, &serde_json::json!({"Message": format!("invalid JSON: {e}")})))
    }
}

pub fn json(status: StatusCode, body: &impl serde::Serialize) -> SimResponse {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json; charset=utf-8")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).expect("an answer serializes as JSON"))))
        .expect("a valid response")
}

pub fn empty(status: StatusCode) -> SimResponse {
    Response::builder().status(status).body(Full::new(Bytes::new())).expect("a valid response")
}

/// Serves `handler` on `bind` until the process ends; returns the bound address.
pub async fn serve<H, F>(bind: SocketAddr, faults: Arc<Faults>, log: Logger, handler: H) -> std::io::Result<SocketAddr>
where
    H: Fn(SimRequest) -> F + Send + Sync + 'static,
    F: Future<Output = SimResponse> + Send + 'static,
{
    let listener = TcpListener::bind(bind).await?;
    let address = listener.local_addr()?;
    let handler = Arc::new(handler);
    let calls = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let handler = handler.clone();
            let faults = faults.clone();
            let calls = calls.clone();
            let log = log.clone();
            let service = service_fn(move |req: Request<Incoming>| {
                let handler = handler.clone();
                let faults = faults.clone();
                let calls = calls.clone();
                let log = log.clone();
                async move { dispatch(req, &faults, &calls, &log, handler.as_ref()).await }
            });
            tokio::spawn(async move {
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Ok(address)
}

/// Dropping the connection is an error of the service, which makes hyper close it unanswered.
#[derive(Debug)]
struct DroppedByFault;

impl std::fmt::Display for DroppedByFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by an injected fault")
    }
}

impl std::error::Error for DroppedByFault {}

async fn dispatch<H, F>(
    req: Request<Incoming>,
    faults: &Faults,
    calls: &AtomicU64,
    log: &Logger,
    handler: &H,
) -> Result<SimResponse, DroppedByFault>
where
    H: Fn(SimRequest) -> F,
    F: Future<Output = SimResponse>,
{
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    if path == "/__sandbox/calls" {
        return Ok(json(StatusCode::OK, &serde_json::json!({"calls": calls.load(Ordering::SeqCst)})));
    }
    if !path.starts_with("/__sandbox/") {
        calls.fetch_add(1, Ordering::SeqCst);
    }
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Err(DroppedByFault),
    };
    if path == "/__sandbox/faults" {
        return Ok(match parts.method {
            Method::POST => match serde_json::from_slice::<FaultRule>(&body) {
                Ok(rule) => {
                    faults.add(rule);
                    empty(StatusCode::NO_CONTENT)
                }
                Err(e) => json(StatusCode::BAD_REQUEST, &serde_json::json!({"message": e.to_string()})),
            },
            Method::DELETE => {
                faults.clear();
                empty(StatusCode::NO_CONTENT)
            }
            _ => empty(StatusCode::METHOD_NOT_ALLOWED),
        });
    }
    match faults.take(&path) {
        Some(Fault::Drop { delay }) => {
            tokio::time::sleep(delay).await;
            return Err(DroppedByFault);
        }
        Some(Fault::Fail { delay, status, body, retry_after, content_type, echo }) => {
            tokio::time::sleep(delay).await;
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let echoed = echo.then(|| echoed(&parts));
            let (body, content_type) = match (body, echoed) {
                (None, Some(text)) => (Some(text), Some("text/plain".to_string())),
                (body, _) => (body, content_type),
            };
            let mut response = match body {
                Some(raw) => Response::builder()
                    .status(status)
                    .header(header::CONTENT_TYPE, content_type.as_deref().unwrap_or("application/json"))
                    .body(Full::new(Bytes::from(raw)))
                    .expect("a valid response"),
                None => json(status, &faults.default_body(status.as_u16())),
            };
            if let Some(seconds) = retry_after {
                response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
            }
            return Ok(response);
        }
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(Fault::Late(delay)) => {
            let answer = handler(sim_request(parts, path, body)).await;
            tokio::time::sleep(delay).await;
            return Ok(answer);
        }
        None => {}
    }
    slog::debug!(log, "call"; "method" => %parts.method, "path" => &path);
    Ok(handler(sim_request(parts, path, body)).await)
}

/// The call as received: its request line and every header, one a line.
fn echoed(parts: &http::request::Parts) -> String {
    let mut text = format!("received {} {}", parts.method, parts.uri);
    for (name, value) in &parts.headers {
        text.push_str(&format!("\n{name}: {}", String::from_utf8_lossy(value.as_bytes())));
    }
    text
}

fn sim_request(parts: http::request::Parts, path: String, body: Bytes) -> SimRequest {
    SimRequest {
        method: parts.method,
        path,
        query: parts.uri.query().map(str::to_string),
        headers: parts.headers,
        body,
    }
}
