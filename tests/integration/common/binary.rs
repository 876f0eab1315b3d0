//! The built service binary as a process of its own: the one builder every test that runs it
//! uses, for a command (`migrate`, `user create`, `erp webhooks register`, …) or for `serve`
//! ([`super::process::Instance`]). It starts from an empty environment, so a test says all it
//! runs on: a database, its simulators, settings.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use super::{BINARY, TestService};

/// A run of the binary being set up.
pub struct Binary {
    command: Command,
    stdin: Option<String>,
    stderr_set: bool,
}

impl Binary {
    /// The binary with these arguments and no environment.
    pub fn new<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Binary {
        let mut command = Command::new(BINARY);
        command.args(args).env_clear();
        Binary { command, stdin: None, stderr_set: false }
    }

    /// More arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Binary {
        self.command.args(args);
        self
    }

    /// One setting.
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Binary {
        self.command.env(name, value);
        self
    }

    /// Settings.
    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut self, settings: impl IntoIterator<Item = (K, V)>) -> Binary {
        self.command.envs(settings);
        self
    }

    /// `DATABASE_URL`.
    pub fn database(self, url: &str) -> Binary {
        self.env("DATABASE_URL", url)
    }

    /// The field-report settings that reach `svc`'s simulator.
    pub fn fieldreport(self, svc: &TestService) -> Binary {
        self.env("FIELDREPORT_BASE_URL", &svc.fieldreport)
            .env("FIELDREPORT_USERNAME", integration_service::sandbox::fieldreport::USERNAME)
            .env("FIELDREPORT_PASSWORD", integration_service::sandbox::fieldreport::PASSWORD)
    }

    /// The ERP settings that reach `svc`'s simulator.
    pub fn erp(self, svc: &TestService) -> Binary {
        self.env("ERP_BASE_URL", &svc.erp).env("ERP_API_KEY", integration_service::sandbox::erp::API_KEY)
    }

    /// The folder the process runs in.
    pub fn current_dir(mut self, dir: &Path) -> Binary {
        self.command.current_dir(dir);
        self
    }

    /// What the process reads on stdin (else it reads an end at once).
    pub fn stdin(mut self, input: &str) -> Binary {
        self.stdin = Some(input.to_string());
        self
    }

    /// Where the process's stderr goes when spawned (piped unless said).
    pub fn stderr(mut self, stderr: impl Into<Stdio>) -> Binary {
        self.command.stderr(stderr);
        self.stderr_set = true;
        self
    }

    /// Runs it to its end and returns what it printed.
    pub fn output(mut self) -> Output {
        let Some(input) = self.stdin.take() else {
            return self.command.output().expect("the binary runs");
        };
        let mut child = self
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs it to its end without blocking the test's runtime.
    pub async fn output_async(self) -> Output {
        assert!(self.stdin.is_none(), "output_async reads no stdin");
        let mut command = tokio::process::Command::from(self.command);
        command.stdin(Stdio::null()).output().await.expect("the binary runs")
    }

    /// Starts it with stdout piped (and stderr, unless [`Binary::stderr`] said otherwise).
    pub fn spawn(mut self) -> Child {
        assert!(self.stdin.is_none(), "spawn reads no stdin");
        if !self.stderr_set {
            self.command.stderr(Stdio::piped());
        }
        self.command.stdout(Stdio::piped()).spawn().expect("the binary runs")
    }
}

/// Runs a command of the binary on `database_url`, with `stdin` when given.
pub fn cli(database_url: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let binary = Binary::new(args).database(database_url);
    match stdin {
        Some(input) => binary.stdin(input),
        None => binary,
    }
    .output()
}

/// Bytes a process printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
