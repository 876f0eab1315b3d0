//! Connections for the statements on a request's hot path (the token check, a record read,
//! written or deleted, a page of records, a webhook call stored), handed out and taken back
//! without a round trip.
//!
//! sqlx's pool tests every connection with a ping when it is released, from a spawned task:
//! one more database round trip per statement (on SQLite, two more hand-offs to the
//! connection's thread), which `cargo xtask bench` showed dominating `auth-read` and `list`.
//! These connections are reused without that test. What the test guards against is handled
//! here instead:
//! - a statement that did not settle (its future was dropped half-way, or it failed below the
//!   database: I/O, protocol) leaves its connection closed, never reused;
//! - a connection idle for [`TEST_AFTER_IDLE`] or longer (the server may have closed it), or
//!   one opened before the process last saw a connection fail (a database restart or a
//!   network cut breaks them all), is pinged before it is handed out; the pool does the same
//!   ([`needs_test`], [`super::Store::connect`]);
//! - connections are replaced after the pool's lifetime and idle limits.
//!
//! An in-memory SQLite database exists only on its pool's one connection, so there the lease
//! borrows that connection instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Connection};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::{Dialect, StoreError};

/// An idle connection is pinged before reuse once it has been idle this long.
pub const TEST_AFTER_IDLE: Duration = Duration::from_secs(10);
/// Connections older than this are closed when they come back.
const MAX_LIFETIME: Duration = Duration::from_secs(1800);
/// Connections idle longer than this are closed instead of being handed out.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a statement waits for a free connection (or to open one) before the database
/// counts as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The process's clock for [`connection_failed`].
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds after [`epoch`] of the last connection failure, plus one; 0 for none yet.
static LAST_FAILURE: AtomicU64 = AtomicU64::new(0);

/// Records that a database connection failed below the database (I/O, TLS, protocol): every
/// connection open at this moment is tested before its next use.
pub(super) fn connection_failed() {
    let since_epoch = epoch().elapsed().as_millis() as u64;
    LAST_FAILURE.store(since_epoch + 1, Ordering::Relaxed);
}

/// Whether a connection must be pinged before use: it sat idle long enough for the server to
/// drop it, or it was already open when a connection last failed.
pub(super) fn needs_test(idle_for: Duration, age: Duration) -> bool {
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

struct Idle {
    connection: AnyConnection,
    opened: Instant,
    since: Instant,
}

/// The request connections of one store: at most `size` open at once.
pub(super) struct RequestConnections {
    options: AnyConnectOptions,
    dialect: Dialect,
    idle: Mutex<Vec<Idle>>,
    turns: Semaphore,
}

impl std::fmt::Debug for RequestConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestConnections")
            .field("dialect", &self.dialect)
            .field("free", &self.turns.available_permits())
            .finish_non_exhaustive()
    }
}

enum Held {
    Own { connection: AnyConnection, opened: Instant },
    Pooled(PoolConnection<Any>),
}

/// One connection lent to a request until dropped. Run statements with
/// [`Lease::connection`] and pass each result through [`Lease::settle`]; a lease dropped
/// with an unsettled statement closes its connection.
pub struct Lease<'s> {
    held: Option<Held>,
    home: Option<&'s RequestConnections>,
    _turn: Option<SemaphorePermit<'s>>,
    settled: bool,
}

impl RequestConnections {
    pub(super) fn new(options: AnyConnectOptions, dialect: Dialect, size: usize) -> RequestConnections {
        RequestConnections { options, dialect, idle: Mutex::new(Vec::new()), turns: Semaphore::new(size) }
    }

