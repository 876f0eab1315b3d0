//! The `fieldreport_records` table: the local mirror, one whole JSON document per record.

use rusqlite::OptionalExtension;
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::Row;

use crate::store::engine::cache::Lookup;
use crate::store::engine::record_cache::CachedPage;
pub use crate::store::engine::sync_page::{SyncedRecord, Upserted};
use crate::store::{Store, StoreError, now_ms};

pub mod pushes;

/// A mirrored record.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorRecord {
    pub id: String,
    pub version: i64,
    pub document: Value,
}

/// A record's `ExternalId` as the mirror keeps it beside the document, for the lookup of the
/// record mapped from an ERP record: a text as it is, a number as its text; anything else
/// (absent, null, a flag, an object) is none. Every write of the service stores it with the
/// document; the triggers of migration 0014 fill it in for other writers.
///
/// A NUL character (U+0000), which no text of Postgres holds, is kept as U+FFFD, on both
/// databases alike (see [`lookup_text`]): an upstream record that holds one is stored (its
/// document keeps it escaped, as written) instead of failing the sync's batch.
pub fn external_id(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(lookup_text(text)),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A text as the `external_id` column holds it: each NUL as U+FFFD.
fn lookup_text(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

impl MirrorRecord {
    fn external_id(&self) -> Option<String> {
        external_id(self.document.get("ExternalId"))
    }
}

// Every statement of both databases that reads or writes one record by its id names the id's
// length too (`LENGTH(record_id) = LENGTH($n)`): the one index by record is
// `fieldreport_records_key` on (entity, LENGTH(record_id), record_id) (migration 0016 on
// Postgres, 0017 on SQLite), which without the length finds the record by walking its whole
// set.

/// Id, version and document of one record.
const MIRROR_ROW: &str = "SELECT record_id, version, document FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// One page of documents in Id order (numeric Ids in numeric order), each row with the
/// entity's record count (kept by triggers in `fieldreport_record_counts`, migration 0010), so
/// that a page that is not empty needs no second round trip.
const MIRROR_PAGE: &str = "SELECT document, \
            COALESCE((SELECT records FROM fieldreport_record_counts WHERE entity = $1), 0) AS total \
     FROM fieldreport_records \
     WHERE entity = $1 ORDER BY LENGTH(record_id), record_id LIMIT $2 OFFSET $3";
/// The number of records of an entity (0 for a set that never had one).
const MIRROR_COUNT: &str = "SELECT COALESCE(MAX(records), 0) AS total FROM fieldreport_record_counts WHERE entity = $1";
/// A new record.
const MIRROR_INSERT: &str = "INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at, external_id) \
     VALUES ($1, $2, $3, $4, $5, $6, $6, $7)";
/// [`MIRROR_INSERT`] committing without waiting for the WAL flush (Postgres; see
/// [`Store::unflushed`]).
const MIRROR_INSERT_UNFLUSHED: &str = "WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true)) \
     INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at, external_id) \
     SELECT $1, $2, $3, $4, $5, $6, $6, $7 FROM unflushed";
/// A record replaced if it is still at the expected version.
const MIRROR_REPLACE: &str = "UPDATE fieldreport_records SET version = $1, document = $2, updated_at = $3, \
            pending_push = COALESCE(pending_push, $4), external_id = $8, push_claimed_until = NULL \
     WHERE entity = $5 AND LENGTH(record_id) = LENGTH($6) AND record_id = $6 AND version = $7";
/// [`MIRROR_REPLACE`] committing without waiting for the WAL flush (Postgres; see
/// [`Store::unflushed`]).
const MIRROR_REPLACE_UNFLUSHED: &str = "WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true)) \
     UPDATE fieldreport_records SET version = $1, document = $2, updated_at = $3, \
            pending_push = COALESCE(pending_push, $4), external_id = $8, push_claimed_until = NULL \
     FROM unflushed \
     WHERE entity = $5 AND LENGTH(record_id) = LENGTH($6) AND record_id = $6 AND version = $7";
/// A record deleted.
const MIRROR_DELETE: &str =
    "DELETE FROM fieldreport_records WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// Pages starting further in than this are read on a blocking thread on SQLite.
const MAX_OFFSET_IN_PLACE: i64 = 10_000;

fn not_json(error: serde_json::Error) -> StoreError {
    StoreError::Query(format!("stored document is not JSON: {error}"))
}

fn record(row: &sqlx::any::AnyRow) -> Result<MirrorRecord, StoreError> {
    let text: String = row.try_get("document")?;
    let document = serde_json::from_str(&text).map_err(not_json)?;
    Ok(MirrorRecord { id: row.try_get("record_id")?, version: row.try_get("version")?, document })
}

impl Store {
    /// Whether a mirror write may commit without waiting for Postgres's WAL flush: when no
    /// push is pending, it records what the upstream holds already (a forwarded create or
    /// update the upstream has answered, a record put back after the upstream refused its
    /// deletion). A crash of the database server in the fraction of a second before the flush
    /// may then lose the write from the mirror (never half of it, never an earlier write), and
    /// the next sync brings the upstream's record back. A flush takes about 2.7 ms on this
    /// project's machine, more than the rest of a forwarded write. A write that only the
    /// mirror has (`pending_push`) waits for it. SQLite's `synchronous = NORMAL` makes the same
    /// trade for every write (a power loss, not a crash of the process, may lose the last
    /// commits).
    fn unflushed(&self, pending_push: Option<&str>) -> bool {
        pending_push.is_none() && self.dialect() == crate::store::Dialect::Postgres
    }

    pub async fn mirror_get(&self, entity: &str, id: &str) -> Result<Option<MirrorRecord>, StoreError> {
        let Some((record_id, version, text)) = self.mirror_row(entity, id).await? else { return Ok(None) };
        let document = serde_json::from_str(&text).map_err(not_json)?;
        Ok(Some(MirrorRecord { id: record_id, version, document }))
    }

    /// A record's document as stored, checked to be JSON but not parsed into a tree: what a
    /// read answers with.
    /// On Postgres, from memory when it was read lately (see
    /// [`crate::store::engine::record_cache`]). On SQLite one record is read in place: asking
    /// whether the file changed costs as much as the read (`cargo xtask bench --scenario
    /// auth-read`, bench/HISTORY.md); pages are cached there.
    pub async fn mirror_document(&self, entity: &str, id: &str) -> Result<Option<Box<RawValue>>, StoreError> {
        let cache = self.engine.postgres().and_then(|_| self.engine.record_cache());
        let generation = match cache.map(|cache| cache.document(entity, id)) {
            Some(Lookup::Hit(document)) => return Ok(Some(document)),
            Some(Lookup::Miss(generation)) => generation,
            None => None,
        };
        let Some((_, _, text)) = self.mirror_row(entity, id).await? else { return Ok(None) };
        let document = RawValue::from_string(text).map_err(not_json)?;
        if let Some(cache) = cache {
            cache.put_document(generation, entity, id, &document);
        }
        Ok(Some(document))
    }

    /// Forgets cached copies of these records and of their set's pages, after a write of
    /// this instance's, whether it succeeded or not ([`Store::notify_mirror_changed`] tells
    /// the other instances of a write that did).
    fn forget_records<'a>(&self, entity: &str, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(cache) = self.engine.record_cache() {
            cache.forget_records(entity, ids);
        }
    }

    /// After a write of these records of `entity`: cached copies are forgotten whatever the
    /// outcome (a failed commit may still have been made), and the other instances are told
    /// when the write changed something (`Ok(true)`). Returns the outcome.
    pub(in crate::store) async fn mirror_written(
        &self,
        entity: &str,
        ids: &[&str],
        outcome: Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        self.forget_records(entity, ids.iter().copied());
        if matches!(outcome, Ok(true)) {
            self.notify_mirror_changed(entity, ids).await;
        }
        outcome
    }

    /// Postgres: tells every instance that these records of `entity` changed, once the write
    /// committed (one record by its id, more as their whole set). The triggers of migration
    /// 0012 do it for other sessions only: a transaction that notifies holds a cluster-wide
    /// lock until its commit is flushed, which made every mirror write wait for the one before
    /// it. This statement writes nothing, so it never waits for a flush. A failure is
    /// reported, not returned: the write is done, and other instances read their copies again
    /// within [`crate::store::engine::cache::MAX_AGE`].
    async fn notify_mirror_changed(&self, entity: &str, ids: &[&str]) {
        if self.engine.postgres().is_none() || ids.is_empty() {
            return;
        }
        let payload = match ids {
            [id] if id.len() <= 1000 => format!("{entity} {id}"),
            _ => entity.to_string(),
        };
        let notified = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(crate::store::engine::record_cache::CHANNEL)
            .bind(payload)
            .execute(self.pool())
            .await;
        if let Err(error) = notified {
            crate::telemetry::report_internal_error(&format!(
                "other instances were not told of a change of field-report {entity}: {error}"
            ));
        }
    }

    /// Id, version and document text of one record: in place on SQLite, else on a request
    /// connection.
    async fn mirror_row(&self, entity: &str, id: &str) -> Result<Option<(String, i64, String)>, StoreError> {
        if let Some(reads) = self.engine.sqlite_reads() {
            let (entity, id) = (entity.to_string(), id.to_string());
            return reads
                .run(move |c| {
                    c.prepare_cached(MIRROR_ROW)?
                        .query_row(rusqlite::named_params! {"$1": entity, "$2": id}, |row| {
                            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                        })
                        .optional()
                })
                .await;
        }
        let mut lease = self.lease().await?;
        let row = sqlx::query(MIRROR_ROW).bind(entity).bind(id).fetch_optional(lease.connection()).await;
        let Some(row) = lease.settle(row)? else { return Ok(None) };
        Ok(Some((row.try_get("record_id")?, row.try_get("version")?, row.try_get("document")?)))
    }

    /// Inserts a new record; [`StoreError::Duplicate`] when the id exists.
    pub async fn mirror_insert(
        &self,
        entity: &str,
        record: &MirrorRecord,
        pending_push: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let statement = if self.unflushed(pending_push) { MIRROR_INSERT_UNFLUSHED } else { MIRROR_INSERT };
        let _turn = self.write_turn().await?;
        let mut lease = self.lease().await?;
        let done = sqlx::query(statement)
            .bind(entity)
            .bind(&record.id)
            .bind(record.version)
            .bind(record.document.to_string())
            .bind(pending_push)
            .bind(now)
            .bind(record.external_id())
            .execute(lease.connection())
            .await;
        let inserted = lease.settle(done).map(|_| true);
        drop(lease);
        self.mirror_written(entity, &[&record.id], inserted).await?;
        Ok(())
    }

    /// Replaces a record if it is still at `expected_version`; false when another write came
    /// first (or the record is gone). With `pending_push`, a local write, pending for `post`
    /// with the fields it changed ([`Store::mirror_replace_pending`]).
    pub async fn mirror_replace(
        &self,
        entity: &str,
        record: &MirrorRecord,
        expected_version: i64,
        pending_push: Option<&str>,
    ) -> Result<bool, StoreError> {
        if let Some(kind) = pending_push {
            return self.mirror_replace_pending(entity, record, expected_version, kind).await;
        }
        let statement = if self.unflushed(pending_push) { MIRROR_REPLACE_UNFLUSHED } else { MIRROR_REPLACE };
        let _turn = self.write_turn().await?;
        let mut lease = self.lease().await?;
        let done = sqlx::query(statement)
            .bind(record.version)
            .bind(record.document.to_string())
            .bind(now_ms())
            .bind(pending_push)
            .bind(entity)
            .bind(&record.id)
            .bind(expected_version)
            .bind(record.external_id())
            .execute(lease.connection())
            .await;
        let replaced = lease.settle(done).map(|done| done.rows_affected() == 1);
        drop(lease);
        self.mirror_written(entity, &[&record.id], replaced).await
    }

    /// Deletes a record; false when it was not there.
    pub async fn mirror_delete(&self, entity: &str, id: &str) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await?;
        let mut lease = self.lease().await?;
        let done = sqlx::query(MIRROR_DELETE).bind(entity).bind(id).execute(lease.connection()).await;
        let deleted = lease.settle(done).map(|done| done.rows_affected() == 1);
        drop(lease);
        self.mirror_written(entity, &[id], deleted).await
    }

    /// One page of an entity's documents in Id order, as stored (checked to be JSON, never
    /// parsed into a tree), and the entity's record count, which comes with the page's rows
    /// (only an empty page asks for it on its own). The page walks the record index in that
    /// order (`fieldreport_records_key`), so no query sorts. (One query aggregating the page
    /// into a JSON array text measured slower on SQLite.)
    pub async fn mirror_page(
        &self,
        entity: &str,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Box<RawValue>>, i64), StoreError> {
        // From memory when it was read lately (see [`crate::store::engine::record_cache`]).
        let generation = match self.engine.record_cache_to_read().map(|cache| cache.page(entity, offset, limit)) {
            Some(Lookup::Hit(page)) => return Ok((page.documents, page.total)),
            Some(Lookup::Miss(generation)) => generation,
            None => None,
        };
        let (texts, total) = match self.engine.sqlite_reads() {
            Some(reads) => {
                let entity = entity.to_string();
                let read = move |c: &rusqlite::Connection| {
                    let mut total = None;
                    let texts = c
                        .prepare_cached(MIRROR_PAGE)?
                        .query_map(rusqlite::named_params! {"$1": entity, "$2": limit, "$3": offset}, |row| {
                            total = Some(row.get(1)?);
                            row.get(0)
                        })?
                        .collect::<rusqlite::Result<Vec<String>>>()?;
                    let total = match total {
                        Some(total) => total,
                        None => c
                            .prepare_cached(MIRROR_COUNT)?
                            .query_row(rusqlite::named_params! {"$1": entity}, |row| row.get(0))?,
                    };
                    Ok((texts, total))
                };
                // Far into a large set, the page walks many index entries: that
                // is left to a blocking thread rather than a request's.
                if offset > MAX_OFFSET_IN_PLACE { reads.run_aside(read).await? } else { reads.run(read).await? }
            }
            None => {
                let mut lease = self.lease().await?;
                // A cached statement: a large sync refreshes the table's statistics, which
                // makes connections plan it again (see `refresh_mirror_statistics`).
                let rows =
                    sqlx::query(MIRROR_PAGE).bind(entity).bind(limit).bind(offset).fetch_all(lease.connection()).await;
                let rows = lease.settle(rows)?;
                let total: i64 = match rows.first() {
                    Some(row) => row.try_get("total")?,
                    None => {
                        let count = sqlx::query(MIRROR_COUNT).bind(entity).fetch_one(lease.connection()).await;
                        lease.settle(count)?.try_get("total")?
                    }
                };
                let texts = rows.iter().map(|row| row.try_get("document")).collect::<Result<Vec<String>, _>>()?;
                (texts, total)
            }
        };
        let documents: Vec<Box<RawValue>> =
            texts.into_iter().map(|text| RawValue::from_string(text).map_err(not_json)).collect::<Result<_, _>>()?;
        if let Some(cache) = self.engine.record_cache() {
            let page = CachedPage { documents, total };
            cache.put_page(generation, entity, offset, limit, &page);
            return Ok((page.documents, page.total));
        }
        Ok((documents, total))
    }
}

