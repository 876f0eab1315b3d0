//! Pulls from the ERP into the mirror: `setup` (everything), `get` (what changed since each
//! model's cursor), `update` (reconcile a model, re-fetch records matching a filter, or one
//! record by id).
//!
//! Lists are read in pages of 1000 (the ERP's maximum), never by page number: a record deleted
//! or inserted before a page number's position would shift another out of sight; a query ends
//! only when it answers no record (an ERP may serve fewer than asked), and a page with a record
//! its query does not select is refused (an ignored filter could repeat a page). A full pull
//! continues after the greatest id read (`id-gt`); an incremental one after the greatest
//! (`lastModifiedDate`, `id`) read, starting `ERP_PULL_OVERLAP_SECONDS` before the model's
//! cursor. The ERP's filters have no `or`: the key's two halves are two queries, the rest of
//! the records of the last instant (`lastModifiedDate-eq`, `id-gt`), then the later ones
//! (`lastModifiedDate-gt`). Every page is stored in one transaction as soon as it arrives, so a
//! pull that fails half-way keeps what it stored; the cursor (the newest `lastModifiedDate`
//! seen) moves only when a pull completes. One pull of a model runs at a time across instances
//! (a lease in the database, renewed per page).

use std::collections::HashSet;

use generated::erp::{MODELS, ModelInfo};
use serde::Serialize;
use serde_json::Value;

use super::{ErpError, ErpService, RecordError};
use crate::store::erp::ErpRecord;
use crate::store::fieldreport::records::Upserted;
use crate::upstream::erp::{MAX_PAGE_SIZE, id_of, last_modified_of, version_of};
use crate::upstream::{System, UpstreamError};

/// Records fetched by id per request of a reconciling (`id-in=…`): a query of about 1 KB.
const FETCH_BATCH: usize = 100;

/// What to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullKind {
    /// Every record; local records the ERP no longer has are removed.
    Full,
    /// Records changed since the model's cursor (everything on the first pull).
    Incremental,
    /// Records whose top-level `field` equals `value` (`<field>-eq=<value>`).
    Matching { field: String, value: String },
    /// The model's ids and versions compared with the mirror's: records missing here are
    /// fetched, records whose version differs fetched again, records the ERP no longer has
    /// removed (each absence confirmed by id).
    Reconcile,
}

/// Where the next page of a pull starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Position {
    /// Records modified at or after this instant (epoch ms): an incremental pull's start.
    Since(i64),
    /// The records modified at `at` with an id above `id` (`rest_of_instant`), then those
    /// modified after `at`.
    After { at: i64, id: String, rest_of_instant: bool },
    /// Records with an id above this (all of them for `None`), in id order.
    IdAbove(Option<String>),
}

/// Orders ids as the ERP does: numbers (its ids are digits) as numbers, anything else as text.
fn id_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => a.cmp(b),
    }
}

impl Position {
    /// The query parameters of the page that starts here.
    fn query(&self) -> Vec<(String, String)> {
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

    /// Where the page after one with these records starts; `None` when the pull has read
    /// everything. Only a query that answers no record ends: a short page proves nothing (an
    /// ERP may serve fewer than `pageSize`), and asking once more costs one request.
    fn next(&self, records: &[ErpRecord]) -> Option<Position> {
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

/// What a pull of one model did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PullReport {
    pub model: String,
    pub pages: u64,
    pub fetched: u64,
    pub inserted: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Records the ERP has and the mirror lacked, fetched by a reconciling (`update`).
    #[serde(default)]
    pub fetched_missing: u64,
    /// Local records whose version differed from the ERP's, fetched again by a reconciling.
    #[serde(default)]
    pub refreshed: u64,
    /// Local records removed because the ERP no longer has them.
    pub removed: u64,
    /// The model's cursor after the pull (epoch ms), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<i64>,
    pub errors: Vec<RecordError>,
}

impl PullReport {
    fn new(model: &str) -> PullReport {
        PullReport { model: model.to_string(), ..Default::default() }
    }

    fn count(&mut self, outcome: Upserted) {
        match outcome {
            Upserted::Inserted => self.inserted += 1,
            Upserted::Updated => self.updated += 1,
            Upserted::Unchanged => self.unchanged += 1,
        }
    }
}

/// A record from the ERP as the mirror stores it; `None` without an id.
pub fn erp_record(document: Value) -> Option<ErpRecord> {
    Some(ErpRecord {
        id: id_of(&document)?,
        version: version_of(&document),
        last_modified: last_modified_of(&document),
        document,
        pending_attributes: Vec::new(),
    })
}

/// A field name for a filter: letters and digits only, so it cannot change the query.
pub fn check_field(field: &str) -> Result<(), ErpError> {
    if field.is_empty() || field.len() > 64 || !field.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(ErpError::Invalid {
            field: "entity".into(),
            message: "a field name of the model: letters and digits, at most 64".into(),
        });
    }
    Ok(())
}

/// A record id from a URL: letters, digits and `-`, at most 64. It becomes a segment of the
/// ERP's URL (`<model>/id/<id>`), where `.` or `..` would name another resource.
pub fn check_id(id: &str) -> Result<(), ErpError> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(ErpError::Invalid {
            field: "entity".into(),
            message: "a record id: letters, digits and -, at most 64".into(),
        });
    }
    Ok(())
}

