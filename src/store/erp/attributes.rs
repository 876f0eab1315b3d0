//! Local custom attribute values of mirrored ERP records (`erp_records.pending_attributes`):
//! set here, kept over newer documents until pushed, and settled by the push's answer.

use serde_json::Value;

use super::record::{COLUMNS, ErpRecord, erp_record};
use crate::store::{Store, StoreError, now_ms};

fn pending_text(pending: &[String]) -> Option<String> {
    (!pending.is_empty()).then(|| Value::from(pending.to_vec()).to_string())
}

/// A document's `customAttributes` entries.
fn values(document: &Value) -> impl Iterator<Item = &Value> {
    document.get("customAttributes").and_then(Value::as_array).into_iter().flatten()
}

/// The definition an entry of `customAttributes` holds the value of.
fn definition_of(value: &Value) -> Option<&str> {
    value.get("attributeDefinitionId").and_then(Value::as_str)
}

/// Local custom attribute values that wait for a push survive a newer document from the ERP:
/// the entries of `pending` definitions are taken from `local` into `incoming`.
pub fn keep_pending_attributes(incoming: &mut Value, local: &Value, pending: &[String]) {
    if pending.is_empty() {
        return;
    }
    let of_pending = |v: &&Value| definition_of(v).is_some_and(|d| pending.iter().any(|p| p == d));
    let kept: Vec<Value> = values(local).filter(of_pending).cloned().collect();
    let mut merged: Vec<Value> = values(incoming).filter(|v| !of_pending(v)).cloned().collect();
    merged.extend(kept);
    if let Value::Object(fields) = incoming {
        fields.insert("customAttributes".into(), Value::Array(merged));
    }
}

/// A definition's entry in a document's `customAttributes`.
pub(super) fn entry<'a>(document: &'a Value, definition: &str) -> Option<&'a Value> {
    values(document).find(|v| definition_of(v) == Some(definition))
}

/// What a record becomes once the ERP answered the push of `pushed` (the record as the push
/// read it) with `answer` (the record as the ERP now has it, when it answered with one);
/// `current` is the record as stored now. A definition whose value changed locally since the
/// push read it stays pending, and its value is kept. The answer replaces the document unless
/// a newer version was stored meanwhile (a pull of a later change at the ERP), by the rule of
/// every other write ([`ErpRecord::supersedes`]).
pub fn settle_push(current: &ErpRecord, pushed: &ErpRecord, answer: Option<&ErpRecord>) -> ErpRecord {
    let remaining: Vec<String> = current
        .pending_attributes
        .iter()
        .filter(|d| {
            !(pushed.pending_attributes.contains(d) && entry(&current.document, d) == entry(&pushed.document, d))
        })
        .cloned()
        .collect();
    let mut settled = current.clone();
    if let Some(answer) = answer
        && answer.supersedes(current)
    {
        settled.document = answer.document.clone();
        keep_pending_attributes(&mut settled.document, &current.document, &remaining);
        settled.version = answer.version;
        settled.last_modified = answer.last_modified;
    }
    settled.pending_attributes = remaining;
    settled
}

impl Store {
    /// Changes a record's local custom attribute values: `edit` is given the stored record and
    /// answers its new document and pending definitions, or `None` to leave it. Read and
    /// written in one transaction with the record locked, so that neither a pull nor another
    /// edit in between is undone. `None` when the record is not mirrored, else whether it
    /// changed.
    pub async fn erp_edit_attributes(
        &self,
        model: &str,
        id: &str,
        edit: impl FnOnce(&ErpRecord) -> Option<(Value, Vec<String>)>,
    ) -> Result<Option<bool>, StoreError> {
        let mut tx = self.write_transaction().await?;
        let Some(record) = self.locked_record(&mut tx, model, id).await? else {
            return Ok(None);
        };
        let Some((document, pending)) = edit(&record) else {
            return Ok(Some(false));
        };
        sqlx::query(
            "UPDATE erp_records SET document = $1, pending_attributes = $2 WHERE model = $3 AND record_id = $4",
        )
        .bind(document.to_string())
        .bind(pending_text(&pending))
        .bind(model)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(true))
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

    /// Settles a push of `pushed` that the ERP answered with `answer` against the record as
    /// stored now ([`settle_push`]), in one transaction with the record locked. Nothing when
    /// the record was removed meanwhile.
    pub async fn erp_attributes_pushed(
        &self,
        model: &str,
        pushed: &ErpRecord,
        answer: Option<&ErpRecord>,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_transaction().await?;
        let Some(current) = self.locked_record(&mut tx, model, &pushed.id).await? else {
            return Ok(());
        };
        let settled = settle_push(&current, pushed, answer);
        if settled != current {
            sqlx::query(
                "UPDATE erp_records SET version = $1, last_modified = $2, document = $3, pending_attributes = $4, \
                 pulled_at = $5 WHERE model = $6 AND record_id = $7",
            )
            .bind(settled.version)
            .bind(settled.last_modified)
            .bind(settled.document.to_string())
            .bind(pending_text(&settled.pending_attributes))
            .bind(now_ms())
            .bind(model)
            .bind(&pushed.id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