/// The sync state of one entity (none of either before its first sync).
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct SyncState {
    #[sqlx(rename = "cursor_value")]
    pub cursor: Option<String>,
    pub last_sync_at: Option<i64>,
}

impl Store {
    /// Records per entity in the mirror (entities with none are left out).
    pub async fn mirror_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as("SELECT entity, records FROM fieldreport_record_counts WHERE records > 0")
            .fetch_all(self.pool())
            .await?)
    }

    /// Records per entity written without forwarding and not pushed yet (the push queue),
    /// pending deletes included. Served by the partial index `fieldreport_records_pending_push`: its cost follows the
    /// queue's length, not the mirror's size.
    pub async fn mirror_pending_push_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        // Pending deletes (tombstones) wait for a push too.
        Ok(sqlx::query_as(
            "SELECT entity, CAST(SUM(records) AS BIGINT) AS records FROM ( \
               SELECT entity, COUNT(*) AS records FROM fieldreport_records WHERE pending_push IS NOT NULL GROUP BY entity \
               UNION ALL SELECT entity, COUNT(*) AS records FROM fieldreport_deletes GROUP BY entity \
             ) AS waiting GROUP BY entity",
        )
        .fetch_all(self.pool())
        .await?)
    }
}

impl Store {
    /// Records whose top-level field `attribute` equals `value` as text. `attribute` is bound
    /// as a parameter (as the JSON path on SQLite), never spliced into the SQL.
    pub async fn mirror_find(
        &self,
        entity: &str,
        attribute: &str,
        value: &str,
    ) -> Result<Vec<MirrorRecord>, StoreError> {
        let (test, key) = self.document_field_equals(attribute);
        let sql = sql!(
            "SELECT record_id, version, document FROM fieldreport_records \
             WHERE entity = $1 AND {test} ORDER BY LENGTH(record_id), record_id LIMIT 500"
        );
        let rows = sqlx::query(sql).bind(entity).bind(key).bind(value).fetch_all(self.pool()).await?;
        rows.iter().map(record).collect()
    }
}

