//! The `fieldreport_records` table: the local mirror, one whole JSON document per record.

use std::sync::Arc;

use rusqlite::OptionalExtension;
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::Row;

use super::change_notifications::Lookup;
use super::record_cache::CachedPage;
use super::{Store, StoreError, now_ms};

/// A mirrored record.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorRecord {
    pub id: String,
    pub version: i64,
    pub document: Value,
}

/// A record as a sync stores it: its document as the upstream sent it, never parsed into a
/// tree.
#[derive(Debug)]
pub struct SyncedRecord {
    pub id: String,
    pub version: i64,
    /// The document's `ExternalId` (see [`external_id`]).
    pub external_id: Option<String>,
    pub document: Box<RawValue>,
}

#[cfg(test)]
impl SyncedRecord {
    /// The record `{"Id": id, "Name": name}` as a sync stores it, without an `ExternalId`.
    pub fn named(id: impl ToString, name: &str) -> SyncedRecord {
        let id = id.to_string();
        let document = RawValue::from_string(format!(r#"{{"Id":"{id}","Name":"{name}"}}"#)).expect("JSON");
        SyncedRecord { id, version: 1, external_id: None, document }
    }
}

/// A record's `ExternalId` as the mirror keeps it beside the document, for the lookup of the
/// record mapped from an ERP record: a text as it is, a number as its text; anything else
/// (absent, null, a flag, an object) is none. Every write of the service stores it with the
/// document; the triggers of migration 0014 fill it in for other writers.
pub fn external_id(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
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
/// A pending record claimed for one push attempt.
const MIRROR_CLAIM_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = $1, push_attempts = push_attempts + 1 \
     WHERE entity = $2 AND LENGTH(record_id) = LENGTH($3) AND record_id = $3 AND pending_push = $4 \
     AND (push_claimed_until IS NULL OR push_claimed_until < $5) RETURNING push_attempts";
/// A claimed record given back.
const MIRROR_RELEASE_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = NULL \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// A record pushed: it takes the upstream's Id and document; with `$8`, only while the claim
/// it was pushed under holds (a local write since then cleared it: [`MIRROR_REPLACE`]).
const MIRROR_MARK_PUSHED: &str = "UPDATE fieldreport_records SET record_id = $1, version = $2, document = $3, \
            pending_push = NULL, updated_at = $4, push_claimed_until = NULL, push_attempts = 0, external_id = $7 \
     WHERE entity = $5 AND LENGTH(record_id) = LENGTH($6) AND record_id = $6 \
       AND ($8 IS NULL OR push_claimed_until = $8)";
/// Whether a record of the set has an id between two ids of one length (see
/// [`may_hold_any_of`]): one range of the record index, read in its order, so that the first
/// record found ends it. SQLite is told the index, so that it takes the range from no other:
/// before migration 0017 it took it from the primary key (entity, record_id), where ids of
/// every length lie between two of one length (`10` < `10000` < `20`).
pub(super) fn mirror_any_in_range(dialect: super::Dialect) -> &'static str {
    match dialect {
        super::Dialect::Postgres => {
            "SELECT 1 FROM fieldreport_records \
             WHERE entity = $1 AND LENGTH(record_id) = $2 AND record_id >= $3 AND record_id <= $4 \
             ORDER BY record_id LIMIT 1"
        }
        super::Dialect::Sqlite => {
            "SELECT 1 FROM fieldreport_records INDEXED BY fieldreport_records_key \
             WHERE entity = $1 AND LENGTH(record_id) = $2 AND record_id >= $3 AND record_id <= $4 \
             ORDER BY record_id LIMIT 1"
        }
    }
}
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
        pending_push.is_none() && self.dialect() == super::Dialect::Postgres
    }

    pub async fn mirror_get(&self, entity: &str, id: &str) -> Result<Option<MirrorRecord>, StoreError> {
        let Some((record_id, version, text)) = self.mirror_row(entity, id).await? else { return Ok(None) };
        let document = serde_json::from_str(&text).map_err(not_json)?;
        Ok(Some(MirrorRecord { id: record_id, version, document }))
    }

    /// A record's document as stored, checked to be JSON but not parsed into a tree: what a
    /// read answers with.
    /// On Postgres, from memory when it was read lately (see [`super::record_cache`]).
    pub async fn mirror_document(&self, entity: &str, id: &str) -> Result<Option<Box<RawValue>>, StoreError> {
        let generation = match self.record_cache.as_deref().map(|cache| cache.document(entity, id)) {
            Some(Lookup::Hit(document)) => return Ok(Some(document)),
            Some(Lookup::Miss(generation)) => generation,
            None => None,
        };
        let Some((_, _, text)) = self.mirror_row(entity, id).await? else { return Ok(None) };
        let document = RawValue::from_string(text).map_err(not_json)?;
        if let Some(cache) = &self.record_cache {
            cache.put_document(generation, entity, id, &document);
        }
        Ok(Some(document))
    }

