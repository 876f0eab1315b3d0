//! Pulling the field-report system into the mirror by OData.
//!
//! A sync of one entity set asks for every record stamped since the overlap window before the
//! set's cursor (the newest `DateModified` of the last completed sync;
//! `FIELDREPORT_SYNC_OVERLAP_SECONDS`), with the set's expand relations, in key order
//! (`DateModified`, then `Id`); the records never modified (no `DateModified`) first, by Id,
//! those created since the same window (every one on the set's first sync). Each request continues after the greatest key read so far,
//! never from a position, until one answers no record (see [`fetch::fetch_pages`]); what it
//! read is then checked against the server's count (see [`verify`]). Pages are fetched a
//! few ahead of the ones being stored; the pages that arrived meanwhile are stored together
//! in one transaction without forwarding (two such batches at once, a record never in two;
//! see [`crate::store::Store::mirror_upsert_page`]), their records as the upstream sent
//! them (only `Id`, `Version`, `DateModified` and `ExternalId` are read); the cursor (never
//! later than the sync's start by the service's clock, for stamps with a zone) is
//! recorded only when the whole sync completed, so an interrupted sync simply runs again
//! (unchanged records count as such, nothing is duplicated or lost).
//! One sync per set runs at a time across instances: the run holds a lease in the database,
//! renewed while it runs.

use std::time::Instant;

use generated::fieldreport::EntityInfo;
use tokio::sync::mpsc;

use super::service::{FieldReportError, FieldReportService};
use crate::store::feed::Mirror;
use crate::vocabulary::stamp::Stamp;

mod fetch;
mod query;
mod report;
#[cfg(test)]
mod tests;
mod verify;
mod writes;

use self::fetch::{Fetching, fetch_pages, read_pages};
use self::query::start;
pub use self::report::SyncReport;
use self::verify::ReadSince;
use self::writes::Writes;

/// Pages fetched ahead of the ones being stored: enough to fill a batch while the writes in
/// flight run (about 1 MB of documents for companies with their expands).
const PAGES_AHEAD: usize = 24;
/// Records stored together at most, in one transaction: the pages that arrived while the
/// writes in flight ran. Storing is the slower side of a sync (its store loop waited for a
/// write to end 85% of the time), and every commit writes out again the index pages it
/// touched, which a set's ids and `ExternalId`s spread over the whole index: 2,000 records a
/// transaction instead of 500 (a `$top` window) took a sync of 100,000 companies from
/// 0.81-0.90 to 0.74-0.81 s on SQLite and from 1.35-1.48 to 1.17 s on Postgres. 5,000 were
/// slower again on SQLite (0.82 s). A batch of 2,000 companies holds SQLite's write lock for
/// about 6 ms.
const BATCH_RECORDS: usize = 2_000;

/// A sync that inserted or changed at least this many records brings the database's
/// statistics of the mirror up to date before it ends (see
/// [`crate::store::Store::refresh_mirror_statistics`]).
const STATISTICS_AFTER_CHANGES: u64 = 1_000;

impl FieldReportService {
    /// A sync of one set, then its reconciling; the sync's report carries the reconciling's
    /// (here, not in `reconcile.rs`, which the sync's report names: one way only).
    pub async fn sync_and_reconcile(
        &self,
        info: &'static EntityInfo,
        progress: &(dyn Fn(&SyncReport) + Sync),
    ) -> Result<SyncReport, FieldReportError> {
        let mut report = self.sync(info, progress).await?;
        report.reconcile = Some(self.reconcile(info).await?);
        Ok(report)
    }

