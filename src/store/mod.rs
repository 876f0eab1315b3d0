//! The database: one sqlx pool over SQLite (the embedded default) or Postgres.
//!
//! Queries are written once with `$n` placeholders, which both databases accept through
//! sqlx's `Any` driver; where the two dialects differ, [`Dialect`] picks the text. Times are
//! stored as epoch milliseconds (BIGINT) so both databases sort and compare them alike.

/// A statement assembled from fixed fragments (column lists, table names, dialect variants),
/// never from input: every value is bound as a parameter.
macro_rules! sql {
    ($($text:tt)*) => {
        sqlx::AssertSqlSafe(format!($($text)*))
    };
}

pub mod bench;
mod change_notifications;
mod checkpoints;
pub mod erp;
pub mod fieldreport;
pub mod fieldreport_deletes;
pub mod fieldreport_reconcile;
pub mod fieldreport_unsettled;
pub mod flows;
pub mod idempotency;
mod inbox_intake;
pub mod lease;
pub mod login_failures;
mod record_cache;
pub mod request_connections;
mod sqlite_reads;
mod sqlite_sync_writes;
mod sync_writers;
mod token_cache;
pub mod tokens;
pub mod users;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use std::sync::Arc;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, AnyPool, Connection, Executor};

use inbox_intake::InboxIntake;
use request_connections::{Lease, RequestConnections};
use sqlite_reads::SqliteReads;

use crate::config::DatabaseUrl;

/// The database family behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("unique constraint violated: {0}")]
    Duplicate(String),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("database error: {0}")]
    Query(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Io(_) | sqlx::Error::Tls(_) => {
                request_connections::connection_failed();
                StoreError::Unavailable(error.to_string())
            }
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => StoreError::Unavailable(error.to_string()),
            sqlx::Error::Protocol(_) => {
                request_connections::connection_failed();
                StoreError::Query(error.to_string())
            }
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Duplicate(db.message().to_string()),
            _ => StoreError::Query(error.to_string()),
        }
    }
}

/// Handle to the database, cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// For the hot path's statements; `None` for an in-memory database (see [`Store::lease`]).
    request_connections: Option<Arc<RequestConnections>>,
    /// SQLite files only: the hot path's reads, run in place (see [`sqlite_reads`]).
    sqlite_reads: Option<Arc<SqliteReads>>,
    /// Webhook calls stored in batches (see [`inbox_intake`]); `None` for an in-memory database.
    inbox_intake: Option<Arc<InboxIntake>>,
    /// SQLite files only: the thread that checkpoints the write-ahead log (see [`checkpoints`]),
    /// which stops with the last clone of the store.
    #[cfg_attr(not(test), expect(dead_code, reason = "held for its Drop"))]
    checkpoints: Option<Arc<checkpoints::Checkpoints>>,
    /// SQLite only: see [`Store::write_turn`].
    write_turns: Option<Arc<tokio::sync::Mutex<()>>>,
    /// Postgres only: token owners kept in memory while a listener hears of their changes
    /// (see [`token_cache`] and [`Store::listen_for_changes`]).
    token_cache: Option<Arc<token_cache::TokenCache>>,
    /// Postgres only: field-report records and pages kept in memory while a listener hears of
    /// their changes (see [`record_cache`]).
    record_cache: Option<Arc<record_cache::RecordCache>>,
    /// Postgres only: the connections that write a sync's batches (see [`sync_writers`]).
    sync_writers: Option<Arc<sync_writers::SyncWriters>>,
    /// SQLite files only: the connection that writes a sync's batches (see
    /// [`sqlite_sync_writes`]).
    sqlite_sync_writes: Option<Arc<sqlite_sync_writes::SqliteSyncWrites>>,
    dialect: Dialect,
    /// How long claimed work (a sync, a pull, webhook calls) stays with an instance that
    /// stopped renewing its claim: after a crash, another run takes it over this much later.
    work_lease_ms: i64,
}

/// Postgres: connections that write sync batches at most (see [`sync_writers`]): two
/// writes of one sync in flight, for two syncs at once; more wait their turn.
const SYNC_WRITERS: u32 = 4;

/// The default of `WORK_LEASE_SECONDS`.
pub const DEFAULT_WORK_LEASE: Duration = Duration::from_secs(60);

