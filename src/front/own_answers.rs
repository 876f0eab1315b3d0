//! hyper answers a request head it cannot parse before the front ever sees the request: 431
//! when the head outgrows hyper's read buffer (`MAX_HEADER_BYTES` plus 1 KiB) or has more
//! than [`MAX_HEADERS`] headers, 414 for a request target over 64 KiB, 400 for a malformed
//! head. Its answer is a bare status line: no JSON body, no `x-request-id`.
//!
//! [`OwnAnswers`] wraps a connection's stream (inside TLS, when there is TLS) and replaces
//! such an answer, as hyper writes it, with one in the shape of every other error: `message`,
//! `error_code` and `request_id` in a JSON body, the same id in `x-request-id`, and
//! `connection: close` (hyper closes the connection after it). Every answer of the front
//! carries `x-request-id`, so a response head written without one is hyper's own. Under
//! `/api/v1/leasing` it carries `success: false` too, as every error there does: the path is
//! read from the start of the refused head as it arrived (the request line, as far as the
//! first read of the request held it).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::routed_path;

/// The most headers a request may have (hyper's default, kept: more cost every parse).
pub const MAX_HEADERS: usize = 100;

/// Told of each answer replaced: its status and request id (the front logs and counts it).
pub type Replaced = Arc<dyn Fn(u16, &str) + Send + Sync>;

/// How much of a request's first line is kept to tell its path: enough for any route's prefix.
const KEPT_LINE: usize = 8 * 1024;

/// A client connection's stream whose hyper-made error answers are replaced.
pub struct OwnAnswers<S> {
    inner: S,
    max_header_bytes: usize,
    replaced: Replaced,
    /// The replacement being written, how much of it is written, and the length of hyper's
    /// answer it stands for (reported written once the replacement is).
    pending: Option<(Vec<u8>, usize, usize)>,
    /// The start of the current request as read, up to its first line's end or [`KEPT_LINE`].
    line: Vec<u8>,
    /// Whether reads still belong to that line: set again once an answer to it starts.
    reading_line: bool,
}

impl<S> OwnAnswers<S> {
    pub fn new(inner: S, max_header_bytes: usize, replaced: Replaced) -> OwnAnswers<S> {
        OwnAnswers { inner, max_header_bytes, replaced, pending: None, line: Vec::new(), reading_line: true }
    }

    /// Keeps what a read brought of the current request's first line.
    fn keep_line(&mut self, read: &[u8]) {
        if !self.reading_line {
            return;
        }
        let room = KEPT_LINE - self.line.len();
        let end = read.windows(2).position(|w| w == b"\r\n");
        self.line.extend_from_slice(&read[..end.unwrap_or(read.len()).min(room)]);
        self.reading_line = end.is_none() && self.line.len() < KEPT_LINE;
    }

    /// After a final answer's head the next read starts the next request.
    fn next_request(&mut self, written: &[u8]) {
        let head = written.strip_prefix(b"HTTP/1.1 ").or_else(|| written.strip_prefix(b"HTTP/1.0 "));
        if head.is_some_and(|status| !status.starts_with(b"1")) {
            self.line.clear();
            self.reading_line = true;
        }
    }

    /// Starts replacing `written` when it is hyper's own error answer.
    fn inspect(&mut self, written: &[u8]) {
        if let Some(status) = hyper_error_status(written) {
            let request_id = uuid::Uuid::new_v4().to_string();
            let answer = replacement(status, self.max_header_bytes, &request_id, is_leasing(&self.line));
            (self.replaced)(status, &request_id);
            self.pending = Some((answer, 0, written.len()));
        }
    }
}

impl<S: AsyncWrite + Unpin> OwnAnswers<S> {
    /// Writes what is left of the replacement; `Ready(Ok(n))` with the length of hyper's
    /// answer once all of it is written.
    fn write_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some((answer, written, stands_for)) = &mut self.pending else { return Poll::Ready(Ok(0)) };
        while *written < answer.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &answer[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let stands_for = *stands_for;
        self.pending = None;
        Poll::Ready(Ok(stands_for))
    }
}

