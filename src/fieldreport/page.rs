//! A page of a field-report list as a sync or a reconciling stores it: each record's head
//! (`Id`, `Version`, `DateModified`, `ExternalId`) read, the rest of its document kept as text.

use serde::Deserialize;
use serde_json::Value;

use super::service::record_id;
use crate::store::fieldreport::records::{SyncedRecord, external_id};
use crate::upstream::fieldreport::ODataPage;
use crate::vocabulary::json_integer::json_integer;
use crate::vocabulary::stamp::Stamp;

/// The fields of a record that a sync reads; the rest of the document is skipped, not parsed.
#[derive(Deserialize)]
struct RecordHead {
    #[serde(rename = "Id")]
    id: Option<Value>,
    #[serde(rename = "Version")]
    version: Option<Value>,
    #[serde(rename = "DateModified")]
    modified: Option<Value>,
    #[serde(rename = "ExternalId")]
    external_id: Option<Value>,
    #[serde(rename = "DateOfCreation")]
    created: Option<Value>,
}

impl RecordHead {
    /// The head of a record's text; `None` for a record that is not an object. A document that
    /// the skimming read refuses (a repeated key, say) is read whole, as a tree, where the last
    /// of repeated keys counts.
    fn of(text: &str) -> Option<RecordHead> {
        // Only an object is a record (the skimming read would also take an array, by position).
        if !text.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(text).ok().or_else(|| {
            let Value::Object(mut fields) = serde_json::from_str(text).ok()? else { return None };
            Some(RecordHead {
                id: fields.remove("Id"),
                version: fields.remove("Version"),
                modified: fields.remove("DateModified"),
                external_id: fields.remove("ExternalId"),
                created: fields.remove("DateOfCreation"),
            })
        })
    }
}

/// A key of the sync's order: (`DateModified`, `Id`).
pub(super) type Key = (Stamp, i64);

/// The key of the last record of `page` that has one (a stamp and a numeric `Id`): where the
/// next query of a sync goes on from, when the page is in key order.
pub(super) fn last_key(page: &ODataPage) -> Option<Key> {
    page.records.iter().rev().find_map(|document| {
        // `Id` as a number or a string, as `read_page` takes it.
        let head = RecordHead::of(document.get())?;
        let modified = Stamp::parse(head.modified.as_ref()?.as_str()?);
        let id = record_id(head.id.as_ref()?)?.parse::<i64>().ok()?;
        Some((modified, id))
    })
}

/// The key of the last record of `page`, when every record of it has no `DateModified` (absent
/// or null) and they are in ascending order of their numeric `Id`s: where the next query of a
/// sync's records never modified goes on from. They are read in Id order, so only the Id
/// counts; the stamp is their `DateOfCreation`. `None` for a page not so (an upstream that
/// ignored the filter or the order: going on from its last record could skip others).
pub(super) fn last_unmodified_key(page: &ODataPage) -> Option<Key> {
    last_in_id_order(page, false)
}

/// The key of the last record of `page` when they are in ascending order of their numeric
/// `Id`s, each with a `DateModified` or not as `stamped` allows (see [`last_unmodified_key`]);
/// only the Id counts.
pub(super) fn last_in_id_order(page: &ODataPage, stamped: bool) -> Option<Key> {
    let mut last: Option<Key> = None;
    for document in &page.records {
        let head = RecordHead::of(document.get())?;
        if !stamped && head.modified.as_ref().is_some_and(|modified| !modified.is_null()) {
            return None;
        }
        let id = record_id(head.id.as_ref()?)?.parse::<i64>().ok()?;
        if last.as_ref().is_some_and(|(_, before)| *before >= id) {
            return None;
        }
        last = Some((Stamp::parse(head.created.as_ref().and_then(Value::as_str).unwrap_or_default()), id));
    }
    last
}

