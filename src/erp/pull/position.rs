//! Where each page of a pull starts, in the ERP's key order, and the check that a page
//! answers its query.

use generated::erp::ModelInfo;

use crate::erp::ErpError;
use crate::store::erp::ErpRecord;
use crate::upstream::{System, UpstreamError};

/// Where the next page of a pull starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Position {
    /// Records modified at or after this instant (epoch ms): an incremental pull's start.
    Since(i64),
    /// The records modified at `at` with an id above `id` (`rest_of_instant`), then those
    /// modified after `at`.
    After { at: i64, id: String, rest_of_instant: bool },
    /// Records with an id above this (all of them for `None`), in id order.
    IdAbove(Option<String>),
}

/// Orders ids as the ERP does: numbers (its ids are digits) as numbers, anything else as text.
pub(crate) fn id_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => a.cmp(b),
    }
}

impl Position {
    /// The query parameters of the page that starts here.
    pub(super) fn query(&self) -> Vec<(String, String)> {
        let pair = |name: &str, value: String| (name.to_string(), value);
        match self {
            Position::Since(at) => {
                vec![pair("lastModifiedDate-ge", at.to_string()), pair("sort", "lastModifiedDate,id".into())]
            }
            Position::After { at, id, rest_of_instant: true } => {
                vec![pair("lastModifiedDate-eq", at.to_string()), pair("id-gt", id.clone()), pair("sort", "id".into())]
            }
            Position::After { at, .. } => {
                vec![pair("lastModifiedDate-gt", at.to_string()), pair("sort", "lastModifiedDate,id".into())]
            }
            Position::IdAbove(above) => {
                let mut query = vec![pair("sort", "id".into())];
                query.extend(above.clone().map(|id| pair("id-gt", id)));
                query
            }
        }
    }

    /// Whether `record` answers this position's query: the ERP honoured its filter. A page
    /// with one that does not (an ERP that ignored `id-gt`, say) could repeat itself forever.
    fn admits(&self, record: &ErpRecord) -> bool {
        let above = |id: &str| id_order(&record.id, id) == std::cmp::Ordering::Greater;
        match self {
            Position::Since(at) => record.last_modified >= *at,
            Position::After { at, id, rest_of_instant: true } => record.last_modified == *at && above(id),
            Position::After { at, .. } => record.last_modified > *at,
            Position::IdAbove(id) => id.as_deref().is_none_or(above),
        }
    }

    /// Whether `first` comes before `second` in the order this position's query asks for:
    /// by id, or by (`lastModifiedDate`, `id`).
    fn in_order(&self, first: &ErpRecord, second: &ErpRecord) -> bool {
        let by_id = id_order(&first.id, &second.id);
        match self {
            Position::IdAbove(_) | Position::After { rest_of_instant: true, .. } => by_id.is_lt(),
            _ => first.last_modified.cmp(&second.last_modified).then(by_id).is_lt(),
        }
    }

    /// Whether a page asked in (`lastModifiedDate`, `id`) order holds only records its query
    /// selects, yet out of that order: the ERP ignored `sort` (it lists in id order), and
    /// going on from the page's greatest key would skip what the page did not hold.
    pub(super) fn sort_ignored(&self, records: &[ErpRecord]) -> bool {
        matches!(self, Position::Since(_) | Position::After { rest_of_instant: false, .. })
            && records.iter().all(|record| self.admits(record))
            && !records.windows(2).all(|pair| self.in_order(&pair[0], &pair[1]))
    }

    /// The filters of an incremental pull's window read again by id, once the ERP is found to
    /// ignore `sort`: the records stamped from `from` through `upto` (the pull's start by
    /// this service's clock; later ones are the next pull's, so a record changed behind the
    /// id reached is read then).
    pub(super) fn window(from: i64, upto: i64) -> Vec<(String, String)> {
        vec![("lastModifiedDate-ge".into(), from.to_string()), ("lastModifiedDate-le".into(), upto.to_string())]
    }

    /// Where the page after one with these records starts; `None` when the pull has read
    /// everything. Only a query that answers no record ends: a short page proves nothing (an
    /// ERP may serve fewer than `pageSize`), and asking once more costs one request.
    pub(super) fn next(&self, records: &[ErpRecord]) -> Option<Position> {
        let by_id = |a: &&ErpRecord, b: &&ErpRecord| id_order(&a.id, &b.id);
        match self {
            Position::IdAbove(_) => {
                let last = records.iter().max_by(by_id)?;
                Some(Position::IdAbove(Some(last.id.clone())))
            }
            _ if !records.is_empty() => {
                let last =
                    records.iter().max_by(|a, b| a.last_modified.cmp(&b.last_modified).then_with(|| by_id(a, b)))?;
                Some(Position::After { at: last.last_modified, id: last.id.clone(), rest_of_instant: true })
            }
            // The rest of the instant is read: the later records follow.
            Position::After { at, id, rest_of_instant: true } => {
                Some(Position::After { at: *at, id: id.clone(), rest_of_instant: false })
            }
            _ => None,
        }
    }
}

