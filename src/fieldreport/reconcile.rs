//! The reconciling sync: repairs what an incremental sync cannot see, both ways. An incremental
//! sync asks for records stamped since its cursor (less the overlap): a record deleted upstream
//! does not change, and one committed with a stamp older than the overlap never appears.
//!
//! It reads the upstream's ids and versions only (`$select=Id,Version`), in Id order by key
//! windows, each checked against the server's count ([`super::upstream_ids`]), then compares
//! them with the mirror:
//!
//! - a record the upstream has and the mirror lacks is fetched (`fetched_missing`);
//! - a record whose version differs, last written here before the reconciling began, is
//!   fetched again (`refreshed`);
//! - a record written here before it began that the upstream no longer has (missing from the
//!   list, and not found when asked for by Id) is removed (`removed`), unless a local change
//!   of it waits for the upstream (a pending push, an update of unknown outcome): those are
//!   kept and reported (`kept_pending`).
//!
//! Records deleted here whose delete waits for the upstream are neither fetched nor removed.
//! It holds the set's sync lease, so it never runs beside a sync of the set; interrupted, it
//! is simply run again. Each kind of repair is counted in `integration_mirror_repairs_total`.

use std::collections::HashSet;
use std::time::Instant;

use generated::fieldreport::EntityInfo;

use super::service::{FieldReportError, FieldReportService};
use crate::store::feed::Mirror;
use crate::store::now_ms;
use crate::vocabulary::id_batches::IdBatches;
/// Records fetched by id per request (`Id eq … or …`): a query of about 1 KB.
const FETCH_BATCH: usize = 40;
/// Kept records named in a report at most (the count is always complete).
const NAMED_AT_MOST: usize = 100;

pub use super::reconcile_report::ReconcileReport;

impl FieldReportService {
    /// Reconciles one set under its sync lease (409 while a sync of it runs).
    pub async fn reconcile(&self, info: &'static EntityInfo) -> Result<ReconcileReport, FieldReportError> {
        let store = self.store();
        let owner = uuid::Uuid::new_v4().to_string();
        if !store.take_sync_lease(info.route, &owner, store.lease_deadline()).await? {
            return Err(FieldReportError::Conflict(format!("a sync of {} is already running", info.route)));
        }
        // Where the feed stood: the records removed after it are those deleted while it ran.
        let before = match store.feed_position(Mirror::FieldReport, info.route).await {
            Ok(feed) => feed.last_seq,
            Err(error) => {
                store.release_sync_lease(info.route, &owner).await?;
                return Err(error.into());
            }
        };
        let mut result = self.reconcile_ids(info, &owner).await;
        // Its fetches, answered before a local delete's upstream call, store the record again
        // (the tombstones are read once, after the listing): the delete, answered done, was
        // undone here until the next reconciling. As after a sync, those the upstream no longer
        // has leave again, and those whose delete is still on its way.
        if result.is_ok() {
            let again = async {
                store.mirror_purge_tombstoned(info.route).await?;
                self.remove_deleted_meanwhile(info, before).await
            };
            if let Err(error) = again.await {
                result = Err(error);
            }
        }
        store.release_sync_lease(info.route, &owner).await?;
        result
    }