impl ErpService {
    /// Pulls one model; `progress` is told the running count of fetched records.
    pub async fn pull(
        &self,
        info: &ModelInfo,
        kind: &PullKind,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<PullReport, ErpError> {
        if let PullKind::Matching { field, .. } = kind {
            check_field(field)?;
        }
        let client = self.client()?;
        let store = self.store();
        let owner = self.instance();
        if !store.take_pull_lease(info.name, owner, store.lease_deadline()).await? {
            return Err(ErpError::Busy(format!("a pull of {} is running; try again when it has finished", info.name)));
        }
        if *kind == PullKind::Reconcile {
            let outcome = self.reconcile(info, owner).await;
            store.release_lease(crate::store::lease::ERP_PULL, info.name, owner).await?;
            return outcome;
        }
        let cursor = match kind {
            PullKind::Incremental => store.erp_cursor(info.name).await?,
            _ => None,
        };
        let overlap_ms = i64::try_from(self.pull_overlap().as_millis()).unwrap_or(i64::MAX);
        let mut filters: Vec<(String, String)> = Vec::new();
        let mut position = match (kind, cursor) {
            (PullKind::Incremental, Some(cursor)) => Position::Since(cursor.saturating_sub(overlap_ms)),
            (PullKind::Incremental, None) => Position::Since(0),
            (PullKind::Matching { field, value }, _) => {
                filters.push((format!("{field}-eq"), value.clone()));
                Position::IdAbove(None)
            }
            _ => Position::IdAbove(None),
        };
        let mut report = PullReport::new(info.name);
        let mut seen: HashSet<String> = HashSet::new();
        let mut newest = cursor;
        let outcome = async {
            loop {
                let mut query = filters.clone();
                query.extend(position.query());
                query.push(("pageSize".into(), MAX_PAGE_SIZE.to_string()));
                let records = client.list(info.name, &query).await?;
                report.pages += 1;
                report.fetched += records.len() as u64;
                let mut batch = Vec::with_capacity(records.len());
                for document in records {
                    match erp_record(document) {
                        Some(record) => {
                            newest = newest.max(Some(record.last_modified));
                            seen.insert(record.id.clone());
                            batch.push(record);
                        }
                        None => report.errors.push(RecordError::new(info.name, None, "a record without id")),
                    }
                }
                check_filtered(info, &position, &query, &batch)?;
                for outcome in store.erp_upsert(info.name, &batch).await? {
                    report.count(outcome);
                }
                progress(report.fetched);
                match self.go_on(info, owner, position.next(&batch)).await? {
                    Some(next) => position = next,
                    None => break,
                }
            }
            if *kind == PullKind::Full {
                // A record missing from the pages was deleted, or is newer than the page of
                // its id: the ERP confirms each absence before the record leaves.
                for (id, _) in store.erp_versions(info.name).await? {
                    if !seen.contains(&id) && self.confirm_absence(info, &id, &mut report).await? {
                        report.removed += 1;
                    }
                }
                self.count_repairs(info.name, &report);
            }
            Ok::<(), ErpError>(())
        }
        .await;
        match outcome {
            Ok(()) => {
                let moved = if matches!(kind, PullKind::Matching { .. }) { None } else { newest.or(Some(0)) };
                store.finish_pull(info.name, owner, moved).await?;
                report.cursor = store.erp_cursor(info.name).await?;
                Ok(report)
            }
            Err(error) => {
                store.release_lease(crate::store::lease::ERP_PULL, info.name, owner).await?;
                Err(error)
            }
        }
    }

    /// Confirms by id that the ERP no longer has a record before it leaves the mirror (it is
    /// stored instead when the ERP has it after all); whether it was removed.
    async fn confirm_absence(&self, info: &ModelInfo, id: &str, report: &mut PullReport) -> Result<bool, ErpError> {
        match self.client()?.get(info.name, id).await?.and_then(erp_record) {
            Some(record) => {
                for outcome in self.store().erp_upsert(info.name, &[record]).await? {
                    report.count(outcome);
                }
                Ok(false)
            }
            None => Ok(self.remove_gone(info, id).await?.0),
        }
    }

    /// After a page of a pull under `owner`'s lease: stops when asked to; else where the pull
    /// goes on (`next`; none once it has read everything), while it still holds its lease.
    async fn go_on(&self, info: &ModelInfo, owner: &str, next: Option<Position>) -> Result<Option<Position>, ErpError> {
        self.fieldreport().check_stop()?;
        let Some(next) = next else { return Ok(None) };
        let store = self.store();
        if !store.take_pull_lease(info.name, owner, store.lease_deadline()).await? {
            return Err(ErpError::Busy(format!("the pull of {} lost its lease", info.name)));
        }
        Ok(Some(next))
    }

    /// A reconciling of one model (see [`PullKind::Reconcile`]), under its pull lease: the
    /// ERP's ids and versions (`properties=id,version`, in id order by `id-gt`), then the
    /// records missing here and those whose version differs fetched by id (`id-in`), then the
    /// absences confirmed and removed.
    async fn reconcile(&self, info: &ModelInfo, owner: &str) -> Result<PullReport, ErpError> {
        let client = self.client()?;
        let store = self.store();
        let mut report = PullReport::new(info.name);
        let mut upstream: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let mut position = Position::IdAbove(None);
        loop {
            let mut query = position.query();
            query.push(("properties".into(), "id,version,lastModifiedDate".into()));
            query.push(("pageSize".into(), MAX_PAGE_SIZE.to_string()));
            let records: Vec<ErpRecord> =
                client.list(info.name, &query).await?.into_iter().filter_map(erp_record).collect();
            report.pages += 1;
            check_filtered(info, &position, &query, &records)?;
            upstream.extend(records.iter().map(|record| (record.id.clone(), record.version)));
            match self.go_on(info, owner, position.next(&records)).await? {
                Some(next) => position = next,
                None => break,
            }
        }
        let local: std::collections::HashMap<String, i64> = store.erp_versions(info.name).await?.into_iter().collect();
        let mut missing: Vec<&String> = upstream.keys().filter(|id| !local.contains_key(*id)).collect();
        let mut stale: Vec<&String> = upstream
            .iter()
            .filter(|(id, version)| local.get(*id).is_some_and(|v| v != *version))
            .map(|(id, _)| id)
            .collect();
        missing.sort_by(|a, b| id_order(a, b));
        stale.sort_by(|a, b| id_order(a, b));
        for (ids, repaired) in [(missing, &mut report.fetched_missing), (stale, &mut report.refreshed)] {
            for batch in ids.chunks(FETCH_BATCH) {
                self.fieldreport().check_stop()?;
                let ids = batch.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(",");
                let query = vec![("id-in".to_string(), ids), ("pageSize".to_string(), MAX_PAGE_SIZE.to_string())];
                let records: Vec<ErpRecord> =
                    client.list(info.name, &query).await?.into_iter().filter_map(erp_record).collect();
                report.fetched += records.len() as u64;
                for outcome in store.erp_upsert(info.name, &records).await? {
                    if outcome != Upserted::Unchanged {
                        *repaired += 1;
                    }
                }
            }
        }
        for id in local.keys().filter(|id| !upstream.contains_key(*id)) {
            if self.confirm_absence(info, id, &mut report).await? {
                report.removed += 1;
            }
        }
        self.count_repairs(info.name, &report);
        report.cursor = store.erp_cursor(info.name).await?;
        Ok(report)
    }

    /// Counts a pull's repairs in `integration_mirror_repairs_total`.
    fn count_repairs(&self, model: &str, report: &PullReport) {
        if let Some(metrics) = self.fieldreport().metrics() {
            let counts = [report.fetched_missing, report.refreshed, report.removed, 0];
            for (kind, count) in crate::metrics::mirror::REPAIR_KINDS.into_iter().zip(counts) {
                metrics.mirror_repaired("erp", model, kind, count);
            }
        }
    }

    /// Pulls several models one after the other; a model that fails is reported and the rest
    /// go on.
    pub async fn pull_models(
        &self,
        models: &[&'static ModelInfo],
        kind: &PullKind,
        progress: &(dyn Fn(&str, u64) + Sync),
    ) -> Result<Vec<PullReport>, ErpError> {
        self.client()?;
        let mut reports = Vec::with_capacity(models.len());
        for info in models {
            let report = match self.pull(info, kind, &|n| progress(info.name, n)).await {
                Ok(report) => report,
                Err(error @ (ErpError::Store(_) | ErpError::Invalid { .. })) => return Err(error),
                Err(error) => {
                    let mut report = PullReport::new(info.name);
                    report.errors.push(RecordError::new(info.name, None, error.to_string()));
                    report
                }
            };
            reports.push(report);
        }
        Ok(reports)
    }

    /// Every model of the registry.
    pub fn all_models() -> Vec<&'static ModelInfo> {
        MODELS.iter().collect()
    }

    /// The models that have local records (what `update` without a model refreshes).
    pub async fn mirrored_models(&self) -> Result<Vec<&'static ModelInfo>, ErpError> {
        Ok(self
            .store()
            .erp_models()
            .await?
            .into_iter()
            .filter(|m| m.records > 0)
            .filter_map(|m| generated::erp::model(&m.model))
            .collect())
    }

