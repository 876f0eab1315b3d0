//! Upstreams that answer unlike our simulators, as a proxy or a misconfigured host may: a body
//! far larger than any answer of theirs, and a redirect to another host. Each of the three
//! upstreams' clients must end in a clear error without reading the whole body, and must not
//! carry our credentials to where a redirect points.
//!
//! Runs on SQLite only: what is checked is the upstream clients; nothing is stored.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::common::{Api, Db, TestService, error_body};
use integration_service::upstream::MAX_ANSWER_BYTES;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A body every one of the three upstreams' clients reads as an empty answer: the leasing
/// provider's calculation (`Items`), an ERP list (`result`) and an OData list (`value`).
const EMPTY_ANSWER: &str = r#"{"Items": [], "result": [], "value": []}"#;

/// What a fake upstream answers every request with.
#[derive(Clone)]
enum Answer {
    /// `status` with a body of `EMPTY_ANSWER` (or an error) padded with spaces to `len` bytes,
    /// sent in chunks: valid JSON of that size.
    Padded { status: u16, len: usize },
    /// A redirect to `location`.
    Redirect { location: String },
}

/// A fake upstream on a raw socket (the simulators build every answer in memory): each
/// connection gets one answer, and the head of every request received is kept.
struct RawUpstream {
    address: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl RawUpstream {
    async fn start(answer: Answer) -> RawUpstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve_one(socket, answer.clone(), seen.clone()));
            }
        });
        RawUpstream { address, heads }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

async fn serve_one(mut socket: tokio::net::TcpStream, answer: Answer, heads: Arc<Mutex<Vec<String>>>) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !received.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
        }
    }
    heads.lock().unwrap().push(String::from_utf8_lossy(&received).into_owned());
    let _ = match answer {
        Answer::Redirect { location } => {
            let head =
                format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            socket.write_all(head.as_bytes()).await
        }
        Answer::Padded { status, len } => send_padded(&mut socket, status, len).await,
    };
}

/// A JSON body of `len` bytes, chunked: written until the client stops reading.
async fn send_padded(socket: &mut tokio::net::TcpStream, status: u16, len: usize) -> std::io::Result<()> {
    let start = if status < 300 { EMPTY_ANSWER } else { r#"{"Message": "failed", "title": "failed"}"# };
    let head = format!(
        "HTTP/1.1 {status} Answer\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await?;
    let chunk = |data: &[u8]| [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat();
    socket.write_all(&chunk(start.as_bytes())).await?;
    let spaces = vec![b' '; 1 << 20];
    let mut left = len - start.len();
    while left > 0 {
        let n = left.min(spaces.len());
        socket.write_all(&chunk(&spaces[..n])).await?;
        left -= n;
    }
    socket.write_all(b"0\r\n\r\n").await
}

/// The three upstreams, each pointed at `upstream`: the settings, and a call of the service
/// that reads from each (with the name its messages give the upstream).
fn pointed_at(upstream: &RawUpstream) -> [(String, String); 3] {
    [
        ("LEASING_BASE_URL".into(), upstream.url("")),
        ("ERP_BASE_URL".into(), upstream.url("/webapp/api/v1")),
        ("FIELDREPORT_BASE_URL".into(), upstream.url("")),
    ]
}

/// Each upstream's read through the service: (method, path, body, upstream's name, the status
/// of a failure: every failure of a leasing route is a 500).
fn calls() -> [(reqwest::Method, &'static str, Option<Value>, &'static str, u16); 3] {
    let calculation = json!({"FinancingAmount": 10000, "PaymentFrequency": "Monthly", "PaymentMethod": "Invoice",
        "Currency": "EUR", "ProductType": "ClassicLease", "RecurringService": 0, "HasRepurchase": false,
        "Commission": 0});
    [
        (reqwest::Method::POST, "/api/v1/leasing/calculate", Some(calculation), "leasing provider", 500),
        (reqwest::Method::GET, "/api/v1/erp/setup/customer", None, "ERP", 502),
        (reqwest::Method::GET, "/api/v1/fieldreport/sync/companies", None, "field-report", 502),
    ]
}

async fn start(upstream: &RawUpstream) -> (TestService, String) {
    let settings = pointed_at(upstream);
    let settings: Vec<(&str, &str)> = settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
    TestService::with_user(Db::Sqlite, &settings).await
}

/// Calls each upstream through the service ([`calls`]): each must fail with `error_code`, its
/// message naming the upstream and saying `why`. Each upstream is called once (the answer is
/// not worth a retry) unless `retried`: then the reads are tried again.
async fn each_call_fails(upstream: &RawUpstream, error_code: &str, why: &str, retried: bool) {
    let (svc, token) = start(upstream).await;
    for (method, path, body, system, failed) in calls() {
        let answer = svc.call(&token, method, path, body).await;
        let body = error_body(answer, failed).await;
        assert_eq!(body["error_code"], error_code, "{path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(system) && message.contains(why), "{path}: {message}");
    }
    let calls = upstream.heads().len();
    assert!(if retried { calls > 3 } else { calls == 3 }, "{calls} calls for 3, retried: {retried}");
    svc.stop().await;
}

/// A success's body one byte over [`MAX_ANSWER_BYTES`] is an unreadable answer
/// (`upstream_invalid_response`), not read to its end. An error answer's is not read either,
/// but its status still decides: a 503 behind an endless page is worth another try as any
/// 503 is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_larger_than_the_limit_is_refused() {
    let upstream = RawUpstream::start(Answer::Padded { status: 200, len: MAX_ANSWER_BYTES + 1 }).await;
    each_call_fails(&upstream, "upstream_invalid_response", "larger than", false).await;
    let upstream = RawUpstream::start(Answer::Padded { status: 503, len: MAX_ANSWER_BYTES + 1 }).await;
    each_call_fails(&upstream, "upstream_error", "answered 503", true).await;
}

/// A redirect, to another host here, is not followed: the credentials of each upstream (the
/// leasing client certificate, the ERP key header, field-report Basic) would go with it. The
/// caller gets a clear upstream error naming the redirect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed() {
    let elsewhere = RawUpstream::start(Answer::Padded { status: 200, len: EMPTY_ANSWER.len() }).await;
    let upstream = RawUpstream::start(Answer::Redirect { location: elsewhere.url("/elsewhere") }).await;
    each_call_fails(&upstream, "upstream_error", "redirect", false).await;
    assert_eq!(elsewhere.heads(), Vec::<String>::new(), "nothing reached the redirect's target");
}
