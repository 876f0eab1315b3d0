//! What a reconciling sync reads and removes: the mirror's records and versions against those
//! the field-report system has (see [`crate::fieldreport::reconcile`]).

use sqlx::Row;

use crate::store::columns::IntBool;
use crate::store::{Store, StoreError};

/// The records of a set with their versions, each with whether it was last written before a
/// time and whether a local change of it waits for the upstream (a push, or an update of
/// unknown outcome).
const CANDIDATES: &str = "SELECT r.record_id, r.version, CASE WHEN r.updated_at < $2 THEN 1 ELSE 0 END AS written_before, \
       CASE WHEN r.pending_push IS NOT NULL OR EXISTS ( \
         SELECT 1 FROM fieldreport_unsettled u WHERE u.entity = r.entity AND u.record_id = r.record_id) \
       THEN 1 ELSE 0 END AS waiting \
     FROM fieldreport_records r WHERE r.entity = $1";
/// Records the upstream no longer has (the ids as a JSON array), removed only if nothing wrote
/// them since the upstream's ids were read and no local change of them waits. One statement
/// for many records: on Postgres the triggers that count records and number the removals run
/// once a statement, and a row updated again and again in one transaction gets slower with
/// every version it leaves (bench/HISTORY.md, 2026-11-29).
const REMOVE_GONE_SQLITE: &str = "DELETE FROM fieldreport_records \
     WHERE entity = $1 AND (LENGTH(record_id), record_id) IN (SELECT LENGTH(value), value FROM json_each($2)) \
       AND pending_push IS NULL AND updated_at < $3 \
     RETURNING record_id";
const REMOVE_GONE_POSTGRES: &str = "DELETE FROM fieldreport_records r \
     USING (SELECT jsonb_array_elements_text($2::jsonb) AS id) AS gone \
     WHERE r.entity = $1 AND LENGTH(r.record_id) = LENGTH(gone.id) AND r.record_id = gone.id \
       AND r.pending_push IS NULL AND r.updated_at < $3 \
     RETURNING r.record_id";
/// [`REMOVE_GONE_SQLITE`] and [`REMOVE_GONE_POSTGRES`] whatever the records' state: a sync's
/// purge of the records that have a tombstone.
const REMOVE_NAMED_SQLITE: &str = "DELETE FROM fieldreport_records \
     WHERE entity = $1 AND (LENGTH(record_id), record_id) IN (SELECT LENGTH(value), value FROM json_each($2)) \
     RETURNING record_id";
const REMOVE_NAMED_POSTGRES: &str = "DELETE FROM fieldreport_records r \
     USING (SELECT jsonb_array_elements_text($2::jsonb) AS id) AS named \
     WHERE r.entity = $1 AND LENGTH(r.record_id) = LENGTH(named.id) AND r.record_id = named.id \
     RETURNING r.record_id";
/// Ids a removal statement names at most.
const REMOVE_GONE_CHUNK: usize = 1_000;
/// Postgres: locks the records of set `$1` named in the JSON array `$2`, in key order.
const LOCK_NAMED_POSTGRES: &str = "SELECT r.record_id FROM fieldreport_records r \
     JOIN (SELECT jsonb_array_elements_text($2::jsonb) AS id) AS named \
       ON LENGTH(r.record_id) = LENGTH(named.id) AND r.record_id = named.id \
     WHERE r.entity = $1 ORDER BY LENGTH(r.record_id), r.record_id FOR UPDATE OF r";

/// Postgres, first in a transaction that removes records of `entity` in more than one
/// statement: the records named locked. Every write of a record locks the record, then its
/// set's rows (the feed's numbering, the count); a removal statement takes the set's rows
/// after its records and holds them to the commit, so without the records locked first the
/// next statement would wait for a record while holding the set's rows, and a client's write
/// of that record, waiting for them, would deadlock with it. SQLite lets one writer in.
pub(in crate::store) async fn lock_named_records(
    tx: &mut sqlx::AnyConnection,
    dialect: crate::store::Dialect,
    entity: &str,
    ids: &[String],
) -> Result<(), StoreError> {
    if dialect != crate::store::Dialect::Postgres {
        return Ok(());
    }
    for chunk in ids.chunks(REMOVE_GONE_CHUNK) {
        let named = serde_json::to_string(chunk).map_err(|e| StoreError::Query(e.to_string()))?;
        sqlx::query(LOCK_NAMED_POSTGRES).bind(entity).bind(named).execute(&mut *tx).await?;
    }
    Ok(())
}

