//! The front: the one server on the public address. It parses each request once and hands it
//! to dropshot's router and handlers in its own task ([`dropshot::InProcessServer`], a
//! patched-in entry point; see docs/architecture.md, "One hop").
//!
//! It does what dropshot lacks, in one place: decides the client address
//! ([`client_address`]) and gives it to dropshot as the request's remote address, maps the
//! configured docs path ([`docs_path`]), enforces the body limit with 413, refuses internal
//! paths from outside, stamps the request id into every error body, turns
//! `retry_after_seconds` into `Retry-After`, cuts off clients that send headers or bodies too
//! slowly or take their answers too slowly, and writes one log line per request. With `TLS_CERT`/`TLS_KEY` it terminates TLS
//! first ([`tls`]).

mod body;
pub mod client_address;
pub mod config;
pub mod connections;
mod departure;
pub mod docs_path;
mod own_answers;
mod repeated_headers;
mod routed_path;
mod runs_to_end;
mod send_deadline;
mod slow_body;
pub mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use ipnet::IpNet;
use slog::Logger;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::api::ApiContext;
use crate::error::default_error_code;
use crate::metrics::Metrics;
use docs_path::{DocsPaths, INTERNAL_PREFIX};
use runs_to_end::{Remainders, RunsToEnd};
use tls::TlsTerminator;

pub use body::FrontBody;

/// dropshot, handed each request in-process.
pub type Handlers = dropshot::InProcessServer<ApiContext>;

const REQUEST_ID_HEADER: &str = "x-request-id";
/// Error bodies are completed up to this size; a larger one is replaced by
/// [`OVERSIZED_ERROR_MESSAGE`].
const MAX_ERROR_BODY: usize = 64 * 1024;
const OVERSIZED_ERROR_MESSAGE: &str = "The description of this error was longer than 64 KiB and is left out.";
/// How long shutdown waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// A body refused by its declared length is still read (and thrown away) when it declares at
/// most this many times the limit; a larger one is cut off with the connection.
const DISCARDED_BODY_FACTOR: u64 = 4;

/// A request prepared for dropshot, with the flags its body sets when it outgrows the limit
/// or takes too long to arrive.
struct Prepared {
    request: Request<FrontBody>,
    faults: BodyFaults,
    /// A held call's client, watched while the call runs.
    watched: Option<crate::stop::Watched>,
    /// Whether an unknown path is answered 401 rather than 404 (see `prepare`).
    hides_unknown: bool,
}

#[derive(Clone, Default)]
struct BodyFaults {
    too_large: Arc<AtomicBool>,
    too_slow: Arc<AtomicBool>,
}

pub struct Front {
    pub handlers: Arc<Handlers>,
    pub docs_paths: DocsPaths,
    pub trusted_proxies: Vec<IpNet>,
    pub max_body_bytes: usize,
    /// A client must finish sending its request headers within this time.
    pub header_read_timeout: Duration,
    /// The largest request head (request line and headers) accepted; larger is 431.
    pub max_header_bytes: usize,
    /// A request's whole body must arrive within this time of its start; later is 408.
    pub body_read_timeout: Duration,
    /// An answer must leave within this time of its client last taking any of it; else the
    /// connection is closed (see [`send_deadline`]).
    pub send_timeout: Duration,
    pub connections: Arc<connections::ConnectionLimits>,
    /// Held calls whose client the front watches (see [`crate::stop`]).
    pub departures: Arc<crate::stop::Departures>,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    /// Handlers whose client left before they ended, running on (see [`RunsToEnd`]).
    pub remainders: Arc<Remainders>,
}

