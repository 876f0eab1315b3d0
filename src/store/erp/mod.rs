//! The ERP mirror (`erp_records`), the pull state per model (`erp_pull_state`) and the webhook
//! inbox (`erp_webhook_inbox`, in `inbox.rs`).

use serde_json::Value;
use sqlx::Row;

use super::fieldreport::records::Upserted;
use super::lease::ERP_PULL;
use crate::store::{Dialect, Store, StoreError, now_ms};

mod attributes;
mod inbox;
mod record;

pub use self::attributes::keep_pending_attributes;
pub use self::inbox::{InboxCounts, InboxDepths, InboxItem};
pub use self::record::ErpRecord;
pub(in crate::store) use self::record::{COLUMNS, erp_record};

/// A model's row of `show`: local count and pull state.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelState {
    pub model: String,
    pub records: i64,
    pub cursor: Option<i64>,
    pub last_pull_at: Option<i64>,
}

impl Store {
    pub async fn erp_get(&self, model: &str, id: &str) -> Result<Option<ErpRecord>, StoreError> {
        let row = sqlx::query(sql!("SELECT {COLUMNS} FROM erp_records WHERE model = $1 AND record_id = $2"))
            .bind(model)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(erp_record).transpose()
    }

    /// Stores records fetched from the ERP in one transaction. A record older than the stored
    /// one changes nothing ([`ErpRecord::supersedes`]): the mirror keeps the highest version,
    /// or the record created again under its id (a later `createdDate`). Locally changed
    /// custom attribute values are kept until pushed, but not over a record created again:
    /// they were set for the deleted one, and a push would write them onto another record.
    ///
    /// On Postgres the writes take their change numbers at once, one update of the model's
    /// `mirror_feed` row: numbered one row at a time by the triggers, each update of that row
    /// would walk past every version the transaction left of it (bench/HISTORY.md, 2026-11-29).
    pub async fn erp_upsert(&self, model: &str, records: &[ErpRecord]) -> Result<Vec<Upserted>, StoreError> {
        let mut tx = self.write_transaction().await?;
        let postgres = self.dialect() == Dialect::Postgres;
        let now = now_ms();
        let mut outcomes = Vec::with_capacity(records.len());
        // What to write: the record, the document to store over a stored one (kept attributes
        // merged in), whether the write takes a change number (its document is new), and
        // whether the stored record's pending attribute values go (it was created again).
        let mut writes: Vec<(&ErpRecord, Option<Value>, bool, bool)> = Vec::new();
        for record in records {
            let stored = self.locked_record(&mut tx, model, &record.id).await?;
            let outcome = match &stored {
                None => {
                    writes.push((record, None, true, false));
                    Upserted::Inserted
                }
                Some(stored) if !record.supersedes(stored) => Upserted::Unchanged,
                Some(stored) => {
                    let mut document = record.document.clone();
                    let created_again = record.created_again(stored);
                    let kept: &[String] = if created_again { &[] } else { &stored.pending_attributes };
                    keep_pending_attributes(&mut document, &stored.document, kept);
                    if document == stored.document && record.version == stored.version {
                        Upserted::Unchanged
                    } else {
                        let numbered = document != stored.document;
                        writes.push((record, Some(document), numbered, created_again));
                        Upserted::Updated
                    }
                }
            };
            outcomes.push(outcome);
        }
        // The first number of the writes on Postgres; SQLite's triggers number them.
        let numbered = writes.iter().filter(|(_, _, numbered, _)| *numbered).count();
        let mut number = match (postgres, numbered) {
            (true, n) if n > 0 => Some(crate::store::feed::take_numbers(&mut tx, "erp", model, n).await?),
            _ => None,
        };
        for (record, merged, numbered, created_again) in writes {
            let change_seq = if numbered { number } else { None };
            if numbered {
                number = number.map(|n| n + 1);
            }
            match merged {
                None => {
                    sqlx::query(
                        "INSERT INTO erp_records (model, record_id, version, last_modified, document, pulled_at, change_seq) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(model)
                    .bind(&record.id)
                    .bind(record.version)
                    .bind(record.last_modified)
                    .bind(record.document.to_string())
                    .bind(now)
                    .bind(change_seq)
                    .execute(&mut *tx)
                    .await?;
                }
                Some(document) => {
                    // Without a number of its own (SQLite) the row keeps its old one, and the
                    // update trigger numbers it anew.
                    // Pending values stay only where they were kept (see `kept` above).
                    sqlx::query(
                        "UPDATE erp_records SET version = $1, last_modified = $2, document = $3, pulled_at = $4, \
                         change_seq = COALESCE($5, change_seq), \
                         pending_attributes = CASE WHEN $8 = 1 THEN NULL ELSE pending_attributes END \
                         WHERE model = $6 AND record_id = $7",
                    )
                    .bind(record.version)
                    .bind(record.last_modified)
                    .bind(document.to_string())
                    .bind(now)
                    .bind(change_seq)
                    .bind(model)
                    .bind(&record.id)
                    .bind(i32::from(created_again))
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(outcomes)
    }

    /// Removes a record the ERP no longer has; false when it was not there. Then its absence
    /// is noted instead (`erp_absences`, migration 0034): a pull's page read at the ERP before
    /// the delete may still bring the record (see [`Self::erp_removed_since`]).
    pub async fn erp_delete(&self, model: &str, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM erp_records WHERE model = $1 AND record_id = $2")
            .bind(model)
            .bind(id)
            .execute(self.pool())
            .await?;
        if done.rows_affected() == 1 {
            return Ok(true);
        }
        sqlx::query(
            "INSERT INTO erp_absences (model, record_id, noted_at) VALUES ($1, $2, $3) \
             ON CONFLICT (model, record_id) DO UPDATE SET noted_at = excluded.noted_at",
        )
        .bind(model)
        .bind(id)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(false)
    }

    /// The ids of a model's records removed from the mirror at or after `since` (epoch ms),
    /// from the change feed's tombstones, and of those found absent when the ERP deleted them
    /// ([`Self::erp_delete`]): what a pull's page read before then may bring back.
    pub async fn erp_removed_since(&self, model: &str, since: i64) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT record_id FROM mirror_removals WHERE mirror = 'erp' AND entity = $1 AND removed_at >= $2 \
             UNION SELECT record_id FROM erp_absences WHERE model = $1 AND noted_at >= $2",
        )
        .bind(model)
        .bind(since)
        .fetch_all(self.pool())
        .await?;
        Ok(ids)
    }

    /// Whether record `id` of a model was removed from the mirror, or found absent, at or after
    /// `since`: [`Self::erp_removed_since`] for one record, asked by its id.
    pub async fn erp_removed_since_one(&self, model: &str, id: &str, since: i64) -> Result<bool, StoreError> {
        let found: Option<String> = sqlx::query_scalar(
            "SELECT record_id FROM erp_absences WHERE model = $1 AND record_id = $2 AND noted_at >= $3 \
             UNION ALL SELECT record_id FROM mirror_removals \
               WHERE mirror = 'erp' AND entity = $1 AND record_id = $2 AND removed_at >= $3 LIMIT 1",
        )
        .bind(model)
        .bind(id)
        .bind(since)
        .fetch_optional(self.pool())
        .await?;
        Ok(found.is_some())
    }

    /// One page of a model's records ordered by id (numeric ids in numeric order), and the total.
    pub async fn erp_page(&self, model: &str, offset: i64, limit: i64) -> Result<(Vec<ErpRecord>, i64), StoreError> {
        let rows = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM erp_records WHERE model = $1 \
             ORDER BY LENGTH(record_id), record_id LIMIT $2 OFFSET $3"
        ))
        .bind(model)
        .bind(limit)
        .bind(offset)
        .fetch_all(self.pool())
        .await?;
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM erp_records WHERE model = $1")
            .bind(model)
            .fetch_one(self.pool())
            .await?;
        Ok((rows.iter().map(erp_record).collect::<Result<_, _>>()?, total))
    }