/// A page whose records do not all answer its query, or are not in the order it asks for, is
/// a malformed answer: going on from it could skip records or ask the same page forever. (An
/// ERP that ignored `sort`, as it ignores unknown filter names, would answer a model in id
/// order: going on from the greatest key of such a page skips every record before that key
/// that the page did not hold.)
pub(super) fn check_filtered(
    info: &ModelInfo,
    position: &Position,
    query: &[(String, String)],
    records: &[ErpRecord],
) -> Result<(), ErpError> {
    let wrong = match records.iter().find(|record| !position.admits(record)) {
        Some(record) => format!("with record {}, which it does not select", record.id),
        None if !records.windows(2).all(|pair| position.in_order(&pair[0], &pair[1])) => {
            "with records out of the order it asks for".to_string()
        }
        None => return Ok(()),
    };
    let query = query.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join("&");
    Err(UpstreamError::Malformed { system: System::Erp, detail: format!("{} answered `{query}` {wrong}", info.name) }
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str, last_modified: i64) -> ErpRecord {
        let document = json!({"id": id, "version": "1", "lastModifiedDate": last_modified});
        ErpRecord { id: id.to_string(), version: 1, last_modified, document, pending_attributes: Vec::new() }
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()
    }

    /// After a full page the pull reads the rest of the last instant by id, then the later
    /// records: records sharing the last stamp are neither skipped nor read by position.
    #[test]
    fn an_incremental_pull_continues_after_its_last_key() {
        let start = Position::Since(1_000);
        assert_eq!(start.query(), pairs(&[("lastModifiedDate-ge", "1000"), ("sort", "lastModifiedDate,id")]));
        let page = [record("9", 1_500), record("10", 2_000), record("2", 2_000)];
        let rest = start.next(&page).unwrap();
        assert_eq!(rest, Position::After { at: 2_000, id: "10".into(), rest_of_instant: true }, "10 > 2 as numbers");
        assert_eq!(rest.query(), pairs(&[("lastModifiedDate-eq", "2000"), ("id-gt", "10"), ("sort", "id")]));
        let more = rest.next(&[record("11", 2_000)]).unwrap();
        assert_eq!(
            more,
            Position::After { at: 2_000, id: "11".into(), rest_of_instant: true },
            "a short page is no end"
        );
        let later = more.next(&[]).unwrap();
        assert_eq!(later.query(), pairs(&[("lastModifiedDate-gt", "2000"), ("sort", "lastModifiedDate,id")]));
        let after_later = later.next(&[record("12", 2_500)]).unwrap();
        assert_eq!(after_later, Position::After { at: 2_500, id: "12".into(), rest_of_instant: true });
        assert_eq!(after_later.next(&[]).unwrap().next(&[]), None, "two empty answers end it");
        assert_eq!(start.next(&[]), None, "an empty first page ends it");
    }

    /// Records that a page's query does not select (an ERP that ignored a filter) are told.
    #[test]
    fn a_record_outside_the_query_is_told() {
        let rest = Position::After { at: 2_000, id: "10".into(), rest_of_instant: true };
        assert!(rest.admits(&record("11", 2_000)));
        assert!(!rest.admits(&record("10", 2_000)) && !rest.admits(&record("9", 2_000)));
        assert!(!rest.admits(&record("11", 2_500)), "another instant");
        let later = Position::After { at: 2_000, id: "10".into(), rest_of_instant: false };
        assert!(later.admits(&record("1", 2_001)) && !later.admits(&record("99", 2_000)));
        assert!(Position::Since(5).admits(&record("1", 5)) && !Position::Since(5).admits(&record("1", 4)));
        let above = Position::IdAbove(Some("100".into()));
        assert!(above.admits(&record("101", 0)) && !above.admits(&record("99", 0)) && !above.admits(&record("100", 0)));
        assert!(Position::IdAbove(None).admits(&record("1", 0)));
        let info = generated::erp::model("article").unwrap();
        let error = check_filtered(info, &above, &above.query(), &[record("101", 0), record("7", 0)]).unwrap_err();
        assert!(error.to_string().contains("record 7"), "{error}");
    }

    /// A page out of the order its query asks for (an ERP that ignored `sort`) is told: the
    /// pull would go on from its greatest key past records it did not hold.
    #[test]
    fn a_page_out_of_order_is_told() {
        let info = generated::erp::model("article").unwrap();
        let since = Position::Since(0);
        let in_order = [record("9", 1_000), record("2", 2_000), record("10", 2_000)];
        assert!(check_filtered(info, &since, &since.query(), &in_order).is_ok());
        let by_id = [record("1", 3_000), record("2", 1_000)];
        let error = check_filtered(info, &since, &since.query(), &by_id).unwrap_err();
        assert!(error.to_string().contains("out of the order"), "{error}");
        let above = Position::IdAbove(None);
        assert!(check_filtered(info, &above, &above.query(), &by_id).is_ok(), "in id order, as asked");
        let descending = [record("10", 0), record("9", 0)];
        assert!(check_filtered(info, &above, &above.query(), &descending).is_err(), "10 > 9 as numbers");
    }

    /// A full pull reads by id, never by page number: a record deleted meanwhile cannot shift
    /// another out of sight.
    #[test]
    fn a_full_pull_pages_by_id() {
        let start = Position::IdAbove(None);
        assert_eq!(start.query(), pairs(&[("sort", "id")]));
        let next = start.next(&[record("99", 5), record("100", 1)]).unwrap();
        assert_eq!(next.query(), pairs(&[("sort", "id"), ("id-gt", "100")]));
        assert_eq!(
            next.next(&[record("101", 1)]),
            Some(Position::IdAbove(Some("101".into()))),
            "a short page is no end"
        );
        assert_eq!(next.next(&[]), None);
    }
}
