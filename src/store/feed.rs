//! The change feed of the two mirrors (migration 0029; docs/architecture.md, "The change
//! feed"): per set, every record numbered by its last write (`change_seq`) and every removal
//! kept as a numbered tombstone (`mirror_removals`), both read in number order after a
//! consumer's position. The numbers of a set come from its row in `mirror_feed`, taken in the
//! writing transaction, so they are in commit order; on Postgres a sync's writer reserves them
//! instead (migration 0033), so that two of its batches are written at once, and a reader does
//! not pass the first number of a reservation not yet committed: either way, a reader never
//! sees a number after one that may still be committed.

use serde_json::value::RawValue;
use sqlx::Row;

use crate::store::{Dialect, Store, StoreError};

/// Which mirror a set belongs to, as `mirror_feed.mirror` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    FieldReport,
    Erp,
}

impl Mirror {
    pub fn name(self) -> &'static str {
        match self {
            Mirror::FieldReport => "fieldreport",
            Mirror::Erp => "erp",
        }
    }

    /// The mirror's table of records and its column naming a record's set.
    fn records(self) -> (&'static str, &'static str) {
        match self {
            Mirror::FieldReport => ("fieldreport_records", "entity"),
            Mirror::Erp => ("erp_records", "model"),
        }
    }
}

/// The records of a set after a number, in number order (`$1` the set, `$2` the number, `$3`
/// how many), beside its removals: one statement, so that both are read at one moment (a
/// record written between two statements could be numbered before a removal that the second
/// one reads, and be skipped).
///
/// A removal whose id the set holds again, numbered before the removal, comes as that record
/// (an upsert) instead. The record was written after the removal (it removed every record of
/// that id), though numbered before it: on Postgres a sync's batch reserves its numbers before
/// it writes, and a local delete of a record in the batch can take its number in between (the
/// batch waits for the delete's lock on the record, then writes it again). As a removal, a
/// copy following the feed would lose the record the mirror holds.
fn changes_statement(mirror: Mirror, dialect: Dialect) -> sqlx::AssertSqlSafe<String> {
    let (table, set) = mirror.records();
    let name = mirror.name();
    let (bound, before) = passable_bound(mirror, dialect);
    sql!(
        "{bound}SELECT change_seq, record_id, document FROM \
           (SELECT change_seq, record_id, document FROM {table} \
            WHERE {set} = $1 AND change_seq > $2{before} ORDER BY change_seq LIMIT $3) AS written \
         UNION ALL \
         SELECT removed.change_seq, removed.record_id, again.document FROM \
           (SELECT change_seq, record_id FROM mirror_removals \
            WHERE mirror = '{name}' AND entity = $1 AND change_seq > $2{before} ORDER BY change_seq LIMIT $3) AS removed \
           LEFT JOIN {table} again ON again.{set} = $1 AND LENGTH(again.record_id) = LENGTH(removed.record_id) \
             AND again.record_id = removed.record_id AND again.change_seq < removed.change_seq \
         ORDER BY change_seq LIMIT $3"
    )
}

/// Postgres: the changes a reader may pass end before the first number reserved by a writer
/// that has not committed as of the statement's snapshot (`mirror_feed_passable`, migration
/// 0033): a `WITH` clause to put before the statement, and the condition on `change_seq`.
/// The bound is taken once for both halves of the read: the function reads a writer's live
/// status, so taken once a half it could differ when a writer rolls back between the two; the
/// removals could then pass numbers that the records do not, and a consumer going on from the
/// last removal would skip those records. SQLite reserves nothing.
fn passable_bound(mirror: Mirror, dialect: Dialect) -> (String, &'static str) {
    match dialect {
        Dialect::Postgres => (
            format!("WITH bound AS MATERIALIZED (SELECT mirror_feed_passable('{}', $1) AS seq) ", mirror.name()),
            " AND change_seq <= (SELECT seq FROM bound)",
        ),
        Dialect::Sqlite => (String::new(), ""),
    }
}

/// One change of a set: a record as it is now stored, or the id of one removed.
#[derive(Debug)]
pub struct Change {
    pub seq: i64,
    pub id: String,
    /// The stored document; `None` for a removal.
    pub document: Option<Box<RawValue>>,
}

/// Where a set's feed stands: its last number, the newest number of a removal no longer kept
/// (a consumer behind it may have missed that removal), and the history its numbers count in
/// (migration 0038: a restore begins another), with whether positions answered without one
/// are still followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeedPosition {
    pub last_seq: i64,
    pub expired_through: i64,
    pub generation: i64,
    pub legacy_positions: bool,
}

