//! Pages of the mirrors after a key (`?after=<cursor>&limit=N`): the records whose key comes
//! after the last one a consumer read, in key order, by the mirrors' key indexes
//! (`fieldreport_records_key`, migrations 0016/0017; `erp_records_key`, migration 0027).
//!
//! The key is (`LENGTH(record_id)`, `record_id`): numeric ids in numeric order. A page is read
//! as two ranges of the key index, each a walk of the index from a key with nothing sorted:
//! the rest of the last key's length (`LENGTH(record_id) = $2 AND record_id > $3`, ordered by
//! `record_id` alone: its length is fixed, and SQLite sorts the whole range when asked for the
//! length too), then, when that range ran out before the page was full, the longer ids. So a
//! page reads only its own rows whatever its depth (a position, `OFFSET`, walks every row
//! before it). One statement joining both ranges (`UNION ALL`) would have to sort the page to
//! be sure of its order: about three times the cost of a page on SQLite (measured with Python's
//! `sqlite3` on a million companies: 2.2 ms against 0.4 to 0.7 ms for a page of 500).
//! A record inserted or deleted before the key moves no other record in or out of the pages
//! after it.

use serde_json::value::RawValue;
use sqlx::Row;

use crate::store::erp::{ErpRecord, erp_record};
use crate::store::{Store, StoreError};

/// Id and document of the first `$4` records of set `$1` with ids of length `$2` after `$3`.
const MIRROR_SAME_LENGTH: &str = "SELECT record_id, document FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) = $2 AND record_id > $3 ORDER BY record_id LIMIT $4";
/// Id and document of the first `$3` records of set `$1` with ids longer than `$2`.
const MIRROR_LONGER: &str = "SELECT record_id, document FROM fieldreport_records \
     WHERE entity = $1 AND LENGTH(record_id) > $2 ORDER BY LENGTH(record_id), record_id LIMIT $3";

/// [`MIRROR_SAME_LENGTH`] for the ERP mirror, with the columns of an `ErpRecord`.
const ERP_SAME_LENGTH: &str = "SELECT record_id, version, last_modified, document, pending_attributes FROM erp_records \
     WHERE model = $1 AND LENGTH(record_id) = $2 AND record_id > $3 ORDER BY record_id LIMIT $4";
/// [`MIRROR_LONGER`] for the ERP mirror.
const ERP_LONGER: &str = "SELECT record_id, version, last_modified, document, pending_attributes FROM erp_records \
     WHERE model = $1 AND LENGTH(record_id) > $2 ORDER BY LENGTH(record_id), record_id LIMIT $3";

/// The key's two parts as the statements bind them: its length (in characters, as `LENGTH`
/// counts) and its text; none is the start of the set.
fn key_parts(after: Option<&str>) -> (i64, String) {
    match after {
        Some(id) => (id.chars().count() as i64, id.to_string()),
        None => (0, String::new()),
    }
}

impl Store {
    /// Up to `limit` records of a field-report set after the record id `after` (from the
    /// start without one), in key order: each id with its document as stored (checked to be
    /// JSON, never parsed). On SQLite in place: the page reads `limit` index entries at most.
    pub async fn mirror_after(
        &self,
        entity: &str,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<(String, Box<RawValue>)>, StoreError> {
        let (length, id) = key_parts(after);
        let rows: Vec<(String, String)> = match self.engine.sqlite_reads() {
            Some(reads) => {
                let entity = entity.to_string();
                reads
                    .run(move |c| {
                        let row = |row: &rusqlite::Row| Ok((row.get(0)?, row.get(1)?));
                        let mut rows = c
                            .prepare_cached(MIRROR_SAME_LENGTH)?
                            .query_map(
                                rusqlite::named_params! {"$1": entity, "$2": length, "$3": id, "$4": limit},
                                row,
                            )?
                            .collect::<rusqlite::Result<Vec<_>>>()?;
                        let rest = limit - rows.len() as i64;
                        if rest > 0 {
                            let mut longer = c.prepare_cached(MIRROR_LONGER)?;
                            let longer = longer
                                .query_map(rusqlite::named_params! {"$1": entity, "$2": length, "$3": rest}, row)?;
                            rows.extend(longer.collect::<rusqlite::Result<Vec<_>>>()?);
                        }
                        Ok(rows)
                    })
                    .await?
            }
            None => {
                let pair = |row: &sqlx::any::AnyRow| Ok((row.try_get("record_id")?, row.try_get("document")?));
                let mut lease = self.lease().await?;
                let same = sqlx::query(MIRROR_SAME_LENGTH)
                    .bind(entity)
                    .bind(length)
                    .bind(&id)
                    .bind(limit)
                    .fetch_all(lease.connection())
                    .await;
                let mut rows = lease.settle(same)?.iter().map(pair).collect::<Result<Vec<_>, StoreError>>()?;
                let rest = limit - rows.len() as i64;
                if rest > 0 {
                    let longer = sqlx::query(MIRROR_LONGER)
                        .bind(entity)
                        .bind(length)
                        .bind(rest)
                        .fetch_all(lease.connection())
                        .await;
                    rows.extend(lease.settle(longer)?.iter().map(pair).collect::<Result<Vec<_>, StoreError>>()?);
                }
                rows
            }
        };
        rows.into_iter()
            .map(|(id, text)| {
                let document = RawValue::from_string(text)
                    .map_err(|e| StoreError::Query(format!("stored document is not JSON: {e}")))?;
                Ok((id, document))
            })
            .collect()
    }

    /// Up to `limit` records of an ERP model after the record id `after` (from the start
    /// without one), in key order.
    pub async fn erp_after(&self, model: &str, after: Option<&str>, limit: i64) -> Result<Vec<ErpRecord>, StoreError> {
        let (length, id) = key_parts(after);
        let same =
            sqlx::query(ERP_SAME_LENGTH).bind(model).bind(length).bind(id).bind(limit).fetch_all(self.pool()).await?;
        let mut records = same.iter().map(erp_record).collect::<Result<Vec<_>, _>>()?;
        let rest = limit - records.len() as i64;
        if rest > 0 {
            let longer = sqlx::query(ERP_LONGER).bind(model).bind(length).bind(rest).fetch_all(self.pool()).await?;
            records.extend(longer.iter().map(erp_record).collect::<Result<Vec<_>, _>>()?);
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests;
