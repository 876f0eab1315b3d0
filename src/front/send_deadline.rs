//! A deadline on sending answers: a client that asks and never reads (requests pipelined into
//! a connection whose receive window stays shut, a "slow read") would otherwise hold its
//! connection, and the answer waiting to be sent, for ever: neither the head nor the body
//! deadline runs while the service is the one waiting. [`SendDeadline`] wraps a connection's
//! stream and fails a write that has sent nothing for `SEND_TIMEOUT_SECONDS`; hyper then
//! closes the connection. Each byte the client takes starts the time again, so a slow reader
//! that keeps reading is served to the end.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A connection's stream whose writes fail once one has waited `within` without progress.
pub struct SendDeadline<S> {
    inner: S,
    within: Duration,
    /// Set while a write waits; cleared by every write that makes progress.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<S> SendDeadline<S> {
    pub fn new(inner: S, within: Duration) -> SendDeadline<S> {
        SendDeadline { inner, within, waiting: None }
    }

    /// What a write (or flush, or shutdown) came to: progress clears the deadline; a wait
    /// starts it, or fails once it has passed.
    fn watch<T>(&mut self, cx: &mut Context<'_>, outcome: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.waiting = None;
            return outcome;
        }
        let within = self.within;
        let sleep = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + within)));
        if sleep.as_mut().poll(cx).is_ready() {
            self.waiting = None;
            let message = format!("the client took none of its answer for {} s", within.as_secs());
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, message)));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for SendDeadline<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for SendDeadline<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, outcome)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let outcome = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, outcome)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let outcome = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A write the other end never takes fails once its time is up.
    #[tokio::test]
    async fn a_write_without_progress_fails() {
        let (ours, _theirs) = tokio::io::duplex(16);
        let mut stalled = SendDeadline::new(ours, Duration::from_millis(100));
        let error = stalled.write_all(&[0; 64]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    /// A reader that takes a little at a time is served to the end, however long the whole
    /// takes: each part taken starts the time again.
    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_served() {
        let (ours, mut theirs) = tokio::io::duplex(16);
        let mut served = SendDeadline::new(ours, Duration::from_secs(10));
        let reader = tokio::spawn(async move {
            let mut taken = Vec::new();
            let mut chunk = [0; 8];
            while taken.len() < 256 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let n = theirs.read(&mut chunk).await.unwrap();
                taken.extend_from_slice(&chunk[..n]);
            }
            taken.len()
        });
        served.write_all(&[1; 256]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 256);
    }
}