/// Whether the records at the end of `page` stamped as its last key `last` (see [`last_key`])
/// come in ascending Id order: else the server orders them by stamps finer than it writes,
/// and the records of that stamp that it has not sent yet may have any Id.
pub(super) fn last_stamp_in_id_order(page: &ODataPage, last: &Key) -> bool {
    let mut after = None;
    for document in page.records.iter().rev() {
        let Some(head) = RecordHead::of(document.get()) else { continue };
        let Some(modified) = head.modified.as_ref().and_then(Value::as_str).map(Stamp::parse) else { continue };
        let Some(id) = head.id.as_ref().and_then(record_id).and_then(|id| id.parse::<i64>().ok()) else { continue };
        if modified != last.0 {
            return true;
        }
        if after.is_some_and(|after| id >= after) {
            return false;
        }
        after = Some(id);
    }
    true
}

/// A page as a sync stores it: its records with what the sync reads of each (see
/// [`read_page`]).
pub(super) struct ReadPage {
    pub(super) records: Vec<SyncedRecord>,
    /// Records the upstream sent, with those skipped.
    pub(super) fetched: u64,
    /// Records without an `Id`, skipped.
    pub(super) skipped: u64,
    /// The page's newest `DateModified`, a record never modified counting as modified when
    /// it was created (its `DateOfCreation`, when that is a timestamp).
    pub(super) newest: Option<Stamp>,
    /// The key (`DateModified`, `Id`) of the page's last keyed record: where the next query
    /// starts.
    pub(super) last_key: Option<Key>,
    /// Whether no keyed record is stamped before the one before it: the page is in key order
    /// but for the Ids of records that share a stamp (see [`last_stamp_in_id_order`]).
    pub(super) in_key_order: bool,
    /// The Id and `DateModified` of each record with both: what a sync checks against the
    /// server's count (see `sync/verify.rs`).
    pub(super) stamped: Vec<(String, Stamp)>,
    /// The Id and `DateOfCreation` (if any) of each record with an Id and no `DateModified`
    /// (absent or null): the records never modified that a sync checks against the count.
    pub(super) unstamped: Vec<(String, Option<Stamp>)>,
}

/// Reads the head of each of a page's records (see [`RecordHead`]).
pub(super) fn read_page(page: ODataPage) -> ReadPage {
    let fetched = page.records.len();
    let mut read = ReadPage {
        records: Vec::with_capacity(fetched),
        fetched: fetched as u64,
        skipped: 0,
        newest: None,
        last_key: None,
        in_key_order: true,
        stamped: Vec::new(),
        unstamped: Vec::new(),
    };
    for mut document in page.records {
        // `Id` a string and `Version` an integer, however the upstream wrote them (see
        // [`super::identity`]): the shape every route reads and writes.
        if super::identity::may_need_normalizing(document.get())
            && let Ok(mut record) = serde_json::from_str::<Value>(document.get())
            && super::identity::normalize(&mut record)
            && let Ok(normalized) = serde_json::value::to_raw_value(&record)
        {
            document = normalized;
        }
        let head = RecordHead::of(document.get());
        let modified = head.as_ref().and_then(|h| h.modified.as_ref()).and_then(Value::as_str).map(Stamp::parse);
        let created = head
            .as_ref()
            .filter(|h| h.modified.as_ref().is_none_or(Value::is_null))
            .and_then(|h| h.created.as_ref()?.as_str())
            .map(Stamp::parse)
            .filter(|created| created.instant().is_some());
        match head.and_then(|h| Some((record_id(h.id.as_ref()?)?, h))) {
            Some((id, head)) => {
                if let (Some(modified), Ok(number)) = (&modified, id.parse::<i64>()) {
                    if read.last_key.as_ref().is_some_and(|(stamp, _)| modified < stamp) {
                        read.in_key_order = false;
                    }
                    read.last_key = Some((modified.clone(), number));
                }
                if let Some(modified) = &modified {
                    read.stamped.push((id.clone(), modified.clone()));
                } else if head.modified.as_ref().is_none_or(Value::is_null) {
                    let created = head.created.as_ref().and_then(Value::as_str).map(Stamp::parse);
                    read.unstamped.push((id.clone(), created));
                }
                let version = head.version.as_ref().and_then(json_integer).unwrap_or(0);
                let external_id = external_id(head.external_id.as_ref());
                read.records.push(SyncedRecord { id, version, external_id, document });
            }
            None => read.skipped += 1,
        }
        if let Some(modified) = modified.or(created)
            && read.newest.as_ref().is_none_or(|newest| modified > *newest)
        {
            read.newest = Some(modified);
        }
    }
    read
}
