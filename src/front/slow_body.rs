//! A deadline on receiving a request body: a client that sends its body too slowly (one byte
//! every few seconds, holding a connection and a file descriptor for ever) is cut off when the
//! whole body has not arrived within `BODY_READ_TIMEOUT_SECONDS` of the request's start. The
//! front then answers 408 and closes the connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::body::{BoxError, FrontBody};

/// The body of a request, ending in an error (and setting `late`) once its time is up.
pub struct Deadline {
    inner: FrontBody,
    sleep: Pin<Box<tokio::time::Sleep>>,
    late: Arc<AtomicBool>,
}

impl Deadline {
    pub fn new(inner: FrontBody, within: Duration, late: Arc<AtomicBool>) -> Deadline {
        Deadline { inner, sleep: Box::pin(tokio::time::sleep(within)), late }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct TooSlow;

impl Body for Deadline {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.late.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Box::new(TooSlow))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
