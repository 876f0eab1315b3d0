//! Watching the client of a held call (a `wait-ready-to-sign`, a one-shot flow): while the
//! call runs, the front reads nothing more from the connection (see `serve_connection`), so it
//! would not notice the client leaving; instead it asks the kernel every half second whether
//! the peer hung up, and tells the handler ([`crate::stop`]), which stops at its next sleep.
//! A client that shuts down only its sending side counts as gone for these calls.

use std::future::Future;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::stop::Watched;

/// How often a held call's connection is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// Whether requests to this public path are held calls.
pub fn holds(path: &str) -> bool {
    path.ends_with("/wait-ready-to-sign") || path == "/api/v1/leasing/leasing/request-flow"
}

/// Runs `call`; with `watched`, tells its handler when the client on `socket` has hung up (the
/// call then ends soon, its answer going nowhere).
pub async fn watching<F: Future>(call: F, watched: Option<Watched>, socket: RawFd) -> F::Output {
    let Some(watched) = watched else { return call.await };
    let mut call = std::pin::pin!(call);
    loop {
        tokio::select! {
            done = &mut call => return done,
            _ = tokio::time::sleep(LOOK_EVERY) => {
                if hung_up(socket) {
                    watched.gone();
                    return call.await;
                }
            }
        }
    }
}

/// Whether the peer of `socket` has hung up (or shut down its sending side), without reading.
#[cfg(target_os = "linux")]
fn hung_up(socket: RawFd) -> bool {
    let mut watch = libc::pollfd { fd: socket, events: libc::POLLRDHUP, revents: 0 };
    // SAFETY: poll reads and writes one pollfd of ours; `socket` is the descriptor of the
    // connection this call runs on, open for as long as the call does.
    let ready = unsafe { libc::poll(&mut watch, 1, 0) };
    ready > 0 && watch.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

#[cfg(not(target_os = "linux"))]
fn hung_up(_socket: RawFd) -> bool {
    false
}
