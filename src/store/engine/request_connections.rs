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
//! - a connection idle for [`super::failures::TEST_AFTER_IDLE`] or longer (the server may have closed it), or
//!   one opened before the process last saw a connection fail (a database restart or a
//!   network cut breaks them all), is pinged before it is handed out; the pool does the same
//!   ([`needs_test`], [`crate::store::Store::connect`]);
//! - connections are replaced after the pool's lifetime and idle limits.
//!
//! An in-memory SQLite database exists only on its pool's one connection, so there the lease
//! borrows that connection instead.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, Connection};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::failures::needs_test;
use crate::store::dialect::Dialect;
use crate::store::error::StoreError;

/// Connections older than this are closed when they come back.
const MAX_LIFETIME: Duration = Duration::from_secs(1800);
/// Connections idle longer than this are closed instead of being handed out.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a statement waits for a free connection (or to open one) before the database
/// counts as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

struct Idle {
    connection: AnyConnection,
    opened: Instant,
    since: Instant,
}

/// The request connections of one store: at most `size` open at once.
pub(in crate::store) struct RequestConnections {
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
    pub(in crate::store) fn new(options: AnyConnectOptions, dialect: Dialect, size: usize) -> RequestConnections {
        RequestConnections { options, dialect, idle: Mutex::new(Vec::new()), turns: Semaphore::new(size) }
    }

    pub(in crate::store) async fn lease(&self) -> Result<Lease<'_>, StoreError> {
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
            super::pool::prepare_connection(&mut connection, self.dialect).await?;
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
    pub(in crate::store) async fn close(&self) {
        self.turns.close();
        let idle = std::mem::take(&mut *self.idle.lock().expect("idle connections lock"));
        for idle in idle {
            let _ = idle.connection.close().await;
        }
    }
}

impl<'s> Lease<'s> {
    /// A lease of the pool's connection (an in-memory SQLite database has only that one).
    pub(in crate::store) async fn pooled(pool: &AnyPool) -> Result<Lease<'s>, StoreError> {
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
mod tests;