    /// Forgets cached copies of these records and of their set's pages, after a write of
    /// this instance's, whether it succeeded or not ([`Store::notify_mirror_changed`] tells
    /// the other instances of a write that did).
    fn forget_records<'a>(&self, entity: &str, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(cache) = &self.record_cache {
            cache.forget_records(entity, ids);
        }
    }

    /// After a write of these records of `entity`: cached copies are forgotten whatever the
    /// outcome (a failed commit may still have been made), and the other instances are told
    /// when the write changed something (`Ok(true)`). Returns the outcome.
    pub(super) async fn mirror_written(
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
    /// within [`super::change_notifications::MAX_AGE`].
    async fn notify_mirror_changed(&self, entity: &str, ids: &[&str]) {
        if self.record_cache.is_none() || ids.is_empty() {
            return;
        }
        let payload = match ids {
            [id] if id.len() <= 1000 => format!("{entity} {id}"),
            _ => entity.to_string(),
        };
        let notified = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(super::record_cache::CHANNEL)
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
        if let Some(reads) = &self.sqlite_reads {
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
        let _turn = self.write_turn().await;
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
    /// first (or the record is gone).
    pub async fn mirror_replace(
        &self,
        entity: &str,
        record: &MirrorRecord,
        expected_version: i64,
        pending_push: Option<&str>,
    ) -> Result<bool, StoreError> {
        let statement = if self.unflushed(pending_push) { MIRROR_REPLACE_UNFLUSHED } else { MIRROR_REPLACE };
        let _turn = self.write_turn().await;
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
        let _turn = self.write_turn().await;
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
        // On Postgres, from memory when it was read lately (see [`super::record_cache`]).
        let generation = match self.record_cache.as_deref().map(|cache| cache.page(entity, offset, limit)) {
            Some(Lookup::Hit(page)) => return Ok((page.documents, page.total)),
            Some(Lookup::Miss(generation)) => generation,
            None => None,
        };
        let (texts, total) = match &self.sqlite_reads {
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
        if let Some(cache) = &self.record_cache {
            let page = CachedPage { documents, total };
            cache.put_page(generation, entity, offset, limit, &page);
            return Ok((page.documents, page.total));
        }
        Ok((documents, total))
    }
}

/// How a synced record compared with the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Inserted,
    Updated,
    Unchanged,
}

/// For each record of a page, whether it is the last copy of its id in the page.
fn last_copies(records: &[SyncedRecord]) -> Vec<bool> {
    let mut seen = std::collections::HashSet::new();
    let mut last: Vec<bool> = records.iter().rev().map(|record| seen.insert(record.id.as_str())).collect();
    last.reverse();
    last
}

/// Lengths of id in a batch past which [`may_hold_any_of`] does not look (and answers yes).
const ID_LENGTHS_LOOKED_AT: usize = 4;

/// The least and the greatest id of `records` per length of id (in the mirror's order: by
/// length, then byte by byte); `None` past [`ID_LENGTHS_LOOKED_AT`] lengths.
pub(super) fn id_ranges<'r>(
    records: &[&'r SyncedRecord],
) -> Option<std::collections::BTreeMap<usize, (&'r str, &'r str)>> {
    let mut ranges: std::collections::BTreeMap<usize, (&str, &str)> = std::collections::BTreeMap::new();
    for record in records {
        let id = record.id.as_str();
        let (least, greatest) = ranges.entry(id.chars().count()).or_insert((id, id));
        *least = (*least).min(id);
        *greatest = (*greatest).max(id);
        if ranges.len() > ID_LENGTHS_LOOKED_AT {
            return None;
        }
    }
    Some(ranges)
}

/// Whether the mirror may hold one of `records` of `entity`. `false` when it holds no record
/// with an id within any of their [`id_ranges`]: then none of them is stored, and they can be
/// inserted without looking for stored copies. One range of the index per length of id,
/// whatever the number of records: a sync's new records come in runs of ids that the set does
/// not hold yet. Also `true` when the ids have more than [`ID_LENGTHS_LOOKED_AT`] lengths.
/// (SQLite's sync writes look the same way, see [`super::sqlite_sync_writes`].)
async fn may_hold_any_of(
    dialect: super::Dialect,
    connection: &mut sqlx::AnyConnection,
    entity: &str,
    records: &[&SyncedRecord],
) -> Result<bool, StoreError> {
    let Some(ranges) = id_ranges(records) else { return Ok(true) };
    for (length, (least, greatest)) in ranges {
        let found = sqlx::query(mirror_any_in_range(dialect))
            .bind(entity)
            .bind(length as i64)
            .bind(least)
            .bind(greatest)
            .fetch_optional(&mut *connection)
            .await?;
        if found.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The outcomes of a page of new records: each last copy of an id inserted.
fn outcomes_of_new(last_copies: &[bool]) -> Vec<Upserted> {
    last_copies.iter().map(|&last| if last { Upserted::Inserted } else { Upserted::Unchanged }).collect()
}

/// The records that are the last copy of their id in the page (see [`last_copies`]).
pub(super) fn last_copies_of<'r>(records: &'r [SyncedRecord], last_copies: &[bool]) -> Vec<&'r SyncedRecord> {
    records.iter().zip(last_copies).filter(|(_, last)| **last).map(|(record, _)| record).collect()
}

/// Postgres: the records staged in `sync_page` (see [`super::sync_writers`]) upserted into the
/// mirror (`$1` the set, `$2` the time): each inserted, or updated where its document changed.
/// Only rows inserted or changed come back; `xmax` is 0 for an inserted row, and holds the
/// updating transaction (its lock) for an updated one.
const MIRROR_UPSERT_STAGED: &str = "INSERT INTO fieldreport_records AS stored \
            (entity, record_id, version, external_id, document, created_at, updated_at) \
     SELECT $1, record_id, version, external_id, document, $2, $2 FROM sync_page \
     ON CONFLICT (entity, LENGTH(record_id), record_id) DO UPDATE \
     SET version = EXCLUDED.version, external_id = EXCLUDED.external_id, document = EXCLUDED.document, \
         updated_at = EXCLUDED.updated_at \
     WHERE stored.document <> EXCLUDED.document AND stored.pending_push IS NULL \
     RETURNING stored.record_id, stored.xmax = 0 AS inserted";

/// A pending record claimed for one push attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushClaim {
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The claim's deadline, as stored with the record until the push is marked, the claim
    /// runs out, or a local write of the record clears it.
    pub until: i64,
}

/// The sync state of one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    pub cursor: Option<String>,
    pub last_sync_at: Option<i64>,
}

impl Store {
    /// The connections that write sync batches: Postgres's only.
    fn sync_writers(&self) -> Result<&super::sync_writers::SyncWriters, StoreError> {
        self.sync_writers.as_deref().ok_or_else(|| StoreError::Query("sync writers are Postgres's only".into()))
    }

    /// Takes the sync lease of `entity` (see [`Store::take_lease`]).
    pub async fn take_sync_lease(&self, entity: &str, owner: &str, until: i64) -> Result<bool, StoreError> {
        self.take_lease(super::lease::FIELDREPORT_SYNC, entity, owner, until).await
    }

    /// Brings Postgres's statistics of the mirror up to date, which also makes every
    /// connection plan its statements on the table again: a plan cached while a set was small
    /// (a scan of the table and a sort) would otherwise read the whole table for every page
    /// until autovacuum's next analyze, up to a minute or more after a large sync. Only the
    /// columns that the sync's, the pages' and the push's statements select by are analyzed
    /// (0.04 s for 100,000 companies; the whole table, with the documents and the expression
    /// index on `ExternalId` that migration 0014 replaced, took 0.16 s); autovacuum analyzes
    /// the rest. The `ExternalId` lookup is planned for its values each time. SQLite plans by
    /// its indexes, not by sizes: nothing to do there.
    pub async fn refresh_mirror_statistics(&self) -> Result<(), StoreError> {
        if self.dialect() == super::Dialect::Postgres {
            sqlx::query("ANALYZE fieldreport_records (entity, record_id, pending_push)").execute(self.pool()).await?;
        }
        Ok(())
    }