/// Accepts connections until `shutdown` fires, then lets in-flight requests finish. With
/// `tls`, each connection is served after its TLS handshake; a failed handshake ends only that
/// connection.
pub async fn serve(
    front: Arc<Front>,
    listener: TcpListener,
    tls: Option<Arc<TlsTerminator>>,
    shutdown: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(error) => {
                        slog::warn!(front.log, "accept failed"; "error" => %error);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                // Refused early: closed before anything is read or spawned.
                let Ok(admitted) = front.connections.admit(peer.ip()) else {
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let socket = std::os::fd::AsRawFd::as_raw_fd(&stream);
                let front = front.clone();
                let watcher = graceful.watcher();
                match &tls {
                    None => {
                        tokio::spawn(async move {
                            front.serve_connection(stream, peer, socket, watcher).await;
                            drop(admitted);
                        });
                    }
                    Some(tls) => {
                        let tls = tls.clone();
                        tokio::spawn(async move {
                            let _admitted = admitted;
                            match tls.handshake(stream, front.header_read_timeout).await {
                                Ok(stream) => front.serve_connection(stream, peer, socket, watcher).await,
                                Err(error) => {
                                    slog::info!(front.log, "TLS handshake failed"; "client" => %peer.ip(), "error" => %error);
                                }
                            }
                        });
                    }
                }
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    let drained = async {
        graceful.shutdown().await;
        front.remainders.all_done().await;
    };
    if tokio::time::timeout(DRAIN_TIMEOUT, drained).await.is_err() {
        slog::warn!(front.log, "shutdown: in-flight requests did not finish in time");
    }
}

/// The id of a request that dropshot gave none (the front answered, or dropshot's answer lacks one).
fn fresh_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Every request gets an answer: hyper's service result never fails.
fn answered(response: Response<FrontBody>) -> Result<Response<FrontBody>, Infallible> {
    Ok(response)
}

fn full(bytes: impl Into<Bytes>) -> FrontBody {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}

/// An answer the front gives itself, shaped like every other error.
fn own_error(status: StatusCode, message: &str, path: &str) -> Response<FrontBody> {
    coded_error(status, default_error_code(status.as_u16()), message, path)
}

/// 401 as a guarded route answers it without a well-formed token.
fn unauthenticated(path: &str) -> Response<FrontBody> {
    coded_error(StatusCode::UNAUTHORIZED, "unauthenticated", "Unauthenticated.", path)
}

/// An error answer with a fresh request id, under `/api/v1/leasing` in the leasing envelope
/// (`success: false`) as every error there is, the handlers' and dropshot's included.
fn coded_error(status: StatusCode, error_code: &str, message: &str, path: &str) -> Response<FrontBody> {
    let request_id = fresh_request_id();
    let mut body = serde_json::json!({
        "message": message,
        "error_code": error_code,
        "request_id": request_id,
    });
    if routed_path::is_leasing(path) {
        body["success"] = serde_json::Value::Bool(false);
    }
    let mut response = Response::new(full(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(id) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, id);
    }
    response
}

impl Front {
    /// Serves HTTP/1.1 requests on one client connection (plain TCP or TLS) until it closes.
    /// `socket` is the connection's descriptor, valid while it is served, for watching held
    /// calls' clients (see the `departure` module).
    async fn serve_connection<S>(self: Arc<Self>, stream: S, peer: SocketAddr, socket: RawFd, watcher: Watcher)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let header_read_timeout = self.header_read_timeout;
        // A head over the limit that fits the read buffer is answered by `prepare`; hyper
        // answers a larger one (and one with too many headers) by itself, in the shape of
        // every other error through `OwnAnswers`. hyper needs at least 8 KiB.
        let read_buffer = (self.max_header_bytes + 1024).max(8192);
        let (log, metrics) = (self.log.clone(), self.metrics.clone());
        let replaced: own_answers::Replaced = Arc::new(move |status, request_id| {
            metrics.observe_request("", "", status, Duration::ZERO);
            slog::info!(log, "request"; "method" => "-", "path" => "-", "status" => status,
                "latency_ms" => "0.000", "request_id" => request_id, "client" => %peer.ip());
        });
        let stream = own_answers::OwnAnswers::new(stream, self.max_header_bytes, replaced);
        let stream = send_deadline::SendDeadline::new(stream, self.send_timeout);
        let service = service_fn(move |req| self.clone().handle(req, peer, socket).map(answered));
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout)
            .max_buf_size(read_buffer)
            .max_headers(own_answers::MAX_HEADERS)
            // While a request is in flight hyper would otherwise read on to notice the
            // client leaving, into a second 8 KB buffer per connection (heaptrack, 10,000
            // held `wait-ready-to-sign` calls: 77 MB). The calls that are held long have their
            // clients watched without reading instead (the `departure` module); any other
            // request runs to its end. A client that shuts down only its sending side still
            // gets its answer, but from a held call.
            .half_close(true)
            .serve_connection(TokioIo::new(stream), service);
        let _ = watcher.watch(connection).await;
    }

    /// One request: checked and prepared at once, then sent on to dropshot.
    ///
    /// Not an `async fn`: hyper keeps this future for as long as the request runs, thousands
    /// at once for held calls (`cargo xtask bench --scenario waiting-flows`), and an `async
    /// fn` would keep the incoming request (264 bytes) in it twice, as passed and as its
    /// local copy, after it is long gone to dropshot. Here the request is prepared before the
    /// future exists, which holds only what is sent on and what the log line needs: 2,360
    /// bytes as `async fn`s, 1,048 now (`-Zprint-type-sizes`).
    fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: SocketAddr,
        socket: RawFd,
    ) -> impl Future<Output = Response<FrontBody>> + Send + 'static {
        let started = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let client = client_address::resolve(peer.ip(), req.headers(), &self.trusted_proxies);
        let prepared = self.prepare(req, &path);
        async move {
            let mut response = match prepared {
                Ok(Prepared { request, faults, watched, hides_unknown }) => {
                    // The handlers see the client's address as the request's remote address.
                    let remote = SocketAddr::new(client, peer.port());
                    let handled = RunsToEnd::new(self.handlers.handle(request, remote), &self.remainders);
                    let answer = departure::watching(handled, watched, socket).await;
                    // dropshot answers a body that ended in an error as a bad request.
                    if faults.too_large.load(Ordering::Relaxed) {
                        self.too_large(&path)
                    } else if faults.too_slow.load(Ordering::Relaxed) {
                        self.too_slow(&path)
                    } else {
                        match answer {
                            Ok(response) if hides_unknown && response.status() == StatusCode::NOT_FOUND => {
                                unauthenticated(&path)
                            }
                            Ok(response) => self.finish(response, &path).await,
                            // dropshot turns every failure into an answer; this is its type only.
                            Err(error) => {
                                slog::error!(self.log, "request failed"; "error" => %error);
                                own_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error", &path)
                            }
                        }
                    }
                }
                Err(response) => response,
            };
            let request_id = match response.headers().get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()) {
                Some(id) => id.to_string(),
                None => {
                    let id = fresh_request_id();
                    response
                        .headers_mut()
                        .insert(REQUEST_ID_HEADER, HeaderValue::from_str(&id).expect("a uuid is a header value"));
                    id
                }
            };
            let status = response.status().as_u16();
            let elapsed = started.elapsed();
            // Counted under the operation that answered, however the path was spelled.
            self.metrics.observe_request(method.as_str(), &routed_path::routed(&path), status, elapsed);
            let latency_ms = elapsed.as_secs_f64() * 1000.0;
            slog::info!(self.log, "request";
                "method" => %method, "path" => crate::vocabulary::redaction::scrub(&path), "status" => status,
                "latency_ms" => format!("{latency_ms:.3}"), "request_id" => request_id, "client" => %client);
            response
        }
    }

    /// The request as it goes on to dropshot; `Err` is an answer of the front's own.
    fn prepare(&self, req: Request<Incoming>, path: &str) -> Result<Prepared, Response<FrontBody>> {
        // Checked before anything else: a head over the limit goes no further. Counted as sent:
        // `GET /path HTTP/1.1\r\n`, `name: value\r\n` per header, the empty line.
        let head_bytes = req.method().as_str().len()
            + 1
            + req.uri().to_string().len()
            + " HTTP/1.1\r\n".len()
            + req.headers().iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum::<usize>()
            + 2;
        if head_bytes > self.max_header_bytes {
            let message = format!("The request's headers are larger than {} bytes.", self.max_header_bytes);
            return Err(coded_error(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large", &message, path));
        }
        if let Some(name) = repeated_headers::repeated(req.headers()) {
            let message = format!("The header {name} is sent more than once; send it once.");
            return Err(coded_error(StatusCode::BAD_REQUEST, "bad_request", &message, path));
        }
        let routed = routed_path::routed(path);
        if routed_path::is_under(&routed, INTERNAL_PREFIX.trim_end_matches('/')) {
            return Err(own_error(StatusCode::NOT_FOUND, "Not Found", path));
        }
        let declared_length =
            req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if let Some(declared) = declared_length.filter(|len| *len > self.max_body_bytes as u64) {
            // Read and thrown away, up to a bound, so that a client still sending gets the
            // answer instead of a broken pipe when the connection closes under its writes.
            if declared <= self.max_body_bytes as u64 * DISCARDED_BODY_FACTOR {
                tokio::spawn(discard_body(req.into_body(), self.body_read_timeout));
            }
            return Err(self.too_large(path));
        }

        // Without a token nothing under /api/v1 but its public routes says whether it exists:
        // a route unknown to dropshot is answered as a guarded one would be. Which routes are
        // guarded is the handlers' to say (`api::support::guard::BearerToken`).
        let hides_unknown = routed_path::is_under(&routed, "/api/v1")
            && crate::api::support::guard::well_formed_token(req.headers()).is_none();
        let (mut parts, body) = req.into_parts();
        if let Some(internal) = self.docs_paths.to_internal(path) {
            let target = match parts.uri.query() {
                Some(query) => format!("{internal}?{query}"),
                None => internal,
            };
            parts.uri = target.parse().map_err(|_| own_error(StatusCode::BAD_REQUEST, "Malformed path", path))?;
        }
        // Set when the body outgrows the limit on its way: the request then fails on its
        // stream, and the answer is 413 whatever error the backend connection reports.
        let faults = BodyFaults::default();
        let flag = faults.too_large.clone();
        let body = Limited::new(body, self.max_body_bytes)
            .map_err(move |error| {
                if error.is::<LengthLimitError>() {
                    flag.store(true, Ordering::Relaxed);
                }
                error
            })
            .boxed();
        let body = slow_body::Deadline::new(body, self.body_read_timeout, faults.too_slow.clone()).boxed();
        // A held call (a wait, a flow) learns of its client leaving by the key it is given
        // here; a client's own header of that name is never passed on.
        parts.headers.remove(crate::stop::HELD_CALL_HEADER);
        let watched = departure::holds(&routed).then(|| self.departures.watch());
        if let Some(watched) = &watched {
            parts.headers.insert(crate::stop::HELD_CALL_HEADER, HeaderValue::from(watched.key));
        }
        Ok(Prepared { request: Request::from_parts(parts, body), faults, watched, hides_unknown })
    }

    fn too_slow(&self, path: &str) -> Response<FrontBody> {
        let message = format!("The request body did not arrive within {} s.", self.body_read_timeout.as_secs());
        let mut response = coded_error(StatusCode::REQUEST_TIMEOUT, "request_timeout", &message, path);
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    fn too_large(&self, path: &str) -> Response<FrontBody> {
        let message = format!("The request body is larger than {} bytes.", self.max_body_bytes);
        let mut response = own_error(StatusCode::PAYLOAD_TOO_LARGE, &message, path);
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// Passes successful answers through as they stream; completes error bodies.
    async fn finish(&self, response: Response<dropshot::Body>, path: &str) -> Response<FrontBody> {
        let (mut parts, body) = response.into_parts();
        let is_json = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if parts.status.as_u16() < 400 || !is_json {
            return Response::from_parts(parts, body.boxed());
        }
        // Boxed: only error answers get here, and the future of every held request would
        // otherwise have room for this one.
        let bytes = match Box::pin(Limited::new(body, MAX_ERROR_BODY).collect()).await {
            Ok(collected) => collected.to_bytes(),
            // A message that echoes a huge input (an unknown job kind of 70,000 characters)
            // outgrows the limit: answered in the common shape with the status's own code,
            // not as an empty body a client cannot read.
            Err(error) => {
                slog::warn!(self.log, "error body too large or unreadable, replaced"; "error" => %error);
                Bytes::from(serde_json::json!({"message": OVERSIZED_ERROR_MESSAGE}).to_string())
            }
        };
        let request_id =
            parts.headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let completed = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(mut body)) => {
                body.insert("request_id".into(), request_id.into());
                body.entry("error_code").or_insert_with(|| default_error_code(parts.status.as_u16()).into());
                // The leasing envelope on every error there, dropshot's own (a bad query or
                // body) included.
                if routed_path::is_leasing(path) {
                    body.entry("success").or_insert(serde_json::Value::Bool(false));
                }
                if let Some(seconds) = body.get("retry_after_seconds").and_then(|v| v.as_u64()) {
                    parts.headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
                }
                Bytes::from(serde_json::to_vec(&body).expect("a JSON map serialises"))
            }
            _ => bytes,
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(completed.len()));
        Response::from_parts(parts, full(completed))
    }
}

/// Reads a refused request's body to its end, or until `timeout`, throwing it away.
async fn discard_body(mut body: Incoming, timeout: Duration) {
    let read_all = async { while let Some(Ok(_)) = body.frame().await {} };
    // Past the timeout the body is dropped, and the connection closes with it.
    let _ = tokio::time::timeout(timeout, read_all).await;
}