/// The records of a set whose `ExternalId` is `$2`, by the `fieldreport_records_external_id`
/// index (migration 0018: the ExternalId alone; the set is checked on the few records found).
const MIRROR_BY_EXTERNAL_ID: &str =
    "SELECT record_id, version, document FROM fieldreport_records WHERE entity = $1 AND external_id = $2";

impl Store {
    /// The first record, in Id order, whose `ExternalId` is `value` (compared as text): the
    /// record mapped from an ERP record. An index lookup, not a scan of the set.
    pub async fn mirror_by_external_id(&self, entity: &str, value: &str) -> Result<Option<MirrorRecord>, StoreError> {
        // No ORDER BY: SQLite would then walk the record index in Id order (a scan of the set
        // when nothing matches) instead of this lookup; the few matches are ordered here.
        let rows = sqlx::query(MIRROR_BY_EXTERNAL_ID)
            // Unnamed, so planned for its values and the set's present size: a plan made while the
            // set was small scans it.
            .persistent(false)
            .bind(entity)
            .bind(lookup_text(value))
            .fetch_all(self.pool())
            .await?;
        let mut records = rows.iter().map(record).collect::<Result<Vec<_>, _>>()?;
        records.sort_by(|a, b| (a.id.len(), &a.id).cmp(&(b.id.len(), &b.id)));
        Ok(records.into_iter().next())
    }
}