    /// Syncs one entity set; `progress` sees the report after every page.
    pub async fn sync(
        &self,
        info: &'static EntityInfo,
        progress: &(dyn Fn(&SyncReport) + Sync),
    ) -> Result<SyncReport, FieldReportError> {
        let store = self.store();
        let owner = uuid::Uuid::new_v4().to_string();
        if !store.take_sync_lease(info.route, &owner, store.lease_deadline()).await? {
            return Err(FieldReportError::Conflict(format!("a sync of {} is already running", info.route)));
        }
        let started_ms = crate::store::now_ms();
        // Where the feed stood: the records removed after it are those deleted while the sync ran.
        let removed_after = store.feed_position(Mirror::FieldReport, info.route).await.map(|feed| feed.last_seq);
        let mut result = match &removed_after {
            Ok(_) => self.sync_pages(info, &owner, progress).await,
            Err(error) => Err(error.clone().into()),
        };
        // A record deleted here while the sync ran may have been stored again by it: whatever
        // the sync's outcome, records with a tombstone leave before the lease does.
        match (store.mirror_purge_tombstoned(info.route).await, &mut result) {
            (Ok(purged), Ok(report)) => report.deleted_here += purged.len() as u64,
            (Err(error), Ok(_)) => result = Err(error.into()),
            (Ok(_), Err(_)) => {}
            (Err(error), Err(first)) => {
                crate::telemetry::report_internal_error(&format!(
                    "a sync of {} failed ({first}) and its records deleted meanwhile could not be removed: {error}",
                    info.route
                ));
            }
        }
        // A record deleted here whose tombstone went before the sync's end (the upstream
        // confirmed the delete) may have been stored again by a page read before the delete.
        if let (Ok(report), Ok(before)) = (&mut result, &removed_after) {
            match self.remove_deleted_meanwhile(info, *before).await {
                Ok(removed) => report.deleted_here += removed,
                Err(error) => result = Err(error),
            }
        }
        if let Ok(report) = &result
            && report.inserted + report.updated >= STATISTICS_AFTER_CHANGES
            && let Err(error) = store.refresh_mirror_statistics().await
        {
            result = Err(error.into());
        }
        // Updates of unknown outcome marked before the sync began are settled: it stored what
        // the upstream has of them (an update that arrived changed the record's DateModified).
        if result.is_ok()
            && let Err(error) = store.settle_updates_before(info.route, started_ms).await
        {
            result = Err(error.into());
        }
        match &result {
            Ok(report) => store.finish_sync(info.route, &owner, report.cursor.as_deref()).await?,
            Err(_) => store.release_sync_lease(info.route, &owner).await?,
        }
        result
    }