/// `count` parameter marks numbered from `$first` on Postgres, and positional (`?`) on
/// SQLite: sqlx looks up the name of every parameter it binds, and SQLite finds a name (`$7`)
/// by walking the statement's list of names, so binding a batch's 1,500 named parameters took
/// a million steps (`perf` of `cargo xtask bench --scenario sync`: 15% of the machine). A
/// statement using them must take its other parameters by position too, on SQLite.
pub(crate) fn parameter_marks(dialect: Dialect, count: usize, first: usize) -> Vec<String> {
    (first..first + count)
        .map(|n| match dialect {
            Dialect::Sqlite => "?".to_string(),
            Dialect::Postgres => format!("${n}"),
        })
        .collect()
}

/// [`parameter_marks`] for `rows` rows of `width` values: `(…), (…)`.
pub(crate) fn parameter_rows(dialect: Dialect, rows: usize, width: usize, first: usize) -> String {
    let marks = parameter_marks(dialect, rows * width, first);
    marks.chunks(width.max(1)).map(|row| format!("({})", row.join(", "))).collect::<Vec<_>>().join(", ")
}

/// Milliseconds since the Unix epoch, the unit of every stored time.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Store {
    /// Connects (creating the SQLite file and its folder on first start) without migrating.
    pub async fn connect(url: &DatabaseUrl) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let dialect = if url.is_postgres() { Dialect::Postgres } else { Dialect::Sqlite };
        let raw = url.expose();
        // An in-memory SQLite database lives and dies with its one connection.
        let in_memory = raw.contains(":memory:");
        // (pool, request connections)
        let (raw, max_connections, request_connections) = match dialect {
            Dialect::Sqlite if in_memory => (raw.to_string(), 1, 0),
            Dialect::Sqlite => (sqlite_url_creating_file(raw)?, 8, 4),
            Dialect::Postgres => (raw.to_string(), 16, 8),
        };
        let options = AnyConnectOptions::from_str(&raw).map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let (idle_timeout, max_lifetime) =
            if in_memory { (None, None) } else { (Some(Duration::from_secs(600)), Some(Duration::from_secs(1800))) };
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .idle_timeout(idle_timeout)
            .max_lifetime(max_lifetime)
            .acquire_timeout(Duration::from_secs(5))
            // sqlx tests every connection when it comes back; testing it again on the way out
            // doubled the round trips of every statement. Only a connection that sat idle long
            // enough for the server to have dropped it, or that was open when a connection
            // last failed, is tested first.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if request_connections::needs_test(meta.idle_for, meta.age) {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .after_connect(move |conn, _meta| Box::pin(prepare_connection(conn, dialect)))
            .connect_with(options.clone())
            .await?;
        let request_connections =
            (request_connections > 0).then(|| Arc::new(RequestConnections::new(options, dialect, request_connections)));
        let sync_writers = match dialect {
            Dialect::Postgres => Some(Arc::new(sync_writers::SyncWriters::new(&raw, SYNC_WRITERS)?)),
            Dialect::Sqlite => None,
        };
        let write_turns = (dialect == Dialect::Sqlite).then(|| Arc::new(tokio::sync::Mutex::new(())));
        let (sqlite_reads, inbox_intake, checkpoints, sqlite_sync_writes) = match (dialect, &write_turns) {
            (Dialect::Sqlite, Some(turns)) if !in_memory => {
                let file = sqlite_file(&raw);
                let intake = InboxIntake::sqlite(&file, turns.clone())?;
                let checkpoints = checkpoints::Checkpoints::start(&file)?;
                let sync_writes = sqlite_sync_writes::SqliteSyncWrites::new(&file, turns.clone());
                (
                    Some(Arc::new(SqliteReads::open(file)?)),
                    Some(Arc::new(intake)),
                    Some(Arc::new(checkpoints)),
                    Some(Arc::new(sync_writes)),
                )
            }
            (Dialect::Postgres, _) => (None, Some(Arc::new(InboxIntake::postgres(pool.clone()))), None, None),
            _ => (None, None, None, None),
        };
        Ok(Store {
            pool,
            request_connections,
            sqlite_reads,
            inbox_intake,
            checkpoints,
            write_turns,
            token_cache: (dialect == Dialect::Postgres).then(|| Arc::new(token_cache::TokenCache::default())),
            record_cache: (dialect == Dialect::Postgres).then(|| Arc::new(record_cache::RecordCache::default())),
            sync_writers,
            sqlite_sync_writes,
            dialect,
            work_lease_ms: DEFAULT_WORK_LEASE.as_millis() as i64,
        })
    }

    /// Connects and applies every pending migration.
    pub async fn open(url: &DatabaseUrl) -> Result<Store, StoreError> {
        let store = Self::connect(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Postgres: starts listening for changes of tokens, users and field-report records, and
    /// keeps token owners and records in memory while it listens (see [`change_notifications`],
    /// [`token_cache`] and [`record_cache`]); the task runs until it is aborted. `None` on
    /// SQLite, where these are local reads.
    pub fn listen_for_changes(&self, url: &DatabaseUrl) -> Option<tokio::task::JoinHandle<()>> {
        let listeners =
            change_notifications::Listeners { tokens: self.token_cache.clone()?, records: self.record_cache.clone()? };
        Some(tokio::spawn(listeners.listen(url.expose().to_string(), self.pool.clone())))
    }

    /// Field-report record lookups answered from memory and lookups that went to the
    /// database, since start; `None` where records are not cached (SQLite).
    pub fn record_cache_lookups(&self) -> Option<(u64, u64)> {
        self.record_cache.as_deref().map(|cache| cache.lookups())
    }

    /// The same store with another lease for claimed work (`WORK_LEASE_SECONDS`).
    pub fn with_work_lease(mut self, lease: Duration) -> Store {
        self.work_lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX).max(1);
        self
    }

    /// Until when a claim taken or renewed now holds.
    pub fn lease_deadline(&self) -> i64 {
        now_ms().saturating_add(self.work_lease_ms)
    }

    pub fn work_lease_ms(&self) -> i64 {
        self.work_lease_ms
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        let migrator = match self.dialect {
            Dialect::Sqlite => sqlx::migrate!("migrations/sqlite"),
            Dialect::Postgres => sqlx::migrate!("migrations/postgres"),
        };
        migrator.run(&self.pool).await.map_err(|e| StoreError::Migration(e.to_string()))
    }

    /// Succeeds when the database answers a trivial query.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// The condition "the document's top-level field equals `$3` as text" and the value to
    /// bind as `$2`: a JSON path on SQLite, the field name on Postgres. The field name is
    /// always bound, never spliced into the statement.
    pub(crate) fn document_field_equals(&self, attribute: &str) -> (&'static str, String) {
        match self.dialect {
            Dialect::Sqlite => ("CAST(json_extract(document, $2) AS TEXT) = $3", format!("$.\"{attribute}\"")),
            Dialect::Postgres => ("(document::jsonb ->> $2) = $3", attribute.to_string()),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// A transaction that reads before it writes. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`): a deferred transaction that has read cannot start writing once
    /// another connection has committed (SQLITE_BUSY_SNAPSHOT, "database is locked", which
    /// `busy_timeout` does not wait out); an immediate one waits its turn. Found by `.ci/fuzz`
    /// (concurrent ERP pulls answered 500).
    ///
    /// On SQLite the transaction holds this process's write turn ([`Store::write_turn`]).
    pub async fn write_transaction(&self) -> Result<WriteTransaction, StoreError> {
        Ok(match &self.write_turns {
            Some(turns) => {
                let turn = turns.clone().lock_owned().await;
                WriteTransaction { tx: self.pool.begin_with("BEGIN IMMEDIATE").await?, _turn: Some(turn) }
            }
            None => WriteTransaction { tx: self.pool.begin().await?, _turn: None },
        })
    }

    /// Taken before a write on SQLite, which lets one writer in at a time and puts the others
    /// to sleep in its busy handler (1, 2, 5, 10 … ms at a time): the writers of this process
    /// queue here instead, and SQLite's handler is left for other processes. `cargo xtask
    /// bench --scenario webhook-ingest` (calls stored while the worker processes them) showed
    /// a thousand such sleeps a second. Taken before the connection, never while holding one,
    /// so that it cannot wait on a connection held by a task that waits for it. `None` on
    /// Postgres, which locks rows, not the database.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match &self.write_turns {
            Some(turns) => Some(turns.lock().await),
            None => None,
        }
    }

    /// A connection for a few statements on a request's hot path, reused without sqlx's
    /// per-release test (see [`request_connections`]).
    pub(crate) async fn lease(&self) -> Result<Lease<'_>, StoreError> {
        match &self.request_connections {
            Some(connections) => connections.lease().await,
            None => Lease::pooled(&self.pool).await,
        }
    }

    pub async fn close(&self) {
        if let Some(connections) = &self.request_connections {
            connections.close().await;
        }
        if let Some(writers) = &self.sync_writers {
            writers.close().await;
        }
        if let Some(writes) = &self.sqlite_sync_writes {
            writes.close();
        }
        self.pool.close().await;
    }
}