impl Store {
    /// Records that have the top-level field `attribute` (with any value but null), at most 500;
    /// on Postgres an escaped NUL reads as U+FFFD (see [`Store::document_field_equals`]).
    pub async fn mirror_having(&self, entity: &str, attribute: &str) -> Result<Vec<MirrorRecord>, StoreError> {
        let (sql, key) = match self.dialect() {
            crate::store::Dialect::Sqlite => (
                "SELECT record_id, version, document FROM fieldreport_records \
                 WHERE entity = $1 AND json_extract(document, $2) IS NOT NULL ORDER BY LENGTH(record_id), record_id LIMIT 500",
                format!("$.\"{attribute}\""),
            ),
            crate::store::Dialect::Postgres => (
                "SELECT record_id, version, document FROM fieldreport_records \
                 WHERE entity = $1 AND jsonb_typeof(replace(document, '\\u0000', '\\ufffd')::jsonb -> $2) <> 'null' \
                 ORDER BY LENGTH(record_id), record_id LIMIT 500",
                attribute.to_string(),
            ),
        };
        let rows = sqlx::query(sql).bind(entity).bind(key).fetch_all(self.pool()).await?;
        rows.iter().map(record).collect()
    }
}

#[cfg(test)]
pub(in crate::store) mod tests;

#[cfg(test)]
mod sqlite_key_migration;
