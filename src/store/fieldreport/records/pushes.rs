//! The pushes of records written without forwarding: the local writes, each recording the
//! fields it changed; the pending records, each claimed for one attempt, given back, or marked
//! pushed.

use serde_json::Value;
use sqlx::Row;

use super::{MIRROR_DELETE, MIRROR_REPLACE, MIRROR_ROW, MirrorRecord, not_json, record};
use crate::store::{Dialect, Store, StoreError, now_ms};

/// A record's version, document, pending write and the fields its local writes changed, the
/// row locked until the write commits (Postgres; SQLite's write transaction holds the
/// database).
const LOCKED_ROW: &str = "SELECT version, document, pending_push, pending_fields FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2 FOR UPDATE";

/// A record replaced by a local write, pending with the fields its local writes changed; a
/// claim on it is cleared (see [`MIRROR_MARK_PUSHED`]).
pub(super) const MIRROR_REPLACE_PENDING: &str = "UPDATE fieldreport_records SET version = $1, document = $2, updated_at = $3, \
            pending_push = $4, pending_fields = $5, external_id = $6, push_claimed_until = NULL \
     WHERE entity = $7 AND LENGTH(record_id) = LENGTH($8) AND record_id = $8";
/// A pending record claimed for one push attempt, as it is now.
pub(super) const MIRROR_CLAIM_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = $1, push_attempts = push_attempts + 1 \
     WHERE entity = $2 AND LENGTH(record_id) = LENGTH($3) AND record_id = $3 AND pending_push = $4 \
     AND (push_claimed_until IS NULL OR push_claimed_until < $5) \
     RETURNING push_attempts, version, document, pending_fields";
/// A claimed record given back.
pub(super) const MIRROR_RELEASE_PUSH: &str = "UPDATE fieldreport_records SET push_claimed_until = NULL \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// A record pushed: it takes the upstream's Id and document; with `$8`, only while the claim
/// it was pushed under holds (a write since then cleared it: [`MIRROR_REPLACE_PENDING`],
/// [`MIRROR_REPLACE`]).
pub(super) const MIRROR_MARK_PUSHED: &str = "UPDATE fieldreport_records SET record_id = $1, version = $2, document = $3, \
            pending_push = NULL, pending_fields = NULL, updated_at = $4, push_claimed_until = NULL, push_attempts = 0, \
            external_id = $7 \
     WHERE entity = $5 AND LENGTH(record_id) = LENGTH($6) AND record_id = $6 \
       AND ($8 IS NULL OR push_claimed_until = $8)";

/// A pending record claimed for one push attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct PushClaim {
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// The claim's deadline, as stored with the record until the push is marked, the claim
    /// runs out, or a local write of the record clears it.
    pub until: i64,
    /// The record as claimed: a local write made since the pending records were listed is in
    /// it, and the push is marked over it.
    pub record: MirrorRecord,
    /// The top-level fields the local writes changed since the last push, which an update
    /// sends over the upstream's record; `None` to send the whole document: a create, or an
    /// update made pending before the fields were recorded (migration 0043).
    pub fields: Option<Vec<String>>,
}

/// The top-level fields of `after` that `before` does not hold as they are there: those a
/// local write changed (a field written with the value it had is no change).
fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
    let Value::Object(after) = after else { return Vec::new() };
    after
        .iter()
        .filter(|(name, value)| before.get(name.as_str()) != Some(*value))
        .map(|(name, _)| name.clone())
        .collect()
}

/// What a record is pending as after a local write of `kind` that changed `changed`, and the
/// fields its push sends (`None`: the whole record). A create is sent whole, whatever was
/// written on it since; an update sends the fields of every local write since the last push;
/// an update pending from before the fields were recorded stays whole, as it was written.
fn pending_after(
    pending: Option<&str>,
    fields: Option<Vec<String>>,
    kind: &str,
    changed: Vec<String>,
) -> (String, Option<Vec<String>>) {
    match pending {
        None => (kind.to_string(), (kind == "update").then_some(changed)),
        Some("update") => {
            let gathered = fields.map(|mut fields| {
                fields.extend(changed.into_iter().filter(|name| !fields.contains(name)).collect::<Vec<_>>());
                fields
            });
            ("update".to_string(), gathered)
        }
        Some(other) => (other.to_string(), None),
    }
}

/// The `pending_fields` column: a JSON array of names.
fn fields_read(text: Option<String>) -> Result<Option<Vec<String>>, StoreError> {
    text.map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|error| StoreError::Query(format!("stored pending fields are not a list of names: {error}")))
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
            let Some(row) = self.locked_at(&mut tx, entity, id, expected_version).await? else { return Ok(false) };
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

    /// Replaces a record still at `expected_version` with a local write (an ERP webhook's),
    /// pending for `post` as `kind` (or as it was pending already), in one transaction with
    /// the record locked; false when its version changed or it is gone. The fields it changed
    /// are added to those of the local writes before it, for the push to send
    /// ([`PushClaim::fields`]). A claim on the record is cleared.
    pub(super) async fn mirror_replace_pending(
        &self,
        entity: &str,
        record: &MirrorRecord,
        expected_version: i64,
        kind: &str,
    ) -> Result<bool, StoreError> {
        let outcome = async {
            let mut tx = self.write_transaction().await?;
            let Some(row) = self.locked_at(&mut tx, entity, &record.id, expected_version).await? else {
                return Ok(false);
            };
            let stored: Value = serde_json::from_str(&row.try_get::<String, _>("document")?).map_err(not_json)?;
            let pending: Option<String> = row.try_get("pending_push")?;
            let fields = fields_read(row.try_get("pending_fields")?)?;
            let changed = changed_fields(&stored, &record.document);
            let (pending, fields) = pending_after(pending.as_deref(), fields, kind, changed);
            let done = sqlx::query(MIRROR_REPLACE_PENDING)
                .bind(record.version)
                .bind(record.document.to_string())
                .bind(now_ms())
                .bind(pending)
                .bind(fields.map(|fields| Value::from(fields).to_string()))
                .bind(record.external_id())
                .bind(entity)
                .bind(&record.id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        }
        .await;
        self.mirror_written(entity, &[&record.id], outcome).await
    }

    /// A record's row ([`LOCKED_ROW`]) in `tx`, locked, when it is at `expected_version`.
    async fn locked_at(
        &self,
        tx: &mut crate::store::WriteTransaction,
        entity: &str,
        id: &str,
        expected_version: i64,
    ) -> Result<Option<sqlx::any::AnyRow>, StoreError> {
        let statement = match self.dialect() {
            Dialect::Postgres => LOCKED_ROW,
            Dialect::Sqlite => LOCKED_ROW.trim_end_matches(" FOR UPDATE"),
        };
        let row = sqlx::query(statement).bind(entity).bind(id).fetch_optional(&mut **tx).await?;
        match row {
            Some(row) if row.try_get::<i64, _>("version")? == expected_version => Ok(Some(row)),
            _ => Ok(None),
        }
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
        let row = sqlx::query(MIRROR_CLAIM_PUSH)
            .bind(until)
            .bind(entity)
            .bind(id)
            .bind(kind)
            .bind(now)
            .fetch_optional(self.pool())
            .await?;
        let Some(row) = row else { return Ok(None) };
        let document = serde_json::from_str(&row.try_get::<String, _>("document")?).map_err(not_json)?;
        Ok(Some(PushClaim {
            attempts: i64::from(row.try_get::<i32, _>("push_attempts")?),
            until,
            record: MirrorRecord { id: id.to_string(), version: row.try_get("version")?, document },
            fields: fields_read(row.try_get("pending_fields")?)?,
        }))
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
