//! Postgres: the connections that write a sync's batches into the mirror, by `COPY`.
//!
//! A batch of records that the set does not hold goes into the mirror by one
//! `COPY … FROM STDIN (FORMAT binary)`. Any other batch goes into `sync_page`, a temporary
//! table of each of these connections that empties at every commit, the same way, and one
//! `INSERT … SELECT … ON CONFLICT` moves it into the mirror. Neither sends a statement of
//! thousands of parameters: Postgres's CPU time for a sync of 100,000 new companies with
//! their expands was 0.78-0.86 s by multi-row `INSERT`s of 1,000 records, 0.72-0.74 s by
//! `COPY` (three syncs each, fresh database). The upsert through `sync_page` costs what the
//! multi-row `INSERT … ON CONFLICT` did, without its chunks of the protocol's 65,535
//! parameters.
//!
//! sqlx's `Any` driver, which the rest of the store uses, has no `COPY`: these connections are
//! Postgres's own, in a small pool of their own (one per write of a sync in flight).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Executor, Postgres, Transaction};

use super::sync_page::SyncedRecord;
use crate::store::error::StoreError;

/// The staging table of a sync's batch: the mirror's columns that a sync writes.
const CREATE_SYNC_PAGE: &str = "CREATE TEMPORARY TABLE sync_page \
     (record_id TEXT NOT NULL, version BIGINT NOT NULL, external_id TEXT, document TEXT NOT NULL) \
     ON COMMIT DELETE ROWS";

const COPY_SYNC_PAGE: &str = "COPY sync_page (record_id, version, external_id, document) FROM STDIN (FORMAT binary)";

/// The mirror's columns that a sync writes, with the set and the time of the write (the
/// columns a record's fields come in, see [`binary_rows`]).
const COPY_MIRROR: &str = "COPY fieldreport_records \
     (record_id, version, external_id, document, entity, created_at, updated_at, change_seq) FROM STDIN (FORMAT binary)";

/// The pool of connections that write sync batches.
#[derive(Debug)]
pub(crate) struct SyncWriters {
    pool: PgPool,
}

impl SyncWriters {
    /// Connects lazily, when a sync first writes; `connections` at most.
    pub fn new(url: &str, connections: u32) -> Result<SyncWriters, StoreError> {
        let options = PgConnectOptions::from_str(url).map_err(|e| StoreError::Unavailable(e.to_string()))?;
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .idle_timeout(Duration::from_secs(600))
            .max_lifetime(Duration::from_secs(1800))
            // A sync's write waits for the writes of other syncs to end (tens of milliseconds).
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    conn.execute(super::pool::POSTGRES_SESSION_SETTINGS).await?;
                    conn.execute(CREATE_SYNC_PAGE).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        Ok(SyncWriters { pool })
    }

    /// A transaction that commits without waiting for the WAL flush: a crash before the flush
    /// may lose the batches since the last flushed commit, which the next sync fetches again
    /// (the sync's cursor is recorded at its end, in a flushed commit).
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        tx.execute("SELECT set_config('synchronous_commit', 'off', true)").await?;
        Ok(tx)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Puts `records` into the transaction's (empty) `sync_page`.
pub(in crate::store) async fn stage(
    tx: &mut Transaction<'static, Postgres>,
    records: &[&SyncedRecord],
) -> Result<(), StoreError> {
    copy_in(tx, COPY_SYNC_PAGE, records, None).await
}

/// Inserts `records` of `entity` into the mirror, written at `now`, numbered in the set's
/// change feed from `first_seq` on; fails on the record key ([`StoreError::Duplicate`]) when
/// the set holds one of them.
pub(in crate::store) async fn insert(
    tx: &mut Transaction<'static, Postgres>,
    entity: &str,
    now: i64,
    first_seq: i64,
    records: &[&SyncedRecord],
) -> Result<(), StoreError> {
    copy_in(tx, COPY_MIRROR, records, Some(Written { entity, now, first_seq })).await
}

/// What a `COPY` into the mirror itself adds to each record: its set, the time of the write
/// (`created_at`, `updated_at`) and its change number (the first record's is `first_seq`).
#[derive(Clone, Copy)]
struct Written<'a> {
    entity: &'a str,
    now: i64,
    first_seq: i64,
}

/// One `COPY` of `records` (see [`binary_rows`]).
async fn copy_in(
    tx: &mut Transaction<'static, Postgres>,
    statement: &str,
    records: &[&SyncedRecord],
    written: Option<Written<'_>>,
) -> Result<(), StoreError> {
    let rows = binary_rows(records, written)?;
    let mut copy = tx.copy_in_raw(statement).await?;
    copy.send(rows).await?;
    copy.finish().await?;
    Ok(())
}

