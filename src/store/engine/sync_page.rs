//! A page of a sync as its writers take it ([`super::sqlite_sync_writes`],
//! [`super::sync_writers`]): the records as the upstream sent them, which of them are the last
//! copy of their id, and the look for stored copies by ranges of ids.

use serde_json::value::RawValue;

use crate::store::dialect::Dialect;

/// A record as a sync stores it: its document as the upstream sent it, never parsed into a
/// tree.
#[derive(Debug)]
pub struct SyncedRecord {
    pub id: String,
    pub version: i64,
    /// The document's `ExternalId` (see [`crate::store::fieldreport::records::external_id`]).
    pub external_id: Option<String>,
    pub document: Box<RawValue>,
}

#[cfg(test)]
impl SyncedRecord {
    /// The record `{"Id": id, "Name": name}` as a sync stores it, without an `ExternalId`.
    pub fn named(id: impl ToString, name: &str) -> SyncedRecord {
        let id = id.to_string();
        let document = RawValue::from_string(format!(r#"{{"Id":"{id}","Name":"{name}"}}"#)).expect("JSON");
        SyncedRecord { id, version: 1, external_id: None, document }
    }
}

/// How a synced record compared with the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    Inserted,
    Updated,
    Unchanged,
}

/// For each record of a page, whether it is the last copy of its id in the page.
pub(in crate::store) fn last_copies(records: &[SyncedRecord]) -> Vec<bool> {
    let mut seen = std::collections::HashSet::new();
    let mut last: Vec<bool> = records.iter().rev().map(|record| seen.insert(record.id.as_str())).collect();
    last.reverse();
    last
}

/// Lengths of id in a batch past which `may_hold_any_of` (see [`crate::store::fieldreport::sync`]) does not look (and answers yes).
const ID_LENGTHS_LOOKED_AT: usize = 4;

/// The least and the greatest id of `records` per length of id (in the mirror's order: by
/// length, then byte by byte); `None` past [`ID_LENGTHS_LOOKED_AT`] lengths.
pub(in crate::store) fn id_ranges<'r>(
    records: &[&'r SyncedRecord],
) -> Option<std::collections::BTreeMap<usize, (&'r str, &'r str)>> {
    let mut ranges: std::collections::BTreeMap<usize, (&str, &str)> = std::collections::BTreeMap::new();
    for record in records {
        let id = record.id.as_str();
        let (least, greatest) = ranges.entry(id.chars().count()).or_insert((id, id));
        *least = (*least).min(id);
        *greatest = (*greatest).max(id);
        if ranges.len() > ID_LENGTHS_LOOKED_AT {
            return None;
        }
    }
    Some(ranges)
}

/// The records that are the last copy of their id in the page (see [`last_copies`]).
pub(in crate::store) fn last_copies_of<'r>(records: &'r [SyncedRecord], last_copies: &[bool]) -> Vec<&'r SyncedRecord> {
    records.iter().zip(last_copies).filter(|(_, last)| **last).map(|(record, _)| record).collect()
}

/// Whether a record of the set has an id between two ids of one length (see
/// `may_hold_any_of` in [`crate::store::fieldreport::sync`]): one range of the record index, read in its order, so that the first
/// record found ends it. SQLite is told the index, so that it takes the range from no other:
/// before migration 0017 it took it from the primary key (entity, record_id), where ids of
/// every length lie between two of one length (`10` < `10000` < `20`).
pub(in crate::store) fn mirror_any_in_range(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "SELECT 1 FROM fieldreport_records \
             WHERE entity = $1 AND LENGTH(record_id) = $2 AND record_id >= $3 AND record_id <= $4 \
             ORDER BY record_id LIMIT 1"
        }
        Dialect::Sqlite => {
            "SELECT 1 FROM fieldreport_records INDEXED BY fieldreport_records_key \
             WHERE entity = $1 AND LENGTH(record_id) = $2 AND record_id >= $3 AND record_id <= $4 \
             ORDER BY record_id LIMIT 1"
        }
    }
}
