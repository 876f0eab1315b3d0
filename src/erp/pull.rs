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
//! (`lastModifiedDate-gt`). An incremental pull's pages are checked against the ERP's count
//! of the records they should hold (`verify.rs`). Every page is stored in one transaction as
//! soon as it arrives, so a pull that fails half-way keeps what it stored; the cursor (the
//! newest `lastModifiedDate` seen, for a full pull the newest the ERP held when it began, and
//! never later than the pull's start by the service's clock) moves only when a pull completes.
//! One pull of a model runs at a time across instances (a lease in the database, renewed per
//! page).

use std::collections::HashSet;

use generated::erp::{MODELS, ModelInfo};
use serde::Serialize;
use serde_json::Value;

use super::{ErpError, ErpService, RecordError};
use crate::store::erp::ErpRecord;
use crate::store::fieldreport::records::Upserted;
use crate::upstream::erp::{MAX_PAGE_SIZE, id_of, last_modified_of, version_of};
use crate::upstream::{System, UpstreamError};
use crate::vocabulary::id_batches::IdBatches;

mod position;
mod refresh;
mod verify;

pub(crate) use self::position::id_order;
use self::position::{Position, check_filtered};

/// Records fetched by id per request of a reconciling (`id-in=…`): a query of about 1 KB.
const FETCH_BATCH: usize = 100;