    /// Ends a sync: releases the lease and, when the sync completed, records its cursor.
    pub async fn finish_sync(&self, entity: &str, owner: &str, cursor: Option<&str>) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE fieldreport_sync_state SET lease_owner = NULL, lease_until = NULL, \
                    cursor_value = COALESCE($1, cursor_value), last_sync_at = $2 \
             WHERE entity = $3 AND lease_owner = $4",
        )
        .bind(cursor)
        .bind(now_ms())
        .bind(entity)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Releases a lease without recording anything (the sync failed).
    pub async fn release_sync_lease(&self, entity: &str, owner: &str) -> Result<(), StoreError> {
        self.release_lease(super::lease::FIELDREPORT_SYNC, entity, owner).await
    }

    pub async fn sync_state(&self, entity: &str) -> Result<SyncState, StoreError> {
        let row = sqlx::query("SELECT cursor_value, last_sync_at FROM fieldreport_sync_state WHERE entity = $1")
            .bind(entity)
            .fetch_optional(self.pool())
            .await?;
        Ok(match row {
            Some(row) => SyncState { cursor: row.try_get("cursor_value")?, last_sync_at: row.try_get("last_sync_at")? },
            None => SyncState { cursor: None, last_sync_at: None },
        })
    }

    /// Stores one page of synced records in one transaction, without marking them for push.
    /// Documents are stored as the upstream sent them; a stored record is updated only when
    /// its document's text changed and no local change of it waits for a push (the push
    /// settles that one against the upstream's version). A record repeated within the page counts once, as its
    /// last copy (the newest, pages being in `DateModified` order); the earlier copies are
    /// [`Upserted::Unchanged`]. On SQLite the page is written by the sync's writing thread
    /// (see [`super::sqlite_sync_writes`]): a write it has started ends even when this future
    /// is dropped, one still queued is then not done; an in-memory SQLite database cannot take
    /// a sync's writes ([`StoreError::Unavailable`]).
    pub async fn mirror_upsert_page(
        &self,
        entity: &str,
        records: impl Into<Arc<Vec<SyncedRecord>>>,
    ) -> Result<Vec<Upserted>, StoreError> {
        let records = records.into();
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let last_copies = last_copies(&records);
        let outcomes = match self.dialect() {
            super::Dialect::Postgres => self.upsert_page_postgres(entity, &records, &last_copies).await,
            super::Dialect::Sqlite => self.upsert_page_sqlite(entity, records.clone(), last_copies).await,
        };
        // After a failure every record of the page may have changed (the commit may be made).
        let changed: Vec<&str> = match &outcomes {
            Ok(outcomes) => records
                .iter()
                .zip(outcomes)
                .filter(|(_, outcome)| **outcome != Upserted::Unchanged)
                .map(|(record, _)| record.id.as_str())
                .collect(),
            Err(_) => records.iter().map(|record| record.id.as_str()).collect(),
        };
        let wrote = outcomes.as_ref().map(|_| !changed.is_empty()).map_err(Clone::clone);
        self.mirror_written(entity, &changed, wrote).await?;
        outcomes
    }

    /// Postgres: a page whose ids the set may hold (see [`may_hold_any_of`]) is upserted: each
    /// record inserted, or updated where its document changed, by one `INSERT … ON CONFLICT`
    /// of the records staged by `COPY` (see [`super::sync_writers`]). The conflict is found
    /// through the record index, whatever the statistics say: a lookup of the page's ids first
    /// (`IN (…)`) was planned on the statistics of the empty table as a scan of the whole set,
    /// for every page of a first sync (3 ms a page at 16,000 records and growing). A page of
    /// new records is `COPY`'d into the mirror as it is, without the conflict handling (a
    /// quarter of the database's work in storing 100,000 new companies by upserts); when
    /// another transaction has written one of its records meanwhile, that fails on the record
    /// key, and the page is upserted. Both commit without waiting for the WAL flush: a crash
    /// before the flush may lose the pages since the last flushed commit, which the next sync
    /// fetches again (its cursor is recorded at its end, in a flushed commit).
    async fn upsert_page_postgres(
        &self,
        entity: &str,
        records: &[SyncedRecord],
        last_copies: &[bool],
    ) -> Result<Vec<Upserted>, StoreError> {
        let stored = last_copies_of(records, last_copies);
        if !may_hold_any_of(self.dialect(), &mut *self.pool().acquire().await?, entity, &stored).await? {
            match self.insert_new_postgres(entity, &stored).await {
                Ok(()) => return Ok(outcomes_of_new(last_copies)),
                Err(StoreError::Duplicate(_)) => {}
                Err(error) => return Err(error),
            }
        }
        let mut tx = self.sync_writers()?.begin().await?;
        super::sync_writers::stage(&mut tx, &stored).await?;
        let upsert = sqlx::query(MIRROR_UPSERT_STAGED).bind(entity).bind(now_ms());
        let mut written: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
        for row in upsert.fetch_all(&mut *tx).await? {
            written.insert(row.try_get("record_id")?, row.try_get("inserted")?);
        }
        tx.commit().await?;
        Ok(records
            .iter()
            .zip(last_copies)
            .map(|(record, &last)| match written.get(&record.id) {
                Some(true) if last => Upserted::Inserted,
                Some(false) if last => Upserted::Updated,
                _ => Upserted::Unchanged,
            })
            .collect())
    }

    /// Postgres: `records`, none of which the set holds, `COPY`'d into the mirror in one
    /// transaction; [`StoreError::Duplicate`] (and nothing stored) when it holds one after all.
    async fn insert_new_postgres(&self, entity: &str, records: &[&SyncedRecord]) -> Result<(), StoreError> {
        let mut tx = self.sync_writers()?.begin().await?;
        super::sync_writers::insert(&mut tx, entity, now_ms(), records).await?;
        tx.commit().await?;
        Ok(())
    }

    /// SQLite: the page written by the sync's own connection (see [`super::sqlite_sync_writes`]).
    async fn upsert_page_sqlite(
        &self,
        entity: &str,
        records: Arc<Vec<SyncedRecord>>,
        last_copies: Vec<bool>,
    ) -> Result<Vec<Upserted>, StoreError> {
        let writes = self.sqlite_sync_writes.as_deref().ok_or_else(|| {
            StoreError::Unavailable(
                "a sync needs a database file: an in-memory SQLite database has no room for its writer".into(),
            )
        })?;
        writes.write_page(entity, records, last_copies, now_ms()).await
    }

    /// Records per entity in the mirror (entities with none are left out).
    pub async fn mirror_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query("SELECT entity, records FROM fieldreport_record_counts WHERE records > 0")
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(|r| Ok((r.try_get("entity")?, r.try_get("records")?))).collect()
    }

    /// Records per entity written without forwarding and not pushed yet (the push queue),
    /// pending deletes included. Served by the partial index `fieldreport_records_pending_push`: its cost follows the
    /// queue's length, not the mirror's size.
    pub async fn mirror_pending_push_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        // Pending deletes (tombstones) wait for a push too.
        let rows = sqlx::query(
            "SELECT entity, CAST(SUM(records) AS BIGINT) AS records FROM ( \
               SELECT entity, COUNT(*) AS records FROM fieldreport_records WHERE pending_push IS NOT NULL GROUP BY entity \
               UNION ALL SELECT entity, COUNT(*) AS records FROM fieldreport_deletes GROUP BY entity \
             ) AS waiting GROUP BY entity",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|r| Ok((r.try_get("entity")?, r.try_get("records")?))).collect()
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
            .bind(value)
            .fetch_all(self.pool())
            .await?;
        let mut records = rows.iter().map(record).collect::<Result<Vec<_>, _>>()?;
        records.sort_by(|a, b| (a.id.len(), &a.id).cmp(&(b.id.len(), &b.id)));
        Ok(records.into_iter().next())
    }
}