/// `records` in `COPY`'s binary format: the header, each record as its fields, and the
/// trailer. A record's fields are its id, version, `ExternalId` and document, followed by
/// `written`'s set, time twice (`created_at`, `updated_at`) and the record's change number
/// when given: each as its
/// length and its bytes (a text's UTF-8, a number's eight bytes big-endian), `-1` for a
/// missing `ExternalId`. Nothing in a value is escaped or can end it early.
fn binary_rows(records: &[&SyncedRecord], written: Option<Written<'_>>) -> Result<Vec<u8>, StoreError> {
    const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";
    let size: usize = records
        .iter()
        .map(|r| 2 + 8 * 4 + 8 * 4 + r.id.len() + r.external_id.as_deref().map_or(0, str::len) + r.document.get().len())
        .sum();
    let mut rows = Vec::with_capacity(SIGNATURE.len() + 8 + size + 2);
    rows.extend_from_slice(SIGNATURE);
    rows.extend_from_slice(&0i32.to_be_bytes()); // flags
    rows.extend_from_slice(&0i32.to_be_bytes()); // header extension's length
    let fields: i16 = if written.is_some() { 8 } else { 4 };
    for (n, record) in records.iter().enumerate() {
        rows.extend_from_slice(&fields.to_be_bytes());
        field(&mut rows, Some(record.id.as_bytes()))?;
        field(&mut rows, Some(&record.version.to_be_bytes()))?;
        field(&mut rows, record.external_id.as_deref().map(str::as_bytes))?;
        field(&mut rows, Some(record.document.get().as_bytes()))?;
        if let Some(Written { entity, now, first_seq }) = written {
            field(&mut rows, Some(entity.as_bytes()))?;
            field(&mut rows, Some(&now.to_be_bytes()))?;
            field(&mut rows, Some(&now.to_be_bytes()))?;
            field(&mut rows, Some(&(first_seq + n as i64).to_be_bytes()))?;
        }
    }
    rows.extend_from_slice(&(-1i16).to_be_bytes());
    Ok(rows)
}

fn field(rows: &mut Vec<u8>, value: Option<&[u8]>) -> Result<(), StoreError> {
    match value {
        Some(bytes) => {
            let length = i32::try_from(bytes.len())
                .map_err(|_| StoreError::Query(format!("a synced value of {} bytes is too long", bytes.len())))?;
            rows.extend_from_slice(&length.to_be_bytes());
            rows.extend_from_slice(bytes);
        }
        None => rows.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local port of this process's TCP socket `fd`; `None` for any other descriptor.
    fn local_tcp_port(fd: i32) -> Option<u16> {
        let mut address: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut length = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `address` is a writable sockaddr_storage of `length` bytes.
        let named = unsafe { libc::getsockname(fd, (&raw mut address).cast(), &mut length) };
        if named != 0 {
            return None;
        }
        // SAFETY: the family says which of the address types was written.
        match i32::from(address.ss_family) {
            libc::AF_INET => Some(u16::from_be(unsafe { *(&raw const address).cast::<libc::sockaddr_in>() }.sin_port)),
            libc::AF_INET6 => {
                Some(u16::from_be(unsafe { *(&raw const address).cast::<libc::sockaddr_in6>() }.sin6_port))
            }
            _ => None,
        }
    }

    /// Whether Nagle's algorithm is off (`TCP_NODELAY`) on TCP socket `fd`.
    fn sends_without_delay(fd: i32) -> bool {
        let mut value: libc::c_int = 0;
        let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` is a writable c_int of `length` bytes.
        let read =
            unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&raw mut value).cast(), &mut length) };
        assert_eq!(read, 0, "getsockopt(TCP_NODELAY): {}", std::io::Error::last_os_error());
        value != 0
    }

    /// sqlx's Postgres connections send each write at once (`TCP_NODELAY`, the patch of
    /// vendor/sqlx-core; see Cargo.toml): without it, the `CopyDone` that follows a `COPY`'s
    /// data waited for the server's delayed ACK, 40 ms for about a third of a sync's batches.
    /// The connection's socket is found by the port the server sees it from.
    #[tokio::test]
    async fn postgres_connections_send_each_write_at_once() {
        let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
            eprintln!("skipped: TEST_POSTGRES_URL is not set");
            return;
        };
        let writers = SyncWriters::new(&url, 1).unwrap();
        let mut tx = writers.begin().await.unwrap();
        let port: Option<i32> = sqlx::query_scalar("SELECT inet_client_port()").fetch_one(&mut *tx).await.unwrap();
        let Some(port) = port.and_then(|port| u16::try_from(port).ok()) else {
            eprintln!("skipped: TEST_POSTGRES_URL connects by a Unix socket");
            return;
        };
        let sockets: Vec<i32> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&fd| local_tcp_port(fd) == Some(port))
            .collect();
        assert_eq!(sockets.len(), 1, "the connection's socket, from port {port}");
        assert!(sends_without_delay(sockets[0]), "TCP_NODELAY is off on the connection's socket");
        drop(tx);
        writers.close().await;
    }

    #[test]
    fn binary_rows_frame_each_field_by_its_length() {
        let mut record = SyncedRecord::named(7, r"A\tB");
        record.external_id = Some("x".into());
        let plain = SyncedRecord::named("", "");
        let rows = binary_rows(&[&record, &plain], None).unwrap();
        let document = br#"{"Id":"7","Name":"A\tB"}"#;
        let mut expected = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
        expected.extend_from_slice(&[0, 4, 0, 0, 0, 1, b'7', 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, b'x']);
        expected.extend_from_slice(&(document.len() as i32).to_be_bytes());
        expected.extend_from_slice(document);
        expected.extend_from_slice(&[0, 4, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        let empty = br#"{"Id":"","Name":""}"#;
        expected.extend_from_slice(&(empty.len() as i32).to_be_bytes());
        expected.extend_from_slice(empty);
        expected.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(rows, expected);

        let rows = binary_rows(&[&plain], Some(Written { entity: "tags", now: 258, first_seq: 3 })).unwrap();
        let fields = &rows[19..rows.len() - 2];
        assert_eq!(&fields[..2], &[0, 8]);
        let tail = [
            &[0, 0, 0, 4][..],
            b"tags",
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2],
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2],
            &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 3],
        ];
        assert!(fields.ends_with(&tail.concat()), "{fields:?}");
        // The field count, an empty id, the version, no ExternalId, the document, then the tail.
        assert_eq!(fields.len(), 2 + 4 + 12 + 4 + 4 + empty.len() + tail.concat().len());
    }
}
