//! The real service binary as a process of its own, for tests that kill it (SIGKILL) and start
//! it again on the same database; the simulators run in the test, so they outlive the kill
//! and can tell what reached them.

use super::{Api, JsonAnswer};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Child, Command};

use integration_service::sandbox::fieldreport::{PASSWORD as FIELDREPORT_PASSWORD, USERNAME};
use integration_service::store::DatabaseUrl;
use integration_service::store::Store;
use serde_json::{Value, json};

use super::binary::Binary;
use super::{Db, Ground, fresh_database};

pub const WEBHOOK_SECRET: &str = "crash-test-webhook-secret";
pub const EMAIL: &str = "ops@example.com";
pub const PASSWORD: &str = "a long passphrase";

/// One service process and what it needs to be started again.
pub struct Instance {
    env: Vec<(String, String)>,
    child: Option<Child>,
    log_file: std::path::PathBuf,
    pub base: String,
    pub client: reqwest::Client,
    schema: Option<String>,
}

impl Instance {
    /// A fresh database and simulators, the service started on them with `settings` besides
    /// its own; the user [`EMAIL`] exists.
    pub async fn start(
        db: Db,
        settings: &[(&str, &str)],
    ) -> (Instance, integration_service::sandbox::Sandboxes, Store) {
        let (database_url, schema) = fresh_database(db).await;
        let ground = Ground::new(database_url, "crash").await;
        std::fs::create_dir_all(&ground.storage_dir).unwrap();
        let own = [
            ("WORK_LEASE_SECONDS", "1"),
            ("ERP_WEBHOOK_SECRET", WEBHOOK_SECRET),
            ("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32"),
            ("LOG_FORMAT", "json"),
        ];
        let env = ground.settings(&own, settings);
        let mut instance = Instance {
            env,
            child: None,
            log_file: ground.storage_dir.join("service.log"),
            base: String::new(),
            client: reqwest::Client::new(),
            schema,
        };
        instance.spawn();
        let url = DatabaseUrl::new(ground.database_url.clone());
        let store = Store::connect(&url).await.expect("the test reaches the database");
        let auth = integration_service::auth::Authenticator::new(
            store.clone(),
            integration_service::auth::AuthConfig::default(),
        )
        .unwrap();
        auth.create_user(EMAIL, Some("Ops"), PASSWORD, false).await.unwrap();
        (instance, ground.sandboxes, store)
    }

    /// Starts the process and waits until it listens.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log_file).unwrap();
        let mut child =
            Binary::new(["serve", "--bind", "127.0.0.1:0"]).envs(self.env.iter().cloned()).stderr(log).spawn();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the service ended before it listened");
            if let Some(address) = line.trim().strip_prefix("integration-service listening on ") {
                self.base = address.to_string();
                super::contract::served_at(&self.base);
                break;
            }
        }
        // Keep reading stdout so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in stdout.lines() {});
        self.child = Some(child);
    }

    /// SIGKILL: no shutdown, no flushing, no releasing of claims.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        child.wait().unwrap();
    }

    pub fn restart(&mut self) {
        self.spawn();
    }

    /// SIGTERM, and waits until the process has stopped (it finishes the requests in flight);
    /// [`Instance::restart`] starts it again.
    pub fn terminate(&mut self) {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        child.wait().unwrap();
    }

    /// What the service has written to its log so far (stderr; complete once it has stopped).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    /// Runs a command of the binary with the service's settings (its database, the simulators).
    pub async fn command(&self, args: &[&str]) -> std::process::Output {
        Binary::new(args).envs(self.env.iter().cloned()).output_async().await
    }

    pub async fn token(&self) -> String {
        let login = json!({"email": EMAIL, "password": PASSWORD});
        let answer = self.client.post(self.url("/api/v1/login")).json(&login).json_value().await;
        answer["access_token"].as_str().expect("a token").to_string()
    }

    /// Stops the process, checks that no secret reached its log, drops the test's schema.
    pub async fn stop(mut self, secrets: &[&str]) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            child.wait().unwrap();
        }
        let log = std::fs::read_to_string(&self.log_file).unwrap_or_default();
        for secret in secrets.iter().chain([&PASSWORD, &WEBHOOK_SECRET]) {
            assert!(!log.contains(secret), "a secret reached the service's log");
        }
        if let Some(schema) = self.schema.take() {
            super::drop_schema(&schema).await;
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The field-report simulator's host root (its sets live under `/odata/`).
pub fn odata_root(sandboxes: &integration_service::sandbox::Sandboxes) -> String {
    sandboxes.fieldreport_base_url().trim_end_matches('/').to_string()
}

/// Every record of a set at the simulator, by Id (following its next links).
pub async fn upstream_records(client: &reqwest::Client, root: &str, set: &str) -> BTreeMap<String, Value> {
    let mut records = BTreeMap::new();
    let mut next = Some(format!("{root}/odata/{set}"));
    while let Some(url) = next {
        let page = client.get(&url).basic_auth(USERNAME, Some(FIELDREPORT_PASSWORD)).json_value().await;
        for record in page["value"].as_array().unwrap() {
            records.insert(record["Id"].as_str().unwrap().to_string(), record.clone());
        }
        next = page["@odata.nextLink"].as_str().map(|link| {
            if link.starts_with("http") {
                link.to_string()
            } else if link.starts_with('/') {
                format!("{root}{link}")
            } else {
                format!("{root}/odata/{link}")
            }
        });
    }
    records
}
