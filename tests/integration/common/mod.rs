//! Test harness: starts the real service on loopback against SQLite or Postgres and talks to
//! it over HTTP. Every Postgres test gets its own schema, so tests run in parallel.

pub mod binary;
pub mod contract;
pub mod process;
pub mod requests;
pub mod smtp;
pub mod tls;

use std::io::Write;

use contract::Checked;
pub use requests::{Api, Caller, JsonAnswer};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use integration_service::config::{Config, LogFormat};
use integration_service::server::{self, RunningService};
use integration_service::telemetry;
use sqlx::AssertSqlSafe;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};

/// The service binary that cargo built for these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_integration-service");

/// The committed OpenAPI document (`spec/openapi.json`).
pub const DOCUMENT: &str = include_str!("../../../spec/openapi.json");

/// The user of [`TestService::user_token`].
pub const EMAIL: &str = "ada@example.com";
pub const PASSWORD: &str = "analytical-engine";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Runs each named scenario `async fn(Db)` once on SQLite and once on Postgres
/// (the Postgres run needs `TEST_POSTGRES_URL`; without it those tests say so and pass).
#[macro_export]
macro_rules! on_both_databases {
    ($($scenario:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario($crate::common::Db::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    if std::env::var("TEST_POSTGRES_URL").is_err() {
                        eprintln!("skipped: TEST_POSTGRES_URL is not set");
                        return;
                    }
                    super::$scenario($crate::common::Db::Postgres).await
                }
            )*
        }
    };
}

