//! The reconciling sync: removes from the mirror the records the field-report system no
//! longer has, which an incremental sync cannot see (it asks for records changed since its
//! cursor, and a deleted record does not change).
//!
//! It reads the upstream's ids only (`$select=Id`), in Id order by key windows (`Id gt <last>`,
//! never `$skip`, so that a record deleted meanwhile cannot shift another out of sight), then
//! compares them with the mirror's records written before it began. A record missing upstream
//! is removed, unless a local change of it waits for the upstream (a pending push, an update of
//! unknown outcome): those are kept and reported. It holds the set's sync lease, so it never
//! runs beside a sync of the set; interrupted, it is simply run again.

use std::collections::HashSet;
use std::time::Instant;

use generated::fieldreport::EntityInfo;
use serde::Serialize;
use serde_json::Value;

use super::service::{FieldReportError, FieldReportService, record_id};
use crate::store::now_ms;
use crate::upstream::{System, UpstreamError};

/// Ids asked for per request.
const WINDOW: usize = 500;
/// Kept records named in a report at most (the count is always complete).
const NAMED_AT_MOST: usize = 100;

/// What a reconciling sync of one set did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct ReconcileReport {
    /// Route name of the entity set.
    pub entity: String,
    /// Records the field-report system has.
    pub upstream: u64,
    /// Local records compared (those written before the reconciling began).
    pub checked: u64,
    /// Local records removed: the field-report system no longer has them.
    pub removed: u64,
    /// Local records the field-report system no longer has, kept because a local change of
    /// theirs waits for it (a pending push, or an update of unknown outcome).
    pub kept_pending: u64,
    /// The Ids of those records (the first 100).
    pub kept_pending_ids: Vec<String>,
    pub seconds: f64,
}

impl FieldReportService {
    /// Reconciles one set under its sync lease (409 while a sync of it runs).
    pub async fn reconcile(&self, info: &'static EntityInfo) -> Result<ReconcileReport, FieldReportError> {
        let store = self.store();
        let owner = uuid::Uuid::new_v4().to_string();
        if !store.take_sync_lease(info.route, &owner, store.lease_deadline()).await? {
            return Err(FieldReportError::Conflict(format!("a sync of {} is already running", info.route)));
        }
        let result = self.reconcile_ids(info, &owner).await;
        store.release_sync_lease(info.route, &owner).await?;
        result
    }

    async fn reconcile_ids(&self, info: &'static EntityInfo, owner: &str) -> Result<ReconcileReport, FieldReportError> {
        let started = Instant::now();
        // Records written from here on may be missing from the ids read below: they are not
        // compared.
        let began_ms = now_ms();
        let upstream = self.upstream_ids(info, owner).await?;
        let store = self.store();
        let mut report =
            ReconcileReport { entity: info.route.to_string(), upstream: upstream.len() as u64, ..Default::default() };
        let mut gone = Vec::new();
        for candidate in store.mirror_reconcile_candidates(info.route, began_ms).await? {
            report.checked += 1;
            if upstream.contains(&candidate.id) {
                continue;
            }
            if candidate.waiting {
                report.kept_pending += 1;
                if report.kept_pending_ids.len() < NAMED_AT_MOST {
                    report.kept_pending_ids.push(candidate.id);
                }
            } else {
                gone.push(candidate.id);
            }
        }
        report.removed = store.mirror_remove_gone(info.route, &gone, began_ms).await?.len() as u64;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Every Id the field-report system has in the set, read in key windows; the lease is
    /// renewed with every window.
    async fn upstream_ids(&self, info: &EntityInfo, owner: &str) -> Result<HashSet<String>, FieldReportError> {
        let client = self.client()?;
        let store = self.store();
        let mut ids = HashSet::new();
        let mut above: Option<i64> = None;
        loop {
            self.check_stop()?;
            if !store.take_sync_lease(info.route, owner, store.lease_deadline()).await? {
                return Err(FieldReportError::Conflict(format!("the sync lease of {} was lost", info.route)));
            }
            let mut params = vec![("$select", "Id".to_string()), ("$orderby", "Id".to_string())];
            if let Some(above) = above {
                params.push(("$filter", format!("Id gt {above}L")));
            }
            params.push(("$top", WINDOW.to_string()));
            let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
            let page = client.page(info.set, &query, None).await?;
            if page.records.is_empty() {
                return Ok(ids);
            }
            let mut highest = above;
            for record in &page.records {
                let value: Value = crate::upstream::parse_json(System::FieldReport, record.get())?;
                let id = value.get("Id").and_then(record_id).ok_or_else(|| UpstreamError::Malformed {
                    system: System::FieldReport,
                    detail: format!("a record of {} without an Id in a list of Ids", info.set),
                })?;
                let number = id.parse::<i64>().map_err(|_| UpstreamError::Malformed {
                    system: System::FieldReport,
                    detail: format!("{} has the Id {id:?}, not an Int64 key", info.set),
                })?;
                highest = highest.max(Some(number));
                ids.insert(id);
            }
            if highest == above {
                return Err(UpstreamError::Malformed {
                    system: System::FieldReport,
                    detail: format!("{} answered `Id gt {above:?}` with no higher Id", info.set),
                }
                .into());
            }
            above = highest;
        }
    }
}
