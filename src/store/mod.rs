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

pub mod backup;
/// Bench-only: the baselines of `cargo xtask bench` (feature `bench-support`).
#[cfg(any(test, feature = "bench-support"))]
pub mod bench;
mod columns;
pub mod config;
mod dialect;
mod engine;
mod error;

// The tables, one module per family, each with the `impl Store` block of its statements;
// an area with several families has a folder named as the area is everywhere else.
pub mod auth;
pub mod erp;
pub mod feed;
pub mod fieldreport;
pub mod idempotency;
pub mod jobs;
pub mod key_pages;
pub mod lease;
pub mod leasing;
pub mod rates;
pub mod retention;
pub mod retention_config;

use std::time::Duration;

use sqlx::{AnyConnection, AnyPool};

pub use config::{DEFAULT_WORK_LEASE, DatabaseUrl, StoreConfig};
pub use dialect::Dialect;
use engine::Engine;
use engine::request_connections::Lease;
pub use error::StoreError;

/// Handle to the database, cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// What the database needs beside the pool (see [`engine`]).
    engine: Engine,
    /// How long claimed work (a sync, a pull, webhook calls) stays with an instance that
    /// stopped renewing its claim: after a crash, another run takes it over this much later.
    work_lease_ms: i64,
}

/// Milliseconds since the Unix epoch, the unit of every stored time.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Store {
    /// Connects (creating the SQLite file and its folder on first start) without migrating.
    pub async fn connect(url: &DatabaseUrl) -> Result<Store, StoreError> {
        let (pool, engine) = Engine::open(url).await?;
        Ok(Store { pool, engine, work_lease_ms: DEFAULT_WORK_LEASE.as_millis() as i64 })
    }

    /// Connects and applies every pending migration.
    pub async fn open(url: &DatabaseUrl) -> Result<Store, StoreError> {
        let store = Self::connect(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects to the configured database, applies every pending migration, and takes the
    /// configured work lease.
    pub async fn open_configured(config: &StoreConfig) -> Result<Store, StoreError> {
        Ok(Self::open(&config.database_url).await?.with_work_lease(config.work_lease))
    }

    /// Postgres: starts listening for changes of tokens, users and field-report records, and
    /// keeps token owners and records in memory while it listens (see
    /// [`engine::change_notifications`]); the task runs until it is aborted. `None` on SQLite,
    /// where token owners are local reads and the record cache asks the file itself.
    pub fn listen_for_changes(&self, url: &DatabaseUrl) -> Option<tokio::task::JoinHandle<()>> {
        self.engine.listen_for_changes(url, self.pool.clone())
    }

    /// Field-report record lookups answered from memory and lookups that went to the
    /// database, since start; `None` where records are not cached (SQLite in memory).
    pub fn record_cache_lookups(&self) -> Option<(u64, u64)> {
        self.engine.record_cache().map(|cache| cache.lookups())
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
        let migrator = match self.dialect() {
            Dialect::Sqlite => sqlx::migrate!("migrations/sqlite"),
            Dialect::Postgres => sqlx::migrate!("migrations/postgres"),
        };
        migrator.run(&self.pool).await.map_err(|e| StoreError::Migration(e.to_string()))?;
        self.bind_feed_history().await
    }

    /// Succeeds when the database answers a trivial query and would take a write: on SQLite
    /// the write lock is taken and given back at once (another process holding it fails the
    /// check); on Postgres the session must not be read-only (a standby, or a database set
    /// `default_transaction_read_only`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        match self.dialect() {
            Dialect::Sqlite => {
                // Dropped unused: rolled back, the lock given back.
                drop(self.write_transaction().await?);
            }
            Dialect::Postgres => {
                let row = sqlx::query("SELECT current_setting('transaction_read_only') AS read_only")
                    .fetch_one(&self.pool)
                    .await?;
                if sqlx::Row::try_get::<String, _>(&row, "read_only")? == "on" {
                    return Err(StoreError::Unavailable("the database takes no writes (read-only)".into()));
                }
            }
        }
        Ok(())
    }

    /// The condition "the document's top-level field equals `$3` as text" and the value to
    /// bind as `$2`: a JSON path on SQLite, the field name on Postgres. The field name is
    /// always bound, never spliced into the statement.
    pub(crate) fn document_field_equals(&self, attribute: &str) -> (&'static str, String) {
        match self.dialect() {
            Dialect::Sqlite => ("CAST(json_extract(document, $2) AS TEXT) = $3", format!("$.\"{attribute}\"")),
            // A document holding an escaped NUL (`\u0000`, which a text value of Postgres
            // cannot hold) is read with U+FFFD in its place: cast as it is, one such record of
            // any caller's would fail the lookup of its whole set with 22P05 for everyone.
            // The replacement keeps the escape's length and form, so the document stays JSON.
            Dialect::Postgres => {
                ("(replace(document, '\\u0000', '\\ufffd')::jsonb ->> $2) = $3", attribute.to_string())
            }
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.engine.dialect()
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
        Ok(match self.engine.sqlite() {
            Some(sqlite) => {
                let turn = tokio::time::timeout(WRITE_TURN_WAIT, sqlite.write_turns.clone().lock_owned())
                    .await
                    .map_err(|_| turn_not_taken())?;
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
    ///
    /// A turn not had within [`WRITE_TURN_WAIT`] is [`StoreError::Unavailable`]: the writer
    /// before it waits for a lock another process holds, and the caller is answered 503 in
    /// seconds rather than queued behind every other waiting writer.
    pub(crate) async fn write_turn(&self) -> Result<Option<tokio::sync::MutexGuard<'_, ()>>, StoreError> {
        match self.engine.sqlite() {
            Some(sqlite) => tokio::time::timeout(WRITE_TURN_WAIT, sqlite.write_turns.lock())
                .await
                .map(Some)
                .map_err(|_| turn_not_taken()),
            None => Ok(None),
        }
    }

    /// A connection for a few statements on a request's hot path, reused without sqlx's
    /// per-release test (see [`engine::request_connections`]).
    pub(crate) async fn lease(&self) -> Result<Lease<'_>, StoreError> {
        match self.engine.request_connections() {
            Some(connections) => connections.lease().await,
            None => Lease::pooled(&self.pool).await,
        }
    }

    pub async fn close(&self) {
        self.engine.close().await;
        self.pool.close().await;
    }
}

/// The longest a write waits for this process's write turn on SQLite ([`Store::write_turn`]):
/// as long as SQLite's own busy timeout, so that a write answers within about twice that.
const WRITE_TURN_WAIT: Duration = Duration::from_secs(5);

fn turn_not_taken() -> StoreError {
    StoreError::Unavailable(format!(
        "the database is busy: no write turn within {} s (another process may hold its lock)",
        WRITE_TURN_WAIT.as_secs()
    ))
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
    E: sqlx::Executor<'c, Database = sqlx::Any>,
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

/// Stores for unit tests of the store's statements on both databases.
#[cfg(test)]
pub(crate) mod testing {
    use super::{DatabaseUrl, Store};

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

    /// Runs `check` on a store of each database ([`stores_on_both_databases`]), then removes
    /// them.
    pub(crate) async fn on_both_databases(check: impl AsyncFn(&Store)) {
        for test in stores_on_both_databases().await {
            check(&test.store).await;
            test.finish().await;
        }
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
    use super::{DatabaseUrl, Store};

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

    /// A Postgres server that closes every new connection at once (restarting, or cut off
    /// behind a proxy) leaves the store unavailable, not wrong: with TLS built in, sqlx first
    /// asks for it (`sslmode=prefer`) and reads the closed socket's silence as a protocol error.
    #[tokio::test]
    async fn a_postgres_that_closes_new_connections_is_unavailable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut closed, _)) = listener.accept().await {
                // Read what the client sent first, so that closing ends the stream rather
                // than resetting it, as a proxy whose database is gone does.
                let _ = tokio::io::AsyncReadExt::read(&mut closed, &mut [0u8; 64]).await;
            }
        });
        let url = DatabaseUrl::new(format!("postgres://postgres@127.0.0.1:{port}/postgres"));
        let Err(error) = Store::connect(&url).await else { panic!("no database answers, yet the store connected") };
        assert!(matches!(error, super::StoreError::Unavailable(_)), "{error:?}");
    }

    /// A Postgres URL that asks for TLS (`sslmode=require`, as managed databases do) connects,
    /// and the server sees the connection encrypted.
    #[tokio::test]
    async fn a_postgres_url_asking_for_tls_connects_encrypted() {
        let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
            eprintln!("skipped: TEST_POSTGRES_URL is not set");
            return;
        };
        let sep = if url.contains('?') { '&' } else { '?' };
        let url = DatabaseUrl::new(format!("{url}{sep}sslmode=require"));
        let store = Store::connect(&url).await.unwrap();
        let encrypted: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert!(encrypted, "the test Postgres has TLS on (Debian's cluster does, with its snake-oil certificate)");
    }
}
