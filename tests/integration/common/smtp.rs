//! A real SMTP server on loopback for tests: PyPI's `aiosmtpd` run by `python3` with a small
//! handler that writes every received message (envelope and content) as one JSON file.
//!
//! `SmtpServer::start().await` listens on a free port of 127.0.0.1 (the operating system picks
//! it, so parallel tests never collide); `messages()` reads what arrived and `wait_for(n)` polls
//! until `n` messages are there. The process is killed when the `SmtpServer` is dropped.
//! Without aiosmtpd the test fails, saying how to install it ([`AIOSMTPD_VERSION`]).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// The aiosmtpd release the tests are run with (`.ci/run` installs the same).
pub const AIOSMTPD_VERSION: &str = "1.4.6";

/// Serves SMTP on 127.0.0.1 with an OS-assigned port, printed as `PORT <n>` once listening.
/// argv: output folder. Environment: SMTP_TEST_USER / SMTP_TEST_PASSWORD require AUTH with
/// exactly these credentials (over plain SMTP, which is fine on loopback).
const SERVER_SCRIPT: &str = r#"
import asyncio, json, os, sys
try:
    from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
except ImportError as error:
    print(f"AIOSMTPD-MISSING {error}", file=sys.stderr, flush=True)
    sys.exit(3)

out = sys.argv[1]
user = os.environ.get("SMTP_TEST_USER")
password = os.environ.get("SMTP_TEST_PASSWORD")
count = 0

def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == user and auth_data.password.decode() == password)
    # handled=False: aiosmtpd answers a failure with 535 itself.
    return AuthResult(success=ok, handled=False, auth_data=auth_data.login.decode() if ok else None)

class Handler:
    async def handle_DATA(self, server, session, envelope):
        global count
        count += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data": envelope.original_content.decode("utf-8", "replace"),
            "login": session.auth_data if isinstance(session.auth_data, str) else None,
        }
        path = os.path.join(out, f"{count:06d}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)
        return "250 Message accepted for delivery"

def factory():
    if user is None:
        return SMTP(Handler(), hostname="smtp.test")
    return SMTP(Handler(), hostname="smtp.test", authenticator=authenticator,
                auth_required=True, auth_require_tls=False)

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory, host="127.0.0.1", port=0)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"#;

/// One message as the server received it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ReceivedMail {
    /// `MAIL FROM` of the envelope.
    pub mail_from: String,
    /// `RCPT TO` of the envelope, in order.
    pub rcpt_tos: Vec<String>,
    /// The message as sent (headers and body).
    pub data: String,
    /// The user name the client authenticated as, when the server required AUTH.
    pub login: Option<String>,
}

impl ReceivedMail {
    /// The value of the first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if let Some(v) = value.as_mut() {
                if line.starts_with([' ', '\t']) {
                    v.push_str(line);
                    continue;
                }
                break;
            }
            if let Some((key, rest)) = line.split_once(':')
                && key.eq_ignore_ascii_case(name)
            {
                value = Some(rest.trim().to_string());
            }
        }
        value
    }

    /// The body after the header block.
    /// The body, decoded when it was sent quoted-printable (HTML mails are).
    pub fn body(&self) -> String {
        let raw = self.data.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
        let quoted =
            self.header("Content-Transfer-Encoding").is_some_and(|e| e.eq_ignore_ascii_case("quoted-printable"));
        if quoted { decode_quoted_printable(raw) } else { raw.to_string() }
    }
}

/// A running aiosmtpd; killed on drop.
pub struct SmtpServer {
    pub port: u16,
    dir: PathBuf,
    child: Child,
}

impl SmtpServer {
    /// Starts a server accepting any mail without authentication.
    pub async fn start() -> SmtpServer {
        Self::launch(None).await
    }

    /// Starts a server that requires `AUTH` with exactly these credentials.
    pub async fn start_with_auth(user: &str, password: &str) -> SmtpServer {
        Self::launch(Some((user, password))).await
    }

    /// `smtp://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    async fn launch(credentials: Option<(&str, &str)>) -> SmtpServer {
        let dir = std::env::temp_dir().join(format!("integration-service-smtp-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("create the SMTP test folder");
        let script = dir.join("smtp_server.py");
        std::fs::write(&script, SERVER_SCRIPT).expect("write the SMTP server script");
        let received = dir.join("received");
        std::fs::create_dir_all(&received).expect("create the received folder");
        let mut command = Command::new("python3");
        command
            .arg(&script)
            .arg(&received)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some((user, password)) = credentials {
            command.env("SMTP_TEST_USER", user).env("SMTP_TEST_PASSWORD", password);
        }
        let mut child = command.spawn().unwrap_or_else(|e| {
            panic!("cannot run python3 for the test SMTP server ({e}); run the suite with `cargo xtask test`, which sets up Python and aiosmtpd=={AIOSMTPD_VERSION}")
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await;
        let port = match first {
            Ok(Ok(Some(line))) => line.strip_prefix("PORT ").and_then(|p| p.trim().parse::<u16>().ok()),
            _ => None,
        };
        let Some(port) = port else {
            let _ = child.start_kill();
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = tokio::time::timeout(Duration::from_secs(5), pipe.read_to_string(&mut stderr)).await;
            }
            if stderr.contains("AIOSMTPD-MISSING") {
                panic!(
                    "the SMTP tests need the Python package aiosmtpd=={AIOSMTPD_VERSION}: run the suite with `cargo xtask test`, which installs it ({})",
                    stderr.trim()
                );
            }
            panic!("the test SMTP server did not start: {}", stderr.trim());
        };
        // Keep draining stdout so that the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
        let server = SmtpServer { port, dir, child };
        server.wait_until_accepting().await;
        server
    }

    async fn wait_until_accepting(&self) {
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the test SMTP server on port {} does not accept connections", self.port);
    }

    /// Every message received so far, in arrival order.
    pub async fn messages(&self) -> Vec<ReceivedMail> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir.join("received"))
            .expect("read the received folder")
            .map(|entry| entry.expect("a folder entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).expect("read a received message");
                serde_json::from_str(&text).expect("a received message is JSON")
            })
            .collect()
    }

    /// Polls (bounded, about 20 s) until at least `count` messages arrived; returns them all.
    pub async fn wait_for(&self, count: usize) -> Vec<ReceivedMail> {
        for _ in 0..400 {
            let messages = self.messages().await;
            if messages.len() >= count {
                return messages;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let arrived = self.messages().await.len();
        panic!("expected {count} message(s) at the test SMTP server, {arrived} arrived");
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Undoes quoted-printable: soft line breaks (`=` at a line end) and `=XX` escapes.
fn decode_quoted_printable(text: &str) -> String {
    let joined = text.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'=' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