/// A statement of the store's tests, with values bound to its parameters.
#[cfg(test)]
pub(crate) type TestQuery = sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>;

/// Binds values to the parameters of a statement of the store's tests.
#[cfg(test)]
pub(crate) type TestValues = fn(TestQuery) -> TestQuery;

/// The plan of `statement`, with the values `bind` gives its parameters, as text run on
/// `executor`: SQLite's steps (`EXPLAIN QUERY PLAN`, its `detail` column) or Postgres's plan
/// lines (`EXPLAIN`), one a line.
#[cfg(test)]
pub(crate) async fn plan_of<'c, E>(
    dialect: Dialect,
    executor: E,
    statement: &str,
    bind: impl FnOnce(TestQuery) -> TestQuery,
) -> String
where
    E: Executor<'c, Database = sqlx::Any>,
{
    use sqlx::Row;
    let explain = match dialect {
        Dialect::Sqlite => "EXPLAIN QUERY PLAN",
        Dialect::Postgres => "EXPLAIN",
    };
    let rows = bind(sqlx::query(sql!("{explain} {statement}"))).fetch_all(executor).await.expect("EXPLAIN runs");
    let step = |row: &sqlx::any::AnyRow| match dialect {
        Dialect::Sqlite => row.get::<String, _>("detail"),
        Dialect::Postgres => row.get::<String, _>(0),
    };
    rows.iter().map(step).collect::<Vec<_>>().join("\n")
}

