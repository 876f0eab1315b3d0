//! The pushes of records written without forwarding: the pending records, each claimed for one
//! attempt, given back, or marked pushed.

use serde_json::Value;
use sqlx::Row;

use super::{MIRROR_DELETE, MIRROR_REPLACE, MIRROR_ROW, MirrorRecord, not_json, record};
use crate::store::{Dialect, Store, StoreError, now_ms};

/// A record's version, document and pending write, the row locked until the write commits
/// (Postgres; SQLite's write transaction holds the database).
const LOCKED_ROW: &str = "SELECT version, document, pending_push FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2 FOR UPDATE";

/// A pending record claimed for one push attempt.
pub(super) const MIRROR_CLAIM_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = $1, push_attempts = push_attempts + 1 \
     WHERE entity = $2 AND LENGTH(record_id) = LENGTH($3) AND record_id = $3 AND pending_push = $4 \
     AND (push_claimed_until IS NULL OR push_claimed_until < $5) RETURNING push_attempts";
/// A claimed record given back.
pub(super) const MIRROR_RELEASE_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = NULL \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// A record pushed: it takes the upstream's Id and document; with `$8`, only while the claim
/// it was pushed under holds (a local write since then cleared it: [`MIRROR_REPLACE`]).
pub(super) const MIRROR_MARK_PUSHED: &str = "UPDATE fieldreport_records SET record_id = $1, version = $2, document = $3, \
            pending_push = NULL, updated_at = $4, push_claimed_until = NULL, push_attempts = 0, external_id = $7 \
     WHERE entity = $5 AND LENGTH(record_id) = LENGTH($6) AND record_id = $6 \
       AND ($8 IS NULL OR push_claimed_until = $8)";

/// A pending record claimed for one push attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushClaim {
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The claim's deadline, as stored with the record until the push is marked, the claim
    /// runs out, or a local write of the record clears it.
    pub until: i64,
}

impl Store {
    /// Replaces a record still at `expected_version` with what `write` makes of the stored
    /// document (and whether a local write of it waits for a push), in one transaction with
    /// the record locked; the record written, `None` when its version changed or it is gone.
    /// A local write leaves the version as it was, so a forwarded write's answer checked by
    /// version alone replaced one made while the upstream was called.
    pub async fn mirror_replace_with(
        &self,
        entity: &str,
        id: &str,
        expected_version: i64,
        write: impl FnOnce(Value, bool) -> MirrorRecord,
    ) -> Result<Option<MirrorRecord>, StoreError> {
        let mut written = None;
        let outcome = async {
            let mut tx = self.write_transaction().await?;
            let statement = match self.dialect() {
                Dialect::Postgres => LOCKED_ROW,
                Dialect::Sqlite => LOCKED_ROW.trim_end_matches(" FOR UPDATE"),
            };
            let Some(row) = sqlx::query(statement).bind(entity).bind(id).fetch_optional(&mut *tx).await? else {
                return Ok(false);
            };
            if row.try_get::<i64, _>("version")? != expected_version {
                return Ok(false);
            }
            let document = serde_json::from_str(&row.try_get::<String, _>("document")?).map_err(not_json)?;
            let pending: Option<String> = row.try_get("pending_push")?;
            let record = write(document, pending.is_some());
            let done = sqlx::query(MIRROR_REPLACE)
                .bind(record.version)
                .bind(record.document.to_string())
                .bind(now_ms())
                .bind(None::<&str>)
                .bind(entity)
                .bind(id)
                .bind(expected_version)
                .bind(record.external_id())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            let replaced = done.rows_affected() == 1;
            written = replaced.then_some(record);
            Ok(replaced)
        }
        .await;
        self.mirror_written(entity, &[id], outcome).await?;
        Ok(written)
    }

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
        let attempts: Option<i32> = sqlx::query_scalar(MIRROR_CLAIM_PUSH)
            .bind(until)
            .bind(entity)
            .bind(id)
            .bind(kind)
            .bind(now)
            .fetch_optional(self.pool())
            .await?;
        Ok(attempts.map(|attempts| PushClaim { attempts: i64::from(attempts), until }))
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
