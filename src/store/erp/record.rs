//! One mirrored ERP record as the store reads it from `erp_records`.

use crate::vocabulary::json_integer::json_integer;
use serde_json::Value;
use sqlx::Row;

use crate::store::{Dialect, Store, StoreError, WriteTransaction};

/// One mirrored ERP record: the whole document and the fields the mirror orders by.
#[derive(Debug, Clone, PartialEq)]
pub struct ErpRecord {
    pub id: String,
    pub version: i64,
    pub last_modified: i64,
    pub document: Value,
    /// Custom attribute definitions whose local values wait to be pushed to the ERP.
    pub pending_attributes: Vec<String>,
}

impl ErpRecord {
    /// Whether this record, as the ERP answered it, may replace `stored`, the mirror's record
    /// of the same id. One record only moves forward: a lower `version` is an older read,
    /// whatever its stamp (an ERP clock that ran ahead and was set right stamps a later
    /// version earlier). A record created again under its id starts again at version 0 with a
    /// later `createdDate`: it replaces the earlier one, which a late read never brings back.
    /// Without `createdDate` on both, a lower version stamped later is taken for one created
    /// again.
    pub fn supersedes(&self, stored: &ErpRecord) -> bool {
        match (created_of(&self.document), created_of(&stored.document)) {
            (Some(mine), Some(theirs)) if mine != theirs => mine > theirs,
            (Some(_), Some(_)) => self.version >= stored.version,
            _ => self.version >= stored.version || self.last_modified > stored.last_modified,
        }
    }

    /// Whether this record is another one, created under the id of `stored` after it was
    /// deleted (by the rule of [`Self::supersedes`]): what was set locally for `stored` is not
    /// its own.
    pub fn created_again(&self, stored: &ErpRecord) -> bool {
        match (created_of(&self.document), created_of(&stored.document)) {
            (Some(mine), Some(theirs)) => mine > theirs,
            _ => self.version < stored.version && self.last_modified > stored.last_modified,
        }
    }
}

/// A document's `createdDate` (epoch ms, a number or its text), when it has one.
fn created_of(document: &Value) -> Option<i64> {
    json_integer(document.get("createdDate")?)
}

pub(in crate::store) fn erp_record(row: &sqlx::any::AnyRow) -> Result<ErpRecord, StoreError> {
    let json = |text: String| {
        serde_json::from_str::<Value>(&text).map_err(|e| StoreError::Query(format!("stored document is not JSON: {e}")))
    };
    let pending: Option<String> = row.try_get("pending_attributes")?;
    let pending_attributes = match pending {
        Some(text) => serde_json::from_value(json(text)?).map_err(|e| StoreError::Query(e.to_string()))?,
        None => Vec::new(),
    };
    Ok(ErpRecord {
        id: row.try_get("record_id")?,
        version: row.try_get("version")?,
        last_modified: row.try_get("last_modified")?,
        document: json(row.try_get("document")?)?,
        pending_attributes,
    })
}

pub(in crate::store) const COLUMNS: &str = "record_id, version, last_modified, document, pending_attributes";

impl Store {
    /// A record read for a change in `tx`: locked on Postgres until `tx` ends (SQLite's write
    /// transaction holds the database).
    pub(super) async fn locked_record(
        &self,
        tx: &mut WriteTransaction,
        model: &str,
        id: &str,
    ) -> Result<Option<ErpRecord>, StoreError> {
        let lock = if self.dialect() == Dialect::Postgres { " FOR UPDATE" } else { "" };
        let row = sqlx::query(sql!("SELECT {COLUMNS} FROM erp_records WHERE model = $1 AND record_id = $2{lock}"))
            .bind(model)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
        row.as_ref().map(erp_record).transpose()
    }
}