/// How long before a page was asked for a removal from the mirror may still be later than the
/// ERP's reading of the page: the clocks of the instance that removed and the one that pulls
/// may differ.
const CLOCK_MARGIN_MS: i64 = 60_000;

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
        if let PullKind::Matching { field, value } = kind {
            check_field(field)?;
            // Whether the ERP finds records would say whether the guess is right.
            if super::secrets::compares_a_secret(field, value) {
                return Err(ErpError::Invalid {
                    field: "value".into(),
                    message: "a filter on a secret (a field named like a password or token, a URL's password or \
                              secret= parameter) is not sent: its answer would confirm the secret"
                        .into(),
                });
            }
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
        let started_ms = crate::store::now_ms();
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
        // A full pull reads by id: a record changed while it pages may lie behind the id it has
        // reached, while records it reads later carry later stamps. Its cursor is the newest
        // stamp the ERP held before the first page, not the newest it read.
        let began_at = match kind {
            PullKind::Full => Some(self.newest_stamp(info).await?),
            _ => None,
        };
        let mut report = PullReport::new(info.name);
        let mut seen: HashSet<String> = HashSet::new();
        let mut newest = cursor;
        // Where an incremental pull starts, and the newest stamp it read: what its count checks.
        let (from, mut through) = match (kind, &position) {
            (PullKind::Incremental, Position::Since(from)) => (Some(*from), None),
            _ => (None, None),
        };
        let outcome = async {
            loop {
                let mut query = filters.clone();
                query.extend(position.query());
                query.push(("pageSize".into(), MAX_PAGE_SIZE.to_string()));
                let asked_at = crate::store::now_ms();
                let records = client.list(info.name, &query).await?;
                report.pages += 1;
                report.fetched += records.len() as u64;
                let mut batch = Vec::with_capacity(records.len());
                for document in records {
                    match erp_record(document) {
                        Some(record) => {
                            newest = newest.max(Some(record.last_modified));
                            through = through.max(Some(record.last_modified));
                            seen.insert(record.id.clone());
                            batch.push(record);
                        }
                        None => report.errors.push(RecordError::new(info.name, None, "a record without id")),
                    }
                }
                // An ERP that ignored `sort`: the window is read again by id (see `window`).
                let by_id = position.sort_ignored(&batch);
                if !by_id {
                    check_filtered(info, &position, &query, &batch)?;
                }
                for outcome in store.erp_upsert(info.name, &batch).await? {
                    report.count(outcome);
                }
                let ids = batch.iter().map(|record| record.id.as_str());
                report.removed += self.recheck_removed(info, asked_at, ids, &mut report).await?;
                progress(report.fetched);
                let next = match from {
                    Some(from) if by_id => {
                        filters.extend(Position::window(from, started_ms));
                        Some(Position::IdAbove(None))
                    }
                    _ => position.next(&batch),
                };
                match self.go_on(info, owner, next).await? {
                    Some(next) => position = next,
                    None => break,
                }
            }
            // What the pages read, against the ERP's count (`verify.rs`; an incremental pull
            // that read nothing skipped nothing).
            let counted = from.map_or(Some(filters.clone()), |from| through.map(|upto| Position::window(from, upto)));
            if let Some(counted) = counted {
                let recovered = self.recover_skipped(info, owner, &counted, &seen, &mut report).await?;
                seen.extend(recovered);
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
                let moved = match (kind, began_at) {
                    (PullKind::Matching { .. }, _) => None,
                    (_, Some(began_at)) => began_at.or(Some(0)),
                    _ => newest.or(Some(0)),
                };
                // Stamps later than the pull's start (by this service's clock) come from an ERP
                // clock running ahead: once it is set right, it stamps changes before them.
                let moved = moved.map(|cursor| cursor.min(started_ms));
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

    /// The newest `lastModifiedDate` of `info`'s records at the ERP (one record, sorted by it,
    /// newest first); `None` for a model without records. An ERP that ignored the sort answers
    /// an older stamp, which only makes the next incremental pull read more again.
    async fn newest_stamp(&self, info: &ModelInfo) -> Result<Option<i64>, ErpError> {
        let pair = |name: &str, value: &str| (name.to_string(), value.to_string());
        let query =
            [pair("sort", "-lastModifiedDate"), pair("properties", "id,lastModifiedDate"), pair("pageSize", "1")];
        let records = self.client()?.list(info.name, &query).await?;
        Ok(records.iter().map(last_modified_of).max())
    }

    /// Confirms by id that the ERP no longer has a record before it leaves the mirror (it is
    /// stored instead when the ERP has it after all); whether it was removed. A record that
    /// left the mirror while the answer was on its way (a delete webhook processed meanwhile)
    /// may have been read before the ERP deleted it: it is asked for once more.
    async fn confirm_absence(&self, info: &ModelInfo, id: &str, report: &mut PullReport) -> Result<bool, ErpError> {
        let asked_at = crate::store::now_ms();
        let present = self.store_fetched(info, id, report).await?
            && (!self.removed_since(info, asked_at, id).await? || self.store_fetched(info, id, report).await?);
        if present { Ok(false) } else { Ok(self.remove_gone(info, id).await?.0) }
    }

    /// Fetches a record by id and stores it; whether the ERP had it.
    async fn store_fetched(&self, info: &ModelInfo, id: &str, report: &mut PullReport) -> Result<bool, ErpError> {
        let Some(record) = self.fetch_record(info, id).await? else { return Ok(false) };
        for outcome in self.store().erp_upsert(info.name, &[record]).await? {
            report.count(outcome);
        }
        Ok(true)
    }

    /// After records read at the ERP from `asked_at` on were stored: one that left the mirror
    /// since (a delete webhook processed while the answer was on its way) was read before the
    /// ERP deleted it, and stored again. The ERP is asked for each such record by id, and one
    /// it no longer has is removed again; how many were.
    async fn recheck_removed<'a>(
        &self,
        info: &ModelInfo,
        asked_at: i64,
        ids: impl Iterator<Item = &'a str>,
        report: &mut PullReport,
    ) -> Result<u64, ErpError> {
        let removed: HashSet<String> = self
            .store()
            .erp_removed_since(info.name, asked_at.saturating_sub(CLOCK_MARGIN_MS))
            .await?
            .into_iter()
            .collect();
        let mut count = 0;
        for id in ids.filter(|id| removed.contains(*id)) {
            if self.confirm_absence(info, id, report).await? {
                count += 1;
            }
        }
        Ok(count)
    }

    /// Whether record `id` left the mirror (or was found absent) since a fetch asked at
    /// `asked_at`, by the clock of any instance (see [`CLOCK_MARGIN_MS`]).
    pub(super) async fn removed_since(&self, info: &ModelInfo, asked_at: i64, id: &str) -> Result<bool, ErpError> {
        let since = asked_at.saturating_sub(CLOCK_MARGIN_MS);
        Ok(self.store().erp_removed_since_one(info.name, id, since).await?)
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
        let store = self.store();
        let mut report = PullReport::new(info.name);
        let upstream: std::collections::HashMap<String, i64> = self
            .list_counted(info, owner, &mut report)
            .await?
            .into_iter()
            .map(|record| (record.id, record.version))
            .collect();
        let local: std::collections::HashMap<String, i64> = store.erp_versions(info.name).await?.into_iter().collect();
        let mut missing: Vec<&String> = upstream.keys().filter(|id| !local.contains_key(*id)).collect();
        let mut stale: Vec<&String> = upstream
            .iter()
            .filter(|(id, version)| local.get(*id).is_some_and(|v| v != *version))
            .map(|(id, _)| id)
            .collect();
        missing.sort_by(|a, b| id_order(a, b));
        stale.sort_by(|a, b| id_order(a, b));
        let mut removed = 0;
        for (ids, repaired) in [(missing, &mut report.fetched_missing), (stale, &mut report.refreshed)] {
            let (fetched, written, gone) = self.fetch_by_id(info, owner, ids).await?;
            report.fetched += fetched;
            *repaired += written;
            removed += gone;
        }
        report.removed += removed;
        for id in local.keys().filter(|id| !upstream.contains_key(*id)) {
            if self.confirm_absence(info, id, &mut report).await? {
                report.removed += 1;
            }
        }
        self.count_repairs(info.name, &report);
        report.cursor = store.erp_cursor(info.name).await?;
        Ok(report)
    }

    /// Fetches these records (`id-in`, [`FETCH_BATCH`] a request) and stores them; the records
    /// fetched, those stored anew or changed, and those removed again (see
    /// [`Self::recheck_removed`]). An ERP may serve fewer records than asked
    /// (a short page proves nothing, as in a pull): the ids an answer left out are asked again
    /// while answers bring some of them; one that brings none says they are gone. A record
    /// the query does not select (an ERP that ignored `id-in`) fails the reconciling.
    async fn fetch_by_id(&self, info: &ModelInfo, owner: &str, ids: Vec<&String>) -> Result<(u64, u64, u64), ErpError> {
        let (client, store) = (self.client()?, self.store());
        let (mut fetched, mut written, mut removed) = (0, 0, 0);
        // What the records removed again were found to be, counted as their removals only.
        let mut rechecked = PullReport::new(info.name);
        let mut batches = IdBatches::new(ids, FETCH_BATCH);
        while let Some(batch) = batches.next_batch() {
            self.fieldreport().check_stop()?;
            if !store.take_pull_lease(info.name, owner, store.lease_deadline()).await? {
                return Err(ErpError::Busy(format!("the pull of {} lost its lease", info.name)));
            }
            let ids = batch.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(",");
            let query = vec![("id-in".to_string(), ids), ("pageSize".to_string(), MAX_PAGE_SIZE.to_string())];
            let asked_at = crate::store::now_ms();
            let records: Vec<ErpRecord> =
                client.list(info.name, &query).await?.into_iter().filter_map(erp_record).collect();
            let wanted: HashSet<&str> = batch.iter().map(|id| id.as_str()).collect();
            if let Some(record) = records.iter().find(|record| !wanted.contains(record.id.as_str())) {
                return Err(UpstreamError::Malformed {
                    system: System::Erp,
                    detail: format!(
                        "{} answered `id-in` with record {}, which it does not select",
                        info.name, record.id
                    ),
                }
                .into());
            }
            // None of the batch is left: each is confirmed gone (one listed, then deleted).
            for id in batch.iter().filter(|_| records.is_empty()) {
                removed += u64::from(self.confirm_absence(info, id, &mut rechecked).await?);
            }
            batches.answered(batch, &records.iter().map(|record| record.id.as_str()).collect());
            fetched += records.len() as u64;
            for outcome in store.erp_upsert(info.name, &records).await? {
                if outcome != Upserted::Unchanged {
                    written += 1;
                }
            }
            let ids = records.iter().map(|record| record.id.as_str());
            removed += self.recheck_removed(info, asked_at, ids, &mut rechecked).await?;
        }
        Ok((fetched, written, removed))
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
}