impl Store {
    /// Records written without forwarding and not pushed yet (`kind`: `create` or `update`).
    pub async fn mirror_pending(&self, entity: &str, kind: &str) -> Result<Vec<MirrorRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT record_id, version, document FROM fieldreport_records WHERE entity = $1 AND pending_push = $2 \
             ORDER BY LENGTH(record_id), record_id",
        )
        .bind(entity)
        .bind(kind)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record).collect()
    }

    /// Claims a pending record for one push attempt; `None` when it is no longer pending or
    /// another run holds it. The claim counts the attempts, this one included (above 1, an
    /// earlier attempt may have reached the upstream before its process stopped), and carries
    /// its deadline, which a local write of the record clears (for [`Store::mirror_mark_pushed`]).
    pub async fn mirror_claim_push(&self, entity: &str, id: &str, kind: &str) -> Result<Option<PushClaim>, StoreError> {
        let now = now_ms();
        let until = self.lease_deadline();
        let row = sqlx::query(MIRROR_CLAIM_PUSH)
            .bind(until)
            .bind(entity)
            .bind(id)
            .bind(kind)
            .bind(now)
            .fetch_optional(self.pool())
            .await?;
        Ok(match row {
            Some(row) => Some(PushClaim { attempts: i64::from(row.try_get::<i32, _>("push_attempts")?), until }),
            None => None,
        })
    }

    /// Gives a claimed record back after a failed attempt. Its attempts stay counted: a time-out
    /// or a dropped connection may still have reached the upstream, so the next run checks.
    pub async fn mirror_release_push(&self, entity: &str, id: &str) -> Result<(), StoreError> {
        sqlx::query(MIRROR_RELEASE_PUSH).bind(entity).bind(id).execute(self.pool()).await?;
        Ok(())
    }

    /// Marks a record as pushed; after a create push it takes the upstream's Id and document.
    /// With `claimed_until` (an update's claim), only while that claim holds: `false` when a
    /// local write changed the record meanwhile, which then stays pending as written, for the
    /// next push. (A create is marked whatever happened: its record has no upstream Id to send
    /// a later change to until it is marked.)
    pub async fn mirror_mark_pushed(
        &self,
        entity: &str,
        old_id: &str,
        record: &MirrorRecord,
        claimed_until: Option<i64>,
    ) -> Result<bool, StoreError> {
        let mut marked = false;
        let done = async {
            let mut tx = self.write_transaction().await?;
            // A create whose answer was lost may be in the mirror already under the upstream's
            // Id (a sync brought it): that copy is the upstream's own and stays; the local
            // one, which was sent, goes.
            let synced = old_id != record.id
                && sqlx::query(MIRROR_ROW).bind(entity).bind(&record.id).fetch_optional(&mut *tx).await?.is_some();
            let done = if synced {
                sqlx::query(MIRROR_DELETE).bind(entity).bind(old_id).execute(&mut *tx).await?
            } else {
                sqlx::query(MIRROR_MARK_PUSHED)
                    .bind(&record.id)
                    .bind(record.version)
                    .bind(record.document.to_string())
                    .bind(now_ms())
                    .bind(entity)
                    .bind(old_id)
                    .bind(record.external_id())
                    .bind(claimed_until)
                    .execute(&mut *tx)
                    .await?
            };
            tx.commit().await?;
            marked = done.rows_affected() == 1;
            Ok::<_, StoreError>(marked)
        }
        .await;
        // A create's push gives the record the upstream's Id: both ids changed.
        let ids: &[&str] = if old_id == record.id { &[old_id] } else { &[old_id, &record.id] };
        self.mirror_written(entity, ids, done).await?;
        Ok(marked)
    }
}

