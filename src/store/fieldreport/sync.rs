//! A sync's pages stored in the `fieldreport_records` mirror, and the sync's state.

use std::sync::Arc;

use sqlx::Row;

use super::records::SyncState;
use crate::store::engine::sync_page::{
    SyncedRecord, Upserted, id_ranges, last_copies, last_copies_of, mirror_any_in_range,
};
use crate::store::{Store, StoreError, now_ms};

/// Whether the mirror may hold one of `records` of `entity`. `false` when it holds no record
/// with an id within any of their [`id_ranges`]: then none of them is stored, and they can be
/// inserted without looking for stored copies. One range of the index per length of id,
/// whatever the number of records: a sync's new records come in runs of ids that the set does
/// not hold yet. Also `true` when the ids have more than `ID_LENGTHS_LOOKED_AT` lengths (see [`crate::store::engine::sync_page`]).
/// (SQLite's sync writes look the same way, see [`crate::store::engine::sqlite_sync_writes`].)
async fn may_hold_any_of(
    dialect: crate::store::Dialect,
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

/// Postgres: the records staged in `sync_page` (see [`crate::store::engine::sync_writers`]) upserted into the
/// mirror (`$1` the set, `$2` the time, `$3` the change number before the first staged row's):
/// each inserted, or updated where its document changed, numbered in the set's change feed.
/// Only rows inserted or changed come back; `xmax` is 0 for an inserted row, and holds the
/// updating transaction (its lock) for an updated one.
const MIRROR_UPSERT_STAGED: &str = "INSERT INTO fieldreport_records AS stored \
            (entity, record_id, version, external_id, document, created_at, updated_at, change_seq) \
     SELECT $1, record_id, version, external_id, document, $2, $2, $3 + row_number() OVER () FROM sync_page \
     ON CONFLICT (entity, LENGTH(record_id), record_id) DO UPDATE \
     SET version = EXCLUDED.version, external_id = EXCLUDED.external_id, document = EXCLUDED.document, \
         updated_at = EXCLUDED.updated_at, change_seq = EXCLUDED.change_seq \
     WHERE stored.document <> EXCLUDED.document AND stored.pending_push IS NULL \
     RETURNING stored.record_id, stored.xmax = 0 AS inserted";

impl Store {
    /// The connections that write sync batches: Postgres's only.
    pub(in crate::store) fn sync_writers(
        &self,
    ) -> Result<&crate::store::engine::sync_writers::SyncWriters, StoreError> {
        self.engine
            .postgres()
            .map(|postgres| &postgres.sync_writers)
            .ok_or_else(|| StoreError::Query("sync writers are Postgres's only".into()))
    }

    /// Takes the sync lease of `entity` (see [`Store::take_lease`]).
    pub async fn take_sync_lease(&self, entity: &str, owner: &str, until: i64) -> Result<bool, StoreError> {
        self.take_lease(crate::store::lease::FIELDREPORT_SYNC, entity, owner, until).await
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
        if self.dialect() == crate::store::Dialect::Postgres {
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
        self.release_lease(crate::store::lease::FIELDREPORT_SYNC, entity, owner).await
    }

    /// When each set's last sync completed (sets never synced are left out).
    pub async fn last_syncs(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as("SELECT entity, last_sync_at FROM fieldreport_sync_state WHERE last_sync_at IS NOT NULL")
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn sync_state(&self, entity: &str) -> Result<SyncState, StoreError> {
        let state = sqlx::query_as::<_, SyncState>(
            "SELECT cursor_value, last_sync_at FROM fieldreport_sync_state WHERE entity = $1",
        )
        .bind(entity)
        .fetch_optional(self.pool())
        .await?;
        Ok(state.unwrap_or_default())
    }

    /// Stores one page of synced records in one transaction, without marking them for push.
    /// Documents are stored as the upstream sent them; a stored record is updated only when
    /// its document's text changed and no local change of it waits for a push (the push
    /// settles that one against the upstream's version). A record repeated within the page counts once, as its
    /// last copy (the newest, pages being in `DateModified` order); the earlier copies are
    /// [`Upserted::Unchanged`]. On SQLite the page is written by the sync's writing thread
    /// (see [`crate::store::engine::sqlite_sync_writes`]): a write it has started ends even when this future
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
            crate::store::Dialect::Postgres => self.upsert_page_postgres(entity, &records, &last_copies).await,
            crate::store::Dialect::Sqlite => self.upsert_page_sqlite(entity, records.clone(), last_copies).await,
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
    /// of the records staged by `COPY` (see [`crate::store::engine::sync_writers`]). The conflict is found
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
        crate::store::engine::sync_writers::stage(&mut tx, &stored).await?;
        let first_seq =
            crate::store::feed::reserve_numbers(self.pool(), &mut tx, "fieldreport", entity, stored.len()).await?;
        let upsert = sqlx::query(MIRROR_UPSERT_STAGED).bind(entity).bind(now_ms()).bind(first_seq - 1);
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
        let first_seq =
            crate::store::feed::reserve_numbers(self.pool(), &mut tx, "fieldreport", entity, records.len()).await?;
        crate::store::engine::sync_writers::insert(&mut tx, entity, now_ms(), first_seq, records).await?;
        tx.commit().await?;
        Ok(())
    }

    /// SQLite: the page written by the sync's own connection (see [`crate::store::engine::sqlite_sync_writes`]).
    async fn upsert_page_sqlite(
        &self,
        entity: &str,
        records: Arc<Vec<SyncedRecord>>,
        last_copies: Vec<bool>,
    ) -> Result<Vec<Upserted>, StoreError> {
        let writes = self.engine.sqlite_file().map(|file| &file.sync_writes).ok_or_else(|| {
            StoreError::Unavailable(
                "a sync needs a database file: an in-memory SQLite database has no room for its writer".into(),
            )
        })?;
        writes.write_page(entity, records, last_copies, now_ms()).await
    }
}

#[cfg(test)]
mod tests;