impl Store {
    /// Up to `limit` changes of `entity` after number `since`, in number order.
    pub async fn feed_changes(
        &self,
        mirror: Mirror,
        entity: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<Change>, StoreError> {
        let rows = sqlx::query(changes_statement(mirror, self.dialect()))
            .bind(entity)
            .bind(since)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| {
                let document: Option<String> = row.try_get("document")?;
                let document = document
                    .map(RawValue::from_string)
                    .transpose()
                    .map_err(|e| StoreError::Query(format!("a stored document is not JSON: {e}")))?;
                Ok(Change { seq: row.try_get("change_seq")?, id: row.try_get("record_id")?, document })
            })
            .collect()
    }

    /// Where the feed of `entity` stands (zeros for a set never written). On Postgres its last
    /// number is the last a reader may pass (see [`passable_bound`]): a copy that starts there
    /// is followed from there without missing a record of a writer still at work.
    pub async fn feed_position(&self, mirror: Mirror, entity: &str) -> Result<FeedPosition, StoreError> {
        let (last, legacy) = match self.dialect() {
            Dialect::Postgres => {
                ("mirror_feed_passable($1, $2)", "CAST(CASE WHEN history.legacy_positions THEN 1 ELSE 0 END AS BIGINT)")
            }
            Dialect::Sqlite => ("COALESCE(feed.last_seq, 0)", "history.legacy_positions"),
        };
        let statement = sql!(
            "SELECT {last} AS last_seq, COALESCE(feed.expired_through, 0) AS expired_through, \
             history.generation AS generation, {legacy} AS legacy_positions \
             FROM mirror_feed_history history \
             LEFT JOIN mirror_feed feed ON feed.mirror = $1 AND feed.entity = $2"
        );
        let row = sqlx::query(statement).bind(mirror.name()).bind(entity).fetch_one(self.pool()).await?;
        Ok(FeedPosition {
            last_seq: row.try_get("last_seq")?,
            expired_through: row.try_get("expired_through")?,
            generation: row.try_get("generation")?,
            legacy_positions: row.try_get::<i64, _>("legacy_positions")? != 0,
        })
    }

    /// Postgres: returns once the write-ahead log is on disk through every commit made before
    /// the call; a feed page or an export is answered after it. The mirror's writes of a sync,
    /// of an answered forwarded write, and the sync's number reservations commit without
    /// waiting for the flush (`synchronous_commit = off`), and are read before it: a consumer
    /// answered a number that a crash of the server then loses is answered 410 until new
    /// writes reach it, then skips, unawares, the changes that took the numbers again.
    ///
    /// A commit is seen only once its record is in the log: flushed through the log's insert
    /// position, read after the answer's reads, the answer is durable. Only when the flush is
    /// behind that position does the statement lock the feed's history row (`FOR KEY SHARE`,
    /// which no lock taken elsewhere conflicts with): its transaction has written to the log
    /// (one that only reads commits without a flush, even with a transaction id), and commits
    /// with the session's `synchronous_commit` (on), flushing the log through its commit.
    /// Otherwise it writes and waits for nothing.
    ///
    /// SQLite: the same for a crash of the machine. Commits (`synchronous = NORMAL`) leave
    /// their pages of the write-ahead log to the kernel; the log is synced here, holding up no
    /// writer (`src/store/engine/log_sync.rs`). Nothing in memory, which a crash loses whole.
    pub async fn make_feed_durable(&self) -> Result<(), StoreError> {
        if self.dialect() == Dialect::Postgres {
            sqlx::query(FLUSH_IF_BEHIND).execute(self.pool()).await?;
        } else if let Some(file) = self.engine.sqlite_file() {
            file.log_sync.sync().await?;
        }
        Ok(())
    }

    /// Postgres: binds the feed to the database that holds it (migration 0038): a database
    /// restored from another's dump begins another history, so positions answered by the
    /// other are refused. Run at each start, after the migrations. SQLite's `restore` does it
    /// itself ([`crate::store::backup`]).
    pub(in crate::store) async fn bind_feed_history(&self) -> Result<(), StoreError> {
        if self.dialect() == Dialect::Postgres {
            sqlx::query("SELECT mirror_feed_bind()").execute(self.pool()).await?;
        }
        Ok(())
    }