/// A transaction from [`Store::write_transaction`]; statements run on `&mut *tx`.
pub struct WriteTransaction {
    tx: sqlx::Transaction<'static, sqlx::Any>,
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl WriteTransaction {
    pub async fn commit(self) -> Result<(), StoreError> {
        Ok(self.tx.commit().await?)
    }
}

impl std::ops::Deref for WriteTransaction {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTransaction {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.tx
    }
}

/// The session settings of every Postgres connection of the service's (this pool's and
/// [`sync_writers`]'): it tells other instances of its mirror writes itself, after each
/// commit, and writes each record's `ExternalId` column with its document; the triggers that
/// do these for other sessions skip its own (see migrations 0012 and 0014).
const POSTGRES_SESSION_SETTINGS: &str = "SELECT set_config('integration_service.notifies_changes', 'on', false), \
            set_config('integration_service.writes_external_id', 'on', false)";

/// The session settings of every SQLite connection of the store's that writes (the pool's, the
/// webhook intake's, the sync's writer): commits leave the log's checkpoints to the store's
/// thread (see [`checkpoints`]).
fn sqlite_write_settings() -> String {
    format!("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; {}", checkpoints::connection_setting())
}

/// The session settings of every new connection.
async fn prepare_connection(conn: &mut AnyConnection, dialect: Dialect) -> Result<(), sqlx::Error> {
    match dialect {
        Dialect::Sqlite => {
            let settings =
                format!("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; {}", sqlite_write_settings());
            conn.execute(sqlx::AssertSqlSafe(settings)).await?;
        }
        Dialect::Postgres => {
            conn.execute(POSTGRES_SESSION_SETTINGS).await?;
        }
    }
    Ok(())
}

/// The file path and the query of a SQLite URL.
fn sqlite_url_parts(url: &str) -> (&str, &str) {
    let rest = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    rest.split_once('?').unwrap_or((rest, ""))
}

/// The database file of a SQLite URL (percent-decoded, as sqlx reads it).
fn sqlite_file(url: &str) -> std::path::PathBuf {
    let path = sqlite_url_parts(url).0;
    std::path::PathBuf::from(percent_encoding::percent_decode_str(path).decode_utf8_lossy().as_ref())
}

/// Adds `mode=rwc` (create if missing) and creates the parent folder of a file database.
fn sqlite_url_creating_file(url: &str) -> Result<String, StoreError> {
    let (path, query) = sqlite_url_parts(url);
    if path != ":memory:"
        && !path.is_empty()
        && let Some(parent) = Path::new(path).parent().filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| StoreError::Unavailable(format!("cannot create {}: {e}", parent.display())))?;
    }
    if query.split('&').any(|kv| kv.starts_with("mode=")) {
        return Ok(url.to_string());
    }
    let sep = if query.is_empty() { "?" } else { "&" };
    Ok(format!("{url}{sep}mode=rwc"))
}

