//! When a database connection last failed below the database (I/O, TLS, protocol), and which
//! connections are tested before use because of it or because they sat idle: the pool's and
//! the request connections (see [`super::request_connections`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// An idle connection is pinged before reuse once it has been idle this long.
pub const TEST_AFTER_IDLE: Duration = Duration::from_secs(10);

/// The process's clock for [`connection_failed`].
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds after [`epoch`] of the last connection failure, plus one; 0 for none yet.
static LAST_FAILURE: AtomicU64 = AtomicU64::new(0);

/// Records that a database connection failed below the database (I/O, TLS, protocol): every
/// connection open at this moment is tested before its next use.
pub(in crate::store) fn connection_failed() {
    let since_epoch = epoch().elapsed().as_millis() as u64;
    LAST_FAILURE.store(since_epoch + 1, Ordering::Relaxed);
}

/// Whether a connection must be pinged before use: it sat idle long enough for the server to
/// drop it, or it was already open when a connection last failed.
pub(in crate::store) fn needs_test(idle_for: Duration, age: Duration) -> bool {
    if idle_for >= TEST_AFTER_IDLE {
        return true;
    }
    match LAST_FAILURE.load(Ordering::Relaxed) {
        0 => false,
        failed => {
            let since_failure = epoch().elapsed().saturating_sub(Duration::from_millis(failed - 1));
            age >= since_failure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_open_at_a_failure_are_tested_before_use() {
        assert!(needs_test(TEST_AFTER_IDLE, Duration::ZERO), "a long idle connection is tested");
        connection_failed();
        assert!(needs_test(Duration::ZERO, Duration::from_secs(3600)), "one open at the failure is tested");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!needs_test(Duration::ZERO, Duration::ZERO), "one opened since is not");
    }
}