/// Removes the records of `entity` named in `ids`, a thousand a statement, after locking them
/// ([`lock_named_records`]): with `written_before`, only those with no pending push last written
/// before it (a reconcile); without, whatever their state (a purge). The ids removed.
///
/// Never one statement a record: on Postgres each statement that removes records updates the
/// set's `mirror_feed` and count rows (migrations 0010, 0031), and a row updated again in one
/// transaction costs more with every version it left, so one a record cost the square of the
/// records (bench/HISTORY.md, 2026-11-29 and 2026-11-30).
pub(in crate::store) async fn remove_named(
    tx: &mut sqlx::AnyConnection,
    dialect: crate::store::Dialect,
    entity: &str,
    ids: &[String],
    written_before: Option<i64>,
) -> Result<Vec<String>, StoreError> {
    use crate::store::Dialect::{Postgres, Sqlite};
    let statement = match (dialect, written_before.is_some()) {
        (Sqlite, true) => REMOVE_GONE_SQLITE,
        (Postgres, true) => REMOVE_GONE_POSTGRES,
        (Sqlite, false) => REMOVE_NAMED_SQLITE,
        (Postgres, false) => REMOVE_NAMED_POSTGRES,
    };
    lock_named_records(&mut *tx, dialect, entity, ids).await?;
    let mut removed = Vec::new();
    for chunk in ids.chunks(REMOVE_GONE_CHUNK) {
        let named = serde_json::to_string(chunk).map_err(|e| StoreError::Query(e.to_string()))?;
        let mut query = sqlx::query(statement).bind(entity).bind(named);
        if let Some(before_ms) = written_before {
            query = query.bind(before_ms);
        }
        for row in &query.fetch_all(&mut *tx).await? {
            removed.push(row.try_get::<String, _>("record_id")?);
        }
    }
    Ok(removed)
}

/// A record of the mirror, as a reconciling sync compares it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ReconcileCandidate {
    #[sqlx(rename = "record_id")]
    pub id: String,
    pub version: i64,
    /// Last written before the reconciling began: the upstream's list, read after, is newer.
    #[sqlx(rename = "written_before", try_from = "IntBool")]
    pub before: bool,
    /// A local change of it waits for the upstream: it is kept and reported.
    #[sqlx(try_from = "IntBool")]
    pub waiting: bool,
}

impl Store {
    /// Every record of `entity`, each with whether it was last written before `before_ms`
    /// (one written later may be missing from, or newer than, a list read before it).
    pub async fn mirror_reconcile_candidates(
        &self,
        entity: &str,
        before_ms: i64,
    ) -> Result<Vec<ReconcileCandidate>, StoreError> {
        Ok(sqlx::query_as::<_, ReconcileCandidate>(CANDIDATES)
            .bind(entity)
            .bind(before_ms)
            .fetch_all(self.pool())
            .await?)
    }

    /// Removes these records of `entity`, which the upstream no longer has, in one transaction;
    /// a record written since `before_ms` or with a pending push stays. The ids removed.
    pub async fn mirror_remove_gone(
        &self,
        entity: &str,
        ids: &[String],
        before_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut removed = Vec::new();
        let outcome = async {
            let mut tx = self.write_transaction().await?;
            removed = remove_named(&mut tx, self.dialect(), entity, ids, Some(before_ms)).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(!removed.is_empty())
        }
        .await;
        let touched: Vec<&str> = ids.iter().map(String::as_str).collect();
        self.mirror_written(entity, &touched, outcome).await?;
        Ok(removed)
    }
}
