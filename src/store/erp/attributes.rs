//! Local custom attribute values of mirrored ERP records (`erp_records.pending_attributes`):
//! set here, kept over newer documents until pushed, and settled by the push's answer.

use serde_json::Value;

use super::record::{COLUMNS, ErpRecord, erp_record};
use crate::store::{Store, StoreError, now_ms};

fn pending_text(pending: &[String]) -> Option<String> {
    (!pending.is_empty()).then(|| Value::from(pending.to_vec()).to_string())
}

/// Local custom attribute values that wait for a push survive a newer document from the ERP:
/// the entries of `pending` definitions are taken from `local` into `incoming`.
pub fn keep_pending_attributes(incoming: &mut Value, local: &Value, pending: &[String]) {
    if pending.is_empty() {
        return;
    }
    let definition = |v: &Value| v.get("attributeDefinitionId").and_then(Value::as_str).map(str::to_string);
    let kept: Vec<Value> = local
        .get("customAttributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| definition(v).is_some_and(|d| pending.contains(&d)))
        .cloned()
        .collect();
    let mut merged: Vec<Value> = incoming
        .get("customAttributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| !definition(v).is_some_and(|d| pending.contains(&d)))
        .cloned()
        .collect();
    merged.extend(kept);
    if let Value::Object(fields) = incoming {
        fields.insert("customAttributes".into(), Value::Array(merged));
    }
}

impl Store {
    /// Replaces a record's document with local custom attribute changes and marks those
    /// definitions for a push.
    pub async fn erp_change_attributes(
        &self,
        model: &str,
        id: &str,
        document: &Value,
        pending: &[String],
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE erp_records SET document = $1, pending_attributes = $2 WHERE model = $3 AND record_id = $4",
        )
        .bind(document.to_string())
        .bind(pending_text(pending))
        .bind(model)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records with custom attribute values waiting for a push.
    pub async fn erp_pending_attributes(&self, model: &str) -> Result<Vec<ErpRecord>, StoreError> {
        let rows = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM erp_records WHERE model = $1 AND pending_attributes IS NOT NULL \
             ORDER BY LENGTH(record_id), record_id"
        ))
        .bind(model)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(erp_record).collect()
    }

    /// After a push the ERP's answer is the record, and `remaining` definitions still wait.
    pub async fn erp_attributes_pushed(
        &self,
        model: &str,
        record: &ErpRecord,
        remaining: &[String],
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE erp_records SET version = $1, last_modified = $2, document = $3, pending_attributes = $4, pulled_at = $5 \
             WHERE model = $6 AND record_id = $7",
        )
        .bind(record.version)
        .bind(record.last_modified)
        .bind(record.document.to_string())
        .bind(pending_text(remaining))
        .bind(now_ms())
        .bind(model)
        .bind(&record.id)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}
