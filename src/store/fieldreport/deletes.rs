//! Tombstones of field-report records deleted locally (migration 0019).
//!
//! A record deleted here while the upstream still has it leaves a tombstone until the upstream
//! confirmed the delete: a delete made without forwarding (an ERP webhook) until `post` sends
//! it, a forwarded delete while its call is in flight or its outcome is unknown. A sync skips
//! the records that have one and removes any it stored meanwhile before it ends, so a delete is
//! never undone by a sync (docs/architecture.md, "Data rules").

use std::collections::HashSet;

use sqlx::Row;

use crate::store::{Dialect, Store, StoreError, now_ms};

/// What a local delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalDelete {
    /// No such record.
    Missing,
    /// A record created here that was never pushed (a pending create): dropped, there is
    /// nothing to send. (Its Id is ours, not the upstream's: even a push attempt that may have
    /// arrived could not be deleted by it; `post`'s recovery looks such records up by
    /// `ExternalId`.)
    Dropped,
    /// Deleted, with a tombstone until the upstream confirms the delete.
    Tombstoned,
}

const RECORD_STATE: &str = "SELECT pending_push FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
/// [`RECORD_STATE`] locking the row until the delete commits (Postgres).
const RECORD_STATE_FOR_UPDATE: &str = "SELECT pending_push FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2 FOR UPDATE";
const DELETE_RECORD: &str =
    "DELETE FROM fieldreport_records WHERE entity = $1 AND LENGTH(record_id) = LENGTH($2) AND record_id = $2";
const INSERT_TOMBSTONE: &str = "INSERT INTO fieldreport_deletes (entity, record_id, deleted_at) VALUES ($1, $2, $3) \
     ON CONFLICT (entity, record_id) DO UPDATE SET deleted_at = EXCLUDED.deleted_at";
const TOMBSTONES: &str = "SELECT record_id FROM fieldreport_deletes WHERE entity = $1 ORDER BY deleted_at, record_id";
const CLAIM_DELETE: &str = "UPDATE fieldreport_deletes SET push_claimed_until = $1, push_attempts = push_attempts + 1 \
     WHERE entity = $2 AND record_id = $3 AND (push_claimed_until IS NULL OR push_claimed_until < $4) \
     RETURNING push_attempts";
const RELEASE_DELETE: &str =
    "UPDATE fieldreport_deletes SET push_claimed_until = NULL WHERE entity = $1 AND record_id = $2";
const FORGET_TOMBSTONE: &str = "DELETE FROM fieldreport_deletes WHERE entity = $1 AND record_id = $2";
/// The ids of set `$1` removed after change number `$2` (the feed's removals) that the set
/// holds again, with no local change waiting.
const BACK_AFTER_REMOVAL: &str = "SELECT DISTINCT removed.record_id FROM mirror_removals removed \
     JOIN fieldreport_records back ON back.entity = removed.entity \
       AND LENGTH(back.record_id) = LENGTH(removed.record_id) AND back.record_id = removed.record_id \
     WHERE removed.mirror = 'fieldreport' AND removed.entity = $1 AND removed.change_seq > $2 \
       AND back.pending_push IS NULL";

impl Store {
    /// Deletes a record locally in one transaction: a record that the upstream has (or may
    /// have) leaves a tombstone, a pending create is simply dropped.
    pub async fn mirror_delete_tombstoned(&self, entity: &str, id: &str) -> Result<LocalDelete, StoreError> {
        let outcome = self.delete_with_tombstone(entity, id).await;
        let changed = outcome.as_ref().map(|outcome| *outcome != LocalDelete::Missing).map_err(Clone::clone);
        self.mirror_written(entity, &[id], changed).await?;
        outcome
    }

    /// Whether the record is a create made here and not yet pushed: its Id is ours, and the
    /// upstream knows no such record until `post` creates it.
    pub async fn mirror_create_pending(&self, entity: &str, id: &str) -> Result<bool, StoreError> {
        let state = sqlx::query(RECORD_STATE).bind(entity).bind(id).fetch_optional(self.pool()).await?;
        let pending: Option<String> = match state {
            Some(state) => state.try_get("pending_push")?,
            None => None,
        };
        Ok(pending.as_deref() == Some("create"))
    }

