//! The machinery under the tables: the pool and its connections' settings, and what each
//! database needs beside it, behind one type per database ([`SqliteEngine`],
//! [`PostgresEngine`]): the hot path's connections and reads, the writers of webhook calls and
//! of a sync's batches, the SQLite checkpoints, and the Postgres caches with the change
//! notifications that keep them true.

pub(in crate::store) mod cache;
pub(in crate::store) mod change_notifications;
pub(in crate::store) mod checkpoints;
pub(in crate::store) mod failures;
pub(in crate::store) mod inbox_intake;
pub(in crate::store) mod log_sync;
mod pool;
mod postgres;
pub(in crate::store) mod record_cache;
pub(in crate::store) mod request_connections;
mod sqlite;
pub(in crate::store) mod sqlite_changes;
pub(in crate::store) mod sqlite_reads;
pub(in crate::store) mod sqlite_sync_writes;
pub(in crate::store) mod sync_page;
pub(in crate::store) mod sync_writers;
pub(in crate::store) mod token_cache;

use std::sync::Arc;

use sqlx::AnyPool;

pub(in crate::store) use pool::{restoring_copy, sqlite_file};
pub(in crate::store) use postgres::PostgresEngine;
pub(in crate::store) use sqlite::{SqliteEngine, SqliteFile};

use inbox_intake::InboxIntake;
use record_cache::RecordCache;
use request_connections::RequestConnections;
use sqlite_reads::SqliteReads;
use token_cache::TokenCache;

use crate::store::DatabaseUrl;
use crate::store::dialect::Dialect;
use crate::store::error::StoreError;

/// The machinery of the database behind the pool; cheap to clone.
#[derive(Debug, Clone)]
pub(in crate::store) enum Engine {
    Sqlite(Arc<SqliteEngine>),
    Postgres(Arc<PostgresEngine>),
}

impl Engine {
    /// Opens the pool on `url` and the machinery of its database.
    pub(in crate::store) async fn open(url: &DatabaseUrl) -> Result<(AnyPool, Engine), StoreError> {
        sqlx::any::install_default_drivers();
        if url.is_postgres() {
            let (pool, engine) = PostgresEngine::open(url.expose()).await?;
            Ok((pool, Engine::Postgres(Arc::new(engine))))
        } else {
            let (pool, engine) = SqliteEngine::open(url.expose()).await?;
            Ok((pool, Engine::Sqlite(Arc::new(engine))))
        }
    }

    pub(in crate::store) fn dialect(&self) -> Dialect {
        match self {
            Engine::Sqlite(_) => Dialect::Sqlite,
            Engine::Postgres(_) => Dialect::Postgres,
        }
    }

    pub(in crate::store) fn sqlite(&self) -> Option<&SqliteEngine> {
        match self {
            Engine::Sqlite(sqlite) => Some(&**sqlite),
            Engine::Postgres(_) => None,
        }
    }

    pub(in crate::store) fn postgres(&self) -> Option<&PostgresEngine> {
        match self {
            Engine::Postgres(postgres) => Some(&**postgres),
            Engine::Sqlite(_) => None,
        }
    }

    /// The machinery of a SQLite database file; `None` on Postgres and in memory.
    pub(in crate::store) fn sqlite_file(&self) -> Option<&SqliteFile> {
        self.sqlite()?.file.as_ref()
    }

    /// `None` for an in-memory database, whose one connection the pool lends instead.
    pub(in crate::store) fn request_connections(&self) -> Option<&RequestConnections> {
        match self {
            Engine::Sqlite(sqlite) => sqlite.file.as_ref().map(|file| &file.request_connections),
            Engine::Postgres(postgres) => Some(&postgres.request_connections),
        }
    }

    /// SQLite files only: the hot path's reads, run in place.
    pub(in crate::store) fn sqlite_reads(&self) -> Option<&Arc<SqliteReads>> {
        self.sqlite_file().map(|file| &file.reads)
    }

    /// `None` for an in-memory database.
    pub(in crate::store) fn inbox_intake(&self) -> Option<&InboxIntake> {
        match self {
            Engine::Sqlite(sqlite) => sqlite.file.as_ref().map(|file| &file.inbox_intake),
            Engine::Postgres(postgres) => Some(&postgres.inbox_intake),
        }
    }

    /// Postgres only: token owners kept in memory.
    pub(in crate::store) fn token_cache(&self) -> Option<&TokenCache> {
        self.postgres().map(|postgres| &*postgres.token_cache)
    }

    /// Field-report records and pages kept in memory; `None` in memory, where reads cost
    /// little. For what is put in and forgotten; a lookup asks [`Engine::record_cache_to_read`].
    pub(in crate::store) fn record_cache(&self) -> Option<&RecordCache> {
        match self {
            Engine::Sqlite(sqlite) => sqlite.file.as_ref().map(|file| &file.record_cache),
            Engine::Postgres(postgres) => Some(&*postgres.record_cache),
        }
    }

    /// The record cache, made true first: on SQLite, everything in it is forgotten when any
    /// connection changed the file since the last lookup (see [`sqlite_changes`]), and it is
    /// not used while SQLite cannot tell. On Postgres the change notifications keep it true.
    pub(in crate::store) fn record_cache_to_read(&self) -> Option<&RecordCache> {
        let Some(file) = self.sqlite_file() else { return self.record_cache() };
        match file.changes.changed() {
            Some(false) => {}
            Some(true) => file.record_cache.notified("*"),
            None => {
                file.record_cache.notified("*");
                return None;
            }
        }
        Some(&file.record_cache)
    }

    /// Postgres: starts listening for changes (see [`PostgresEngine::listen_for_changes`]).
    /// `None` on SQLite, where nothing is cached.
    pub(in crate::store) fn listen_for_changes(
        &self,
        url: &DatabaseUrl,
        pool: AnyPool,
    ) -> Option<tokio::task::JoinHandle<()>> {
        Some(self.postgres()?.listen_for_changes(url.expose(), pool))
    }

    pub(in crate::store) async fn close(&self) {
        match self {
            Engine::Sqlite(sqlite) => sqlite.close().await,
            Engine::Postgres(postgres) => postgres.close().await,
        }
    }
}
