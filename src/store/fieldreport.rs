//! The `fieldreport_records` table: the local mirror, one whole JSON document per record.

use serde_json::Value;
use sqlx::Row;

use super::{Store, StoreError, now_ms};

/// A mirrored record.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorRecord {
    pub id: String,
    pub version: i64,
    pub document: Value,
}

fn record(row: &sqlx::any::AnyRow) -> Result<MirrorRecord, StoreError> {
    let text: String = row.try_get("document")?;
    let document =
        serde_json::from_str(&text).map_err(|e| StoreError::Query(format!("stored document is not JSON: {e}")))?;
    Ok(MirrorRecord { id: row.try_get("record_id")?, version: row.try_get("version")?, document })
}

impl Store {
    pub async fn mirror_get(&self, entity: &str, id: &str) -> Result<Option<MirrorRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT record_id, version, document FROM fieldreport_records WHERE entity = $1 AND record_id = $2",
        )
        .bind(entity)
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record).transpose()
    }

    /// Inserts a new record; [`StoreError::Duplicate`] when the id exists.
    pub async fn mirror_insert(
        &self,
        entity: &str,
        record: &MirrorRecord,
        pending_push: Option<&str>,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO fieldreport_records (entity, record_id, version, document, pending_push, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .bind(entity)
        .bind(&record.id)
        .bind(record.version)
        .bind(record.document.to_string())
        .bind(pending_push)
        .bind(now)
        .execute(self.pool())
        .await?;
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
        let done = sqlx::query(
            "UPDATE fieldreport_records SET version = $1, document = $2, updated_at = $3, \
                    pending_push = COALESCE(pending_push, $4) \
             WHERE entity = $5 AND record_id = $6 AND version = $7",
        )
        .bind(record.version)
        .bind(record.document.to_string())
        .bind(now_ms())
        .bind(pending_push)
        .bind(entity)
        .bind(&record.id)
        .bind(expected_version)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes a record; false when it was not there.
    pub async fn mirror_delete(&self, entity: &str, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM fieldreport_records WHERE entity = $1 AND record_id = $2")
            .bind(entity)
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// One page of records ordered by id (numeric ids in numeric order), and the total.
    pub async fn mirror_page(
        &self,
        entity: &str,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<MirrorRecord>, i64), StoreError> {
        let rows = sqlx::query(
            "SELECT record_id, version, document FROM fieldreport_records WHERE entity = $1 \
             ORDER BY LENGTH(record_id), record_id LIMIT $2 OFFSET $3",
        )
        .bind(entity)
        .bind(limit)
        .bind(offset)
        .fetch_all(self.pool())
        .await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) AS total FROM fieldreport_records WHERE entity = $1")
            .bind(entity)
            .fetch_one(self.pool())
            .await?
            .try_get("total")?;
        Ok((rows.iter().map(record).collect::<Result<_, _>>()?, total))
    }
}