    /// The records removed from the mirror after the feed's change number `after` that it
    /// holds again, each read at the upstream by id: those it no longer has are removed again
    /// (unless written since they were read); how many.
    pub(super) async fn remove_deleted_meanwhile(
        &self,
        info: &'static EntityInfo,
        after: i64,
    ) -> Result<u64, FieldReportError> {
        let store = self.store();
        let back = store.mirror_back_after_removal(info.route, after).await?;
        if back.is_empty() {
            return Ok(0);
        }
        // Only records written since `read_at` are kept (`updated_at < read_at` goes): a copy
        // stored again in the millisecond the reads start was kept, so they start after it.
        let listed_at = crate::store::now_ms();
        while crate::store::now_ms() <= listed_at {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let read_at = crate::store::now_ms();
        let client = self.client()?;
        let mut gone = Vec::new();
        for id in back {
            match client.get(info.set, &id).await {
                Err(error) if error.is_gone() => gone.push(id),
                Ok(_) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(store.mirror_remove_gone(info.route, &gone, read_at).await?.len() as u64)
    }

    /// Fetches pages ahead (up to [`PAGES_AHEAD`]) while storing the ones fetched: the
    /// upstream's work, reading the answers and the database's work overlap. The pages are
    /// fetched and read by a task of their own, on another worker thread than the one that
    /// batches them and waits for their writes.
    async fn sync_pages(
        &self,
        info: &'static EntityInfo,
        owner: &str,
        progress: &(dyn Fn(&SyncReport) + Sync),
    ) -> Result<SyncReport, FieldReportError> {
        let started = Instant::now();
        let started_at = chrono::Utc::now();
        let store = self.store();
        let client = self.client()?;
        let previous = store.sync_state(info.route).await?.cursor;
        let deleted_here = store.mirror_tombstone_set(info.route).await?;
        let (sender, fetched) = mpsc::channel(PAGES_AHEAD);
        let (read, mut pages) = mpsc::channel(PAGES_AHEAD);
        let from = start(previous.as_deref(), self.sync_overlap());
        let mut read_since = ReadSince::new(from.clone());
        let fetch = Fetching {
            fetch: tokio::spawn(fetch_pages(client.clone(), info, from, sender)),
            read: tokio::spawn(read_pages(info, fetched, read)),
        };
        let mut report = SyncReport { entity: info.route.to_string(), cursor: previous.clone(), ..Default::default() };
        let report_progress = |report: &mut SyncReport| {
            report.seconds = started.elapsed().as_secs_f64();
            progress(report);
        };
        let reading = &mut read_since;
        let deleted = &deleted_here;
        let store_pages = async move {
            let mut writes = Writes::default();
            loop {
                // While the writes in flight run, the next pages are received and read (no
                // write ends while none runs; no page is taken while the writes are full).
                let next = tokio::select! {
                    written = writes.next() => {
                        report.tally(written?);
                        report_progress(&mut report);
                        continue;
                    }
                    next = pages.recv(), if !writes.full() => next,
                };
                let Some(page) = next else { break };
                // The pages fetched meanwhile are stored together, up to [`BATCH_RECORDS`]:
                // a transaction for several pages when storing is the slower side.
                // A failure after some of them is returned once those are stored.
                let mut batch = vec![page?];
                let mut batched = batch[0].records.len();
                let mut failure = None;
                while batched < BATCH_RECORDS {
                    match pages.try_recv() {
                        Ok(Ok(page)) => {
                            batched += page.records.len();
                            batch.push(page);
                        }
                        Ok(Err(error)) => {
                            failure = Some(error);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let mut records = Vec::with_capacity(batched);
                for page in batch {
                    report.pages += 1;
                    report.fetched += page.fetched;
                    report.skipped += page.skipped;
                    if let Some(newest) = page.newest
                        && report.cursor.as_deref().is_none_or(|cursor| newest > Stamp::parse(cursor))
                    {
                        report.cursor = Some(newest.text().to_string());
                    }
                    for (id, modified) in &page.stamped {
                        reading.add(id, modified);
                    }
                    for (id, created) in &page.unstamped {
                        reading.add_unmodified(id, created.as_ref());
                    }
                    let before = records.len() + page.records.len();
                    records.extend(page.records.into_iter().filter(|record| !deleted.contains(&record.id)));
                    report.deleted_here += (before - records.len()) as u64;
                }
                // A record written again waits for its earlier write, so that the newer copy
                // is stored last.
                if writes.have_any_of(&records) {
                    writes.finish_into(&mut report).await?;
                }
                writes.start(store, info.route, records);
                // A failed page or a stop ends the sync once the pages before are stored.
                let stop = failure.map(FieldReportError::from).map(Err).unwrap_or_else(|| self.check_stop());
                if stop.is_err() {
                    writes.finish_into(&mut report).await?;
                    report_progress(&mut report);
                    stop?;
                }
            }
            if writes.finish_into(&mut report).await? {
                report_progress(&mut report);
            }
            // A stamp after the sync's start (by this service's clock) comes from an upstream
            // clock running ahead: once it is set right, it stamps changes before that stamp.
            report.cursor =
                report.cursor.map(|cursor| Stamp::parse(&cursor).no_later_than(started_at).text().to_string());
            report.seconds = started.elapsed().as_secs_f64();
            Ok::<_, FieldReportError>(report)
        };
        // The lease is renewed every third of it, whatever the pages do (a slow page fetched
        // with retries must not let it lapse), and not after every page (a write each time).
        let renew_lease = async {
            let period = std::time::Duration::from_millis((store.work_lease_ms() / 3).max(1) as u64);
            loop {
                tokio::time::sleep(period).await;
                match store.take_sync_lease(info.route, owner, store.lease_deadline()).await {
                    Ok(true) => {}
                    Ok(false) => {
                        return FieldReportError::Conflict(format!("the sync lease of {} was lost", info.route));
                    }
                    Err(error) => return error.into(),
                }
            }
        };
        // Storing ends the sync: on its own failure or a lost lease at once (the fetching is
        // stopped), else once the fetching has sent its last page or its failure.
        let mut report = tokio::select! {
            report = store_pages => report?,
            lost = renew_lease => return Err(lost),
        };
        let forms = fetch.ended().await?;
        // Before the cursor is recorded: a sync that fails here records none.
        self.verify_sync(info, owner, read_since, forms, &deleted_here, &mut report).await?;
        Ok(report)
    }
}