/// The status of a response head hyper wrote by itself: a whole head with a 4xx status, no
/// body and no `x-request-id`.
fn hyper_error_status(written: &[u8]) -> Option<u16> {
    let rest = written.strip_prefix(b"HTTP/1.1 ").or_else(|| written.strip_prefix(b"HTTP/1.0 "))?;
    let status: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    // Writes that are not a 4xx head (every answer of the front but its errors, bodies) stop here.
    if !(400..500).contains(&status) {
        return None;
    }
    let head_end = written.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let ours = written.windows(b"x-request-id".len()).any(|w| w.eq_ignore_ascii_case(b"x-request-id"));
    (head_end == written.len() && !ours).then_some(status)
}

/// Whether a request whose first line starts with `line` is a leasing route's.
fn is_leasing(line: &[u8]) -> bool {
    let line = String::from_utf8_lossy(line);
    let mut parts = line.splitn(3, ' ');
    let target = parts.nth(1).unwrap_or_default();
    let path = target.split(['?', '#']).next().unwrap_or_default();
    path.starts_with('/') && routed_path::is_leasing(path)
}

/// The front's answer instead of hyper's `status`; under `/api/v1/leasing` (`leasing`) in the
/// leasing envelope.
fn replacement(status: u16, max_header_bytes: usize, request_id: &str, leasing: bool) -> Vec<u8> {
    let (reason, code, message) = match status {
        431 => (
            "Request Header Fields Too Large",
            "headers_too_large",
            format!(
                "The request's headers are larger than {max_header_bytes} bytes (or more than {MAX_HEADERS} headers)."
            ),
        ),
        414 => ("URI Too Long", "uri_too_long", "The request target is longer than 65,534 bytes.".to_string()),
        _ => ("Bad Request", "bad_request", "The request's head is malformed.".to_string()),
    };
    let status = if matches!(status, 431 | 414) { status } else { 400 };
    let mut body = serde_json::json!({"message": message, "error_code": code, "request_id": request_id});
    if leasing {
        body["success"] = serde_json::Value::Bool(false);
    }
    let body = body.to_string();
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-request-id: {request_id}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

impl<S: AsyncWrite + Unpin> AsyncWrite for OwnAnswers<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            self.inspect(buf);
            self.next_request(buf);
        }
        if self.pending.is_some() {
            return self.write_pending(cx);
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            let mut written = bufs.iter().filter(|buf| !buf.is_empty());
            // A head alone is one slice; hyper's own answers have no body.
            if let (Some(head), None) = (written.next(), written.next()) {
                self.inspect(head);
            }
            if let Some(first) = bufs.iter().find(|buf| !buf.is_empty()) {
                self.next_request(first);
            }
        }
        if self.pending.is_some() {
            return self.write_pending(cx);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for OwnAnswers<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.keep_line(&buf.filled()[before..]);
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bare_error_head_is_hyper_s_own() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hyper_error_status(bare), Some(431));
        assert_eq!(hyper_error_status(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"), Some(400));
        let ours = b"HTTP/1.1 431 Request Header Fields Too Large\r\nx-request-id: 1\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(hyper_error_status(ours), None, "the front's answers carry a request id");
        assert_eq!(hyper_error_status(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"), None);
        assert_eq!(hyper_error_status(b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}"), None, "a body");
        assert_eq!(hyper_error_status(b"{\"HTTP/1.1 400 \": 1}"), None);
    }

    #[test]
    fn the_replacement_is_json_with_its_request_id() {
        let answer = String::from_utf8(replacement(431, 16384, "abc", false)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 ") && head.contains("\r\nx-request-id: abc"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            (body["error_code"].as_str(), body["request_id"].as_str()),
            (Some("headers_too_large"), Some("abc"))
        );
        assert!(body.get("success").is_none(), "{body}");
    }

    #[test]
    fn a_leasing_route_s_replacement_has_the_envelope() {
        assert!(is_leasing(b"GET /api/v1/leasing/1?pad=p HTTP/1.1"));
        assert!(is_leasing(b"POST //api/v1/%6Ceasing"), "as dropshot routes it, the line cut short");
        assert!(!is_leasing(b"GET /api/v1/leasingx HTTP/1.1"));
        assert!(!is_leasing(b"GET /api/v1/fieldreport/companies?x=/api/v1/leasing HTTP/1.1"));
        assert!(!is_leasing(b"\x00\x01 garbage"));
        let answer = String::from_utf8(replacement(414, 16384, "abc", true)).unwrap();
        let body: serde_json::Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!((body["error_code"].as_str(), &body["success"]), (Some("uri_too_long"), &serde_json::json!(false)));
    }
}