/// A log sink the test can read afterwards.
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLog {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

pub struct TestService {
    pub base: String,
    /// Host root of this test's leasing-provider simulator.
    pub leasing: String,
    /// Root of this test's field-report simulator.
    pub fieldreport: String,
    /// The ERP simulator's API root (`…/webapp/api/v1`).
    pub erp: String,
    /// The configuration the service runs with (for [`TestService::restart`]).
    pub config: Config,
    /// The folder behind `STORAGE_URL`.
    pub storage_dir: std::path::PathBuf,
    pub client: reqwest::Client,
    pub database_url: String,
    pub log: CapturedLog,
    /// Every secret this test handed to the service or got from it; none may reach the log.
    secrets: Arc<Mutex<Vec<String>>>,
    pub service: Option<RunningService>,
    schema: Option<String>,
}

/// What a test runs the service on, whichever way it runs it (in this process, [`TestService`],
/// or the binary as a process, [`process::Instance`]): a database of its own, simulators of
/// its own and a storage folder, and the settings that name them.
pub struct Ground {
    pub database_url: String,
    pub sandboxes: integration_service::sandbox::Sandboxes,
    /// The folder behind `STORAGE_URL` (not made yet).
    pub storage_dir: std::path::PathBuf,
}

impl Ground {
    /// The simulators started and a storage folder picked (its name says `purpose`) for a
    /// database of the test's own (from [`fresh_database`]).
    pub async fn new(database_url: String, purpose: &str) -> Ground {
        let sandboxes =
            integration_service::sandbox::start(None, &telemetry::discard()).await.expect("simulators start");
        let storage_dir = std::env::temp_dir().join(format!("integration-service-{purpose}-{}", uuid::Uuid::new_v4()));
        Ground { database_url, sandboxes, storage_dir }
    }

    /// `DATABASE_URL` and `STORAGE_URL`, then `own` (the way of running's own settings), then
    /// the simulators', then the test's `settings`: a later one wins.
    pub fn settings(&self, own: &[(&str, &str)], settings: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut all = vec![
            ("DATABASE_URL".to_string(), self.database_url.clone()),
            ("STORAGE_URL".to_string(), format!("file://{}", self.storage_dir.display())),
        ];
        all.extend(own.iter().map(|(name, value)| (name.to_string(), value.to_string())));
        all.extend(self.sandboxes.settings().into_iter().map(|(name, value)| (name.to_string(), value)));
        all.extend(settings.iter().map(|(name, value)| (name.to_string(), value.to_string())));
        all
    }
}

/// A database URL of its own for one test: a fresh SQLite file or a fresh Postgres schema.
pub async fn fresh_database(db: Db) -> (String, Option<String>) {
    match db {
        Db::Sqlite => {
            let dir = std::env::temp_dir().join(format!("integration-service-test-{}", uuid::Uuid::new_v4()));
            (format!("sqlite://{}/test.db", dir.display()), None)
        }
        Db::Postgres => {
            let admin_url = std::env::var("TEST_POSTGRES_URL").expect("TEST_POSTGRES_URL");
            let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
            let admin = admin_pool(&admin_url).await;
            sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await.expect("create schema");
            admin.close().await;
            let sep = if admin_url.contains('?') { '&' } else { '?' };
            (format!("{admin_url}{sep}options=-c%20search_path%3D{schema}"), Some(schema))
        }
    }
}

/// Two instances on one fresh Postgres database, and a pool of the test's own on it for
/// statements run behind the instances' backs; `None` (said on stderr) without
/// `TEST_POSTGRES_URL`.
pub async fn two_instances_on_postgres() -> Option<(TestService, TestService, sqlx::AnyPool)> {
    if std::env::var("TEST_POSTGRES_URL").is_err() {
        eprintln!("skipped: TEST_POSTGRES_URL is not set");
        return None;
    }
    let (url, schema) = fresh_database(Db::Postgres).await;
    let first = TestService::start_on(url.clone(), schema, &[]).await;
    let second = TestService::start_on(url.clone(), None, &[]).await;
    sqlx::any::install_default_drivers();
    let sql = sqlx::AnyPool::connect(&url).await.expect("connect to the test's database");
    Some((first, second, sql))
}

/// Drops a schema made by [`fresh_database`].
pub async fn drop_schema(schema: &str) {
    let admin = admin_pool(&std::env::var("TEST_POSTGRES_URL").unwrap()).await;
    let _ = sqlx::query(AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await;
    admin.close().await;
}

async fn admin_pool(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let options = AnyConnectOptions::from_str(url).expect("TEST_POSTGRES_URL parses");
    AnyPoolOptions::new().max_connections(1).connect_with(options).await.expect("connect to TEST_POSTGRES_URL")
}

impl TestService {
    /// Starts the service on a free loopback port with these settings (on top of defaults).
    pub async fn start(db: Db, settings: &[(&str, &str)]) -> TestService {
        let (database_url, schema) = fresh_database(db).await;
        Self::start_on(database_url, schema, settings).await
    }

    /// [`Self::start`], with a user ([`EMAIL`]) and a token of theirs: the service and the token.
    pub async fn with_user(db: Db, settings: &[(&str, &str)]) -> (TestService, String) {
        let svc = Self::start(db, settings).await;
        let token = svc.user_token().await;
        (svc, token)
    }

    /// Starts the service on a database of the test's own (from [`fresh_database`]).
    pub async fn start_on(database_url: String, schema: Option<String>, settings: &[(&str, &str)]) -> TestService {
        let ground = Ground::new(database_url, "storage").await;
        let (leasing, erp) = (ground.sandboxes.leasing_base_url(), ground.sandboxes.erp_base_url());
        let fieldreport = ground.sandboxes.fieldreport_base_url();
        let settings = ground.settings(&[("BIND_ADDRESS", "127.0.0.1:0")], settings);
        let env: Vec<(&str, &str)> = settings.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        let config = Config::load_with(None, &env).expect("test configuration is valid");
        let secret_settings = ["PASSWORD", "SECRET", "API_KEY", "TOKEN"];
        let secrets: Vec<String> = env
            .iter()
            .filter(|(name, value)| secret_settings.iter().any(|s| name.contains(s)) && value.len() >= 6)
            .map(|(_, value)| value.to_string())
            .collect();
        let log = CapturedLog::default();
        let logger = telemetry::build(LogFormat::Json, log.clone());
        let service = server::start(&config, &logger).await.expect("service starts");
        contract::served_at(&service.url());
        TestService {
            base: service.url(),
            leasing,
            fieldreport,
            erp,
            config,
            storage_dir: ground.storage_dir,
            client: reqwest::Client::builder().build().unwrap(),
            database_url: ground.database_url,
            log,
            secrets: Arc::new(Mutex::new(secrets)),
            service: Some(service),
            schema,
        }
    }

    /// Injects a fault into this test's leasing simulator.
    pub async fn leasing_fault(&self, rule: serde_json::Value) {
        add_fault(&self.client, &self.leasing, rule).await;
    }

    /// The ERP simulator's host root (its `/__sandbox` routes), without the API path.
    pub fn erp_host(&self) -> &str {
        self.erp.trim_end_matches("/webapp/api/v1")
    }

    /// Tells this test's ERP simulator something through its `/__sandbox/{path}` route (`seed`,
    /// `behaviour`…), which must take it.
    pub async fn erp_sandbox(&self, path: &str, body: serde_json::Value) {
        let url = format!("{}/__sandbox/{path}", self.erp_host());
        let answer = self.client.post(url).json(&body).checked().await.unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
    }

    /// Seeds `count` generated records of `set` into this test's field-report simulator.
    pub async fn seed(&self, set: &str, count: u64) {
        seed(&self.client, &self.fieldreport, set, count).await;
    }

    /// The writes this test's field-report simulator has received, in order.
    pub async fn fieldreport_received(&self) -> Vec<serde_json::Value> {
        let url = format!("{}/__sandbox/received", self.fieldreport);
        self.client.get(url).checked().await.unwrap().json().await.unwrap()
    }

    /// A request to this test's field-report simulator's OData API (`path` below `/odata/`).
    pub fn odata(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        use integration_service::sandbox::fieldreport::{PASSWORD, USERNAME};
        self.client.request(method, format!("{}/odata/{path}", self.fieldreport)).basic_auth(USERNAME, Some(PASSWORD))
    }

    /// A request to this test's ERP simulator's API (`path` below its API root).
    pub fn erp_api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.erp);
        self.client.request(method, url).header("AuthenticationToken", integration_service::sandbox::erp::API_KEY)
    }

    /// How many requests this test's leasing simulator has received.
    pub async fn provider_request_count(&self) -> u64 {
        let url = format!("{}/__sandbox/stats", self.leasing);
        let stats = self.client.get(url).json_value().await;
        stats["requests"].as_u64().unwrap()
    }

    /// The binary with these arguments, on this test's database.
    pub fn command(&self, args: &[&str]) -> binary::Binary {
        binary::Binary::new(args).database(&self.database_url)
    }

    pub fn store(&self) -> &integration_service::store::Store {
        &self.service.as_ref().expect("running").store
    }

    /// Creates a user directly through the domain (as the CLI does).
    pub async fn create_user(&self, email: &str, password: &str) {
        self.create_user_as(email, password, false).await;
    }

    /// Creates a user, an operator when `operator` (as `user create --operator` does).
    pub async fn create_user_as(&self, email: &str, password: &str, operator: bool) {
        let auth = integration_service::auth::Authenticator::new(
            self.store().clone(),
            integration_service::auth::AuthConfig::default(),
        )
        .unwrap();
        auth.create_user(email, Some("Test User"), password, operator).await.expect("user created");
        self.remember_secret(password);
    }

    pub async fn login(&self, email: &str, password: &str) -> reqwest::Response {
        self.login_request(email, password).checked().await.expect("login request")
    }

    /// A login through a proxy that names `client` in `X-Forwarded-For` (the service must
    /// trust 127.0.0.1 as a proxy).
    pub async fn login_from(&self, client: &str, email: &str, password: &str) -> reqwest::Response {
        let request = self.login_request(email, password).header("x-forwarded-for", client);
        request.checked().await.expect("login request")
    }

    fn login_request(&self, email: &str, password: &str) -> reqwest::RequestBuilder {
        self.client.post(self.url("/api/v1/login")).json(&serde_json::json!({"email": email, "password": password}))
    }

    /// Logs in and returns the access token.
    pub async fn token(&self, email: &str, password: &str) -> String {
        let response = self.login(email, password).await;
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json_value().await;
        let token = body["access_token"].as_str().unwrap().to_string();
        self.remember_secret(&token);
        token
    }

    /// A secret the log must never show (checked by [`TestService::stop`]).
    pub fn remember_secret(&self, secret: &str) {
        self.secrets.lock().unwrap().push(secret.to_string());
    }

    /// Fails when any secret of this test appears in the service's log.
    pub fn assert_log_free_of_secrets(&self) {
        let log = self.log.text();
        for secret in self.secrets.lock().unwrap().iter() {
            assert!(!log.contains(secret.as_str()), "a secret of this test reached the service's log");
        }
    }

    /// Tokens of two more users: bob, an ordinary user, and root, an operator.
    pub async fn bob_and_root(&self) -> (String, String) {
        self.create_user("bob@example.com", "bob-password-1").await;
        let bob = self.token("bob@example.com", "bob-password-1").await;
        self.create_user_as("root@example.com", "root-password-1", true).await;
        let root = self.token("root@example.com", "root-password-1").await;
        (bob, root)
    }

    /// A user ([`EMAIL`], [`PASSWORD`]) and a token in one step.
    pub async fn user_token(&self) -> String {
        self.create_user(EMAIL, PASSWORD).await;
        self.token(EMAIL, PASSWORD).await
    }

    /// Stops the service and starts it again on the same database, storage and simulators, as
    /// an operator restarting the process would.
    pub async fn restart(&mut self) {
        if let Some(service) = self.service.take() {
            service.shutdown().await;
        }
        let logger = telemetry::build(LogFormat::Json, self.log.clone());
        let service = server::start(&self.config, &logger).await.expect("service restarts");
        self.base = service.url();
        contract::served_at(&self.base);
        self.service = Some(service);
    }

    /// Stops the service, checks that no secret reached its log, and drops the test's
    /// Postgres schema.
    pub async fn stop(mut self) {
        if let Some(service) = self.service.take() {
            service.shutdown().await;
        }
        self.assert_log_free_of_secrets();
        if let Some(schema) = self.schema.take() {
            let admin = admin_pool(&std::env::var("TEST_POSTGRES_URL").unwrap()).await;
            let _ = sqlx::query(AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await;
            admin.close().await;
        }
    }
}

/// A valid financing request for the leasing simulator; the company name picks its scenario
/// (e.g. `ACME [slow:5]`, `[declined]`).
pub fn leasing_request(company: &str) -> serde_json::Value {
    serde_json::json!({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit",
        "Lessee": {"CompanyName": company, "LegalFormId": 1, "Email": "lessee@example.com",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "Main"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "NetPricePerObject": 1299.0}]
    })
}