    /// Re-fetches one record by id: stored when the ERP has it, removed locally when not.
    pub async fn refresh_one(&self, info: &ModelInfo, id: &str) -> Result<PullReport, ErpError> {
        check_id(id)?;
        let mut report = PullReport::new(info.name);
        match self.client()?.get(info.name, id).await? {
            Some(document) => {
                report.fetched = 1;
                let record = erp_record(document).ok_or_else(|| {
                    ErpError::Upstream(crate::upstream::UpstreamError::Malformed {
                        system: crate::upstream::System::Erp,
                        detail: format!("{} {id} came without an id", info.name),
                    })
                })?;
                for outcome in self.store().erp_upsert(info.name, &[record]).await? {
                    report.count(outcome);
                }
            }
            None => {
                if self.store().erp_delete(info.name, id).await? {
                    report.removed = 1;
                } else {
                    return Err(ErpError::NotFound { model: info.name.into(), id: id.into() });
                }
            }
        }
        Ok(report)
    }
}

/// A page whose records do not all answer its query is a malformed answer: going on from it
/// could skip records or ask the same page forever.
fn check_filtered(
    info: &ModelInfo,
    position: &Position,
    query: &[(String, String)],
    records: &[ErpRecord],
) -> Result<(), ErpError> {
    match records.iter().find(|record| !position.admits(record)) {
        None => Ok(()),
        Some(record) => {
            let query = query.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join("&");
            Err(UpstreamError::Malformed {
                system: System::Erp,
                detail: format!("{} answered `{query}` with record {}, which it does not select", info.name, record.id),
            }
            .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str, last_modified: i64) -> ErpRecord {
        erp_record(json!({"id": id, "version": "1", "lastModifiedDate": last_modified})).unwrap()
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