/// Stores for unit tests of the store's statements on both databases.
#[cfg(test)]
pub(crate) mod testing {
    use super::Store;
    use crate::config::DatabaseUrl;

    /// A store on a database of its own, removed by [`TestStore::finish`].
    pub(crate) struct TestStore {
        pub store: Store,
        dir: Option<std::path::PathBuf>,
        schema: Option<String>,
    }

    /// A store on a fresh SQLite file, and one on a fresh schema of `TEST_POSTGRES_URL`'s
    /// database when that is set (said on stderr when not).
    pub(crate) async fn stores_on_both_databases() -> Vec<TestStore> {
        let dir = std::env::temp_dir().join(format!("store-test-{}", uuid::Uuid::new_v4()));
        let sqlite = Store::open(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
        let mut stores = vec![TestStore { store: sqlite, dir: Some(dir), schema: None }];
        let Ok(admin_url) = std::env::var("TEST_POSTGRES_URL") else {
            eprintln!("Postgres half skipped: TEST_POSTGRES_URL is not set");
            return stores;
        };
        let schema = format!("u_{}", uuid::Uuid::new_v4().simple());
        admin(&format!("CREATE SCHEMA {schema}")).await;
        let sep = if admin_url.contains('?') { '&' } else { '?' };
        let url = format!("{admin_url}{sep}options=-c%20search_path%3D{schema}");
        let postgres = Store::open(&DatabaseUrl::new(url)).await.unwrap();
        stores.push(TestStore { store: postgres, dir: None, schema: Some(schema) });
        stores
    }

    async fn admin(statement: &str) {
        sqlx::any::install_default_drivers();
        let url = std::env::var("TEST_POSTGRES_URL").unwrap();
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(statement.to_string())).execute(&pool).await.unwrap();
        pool.close().await;
    }

    impl TestStore {
        pub(crate) async fn finish(self) {
            self.store.close().await;
            if let Some(dir) = self.dir {
                let _ = std::fs::remove_dir_all(dir);
            }
            if let Some(schema) = self.schema {
                admin(&format!("DROP SCHEMA {schema} CASCADE")).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Store, sqlite_file, sqlite_url_creating_file};
    use crate::config::DatabaseUrl;

    /// Queued in SQLite's busy handler, the write would fail with "database is locked" after
    /// `busy_timeout` (5 s); queued for its turn, it waits as long as the transaction runs.
    #[tokio::test]
    async fn a_sqlite_write_waits_for_the_open_write_transaction_without_timing_out() {
        let dir = std::env::temp_dir().join(format!("turns-{}", uuid::Uuid::new_v4()));
        let store = Store::open(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
        let tx = store.write_transaction().await.unwrap();
        let writer = {
            let store = store.clone();
            tokio::spawn(async move { store.inbox_store("customer", "7", "update", &serde_json::json!({})).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(5_500)).await;
        assert!(!writer.is_finished(), "the write waits for its turn, past SQLite's busy timeout");
        tx.commit().await.unwrap();
        writer.await.unwrap().unwrap();
        assert_eq!(store.inbox_counts().await.unwrap().pending, 1);
        store.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn parameters_are_positional_on_sqlite_and_numbered_on_postgres() {
        use super::{Dialect, parameter_marks, parameter_rows};
        assert_eq!(parameter_marks(Dialect::Sqlite, 3, 2), ["?", "?", "?"]);
        assert_eq!(parameter_marks(Dialect::Postgres, 2, 3), ["$3", "$4"]);
        assert_eq!(parameter_rows(Dialect::Sqlite, 2, 2, 1), "(?, ?), (?, ?)");
        assert_eq!(parameter_rows(Dialect::Postgres, 2, 3, 3), "($3, $4, $5), ($6, $7, $8)");
    }

    #[test]
    fn sqlite_urls_get_create_mode_once() {
        let dir = std::env::temp_dir().join(format!("store-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/db.sqlite", dir.display());
        assert_eq!(sqlite_url_creating_file(&url).unwrap(), format!("{url}?mode=rwc"));
        assert!(dir.is_dir());
        assert_eq!(sqlite_url_creating_file("sqlite::memory:?mode=ro").unwrap(), "sqlite::memory:?mode=ro");
        assert_eq!(sqlite_file(&format!("{url}?mode=rwc")), dir.join("db.sqlite"));
        assert_eq!(sqlite_file("sqlite:data/service.db"), std::path::Path::new("data/service.db"));
    }
}
