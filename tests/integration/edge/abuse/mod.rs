//! Abuse at the HTTP edge, over real HTTP (raw TCP where a client library would clean the
//! bytes up): SQL-injection strings in every parameter and body string, path traversal,
//! oversized and malformed bodies, numbers beyond 64 bits, invalid UTF-8, clients that send
//! their headers a byte at a time, and bursts of requests sent at once against per-user
//! bounds. The raw exchange and the look at the database that the scenarios share are here;
//! the scenarios are in the modules below, by kind.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::str::FromStr;

use crate::common::{Db, TestService};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod bodies;
mod bursts;
mod creates;
mod exports;
mod held_calls;
mod injection;
mod log_lines;
mod mails;
mod neighbours;
mod nul;
mod scopes;
mod stored;
mod traversal;

const INJECTIONS: &[&str] =
    &["' OR 1=1 --", "1; DROP TABLE users; --", "\"'); DELETE FROM users; DROP TABLE personal_access_tokens; --"];

/// The status and body of one raw HTTP/1.1 exchange (`connection: close` is added). The
/// request goes out in one write: the server may answer a bad request line and close before
/// the rest arrives, and a later write would then fail (seen once, writing the blank line).
async fn raw(address: SocketAddr, head: &[u8], body: &[u8]) -> (u16, String) {
    let mut request = head.to_vec();
    request.extend_from_slice(b"connection: close\r\n");
    if !body.is_empty() {
        request.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(body);
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(&request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {answer}"));
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// A raw request held open on a connection of its own, with its head written. The connection
/// takes a few KiB of the answer at a time (a small receive buffer), as a client that reads
/// nothing would, so that a long answer stays in flight at the service.
async fn held(svc: &TestService, token: &str, method: &str, path: &str, body: Option<serde_json::Value>) -> TcpStream {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(address(svc)).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

fn address(svc: &TestService) -> SocketAddr {
    svc.service.as_ref().expect("running").address
}

/// A second connection to the test's database, to look at it as an operator would.
async fn database(svc: &TestService) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let options = AnyConnectOptions::from_str(&svc.database_url).unwrap();
    AnyPoolOptions::new().max_connections(1).connect_with(options).await.unwrap()
}

async fn tables(pool: &sqlx::AnyPool, db: Db) -> BTreeSet<String> {
    let sql = match db {
        Db::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        Db::Postgres => {
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
        }
    };
    sqlx::query_scalar::<_, String>(sql).fetch_all(pool).await.unwrap().into_iter().collect()
}

async fn count(pool: &sqlx::AnyPool, table: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
        .fetch_one(pool)
        .await
        .unwrap()
}