impl Store {
    /// Records that have the top-level field `attribute` (with any value but null), at most 500.
    pub async fn mirror_having(&self, entity: &str, attribute: &str) -> Result<Vec<MirrorRecord>, StoreError> {
        let (sql, key) = match self.dialect() {
            super::Dialect::Sqlite => (
                "SELECT record_id, version, document FROM fieldreport_records \
                 WHERE entity = $1 AND json_extract(document, $2) IS NOT NULL ORDER BY LENGTH(record_id), record_id LIMIT 500",
                format!("$.\"{attribute}\""),
            ),
            super::Dialect::Postgres => (
                "SELECT record_id, version, document FROM fieldreport_records \
                 WHERE entity = $1 AND jsonb_typeof(document::jsonb -> $2) IS DISTINCT FROM 'null' \
                 AND (document::jsonb -> $2) IS NOT NULL ORDER BY LENGTH(record_id), record_id LIMIT 500",
                attribute.to_string(),
            ),
        };
        let rows = sqlx::query(sql).bind(entity).bind(key).fetch_all(self.pool()).await?;
        rows.iter().map(record).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sqlx::{AnyConnection, Connection, Executor};

    use super::*;
    use crate::store::{Dialect, TestQuery, plan_of};

    /// The unflushed statements turn `synchronous_commit` off for their own transaction only:
    /// a request connection runs other statements next (a webhook's, whose 202 promises a
    /// flushed commit).
    #[tokio::test]
    async fn unflushed_mirror_writes_relax_their_own_commit_only() {
        let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
            eprintln!("skipped: TEST_POSTGRES_URL is not set");
            return;
        };
        sqlx::any::install_default_drivers();
        let mut connection = AnyConnection::connect(&url).await.unwrap();
        // A temporary table of this connection only, shadowing any of the same name.
        connection
            .execute(
                "CREATE TEMP TABLE fieldreport_records (entity TEXT, record_id TEXT, version BIGINT, \
                 document TEXT, pending_push TEXT, created_at BIGINT, updated_at BIGINT, external_id TEXT, \
                 push_claimed_until BIGINT)",
            )
            .await
            .unwrap();
        async fn setting(connection: &mut AnyConnection) -> String {
            sqlx::query_scalar("SELECT current_setting('synchronous_commit')").fetch_one(connection).await.unwrap()
        }
        let insert = |statement| {
            sqlx::query(statement)
                .bind("tags")
                .bind("1")
                .bind(1_i64)
                .bind(r#"{"Id":"1"}"#)
                .bind(None::<String>)
                .bind(5_i64)
                .bind(None::<String>)
        };

        let mut transaction = connection.begin().await.unwrap();
        insert(MIRROR_INSERT).execute(&mut *transaction).await.unwrap();
        assert_eq!(setting(&mut transaction).await, "on");
        insert(MIRROR_INSERT_UNFLUSHED).execute(&mut *transaction).await.unwrap();
        assert_eq!(setting(&mut transaction).await, "off", "the statement sets it for its transaction");
        transaction.rollback().await.unwrap();
        assert_eq!(setting(&mut connection).await, "on", "and no longer");

        insert(MIRROR_INSERT_UNFLUSHED).execute(&mut connection).await.unwrap();
        assert_eq!(setting(&mut connection).await, "on");
        let replaced = sqlx::query(MIRROR_REPLACE_UNFLUSHED)
            .bind(2_i64)
            .bind(r#"{"Id":"1","Version":2}"#)
            .bind(6_i64)
            .bind(None::<String>)
            .bind("tags")
            .bind("1")
            .bind(1_i64)
            .bind(None::<String>)
            .execute(&mut connection)
            .await
            .unwrap();
        assert_eq!(replaced.rows_affected(), 1);
        assert_eq!(setting(&mut connection).await, "on");
        let stored: Vec<(i64, String)> = sqlx::query_as("SELECT version, document FROM fieldreport_records")
            .fetch_all(&mut connection)
            .await
            .unwrap();
        assert_eq!(stored, [(2, r#"{"Id":"1","Version":2}"#.to_string())]);
    }

    /// A local write while a pending update is pushed (an ERP webhook's) clears its claim: the
    /// push is then not marked over it, and the record stays pending as written.
    #[tokio::test]
    async fn a_local_write_during_a_push_keeps_the_record_pending() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let record =
                MirrorRecord { id: "7".into(), version: 1, document: json!({"Id": "7", "Version": 1, "Name": "a"}) };
            store.mirror_insert("tags", &record, Some("update")).await.unwrap();
            let claim = store.mirror_claim_push("tags", "7", "update").await.unwrap().unwrap();
            let newer = MirrorRecord { document: json!({"Id": "7", "Version": 1, "Name": "b"}), ..record.clone() };
            assert!(store.mirror_replace("tags", &newer, 1, Some("update")).await.unwrap());
            let sent = MirrorRecord { version: 2, document: json!({"Id": "7", "Version": 2, "Name": "a"}), ..record };
            assert!(!store.mirror_mark_pushed("tags", "7", &sent, Some(claim.until)).await.unwrap());
            let pending = store.mirror_pending("tags", "update").await.unwrap();
            assert_eq!(pending[0].document["Name"], "b", "the later write waits for the next push");
            // With no write in between, the mark holds.
            let claim = store.mirror_claim_push("tags", "7", "update").await.unwrap().unwrap();
            assert!(store.mirror_mark_pushed("tags", "7", &sent, Some(claim.until)).await.unwrap());
            assert!(store.mirror_pending("tags", "update").await.unwrap().is_empty());
        }
    }

    use crate::store::TestValues as Values;

    /// Each statement on one record, with a function that binds values to its parameters.
    fn statements_by_record() -> Vec<(&'static str, Values)> {
        vec![
            (MIRROR_ROW, |query| query.bind("companies").bind("12")),
            (MIRROR_DELETE, |query| query.bind("companies").bind("12")),
            (MIRROR_RELEASE_PUSH, |query| query.bind("companies").bind("12")),
            (MIRROR_CLAIM_PUSH, |query| query.bind(1_i64).bind("companies").bind("12").bind("create").bind(1_i64)),
            (MIRROR_REPLACE, replace_values),
            (MIRROR_REPLACE_UNFLUSHED, replace_values),
            (MIRROR_MARK_PUSHED, |query| {
                query.bind("40").bind(2_i64).bind("{}").bind(1_i64).bind("companies").bind("12").bind("e").bind(1_i64)
            }),
        ]
    }

    fn replace_values(query: TestQuery) -> TestQuery {
        query.bind(2_i64).bind("{}").bind(1_i64).bind("update").bind("companies").bind("12").bind(1_i64).bind("e")
    }

    #[tokio::test]
    async fn statements_on_one_record_find_it_through_an_index_by_its_id() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            for (statement, values) in statements_by_record() {
                if statement == MIRROR_REPLACE_UNFLUSHED && store.dialect() == Dialect::Sqlite {
                    continue; // Postgres's only (`set_config`)
                }
                let plan = plan_by_record(store, statement, values).await;
                match store.dialect() {
                    // Only the length and the id tell the record apart within its set: without
                    // both in the index's condition, the record is looked for through its set.
                    Dialect::Postgres => assert!(
                        plan.contains("fieldreport_records_key")
                            && plan.lines().any(|line| line.contains("Index Cond")
                                && line.contains("length(record_id)")
                                && line.contains("(record_id =")),
                        "{statement}\n{plan}"
                    ),
                    Dialect::Sqlite => assert_finds_one_record(&plan, statement),
                }
            }
            if store.dialect() == Dialect::Sqlite {
                for (statement, values) in super::super::sqlite_sync_writes::statements_by_record() {
                    assert_finds_one_record(&plan_by_record(store, statement, values).await, statement);
                }
            }
            test.finish().await;
        }
    }

    /// SQLite: `plan` looks the record up in the record index by its set, its id's length and
    /// its id.
    fn assert_finds_one_record(plan: &str, statement: &str) {
        assert!(
            plan.contains("USING INDEX fieldreport_records_key (entity=? AND <expr>=? AND record_id=?)"),
            "{statement}\n{plan}"
        );
    }

    /// The plan of `statement` with `values`; on Postgres with sequential scans ruled out (in a
    /// transaction rolled back), so that the plan shows the index condition the statement gives.
    async fn plan_by_record(store: &Store, statement: &str, values: Values) -> String {
        match store.dialect() {
            Dialect::Sqlite => plan_of(store.dialect(), store.pool(), statement, values).await,
            Dialect::Postgres => {
                let mut tx = store.pool().begin().await.unwrap();
                tx.execute("SET LOCAL enable_seqscan = off").await.unwrap();
                // The claim of a push may also go through the pending records' index (a small
                // one); without it, the plan shows what the record's index is given.
                tx.execute("DROP INDEX fieldreport_records_pending_push").await.unwrap();
                plan_of(store.dialect(), &mut *tx, statement, values).await
            }
        }
    }

    #[tokio::test]
    async fn the_external_id_lookup_uses_its_index_and_finds_the_first_record() {
        for test in crate::store::testing::stores_on_both_databases().await {
            external_id_lookup_on(&test.store).await;
            test.finish().await;
        }
    }

    async fn external_id_lookup_on(store: &Store) {
        if store.dialect() == Dialect::Sqlite {
            let plan = plan_of(store.dialect(), store.pool(), MIRROR_BY_EXTERNAL_ID, |query| {
                query.bind("companies").bind("9")
            })
            .await;
            assert!(plan.contains("fieldreport_records_external_id"), "{plan}");
        }
        for (id, external) in [("12", json!(9)), ("3", json!("9")), ("4", json!("10")), ("5", json!({"id": "9"}))] {
            let document = json!({"Id": id, "Version": 1, "ExternalId": external});
            store
                .mirror_insert("companies", &MirrorRecord { id: id.into(), version: 1, document }, None)
                .await
                .unwrap();
        }
        let found = |value: &'static str| async move {
            store.mirror_by_external_id("companies", value).await.unwrap().map(|record| record.id)
        };
        assert_eq!(found("9").await.as_deref(), Some("3"), "Id order: 3 before 12, a number and a string alike");
        assert!(store.mirror_by_external_id("contacts", "9").await.unwrap().is_none());

        // The service's replace, push and sync write the column with the document.
        let moved = MirrorRecord { id: "4".into(), version: 2, document: json!({"Id": "4", "ExternalId": "11"}) };
        assert!(store.mirror_replace("companies", &moved, 1, None).await.unwrap());
        let pushed = MirrorRecord { id: "40".into(), version: 3, document: json!({"Id": "40", "ExternalId": "12"}) };
        assert!(store.mirror_mark_pushed("companies", "4", &pushed, None).await.unwrap());
        let synced = SyncedRecord {
            id: "6".into(),
            version: 1,
            external_id: Some("13".into()),
            document: RawValue::from_string(r#"{"Id":"6","ExternalId":"13"}"#.into()).unwrap(),
        };
        store.mirror_upsert_page("companies", vec![synced]).await.unwrap();
        assert_eq!((found("10").await, found("11").await), (None, None));
        assert_eq!((found("12").await.as_deref(), found("13").await.as_deref()), (Some("40"), Some("6")));

        // Another writer's statements have the column filled in from the document. On
        // Postgres the service's connections say that they write it themselves: this one
        // stops saying so for its transaction.
        let mut tx = store.pool().begin().await.unwrap();
        if store.dialect() == Dialect::Postgres {
            tx.execute("SET LOCAL integration_service.writes_external_id = 'off'").await.unwrap();
        }
        tx.execute(
            r#"INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at)
               VALUES ('companies', '77', 1, '{"Id":"77","ExternalId":"erp-77"}', 0, 0),
                      ('companies', '78', 1, '{"Id":"78","ExternalId":78}', 0, 0),
                      ('companies', '79', 1, '{"Id":"79"}', 0, 0)"#,
        )
        .await
        .unwrap();
        tx.execute(
            r#"UPDATE fieldreport_records SET document = '{"Id":"6","ExternalId":"erp-6"}' WHERE record_id = '6'"#,
        )
        .await
        .unwrap();
        tx.execute(r#"UPDATE fieldreport_records SET document = '{"Id":"3"}' WHERE record_id = '3'"#).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(found("erp-77").await.as_deref(), Some("77"));
        assert_eq!(found("78").await.as_deref(), Some("78"));
        assert_eq!((found("13").await, found("erp-6").await.as_deref()), (None, Some("6")));
        assert_eq!(found("9").await.as_deref(), Some("12"), "3 has no ExternalId any more");
    }

    #[tokio::test]
    async fn record_counts_follow_inserts_syncs_and_deletes() {
        for test in crate::store::testing::stores_on_both_databases().await {
            record_counts_follow_inserts_syncs_and_deletes_on(&test.store).await;
            test.finish().await;
        }
    }

    /// A synced record with the `ExternalId` `x-<id>`.
    fn synced(id: usize, name: &str) -> SyncedRecord {
        SyncedRecord { external_id: Some(format!("x-{id}")), ..SyncedRecord::named(id, name) }
    }

    /// `size` records named "first" (more than a sync's batch, with ids of four lengths), and
    /// record 3 again, named "last", at the end.
    fn large_page() -> (usize, Vec<SyncedRecord>) {
        let size = 9_005;
        let mut page: Vec<SyncedRecord> = (0..size).map(|id| synced(id, "first")).collect();
        page.push(synced(3, "last"));
        (size, page)
    }

    /// A large page with a stored record among new ones is stored whole (by one `COPY` and an
    /// upsert on Postgres): each record's outcome in order, a record repeated far apart stored
    /// as its last copy, the count right.
    #[tokio::test]
    async fn a_large_page_is_stored_whole() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let dialect = store.dialect();
            store.mirror_upsert_page("tags", vec![synced(7, "before")]).await.unwrap();
            // Record 7 is stored already.
            let (size, page) = large_page();
            let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
            assert_eq!(outcomes.len(), size + 1, "{dialect:?}");
            for (i, outcome) in outcomes.iter().enumerate() {
                let expected = match i {
                    3 => Upserted::Unchanged,
                    7 => Upserted::Updated,
                    _ => Upserted::Inserted,
                };
                assert_eq!(*outcome, expected, "record {i} on {dialect:?}");
            }
            assert_eq!(store.mirror_get("tags", "3").await.unwrap().unwrap().document["Name"], "last", "{dialect:?}");
            let last = (size - 1).to_string();
            assert_eq!(store.mirror_get("tags", &last).await.unwrap().unwrap().document["Name"], "first");
            assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64, "{dialect:?}");
            test.finish().await;
        }
    }

    /// A large page of new records goes in whole without looking up stored copies (by a
    /// `COPY` on Postgres), each record once as its last copy, found by its id and
    /// its `ExternalId`, counted; a page with a stored record among new ones is upserted. On
    /// Postgres, a page of which another transaction wrote a record after the look (see
    /// [`may_hold_any_of`]) stores nothing by the plain path, and is left to the upsert.
    #[tokio::test]
    async fn a_page_of_new_records_is_inserted_and_one_with_a_stored_record_upserted() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let dialect = store.dialect();
            let (size, page) = large_page();
            let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
            assert_eq!(outcomes.len(), size + 1, "{dialect:?}");
            for (i, outcome) in outcomes.iter().enumerate() {
                let expected = if i == 3 { Upserted::Unchanged } else { Upserted::Inserted };
                assert_eq!(*outcome, expected, "record {i} on {dialect:?}");
            }
            assert_eq!(store.mirror_get("tags", "3").await.unwrap().unwrap().document["Name"], "last", "{dialect:?}");
            let stored = store.mirror_by_external_id("tags", "x-9").await.unwrap().expect("by its ExternalId");
            assert_eq!((stored.id.as_str(), &stored.document["Name"]), ("9", &json!("first")), "{dialect:?}");
            assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64, "{dialect:?}");

            let again = vec![synced(size + 1, "new"), synced(5, "changed")];
            assert_eq!(
                store.mirror_upsert_page("tags", again).await.unwrap(),
                [Upserted::Inserted, Upserted::Updated],
                "{dialect:?}"
            );
            assert_eq!(store.mirror_get("tags", "5").await.unwrap().unwrap().document["Name"], "changed");

            if dialect == Dialect::Postgres {
                let late = [synced(size + 2, "late"), synced(6, "late")];
                let inserted = store.insert_new_postgres("tags", &late.iter().collect::<Vec<_>>()).await;
                assert!(matches!(inserted, Err(StoreError::Duplicate(_))), "{inserted:?}");
                assert!(store.mirror_get("tags", &(size + 2).to_string()).await.unwrap().is_none());
                assert_eq!(store.mirror_get("tags", "6").await.unwrap().unwrap().document["Name"], "first");
            }
            assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64 + 1, "{dialect:?}");
            assert_eq!(store.mirror_upsert_page("tags", vec![]).await.unwrap(), []);
            test.finish().await;
        }
    }

    /// The look for stored ids answers no only when no record of the set lies within the
    /// range of the ids of any one length (ordered by length first), and yes past
    /// [`ID_LENGTHS_LOOKED_AT`] lengths.
    #[tokio::test]
    async fn the_look_for_stored_ids_covers_the_range_of_each_length() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let dialect = store.dialect();
            store.mirror_upsert_page("tags", vec![synced(50, "x"), synced(5000, "x")]).await.unwrap();
            let mut connection = store.pool().acquire().await.unwrap();
            for (entity, ids, expected) in [
                ("tags", &["1", "49"][..], false),
                ("tags", &["40", "60"], true),
                ("tags", &["51", "99", "100", "4999"], false),
                ("tags", &["4000", "6000"], true),
                ("tags", &["5", "500", "50000"], false),
                ("tags", &["50"], true),
                ("other", &["50", "5000"], false),
                ("tags", &["1", "22", "333", "4444", "55555"], true),
            ] {
                let records: Vec<SyncedRecord> = ids.iter().map(|id| SyncedRecord::named(id, "p")).collect();
                let records: Vec<&SyncedRecord> = records.iter().collect();
                let found = may_hold_any_of(dialect, &mut connection, entity, &records).await.unwrap();
                assert_eq!(found, expected, "{entity} {ids:?} on {dialect:?}");
            }
            let statement = mirror_any_in_range(dialect);
            let plan =
                plan_by_record(store, statement, |query| query.bind("tags").bind(2_i64).bind("10").bind("20")).await;
            match dialect {
                Dialect::Postgres => assert!(
                    plan.lines().any(|line| line.contains("Index Cond")
                        && line.contains("length(record_id)")
                        && line.contains("record_id >=")),
                    "{plan}"
                ),
                Dialect::Sqlite => {
                    assert!(plan.contains("fieldreport_records_key") && plan.contains("record_id>?"), "{plan}")
                }
            }
            drop(connection);
            test.finish().await;
        }
    }

    /// A sync stores the upstream's text as it came, whatever it holds (whitespace between
    /// tokens, escapes, backslashes, text past ASCII), and each record's id and `ExternalId`
    /// as they were read: by the insert of new records and by the upsert alike.
    #[tokio::test]
    async fn synced_records_are_stored_as_sent() {
        let record = |id: &str, external_id: Option<&str>, text: String| SyncedRecord {
            id: id.into(),
            version: 3,
            external_id: external_id.map(Into::into),
            document: RawValue::from_string(text).expect("JSON"),
        };
        let page = |name: &str| {
            vec![
                record(r"a\b", None, format!("{{\"Id\":\"a\\\\b\",\t\"Name\":\"{name}\\t\\\"q\\\"\"}}")),
                record(
                    "ü-€-😀",
                    Some("x\ty\\z"),
                    format!(
                        "{{\r\n  \"Id\": \"ü-€-😀\",\n  \"ExternalId\": \"x\\ty\\\\z\",\n  \"Name\": \"{name} \\u0000\"\n}}"
                    ),
                ),
                record("3", None, format!("{{\"Id\":\"3\",\"Name\":\"{name}\",\"Nested\":[{{\"Id\":\"30\"}}]}}")),
            ]
        };
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let dialect = store.dialect();
            for (records, inserted) in [(Arc::new(page("first")), true), (Arc::new(page("second")), false)] {
                let outcomes = store.mirror_upsert_page("tags", records.clone()).await.unwrap();
                let expected = if inserted { Upserted::Inserted } else { Upserted::Updated };
                assert_eq!(outcomes, [expected; 3], "{dialect:?}");
                for record in records.iter() {
                    let stored = store.mirror_document("tags", &record.id).await.unwrap().expect("stored");
                    assert_eq!(stored.get(), record.document.get(), "{} on {dialect:?}", record.id);
                    assert_eq!(store.mirror_get("tags", &record.id).await.unwrap().unwrap().version, 3);
                }
                let by_external_id = store.mirror_by_external_id("tags", "x\ty\\z").await.unwrap().expect("found");
                assert_eq!(by_external_id.id, "ü-€-😀", "{dialect:?}");
            }
            assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, 3, "{dialect:?}");
            test.finish().await;
        }
    }

    async fn record_counts_follow_inserts_syncs_and_deletes_on(store: &Store) {
        let record = |id: &str, name: &str| MirrorRecord {
            id: id.into(),
            version: 1,
            document: json!({"Id": id, "Version": 1, "Name": name}),
        };
        let total = |store: &Store, entity: &'static str| {
            let store = store.clone();
            async move { store.mirror_page(entity, 0, 1).await.unwrap().1 }
        };
        let dialect = store.dialect();
        assert_eq!(total(store, "tags").await, 0, "a set that never had a record");
        store.mirror_insert("tags", &record("1", "a"), None).await.unwrap();
        // A page of a sync: one record stored already (changed), two new, one of them twice
        // (its last copy counts).
        let synced = |id: &str, name: &str| {
            let MirrorRecord { id, version, document } = record(id, name);
            SyncedRecord {
                id,
                version,
                external_id: None,
                document: RawValue::from_string(document.to_string()).unwrap(),
            }
        };
        let page = vec![synced("1", "b"), synced("2", "a"), synced("3", "a"), synced("3", "c")];
        let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
        assert_eq!(
            outcomes,
            [Upserted::Updated, Upserted::Inserted, Upserted::Unchanged, Upserted::Inserted],
            "{dialect:?}"
        );
        assert_eq!(store.mirror_get("tags", "3").await.unwrap().unwrap().document["Name"], "c", "{dialect:?}");
        assert_eq!(store.mirror_get("tags", "1").await.unwrap().unwrap().document["Name"], "b", "{dialect:?}");
        // The same page again: nothing changed; one record changed since.
        let page = vec![synced("1", "b"), synced("2", "x"), synced("3", "c")];
        let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
        assert_eq!(outcomes, [Upserted::Unchanged, Upserted::Updated, Upserted::Unchanged], "{dialect:?}");
        assert_eq!(store.mirror_get("tags", "2").await.unwrap().unwrap().document["Name"], "x", "{dialect:?}");
        store.mirror_insert("companies", &record("1", "a"), None).await.unwrap();
        assert_eq!(total(store, "tags").await, 3, "{dialect:?}");
        assert!(store.mirror_delete("tags", "2").await.unwrap());
        assert!(!store.mirror_delete("tags", "2").await.unwrap());
        assert_eq!(total(store, "tags").await, 2, "{dialect:?}");
        // The second page starts past the end: the count comes on its own.
        let (beyond, total_beyond) = store.mirror_page("tags", 5, 1).await.unwrap();
        assert!(beyond.is_empty());
        assert_eq!(total_beyond, 2);
        let mut counts = store.mirror_counts().await.unwrap();
        counts.sort();
        assert_eq!(counts, [("companies".to_string(), 1), ("tags".to_string(), 2)], "{dialect:?}");
        // A record cannot move to another set behind the counts' back.
        let moved = sqlx::query("UPDATE fieldreport_records SET entity = 'users' WHERE entity = 'tags'")
            .execute(store.pool())
            .await;
        assert!(moved.unwrap_err().to_string().contains("cannot move"), "{dialect:?}");
    }
}