    async fn reconcile_ids(&self, info: &'static EntityInfo, owner: &str) -> Result<ReconcileReport, FieldReportError> {
        let started = Instant::now();
        // Records written from here on may be missing from, or newer than, the list read below:
        // they are neither removed nor fetched again.
        let began_ms = now_ms();
        let listing = self.upstream_ids(info, owner).await?;
        let upstream = listing.versions;
        let store = self.store();
        let deleted_here = store.mirror_tombstone_set(info.route).await?;
        let mut report = ReconcileReport {
            entity: info.route.to_string(),
            upstream: upstream.len() as u64,
            unverified: listing.unverified,
            ..Default::default()
        };
        let mut gone = Vec::new();
        let mut stale = Vec::new();
        let mut local = HashSet::new();
        for candidate in store.mirror_reconcile_candidates(info.route, began_ms).await? {
            local.insert(candidate.id.clone());
            if !candidate.before {
                continue;
            }
            report.checked += 1;
            match upstream.get(&candidate.id) {
                Some(version) if *version != candidate.version && !candidate.waiting => stale.push(candidate.id),
                Some(_) => {}
                None if candidate.waiting => {
                    report.kept_pending += 1;
                    if report.kept_pending_ids.len() < NAMED_AT_MOST {
                        report.kept_pending_ids.push(candidate.id);
                    }
                }
                None => gone.push(candidate.id),
            }
        }
        // Ids counted and never listed are asked for too: found, they are stored.
        let unlisted: Vec<String> =
            listing.counted_unlisted.into_iter().filter(|id| !upstream.contains_key(id)).collect();
        let mut missing: Vec<String> = upstream
            .into_keys()
            .chain(unlisted)
            .filter(|id| !local.contains(id) && !deleted_here.contains(id))
            .collect();
        missing.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        report.fetched_missing = self.fetch_by_id(info, owner, &missing).await?.0;
        report.refreshed = self.fetch_by_id(info, owner, &stale).await?.0;
        // A record the list lacks may only have been skipped by it: a next link that counts by
        // position skips one when a row before it leaves meanwhile. It is removed only when
        // asked for by Id it is not found; one found is stored as a record fetched again.
        let (refreshed, found) = self.fetch_by_id(info, owner, &gone).await?;
        report.refreshed += refreshed;
        gone.retain(|id| !found.contains(id));
        report.removed = store.mirror_remove_gone(info.route, &gone, began_ms).await?.len() as u64;
        if let Some(metrics) = self.metrics() {
            let counts = [report.fetched_missing, report.refreshed, report.removed, report.kept_pending];
            for (kind, count) in crate::metrics::mirror::REPAIR_KINDS.into_iter().zip(counts) {
                metrics.mirror_repaired("fieldreport", info.route, kind, count);
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Fetches these records with the set's expands, [`FETCH_BATCH`] a request, and stores them
    /// as a sync does (a local change waiting for a push is kept); how many were stored anew or
    /// changed, and the Ids of those the upstream sent. A record the upstream no longer has by the time it is asked for is skipped
    /// (asked for once more when it shared a short answer with records that came).
    pub(super) async fn fetch_by_id(
        &self,
        info: &'static EntityInfo,
        owner: &str,
        ids: &[String],
    ) -> Result<(u64, HashSet<String>), FieldReportError> {
        let client = self.client()?;
        let store = self.store();
        let mut written = 0;
        let mut found = HashSet::new();
        let mut batches = IdBatches::new(ids, FETCH_BATCH);
        while let Some(batch) = batches.next_batch() {
            self.check_stop()?;
            if !store.take_sync_lease(info.route, owner, store.lease_deadline()).await? {
                return Err(FieldReportError::Conflict(format!("the sync lease of {} was lost", info.route)));
            }
            let wanted: HashSet<&str> = batch.iter().map(|id| id.as_str()).collect();
            let filter = batch.iter().map(|id| format!("Id eq {id}L")).collect::<Vec<_>>().join(" or ");
            let mut params = vec![("$filter", filter)];
            if !info.expand.is_empty() {
                params.push(("$expand", info.expand.join(",")));
            }
            let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
            let page = client.page_with_records(info.set, &query).await?;
            let read = super::page::read_page(page);
            let records: Vec<_> =
                read.records.into_iter().filter(|record| wanted.contains(record.id.as_str())).collect();
            // An upstream that pages below the batch: the ids it did not send are asked again.
            batches.answered(batch, &records.iter().map(|r| r.id.as_str()).collect());
            found.extend(records.iter().map(|record| record.id.clone()));
            for outcome in store.mirror_upsert_page(info.route, records).await? {
                if outcome != crate::store::fieldreport::records::Upserted::Unchanged {
                    written += 1;
                }
            }
        }
        Ok((written, found))
    }
}