    /// Removes the tombstones of removals made before `before_ms`, recording for each set the
    /// newest number removed (see [`FeedPosition::expired_through`]); how many were removed.
    pub async fn prune_feed_removals(&self, before_ms: i64) -> Result<u64, StoreError> {
        let mut tx = self.write_transaction().await?;
        sqlx::query(expire_removals(self.dialect())).bind(before_ms).execute(&mut *tx).await?;
        let done = sqlx::query(DELETE_EXPIRED_REMOVALS).bind(before_ms).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }
}

/// See [`Store::make_feed_durable`]; run on its own, so that it commits.
const FLUSH_IF_BEHIND: &str = "SELECT id FROM mirror_feed_history \
     WHERE pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() FOR KEY SHARE";

/// The tombstones made before `$1` that their set's `expired_through` counts (the statement
/// after [`expire_removals`], in its transaction). On Postgres each statement reads the
/// commits made before it began: a removal committed between the two, made before `$1` (its
/// time is taken when it is made, not when it commits, and the removal may have waited for a
/// lock meanwhile), was not counted by the first; deleted by time alone, it would be gone
/// without its number in `expired_through`, and a consumer at a position before it would be
/// answered neither the removal nor 410. It stays for the next prune.
const DELETE_EXPIRED_REMOVALS: &str = "DELETE FROM mirror_removals WHERE removed_at < $1 \
     AND change_seq <= (SELECT feed.expired_through FROM mirror_feed feed \
                        WHERE feed.mirror = mirror_removals.mirror AND feed.entity = mirror_removals.entity)";

/// Moves each set's `expired_through` to the newest of its tombstones made before `$1`. The
/// tombstones are found by their time's index alone, so the work grows with the tombstones
/// removed, not with those kept: the newest removed of a set, looked up by number, walked every
/// newer tombstone kept, holding the set's row all the while (bench/HISTORY.md, 2026-11-30).
/// SQLite would take the key's order for the grouping instead, hence `INDEXED BY`.
pub(in crate::store) fn expire_removals(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "UPDATE mirror_feed SET expired_through = GREATEST(mirror_feed.expired_through, old.seq) \
             FROM (SELECT mirror, entity, MAX(change_seq) AS seq FROM mirror_removals \
                   WHERE removed_at < $1 GROUP BY mirror, entity) AS old \
             WHERE mirror_feed.mirror = old.mirror AND mirror_feed.entity = old.entity"
        }
        Dialect::Sqlite => {
            "UPDATE mirror_feed SET expired_through = MAX(mirror_feed.expired_through, old.seq) \
             FROM (SELECT mirror, entity, MAX(change_seq) AS seq \
                   FROM mirror_removals INDEXED BY mirror_removals_removed_at \
                   WHERE removed_at < $1 GROUP BY mirror, entity) AS old \
             WHERE mirror_feed.mirror = old.mirror AND mirror_feed.entity = old.entity"
        }
    }
}

/// Postgres, for the writing transaction `tx`: `n` change numbers of `entity` reserved in a
/// transaction of their own on `pool` (migration 0033); the first of them. The set's
/// `mirror_feed` row is locked only while they are reserved, so other writers of the set take
/// theirs meanwhile; readers pass none of them, nor any number after them, before `tx` has
/// committed. A transaction that writes the set twice must reserve for each write.
pub(in crate::store) async fn reserve_numbers(
    pool: &sqlx::AnyPool,
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    mirror: &str,
    entity: &str,
    n: usize,
) -> Result<i64, StoreError> {
    let n = numbers_wanted(n)?;
    let writer: String = sqlx::query_scalar("SELECT pg_current_xact_id()::text").fetch_one(&mut **tx).await?;
    let last: i64 = sqlx::query_scalar("SELECT mirror_feed_reserve($1, $2, $3, $4)")
        .bind(mirror)
        .bind(entity)
        .bind(n)
        .bind(writer)
        .fetch_one(pool)
        .await?;
    Ok(last - n + 1)
}

/// Postgres, in a writing transaction: `n` change numbers of `entity` taken at once; the first
/// of them. The set's `mirror_feed` row stays locked until the transaction ends.
pub(in crate::store) async fn take_numbers(
    tx: &mut sqlx::AnyConnection,
    mirror: &str,
    entity: &str,
    n: usize,
) -> Result<i64, StoreError> {
    let n = numbers_wanted(n)?;
    let last: i64 = sqlx::query_scalar("SELECT mirror_feed_next($1, $2, $3)")
        .bind(mirror)
        .bind(entity)
        .bind(n)
        .fetch_one(tx)
        .await?;
    Ok(last - n + 1)
}

/// A write's count of records as the numbering functions take it.
fn numbers_wanted(n: usize) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Query("too many records in one write".into()))
}

#[cfg(test)]
mod tests;