/// Asserts the common error shape and returns the body.
pub async fn error_body(response: reqwest::Response, status: u16) -> serde_json::Value {
    assert_eq!(response.status().as_u16(), status, "unexpected status");
    let header_id = response.headers().get("x-request-id").expect("x-request-id header").to_str().unwrap().to_string();
    let body: serde_json::Value = response.json().await.expect("error body is JSON");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "message in {body}");
    assert!(body["error_code"].as_str().is_some_and(|c| !c.is_empty()), "error_code in {body}");
    assert_eq!(body["request_id"].as_str(), Some(header_id.as_str()), "request_id in {body}");
    body
}

/// Adds a fault rule to the simulator at host root `root` (its `/__sandbox/faults`).
pub async fn add_fault(client: &reqwest::Client, root: &str, rule: serde_json::Value) {
    let answer = client.post(format!("{root}/__sandbox/faults")).json(&rule).checked().await.unwrap();
    assert_eq!(answer.status(), 204);
}

/// Removes every fault rule of the simulator at host root `root`.
pub async fn clear_faults(client: &reqwest::Client, root: &str) {
    let answer = client.delete(format!("{root}/__sandbox/faults")).checked().await.unwrap();
    assert_eq!(answer.status(), 204);
}

/// Seeds `count` generated records of `set` into the field-report simulator at host root `root`.
pub async fn seed(client: &reqwest::Client, root: &str, set: &str, count: u64) {
    let url = format!("{root}/__sandbox/seed");
    let answer = client.post(url).json(&serde_json::json!({"set": set, "count": count})).checked().await.unwrap();
    assert_eq!(answer.status(), 200);
}