    pub(super) async fn lease(&self) -> Result<Lease<'_>, StoreError> {
        let turn = tokio::time::timeout(ACQUIRE_TIMEOUT, self.turns.acquire())
            .await
            .map_err(|_| StoreError::Unavailable("no database connection became free in time".into()))?
            .map_err(|_| StoreError::Unavailable("the store is closed".into()))?;
        let (connection, opened) = match self.reusable().await {
            Some(idle) => (idle.connection, idle.opened),
            // Boxed: opening is rare, and every future that leases would otherwise carry
            // the connect's state machine (thousands of held requests each hold one).
            None => (Box::pin(self.open()).await?, Instant::now()),
        };
        Ok(Lease { held: Some(Held::Own { connection, opened }), home: Some(self), _turn: Some(turn), settled: true })
    }

    /// The most recently used idle connection that is still good, if any.
    async fn reusable(&self) -> Option<Idle> {
        loop {
            let mut idle = self.idle.lock().expect("idle connections lock").pop()?;
            let idle_for = idle.since.elapsed();
            if idle_for >= IDLE_TIMEOUT {
                continue;
            }
            if !needs_test(idle_for, idle.opened.elapsed()) || idle.connection.ping().await.is_ok() {
                return Some(idle);
            }
        }
    }

    async fn open(&self) -> Result<AnyConnection, StoreError> {
        let connecting = async {
            let mut connection = AnyConnection::connect_with(&self.options).await?;
            super::prepare_connection(&mut connection, self.dialect).await?;
            Ok::<_, sqlx::Error>(connection)
        };
        match tokio::time::timeout(ACQUIRE_TIMEOUT, connecting).await {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(error)) => Err(StoreError::Unavailable(error.to_string())),
            Err(_) => Err(StoreError::Unavailable("connecting to the database timed out".into())),
        }
    }

    fn give_back(&self, connection: AnyConnection, opened: Instant) {
        if opened.elapsed() < MAX_LIFETIME {
            self.idle.lock().expect("idle connections lock").push(Idle { connection, opened, since: Instant::now() });
        }
    }

    /// Closes the idle connections; leases still out close theirs when dropped.
    pub(super) async fn close(&self) {
        self.turns.close();
        let idle = std::mem::take(&mut *self.idle.lock().expect("idle connections lock"));
        for idle in idle {
            let _ = idle.connection.close().await;
        }
    }
}

impl<'s> Lease<'s> {
    /// A lease of the pool's connection (an in-memory SQLite database has only that one).
    pub(super) async fn pooled(pool: &AnyPool) -> Result<Lease<'s>, StoreError> {
        Ok(Lease { held: Some(Held::Pooled(pool.acquire().await?)), home: None, _turn: None, settled: true })
    }

    /// The connection, for one statement whose result goes through [`Lease::settle`].
    pub fn connection(&mut self) -> &mut AnyConnection {
        self.settled = false;
        match self.held.as_mut().expect("a lease holds its connection until dropped") {
            Held::Own { connection, .. } => connection,
            Held::Pooled(connection) => connection,
        }
    }

    /// Records that the statement finished: a result or an error of the database itself
    /// leaves the connection fit for reuse; any other error does not.
    pub fn settle<T>(&mut self, result: Result<T, sqlx::Error>) -> Result<T, StoreError> {
        self.settled = matches!(result, Ok(_) | Err(sqlx::Error::Database(_) | sqlx::Error::RowNotFound));
        Ok(result?)
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        match (self.held.take(), self.home) {
            (Some(Held::Own { connection, opened }), Some(home)) if self.settled => home.give_back(connection, opened),
            // A pooled connection goes back through sqlx's own tests.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseUrl;
    use crate::store::Store;

    fn idle_count(store: &Store) -> usize {
        store.request_connections.as_ref().expect("a file database has request connections").idle.lock().unwrap().len()
    }

    #[tokio::test]
    async fn only_settled_connections_are_reused() {
        let dir = std::env::temp_dir().join(format!("lease-{}", uuid::Uuid::new_v4()));
        let store = Store::connect(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();

        let mut lease = store.lease().await.unwrap();
        let answer = sqlx::query_scalar::<_, i64>("SELECT 41 + 1").fetch_one(lease.connection()).await;
        assert_eq!(lease.settle(answer).unwrap(), 42);
        drop(lease);
        assert_eq!(idle_count(&store), 1, "a settled connection is kept");

        let mut lease = store.lease().await.unwrap();
        let failed = sqlx::query("SELECT * FROM no_such_table").execute(lease.connection()).await;
        assert!(lease.settle(failed).is_err());
        drop(lease);
        assert_eq!(idle_count(&store), 1, "an error of the database itself leaves the connection fit");

        let mut lease = store.lease().await.unwrap();
        let _started = lease.connection();
        drop(lease);
        assert_eq!(idle_count(&store), 0, "a statement that never settled closes its connection");

        store.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn connections_open_at_a_failure_are_tested_before_use() {
        assert!(needs_test(TEST_AFTER_IDLE, Duration::ZERO), "a long idle connection is tested");
        connection_failed();
        assert!(needs_test(Duration::ZERO, Duration::from_secs(3600)), "one open at the failure is tested");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!needs_test(Duration::ZERO, Duration::ZERO), "one opened since is not");
    }
}
