//! Pulls from the ERP into the mirror: `setup` (everything), `get` (what changed since each
//! model's cursor), `update` (re-fetch records matching a filter, or one record by id).
//!
//! Lists are read in pages of 1000 (the ERP's maximum). Every page is stored in one
//! transaction as soon as it arrives, so a pull that fails half-way keeps what it stored; the
//! cursor (the newest `lastModifiedDate` seen) moves only when a pull completes. One pull of a
//! model runs at a time across instances (a lease in the database, renewed per page).

use std::collections::HashSet;

use generated::erp::{MODELS, ModelInfo};
use serde::Serialize;
use serde_json::Value;

use super::{ErpError, ErpService, RecordError};
use crate::store::erp::ErpRecord;
use crate::store::fieldreport::Upserted;
use crate::upstream::erp::{MAX_PAGE_SIZE, id_of, last_modified_of, version_of};

/// What to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullKind {
    /// Every record; local records the ERP no longer has are removed.
    Full,
    /// Records changed since the model's cursor (everything on the first pull).
    Incremental,
    /// Records whose top-level `field` equals `value` (`<field>-eq=<value>`).
    Matching { field: String, value: String },
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
        let cursor = match kind {
            PullKind::Incremental => store.erp_cursor(info.name).await?,
            _ => None,
        };
        let mut filters: Vec<(String, String)> = Vec::new();
        match kind {
            PullKind::Full => filters.push(("sort".into(), "id".into())),
            PullKind::Incremental => {
                filters.push(("sort".into(), "lastModifiedDate".into()));
                if let Some(cursor) = cursor {
                    filters.push(("lastModifiedDate-gt".into(), cursor.to_string()));
                }
            }
            PullKind::Matching { field, value } => filters.push((format!("{field}-eq"), value.clone())),
        }
        let mut report = PullReport::new(info.name);
        let mut seen: HashSet<String> = HashSet::new();
        let mut newest = cursor;
        let outcome = async {
            for page in 1.. {
                let mut query = filters.clone();
                query.push(("page".into(), page.to_string()));
                query.push(("pageSize".into(), MAX_PAGE_SIZE.to_string()));
                let records = client.list(info.name, &query).await?;
                let full_page = records.len() == MAX_PAGE_SIZE;
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
                for outcome in store.erp_upsert(info.name, &batch).await? {
                    report.count(outcome);
                }
                progress(report.fetched);
                self.fieldreport().check_stop()?;
                if !full_page {
                    break;
                }
                if !store.take_pull_lease(info.name, owner, store.lease_deadline()).await? {
                    return Err(ErpError::Busy(format!("the pull of {} lost its lease", info.name)));
                }
            }
            if *kind == PullKind::Full {
                // Paged by offset, a pull misses a record when one before it is deleted
                // meanwhile: the ERP confirms each absence before the record leaves.
                for local in store.erp_all(info.name).await? {
                    if seen.contains(&local.id) {
                        continue;
                    }
                    match client.get(info.name, &local.id).await?.and_then(erp_record) {
                        Some(record) => {
                            for outcome in store.erp_upsert(info.name, &[record]).await? {
                                report.count(outcome);
                            }
                        }
                        None => {
                            if self.remove_gone(info, &local.id).await?.0 {
                                report.removed += 1;
                            }
                        }
                    }
                }
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
