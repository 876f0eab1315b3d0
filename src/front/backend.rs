//! The front's connections to dropshot: HTTP/2 with prior knowledge (dropshot's server speaks
//! both versions on one port), shared by every client connection.
//!
//! Each request is one stream, so a request held open for minutes (a `wait-ready-to-sign`)
//! costs the process one socket, its client's, instead of three (the client's and both ends
//! of a backend HTTP/1.1 connection of its own), and no connection buffers of its own. A
//! connection carries up to [`STREAMS_PER_CONNECTION`] requests at once; the next one opens
//! another, a closed one is replaced on the next request, and idle ones beyond
//! [`IDLE_CONNECTIONS_KEPT`] are closed.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::{BoxError, FrontBody};

/// Requests one connection carries at once while there are fewer than
/// [`SPREAD_OVER_CONNECTIONS`] connections: spreading the load keeps both cores busy (100
/// streams per connection halved the throughput of `cargo xtask bench`).
pub const STREAMS_PER_CONNECTION: usize = 16;

/// Connections the load is spread over before they fill up to [`MAX_STREAMS_PER_CONNECTION`].
pub const SPREAD_OVER_CONNECTIONS: usize = 16;

/// Requests one connection carries at once once [`SPREAD_OVER_CONNECTIONS`] are open
/// (dropshot's HTTP/2 server allows 200 streams): thousands of held requests then share a
/// few dozen connections and their buffers instead of hundreds.
pub const MAX_STREAMS_PER_CONNECTION: usize = 160;

/// Connections without a request kept open for the next ones.
pub const IDLE_CONNECTIONS_KEPT: usize = 16;

/// The shared connections to dropshot.
pub struct Backend {
    address: SocketAddr,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    sender: SendRequest<FrontBody>,
    streams: Arc<AtomicUsize>,
}

/// Why a request did not reach dropshot or got no answer.
#[derive(Debug)]
pub enum BackendError {
    /// No connection could be opened.
    Unreachable(BoxError),
    /// The request failed on its connection (its body too: over the size limit, say).
    Request(hyper::Error),
}

/// One stream's place on its connection, given back when the answer's body is done.
struct Stream(Arc<AtomicUsize>);

impl Drop for Stream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An answer's body from dropshot; holds its stream's place until dropped.
pub struct BackendBody {
    inner: Incoming,
    _stream: Stream,
}

impl Body for BackendBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Backend {
    pub fn new(address: SocketAddr) -> Backend {
        Backend { address, connections: Mutex::new(Vec::new()) }
    }

    /// Sends one request to dropshot. Not an `async fn`, which would keep the request (240
    /// bytes) twice in the future of every request in flight (see `Front::handle`).
    #[expect(clippy::manual_async_fn, reason = "an async fn would keep the request twice")]
    pub fn send(
        &self,
        request: Request<FrontBody>,
    ) -> impl Future<Output = Result<Response<BackendBody>, BackendError>> + Send + '_ {
        async move {
            let (mut sender, stream) = self.stream().await.map_err(BackendError::Unreachable)?;
            let response = sender.send_request(request).await.map_err(BackendError::Request)?;
            Ok(response.map(|inner| BackendBody { inner, _stream: stream }))
        }
    }

    /// Closes every connection (their last handles go, and each ends once its streams are
    /// done): dropshot's graceful shutdown waits for its connections to close.
    pub async fn close(&self) {
        self.connections.lock().await.clear();
    }

    /// A connection with room for one more stream, opened if none has.
    async fn stream(&self) -> Result<(SendRequest<FrontBody>, Stream), BoxError> {
        let mut connections = self.connections.lock().await;
        // Closed connections go; so do idle ones past the first few, which a burst of held
        // requests left behind (each request would otherwise pass them all, and spread over
        // them the work of a few connections).
        let mut idle = 0;
        connections.retain(|c| {
            let keep_idle = c.streams.load(Ordering::Relaxed) > 0 || {
                idle += 1;
                idle <= IDLE_CONNECTIONS_KEPT
            };
            !c.sender.is_closed() && keep_idle
        });
        let room = if connections.len() < SPREAD_OVER_CONNECTIONS {
            STREAMS_PER_CONNECTION
        } else {
            MAX_STREAMS_PER_CONNECTION
        };
        let free = connections
            .iter()
            .map(|c| (c.streams.load(Ordering::Relaxed), c))
            .filter(|(streams, _)| *streams < room)
            .min_by_key(|(streams, _)| *streams)
            .map(|(_, c)| c);
        let connection = match free {
            Some(connection) => connection,
            None => {
                // Boxed: connecting is rare, and every request's future would otherwise
                // carry the handshake's state machine while it waits for its answer.
                connections.push(Box::pin(self.connect()).await?);
                connections.last().expect("a connection was just added")
            }
        };
        connection.streams.fetch_add(1, Ordering::Relaxed);
        Ok((connection.sender.clone(), Stream(connection.streams.clone())))
    }

    async fn connect(&self) -> Result<Connection, BoxError> {
        let stream = TcpStream::connect(self.address).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(TokioIo::new(stream))
            .await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection { sender, streams: Arc::new(AtomicUsize::new(0)) })
    }
}