/// Runs a statement on `pool` (a connection of the test's own, behind the service's back).
pub async fn execute(pool: &sqlx::AnyPool, statement: &str) {
    sqlx::query(AssertSqlSafe(statement.to_string())).execute(pool).await.unwrap();
}

/// The records of an ERP list answer (`{"result": […]}`) by id: their versions.
/// An incremental pull of every ERP model (`GET /api/v1/erp/get`): the report of `model`'s.
pub async fn erp_pull_report(svc: &TestService, token: &str, model: &str) -> serde_json::Value {
    let pulls = svc.get_json(token, "/api/v1/erp/get").await;
    let report = pulls["data"].as_array().unwrap().iter().find(|r| r["model"] == model).cloned();
    report.unwrap_or_else(|| panic!("no pull of {model}: {pulls}"))
}

pub fn erp_versions(list: &serde_json::Value) -> std::collections::BTreeMap<String, serde_json::Value> {
    let records = list["result"].as_array().unwrap().iter();
    records.map(|c| (c["id"].as_str().unwrap().to_string(), c["version"].clone())).collect()
}

/// The ERP mirror's records of `model` by id: their versions, written as the ERP writes them.
pub async fn mirrored_erp_versions(
    store: &integration_service::store::Store,
    model: &str,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let records = store.erp_all(model).await.unwrap().into_iter();
    records.map(|record| (record.id, serde_json::json!(record.version.to_string()))).collect()
}
