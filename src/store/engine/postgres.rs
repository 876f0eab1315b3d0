//! What Postgres needs beside the pool: its own connections for the hot path and for a sync's
//! batches, and the caches that its change notifications keep true.

use std::sync::Arc;

use sqlx::AnyPool;

use super::change_notifications::Listeners;
use super::inbox_intake::InboxIntake;
use super::pool;
use super::record_cache::RecordCache;
use super::request_connections::RequestConnections;
use super::sync_writers::SyncWriters;
use super::token_cache::TokenCache;
use crate::store::dialect::Dialect;
use crate::store::error::StoreError;

/// Pool connections, and the request connections among them at most.
const POOL_CONNECTIONS: u32 = 16;
const REQUEST_CONNECTIONS: usize = 8;
/// Connections that write sync batches at most (see [`super::sync_writers`]): two writes of
/// one sync in flight, for two syncs at once; more wait their turn.
const SYNC_WRITERS: u32 = 4;

#[derive(Debug)]
pub(in crate::store) struct PostgresEngine {
    /// For the hot path's statements (see [`super::request_connections`]).
    pub(in crate::store) request_connections: RequestConnections,
    /// Webhook calls stored in batches (see [`super::inbox_intake`]).
    pub(in crate::store) inbox_intake: InboxIntake,
    /// The connections that write a sync's batches (see [`super::sync_writers`]).
    pub(in crate::store) sync_writers: SyncWriters,
    /// Token owners kept in memory while a listener hears of their changes (see
    /// [`super::token_cache`] and [`PostgresEngine::listen_for_changes`]).
    pub(in crate::store) token_cache: Arc<TokenCache>,
    /// Field-report records and pages kept in memory while a listener hears of their changes
    /// (see [`super::record_cache`]).
    pub(in crate::store) record_cache: Arc<RecordCache>,
}

impl PostgresEngine {
    pub(super) async fn open(url: &str) -> Result<(AnyPool, PostgresEngine), StoreError> {
        let (pool, options) = pool::open(url, Dialect::Postgres, POOL_CONNECTIONS, false).await?;
        let engine = PostgresEngine {
            request_connections: RequestConnections::new(options, Dialect::Postgres, REQUEST_CONNECTIONS),
            sync_writers: SyncWriters::new(url, SYNC_WRITERS)?,
            inbox_intake: InboxIntake::postgres(pool.clone()),
            token_cache: Arc::new(TokenCache::default()),
            record_cache: Arc::new(RecordCache::default()),
        };
        Ok((pool, engine))
    }

    /// Starts listening for changes of tokens, users and field-report records, and keeps
    /// token owners and records in memory while it listens (see
    /// [`super::change_notifications`]); the task runs until it is aborted.
    pub(super) fn listen_for_changes(&self, url: &str, pool: AnyPool) -> tokio::task::JoinHandle<()> {
        let listeners = Listeners { tokens: self.token_cache.clone(), records: self.record_cache.clone() };
        tokio::spawn(listeners.listen(url.to_string(), pool))
    }

    pub(super) async fn close(&self) {
        self.request_connections.close().await;
        self.sync_writers.close().await;
    }
}