    async fn delete_with_tombstone(&self, entity: &str, id: &str) -> Result<LocalDelete, StoreError> {
        let mut tx = self.write_transaction().await?;
        let statement = if self.dialect() == Dialect::Postgres { RECORD_STATE_FOR_UPDATE } else { RECORD_STATE };
        let state = sqlx::query(statement).bind(entity).bind(id).fetch_optional(&mut *tx).await?;
        let Some(state) = state else { return Ok(LocalDelete::Missing) };
        let pending: Option<String> = state.try_get("pending_push")?;
        sqlx::query(DELETE_RECORD).bind(entity).bind(id).execute(&mut *tx).await?;
        let outcome = if pending.as_deref() == Some("create") {
            LocalDelete::Dropped
        } else {
            sqlx::query(INSERT_TOMBSTONE).bind(entity).bind(id).bind(now_ms()).execute(&mut *tx).await?;
            LocalDelete::Tombstoned
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// The ids of `entity`'s tombstones, oldest delete first: the deletes `post` sends.
    pub async fn mirror_tombstones(&self, entity: &str) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(TOMBSTONES).bind(entity).fetch_all(self.pool()).await?)
    }

    /// The same, as a set: the records a sync must not store.
    pub async fn mirror_tombstone_set(&self, entity: &str) -> Result<HashSet<String>, StoreError> {
        Ok(self.mirror_tombstones(entity).await?.into_iter().collect())
    }

    /// Claims a pending delete for one push attempt (as [`Store::mirror_claim_push`]).
    pub async fn mirror_claim_delete(&self, entity: &str, id: &str) -> Result<Option<i64>, StoreError> {
        let _turn = self.write_turn().await?;
        let attempts: Option<i32> = sqlx::query_scalar(CLAIM_DELETE)
            .bind(self.lease_deadline())
            .bind(entity)
            .bind(id)
            .bind(now_ms())
            .fetch_optional(self.pool())
            .await?;
        Ok(attempts.map(i64::from))
    }

    /// Gives a claimed delete back after a failed attempt.
    pub async fn mirror_release_delete(&self, entity: &str, id: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(RELEASE_DELETE).bind(entity).bind(id).execute(self.pool()).await?;
        Ok(())
    }

    /// The upstream confirmed the delete (or no longer has the record): the tombstone goes.
    pub async fn mirror_forget_tombstone(&self, entity: &str, id: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(FORGET_TOMBSTONE).bind(entity).bind(id).execute(self.pool()).await?;
        Ok(())
    }

    /// The records of `entity` removed after the feed's change number `after` that it holds
    /// again (none with a local change waiting): a sync's page read at the upstream before a
    /// local delete stores the record again when it is written after the delete, and the
    /// delete's tombstone may be gone by then (the upstream confirmed it).
    pub async fn mirror_back_after_removal(&self, entity: &str, after: i64) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(BACK_AFTER_REMOVAL).bind(entity).bind(after).fetch_all(self.pool()).await?)
    }

    /// Removes the records of `entity` that have a tombstone (a sync that ran while they were
    /// deleted may have stored them again), a thousand a statement; their ids.
    pub async fn mirror_purge_tombstoned(&self, entity: &str) -> Result<Vec<String>, StoreError> {
        let tombstones = self.mirror_tombstones(entity).await?;
        if tombstones.is_empty() {
            return Ok(Vec::new());
        }
        let mut purged = Vec::new();
        let outcome = async {
            let mut tx = self.write_transaction().await?;
            purged = super::reconcile::remove_named(&mut tx, self.dialect(), entity, &tombstones, None).await?;
            tx.commit().await?;
            Ok::<_, StoreError>(!purged.is_empty())
        }
        .await;
        let ids: Vec<&str> = tombstones.iter().map(String::as_str).collect();
        self.mirror_written(entity, &ids, outcome).await?;
        Ok(purged)
    }
}

#[cfg(test)]
mod tests;