    /// The id and version of every record of a model, in id order: what a full pull and a
    /// reconcile compare with the ERP's, without the documents (a model of 250,000 records
    /// holds about 20 MB of them, and a gigabyte of documents).
    pub async fn erp_versions(&self, model: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT record_id, version FROM erp_records WHERE model = $1 ORDER BY LENGTH(record_id), record_id",
        )
        .bind(model)
        .fetch_all(self.pool())
        .await?;
        Ok(rows)
    }

    /// Every record of a model, in id order (for mappings and pushes).
    pub async fn erp_all(&self, model: &str) -> Result<Vec<ErpRecord>, StoreError> {
        let rows = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM erp_records WHERE model = $1 ORDER BY LENGTH(record_id), record_id"
        ))
        .bind(model)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(erp_record).collect()
    }

    /// Records whose top-level field `attribute` equals `value` as text, by id, at most 500.
    /// `attribute` is bound as a parameter (as the JSON path on SQLite), never spliced in.
    pub async fn erp_find(&self, model: &str, attribute: &str, value: &str) -> Result<Vec<ErpRecord>, StoreError> {
        let (test, key) = self.document_field_equals(attribute);
        let rows = sqlx::query(sql!(
            "SELECT {COLUMNS} FROM erp_records WHERE model = $1 AND {test} \
             ORDER BY LENGTH(record_id), record_id LIMIT 500"
        ))
        .bind(model)
        .bind(key)
        .bind(value)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(erp_record).collect()
    }

    /// Every model with local records or a pull state.
    pub async fn erp_models(&self) -> Result<Vec<ModelState>, StoreError> {
        let counts =
            sqlx::query("SELECT model, COUNT(*) AS n FROM erp_records GROUP BY model").fetch_all(self.pool()).await?;
        let mut states: std::collections::BTreeMap<String, ModelState> = Default::default();
        for row in &counts {
            let model: String = row.try_get("model")?;
            states.insert(
                model.clone(),
                ModelState { model, records: row.try_get("n")?, cursor: None, last_pull_at: None },
            );
        }
        for row in
            sqlx::query("SELECT model, cursor_value, last_pull_at FROM erp_pull_state").fetch_all(self.pool()).await?
        {
            let model: String = row.try_get("model")?;
            let state = states.entry(model.clone()).or_insert(ModelState {
                model,
                records: 0,
                cursor: None,
                last_pull_at: None,
            });
            state.cursor = row.try_get("cursor_value")?;
            state.last_pull_at = row.try_get("last_pull_at")?;
        }
        Ok(states.into_values().collect())
    }

    /// The cursor of a model's incremental pull: the newest `lastModifiedDate` pulled.
    pub async fn erp_cursor(&self, model: &str) -> Result<Option<i64>, StoreError> {
        let row = sqlx::query("SELECT cursor_value FROM erp_pull_state WHERE model = $1")
            .bind(model)
            .fetch_optional(self.pool())
            .await?;
        Ok(match row {
            Some(row) => row.try_get("cursor_value")?,
            None => None,
        })
    }

    /// Takes the pull lease of `model` (see [`Store::take_lease`]).
    pub async fn take_pull_lease(&self, model: &str, owner: &str, until: i64) -> Result<bool, StoreError> {
        self.take_lease(ERP_PULL, model, owner, until).await
    }

    /// Ends a pull: releases the lease and, when it completed, records the new cursor (which
    /// moves back when the last one was later than its pull's start by the service's clock:
    /// stamps of an ERP clock that ran ahead).
    pub async fn finish_pull(&self, model: &str, owner: &str, cursor: Option<i64>) -> Result<(), StoreError> {
        let moved = match cursor {
            Some(_) => ", cursor_value = $1, last_pull_at = $2",
            None => "",
        };
        sqlx::query(sql!(
            "UPDATE erp_pull_state SET lease_owner = NULL, lease_until = NULL{moved} WHERE model = $3 AND lease_owner = $4"
        ))
        .bind(cursor.unwrap_or(0))
        .bind(now_ms())
        .bind(model)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
