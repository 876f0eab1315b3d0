//! The load generator: closed-loop HTTP/1.1 clients over hyper, one keep-alive connection per
//! client, each sending its next request as soon as the previous answer is read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One request to send.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

impl Call {
    pub fn get(path: impl Into<String>) -> Call {
        Call { method: Method::GET, path: path.into(), headers: Vec::new(), body: Bytes::new() }
    }

    pub fn json(method: Method, path: impl Into<String>, body: &serde_json::Value) -> Call {
        Call {
            method,
            path: path.into(),
            headers: vec![("content-type", "application/json".into())],
            body: Bytes::from(body.to_string()),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Call {
        self.headers.push((name, value.into()));
        self
    }
}

/// Builds the `n`-th request of client `client`.
pub type CallFactory = Arc<dyn Fn(usize, u64) -> Call + Send + Sync>;

/// What a run measured.
#[derive(Debug, Default, Clone)]
pub struct Measured {
    pub requests: u64,
    pub errors: u64,
    pub seconds: f64,
    /// Latency of every successful request, in microseconds, sorted.
    pub latencies_us: Vec<u32>,
    pub first_error: Option<String>,
}

impl Measured {
    pub fn throughput(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-9)
    }

    /// The latency at quantile `q` (0..1), in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        let index = ((self.latencies_us.len() as f64 - 1.0) * q).round() as usize;
        f64::from(self.latencies_us[index]) / 1000.0
    }

    fn merge(&mut self, other: Measured) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.latencies_us.extend(other.latencies_us);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

async fn connect(address: SocketAddr) -> Result<http1::SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(address).await.map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Sends one request on `sender`; the status and body of the answer.
async fn send(sender: &mut http1::SendRequest<Full<Bytes>>, call: &Call) -> Result<(u16, Bytes), String> {
    let mut request = Request::builder().method(call.method.clone()).uri(call.path.as_str()).header("host", "bench");
    for (name, value) in &call.headers {
        request = request.header(*name, value.as_str());
    }
    let request = request.body(Full::new(call.body.clone())).map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| format!("connection: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("request: {e}"))?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.map_err(|e| format!("body: {e}"))?.to_bytes();
    Ok((status, body))
}

/// One client: requests back to back until `deadline` (or `limit` requests), reconnecting
/// after a transport error. A status outside 2xx is an error.
async fn client(address: SocketAddr, id: usize, deadline: Instant, limit: Option<u64>, calls: CallFactory) -> Measured {
    let mut measured = Measured::default();
    let mut sender = None;
    let mut n = 0u64;
    while Instant::now() < deadline && limit.is_none_or(|l| n < l) {
        let call = calls(id, n);
        n += 1;
        if sender.is_none() {
            match connect(address).await {
                Ok(s) => sender = Some(s),
                Err(e) => {
                    measured.errors += 1;
                    measured.first_error.get_or_insert(e);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            }
        }
        let started = Instant::now();
        let outcome = send(sender.as_mut().expect("connected"), &call).await;
        let latency = started.elapsed();
        measured.requests += 1;
        match outcome {
            Ok((status, _)) if (200..300).contains(&status) => {
                measured.latencies_us.push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
            }
            Ok((status, body)) => {
                measured.errors += 1;
                let text = String::from_utf8_lossy(&body).chars().take(200).collect::<String>();
                measured.first_error.get_or_insert(format!("{} {}: {status} {text}", call.method, call.path));
            }
            Err(e) => {
                measured.errors += 1;
                measured.first_error.get_or_insert(e);
                sender = None;
            }
        }
    }
    measured
}

/// Closed loop: `clients` connections for `duration`.
pub async fn closed_loop(address: SocketAddr, clients: usize, duration: Duration, calls: CallFactory) -> Measured {
    run(address, clients, duration, None, calls).await
}

/// Every client sends exactly `per_client` requests (no time limit).
pub async fn fixed(address: SocketAddr, clients: usize, per_client: u64, calls: CallFactory) -> Measured {
    run(address, clients, Duration::from_secs(24 * 3600), Some(per_client), calls).await
}

async fn run(
    address: SocketAddr,
    clients: usize,
    duration: Duration,
    limit: Option<u64>,
    calls: CallFactory,
) -> Measured {
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> =
        (0..clients).map(|id| tokio::spawn(client(address, id, deadline, limit, calls.clone()))).collect();
    let mut total = Measured::default();
    for task in tasks {
        match task.await {
            Ok(measured) => total.merge(measured),
            Err(e) => {
                total.errors += 1;
                total.first_error.get_or_insert(e.to_string());
            }
        }
    }
    total.seconds = started.elapsed().as_secs_f64();
    total.latencies_us.sort_unstable();
    total
}

/// One request: the status and the body as text (e.g. `/metrics`).
pub async fn once_text(address: SocketAddr, call: &Call) -> Result<(u16, String), String> {
    let mut sender = connect(address).await?;
    let (status, body) = send(&mut sender, call).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// One request, for set-up steps: the status and the body as JSON (null when not JSON).
pub async fn once(address: SocketAddr, call: &Call) -> Result<(u16, serde_json::Value), String> {
    let mut sender = connect(address).await?;
    let (status, body) = send(&mut sender, call).await?;
    Ok((status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null)))
}

/// One keep-alive connection for requests sent one after another (a consumer's walk).
pub struct Connection(http1::SendRequest<Full<Bytes>>);

impl Connection {
    pub async fn open(address: SocketAddr) -> Result<Connection, String> {
        Ok(Connection(connect(address).await?))
    }

    /// The status and body of the answer to `call`.
    pub async fn send(&mut self, call: &Call) -> Result<(u16, Bytes), String> {
        send(&mut self.0, call).await
    }

    /// The status of the answer to `call`, and its body read frame by frame as lines: how many
    /// lines and bytes, and the last line (an export's end), without holding the body.
    pub async fn lines(&mut self, call: &Call) -> Result<(u16, u64, u64, String), String> {
        let mut request =
            Request::builder().method(call.method.clone()).uri(call.path.as_str()).header("host", "bench");
        for (name, value) in &call.headers {
            request = request.header(*name, value.as_str());
        }
        let request = request.body(Full::new(call.body.clone())).map_err(|e| e.to_string())?;
        self.0.ready().await.map_err(|e| format!("connection: {e}"))?;
        let response = self.0.send_request(request).await.map_err(|e| format!("request: {e}"))?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let (mut lines, mut bytes) = (0u64, 0u64);
        // The text since the last line's end: the line being read.
        let mut current = Vec::new();
        let mut last = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("body: {e}"))?;
            let Some(data) = frame.data_ref() else { continue };
            bytes += data.len() as u64;
            for piece in data.split_inclusive(|&b| b == b'\n') {
                current.extend_from_slice(piece);
                if piece.ends_with(b"\n") {
                    lines += 1;
                    last = std::mem::take(&mut current);
                }
            }
        }
        if !current.is_empty() {
            lines += 1;
            last = current;
        }
        Ok((status, lines, bytes, String::from_utf8_lossy(&last).trim_end().to_string()))
    }
}