#[cfg(test)]
mod sqlite_key_migration {
    use sqlx::Row;

    use crate::config::DatabaseUrl;
    use crate::store::Store;

    const RECORDS: &str = "SELECT rowid, entity, record_id, version, document, pending_push, external_id \
         FROM fieldreport_records ORDER BY rowid";

    /// Migration 0017 copies the SQLite mirror into a table without a primary key: every row
    /// (rowid included), the counts, the triggers and the indexes come through, and the new
    /// index keeps an id unique within its set.
    #[tokio::test]
    async fn rebuilding_the_sqlite_mirror_keeps_its_records_counts_and_triggers() {
        let dir = std::env::temp_dir().join(format!("mirror-key-{}", uuid::Uuid::new_v4()));
        let store = Store::connect(&DatabaseUrl::new(format!("sqlite://{}/db.sqlite", dir.display()))).await.unwrap();
        let mut before = sqlx::migrate!("migrations/sqlite");
        before.migrations = before.migrations.iter().filter(|m| m.version < 17).cloned().collect::<Vec<_>>().into();
        before.run(store.pool()).await.unwrap();
        for (entity, id, pending, external) in [
            ("companies", "7", None, Some("erp-7")),
            ("companies", "12", Some("update"), None),
            ("contacts", "7", Some("create"), Some("x")),
        ] {
            sqlx::query(
                "INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at, external_id) \
                 VALUES ($1, $2, 1, $3, $4, 1, 1, $5)",
            )
            .bind(entity)
            .bind(id)
            .bind(format!(r#"{{"Id":"{id}"}}"#))
            .bind(pending)
            .bind(external)
            .execute(store.pool())
            .await
            .unwrap();
        }
        let rows = |store: Store| async move {
            let rows = sqlx::query(RECORDS).fetch_all(store.pool()).await.unwrap();
            rows.iter()
                .map(|r| {
                    let text = |column: &str| r.try_get::<Option<String>, _>(column).unwrap();
                    (
                        r.get::<i64, _>("rowid"),
                        text("entity"),
                        text("record_id"),
                        r.get::<i64, _>("version"),
                        text("document"),
                        text("pending_push"),
                        text("external_id"),
                    )
                })
                .collect::<Vec<_>>()
        };
        let old = rows(store.clone()).await;
        let counts = |store: Store| async move { store.mirror_counts().await.unwrap() };
        let old_counts = counts(store.clone()).await;
        assert!(old_counts.contains(&("companies".to_string(), 2)), "{old_counts:?}");
        store.migrate().await.unwrap();
        assert_eq!(rows(store.clone()).await, old);
        assert_eq!(counts(store.clone()).await, old_counts);
        let objects: Vec<String> = sqlx::query_scalar(
            "SELECT type || ' ' || name FROM sqlite_master WHERE tbl_name = 'fieldreport_records' ORDER BY type, name",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        assert_eq!(
            objects,
            [
                "index fieldreport_records_external_id",
                "index fieldreport_records_key",
                "index fieldreport_records_pending_push",
                "table fieldreport_records",
                "trigger fieldreport_records_count_deleted",
                "trigger fieldreport_records_count_inserted",
                "trigger fieldreport_records_fill_external_id_inserted",
                "trigger fieldreport_records_fill_external_id_updated",
                "trigger fieldreport_records_keep_entity",
            ]
        );
        let again = sqlx::query(
            "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
             VALUES ('companies', '12', 1, '{}', 1, 1)",
        )
        .execute(store.pool())
        .await;
        assert!(again.unwrap_err().to_string().contains("UNIQUE"), "one record per id and set");
        // The triggers run on the new table: counting, and filling in `ExternalId`.
        sqlx::query(
            r#"INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at)
               VALUES ('companies', '13', 1, '{"ExternalId":"erp-13"}', 1, 1)"#,
        )
        .execute(store.pool())
        .await
        .unwrap();
        assert!(counts(store.clone()).await.contains(&("companies".to_string(), 3)));
        let filled: Option<String> =
            sqlx::query_scalar("SELECT external_id FROM fieldreport_records WHERE record_id = '13'")
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(filled.as_deref(), Some("erp-13"));
        store.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
