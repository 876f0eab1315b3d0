//! Pulling the field-report system into the mirror by OData.
//!
//! A sync of one entity set asks for every record stamped since the overlap window before the
//! set's cursor (the newest `DateModified` of the last completed sync;
//! `FIELDREPORT_SYNC_OVERLAP_SECONDS`), with the set's expand relations, in key order
//! (`DateModified`, then `Id`). Each request continues after the greatest key read so far,
//! never from a position, until one answers no record (see [`fetch_pages`]). Pages are fetched a
//! few ahead of the ones being stored; the pages that arrived meanwhile are stored together
//! in one transaction without forwarding (two such batches at once, a record never in two;
//! see [`crate::store::Store::mirror_upsert_page`]), their records as the upstream sent
//! them (only `Id`, `Version`, `DateModified` and `ExternalId` are read); the cursor is
//! recorded only when the whole sync completed, so an interrupted sync simply runs again
//! (unchanged records count as such, nothing is duplicated or lost).
//! One sync per set runs at a time across instances: the run holds a lease in the database,
//! renewed while it runs.

use std::time::Instant;

use generated::fieldreport::EntityInfo;
use serde::Serialize;
use tokio::sync::mpsc;

use super::page::{Key, ReadPage, last_key, read_page};
use super::service::{FieldReportError, FieldReportService};
use crate::store::fieldreport::records::{SyncedRecord, Upserted};
use crate::upstream::fieldreport::{FieldReportClient, ODataPage};
use crate::upstream::{System, UpstreamError};
use crate::vocabulary::stamp::Stamp;

/// Records asked for per `$top` window.
const WINDOW: usize = 500;
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

/// What one sync did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct SyncReport {
    /// Route name of the entity set.
    pub entity: String,
    pub fetched: u64,
    pub inserted: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Records without an `Id`, skipped.
    pub skipped: u64,
    /// Records deleted here whose delete the upstream has not confirmed yet (pending for
    /// `post`, or in flight): not stored again.
    #[serde(default)]
    pub deleted_here: u64,
    pub pages: u64,
    pub seconds: f64,
    /// The newest `DateModified` now synced.
    pub cursor: Option<String>,
    /// With `reconcile`: what the reconciling that followed the sync removed and kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<super::reconcile_report::ReconcileReport>,
}

/// Where a query of a sync starts, in the sync's key order (`DateModified`, then `Id`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum From {
    /// The whole set: the set's first sync.
    Everything,
    /// Records stamped at or after this: the overlap window before the last sync's cursor.
    Since(Stamp),
    /// Records after this key: the last key of the pages read so far.
    After(Stamp, i64),
}

impl From {
    /// The `$filter` of the query, if any. The key's `or` keeps the query on the key order
    /// whatever was written meanwhile: a position (`$skip`, a next link made of one) moves
    /// when a record read before it changes, a key does not.
    fn filter(&self) -> Option<String> {
        match self {
            From::Everything => None,
            From::Since(stamp) => Some(format!("DateModified ge {}", stamp.text())),
            From::After(stamp, id) => {
                let at = stamp.text();
                Some(format!("DateModified gt {at} or (DateModified eq {at} and Id gt {id}L)"))
            }
        }
    }

    /// Whether `key` lies after where this query starts: the upstream honoured the filter.
    fn precedes(&self, key: &(Stamp, i64)) -> bool {
        match self {
            From::Everything => true,
            From::Since(stamp) => key.0 >= *stamp,
            From::After(stamp, id) => (&key.0, key.1) > (stamp, *id),
        }
    }
}

/// The query of one request of a sync: the set's expands, where it starts, the key order and
/// a window of [`WINDOW`] records (the upstream may answer fewer).
fn query(info: &EntityInfo, from: &From) -> String {
    let mut parts = Vec::new();
    if !info.expand.is_empty() {
        parts.push(("$expand".to_string(), info.expand.join(",")));
    }
    if let Some(filter) = from.filter() {
        parts.push(("$filter".to_string(), filter));
    }
    parts.push(("$orderby".to_string(), "DateModified,Id".to_string()));
    parts.push(("$top".to_string(), WINDOW.to_string()));
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(parts).finish()
}

/// Where a sync starts: `overlap` before the last sync's cursor (records stamped before it but
/// committed after it was read: a long upstream transaction, a stamp of a coarse clock), or the
/// whole set.
fn start(cursor: Option<&str>, overlap: std::time::Duration) -> From {
    match cursor {
        Some(cursor) => From::Since(Stamp::parse(cursor).earlier_by(overlap)),
        None => From::Everything,
    }
}

/// A sync that inserted or changed at least this many records brings the database's
/// statistics of the mirror up to date before it ends (see
/// [`crate::store::Store::refresh_mirror_statistics`]).
const STATISTICS_AFTER_CHANGES: u64 = 1_000;

/// Every page of a sync, in key order, sent to `pages` with its last key: each query starts
/// after the greatest key read so far, until one answers no record. The upstream's next links
/// are not followed: they continue by position (`$skip`), which skips the records that move
/// back when one read before them is changed meanwhile (docs/architecture.md, "Convergence").
/// Only the last keyed record of a page is read here, so that the next query is on its way
/// while [`read_pages`] reads the page (which checks that the key was the page's greatest).
/// Stops at the first failure (sent as the last item) or when nobody takes pages any more.
async fn fetch_pages(
    client: FieldReportClient,
    info: &'static EntityInfo,
    mut from: From,
    pages: mpsc::Sender<Result<(ODataPage, Option<Key>), UpstreamError>>,
) {
    loop {
        let page = client.page(info.set, &query(info, &from), None).await.and_then(|page| {
            let last = last_key(&page);
            match &last {
                _ if page.records.is_empty() => Ok((page, last)),
                Some(key) if from.precedes(key) => Ok((page, last)),
                _ => Err(malformed(
                    info,
                    format!("answered `{}` with no record after it", from.filter().unwrap_or_default()),
                )),
            }
        });
        let next = match &page {
            // A query that answers no record ends the sync; the empty page is not one of its pages.
            Ok((page, _)) if page.records.is_empty() => return,
            Ok((_, last)) => last.clone().map(|(stamp, id)| From::After(stamp, id)),
            Err(_) => None,
        };
        if pages.send(page).await.is_err() {
            return;
        }
        match next {
            Some(next) => from = next,
            None => return,
        }
    }
}

/// Reads each page [`fetch_pages`] sent (see [`read_page`]) and sends it on to `pages`; a page
/// whose greatest key is not the one its query went on from (its records out of key order)
/// is a failure, and the last item sent.
async fn read_pages(
    info: &'static EntityInfo,
    mut fetched: mpsc::Receiver<Result<(ODataPage, Option<Key>), UpstreamError>>,
    pages: mpsc::Sender<Result<ReadPage, UpstreamError>>,
) {
    while let Some(page) = fetched.recv().await {
        let page = page.and_then(|(page, last)| {
            let read = read_page(page);
            if read.last_key == last {
                Ok(read)
            } else {
                Err(malformed(info, "answered records out of (DateModified, Id) order".to_string()))
            }
        });
        let failed = page.is_err();
        if pages.send(page).await.is_err() || failed {
            return;
        }
    }
}

fn malformed(info: &EntityInfo, what: String) -> UpstreamError {
    UpstreamError::Malformed {
        system: System::FieldReport,
        detail: format!("{} {what} in (DateModified, Id) order", info.set),
    }
}

/// Writes of synced batches at most this many at a time. On Postgres, one batch is written
/// while the next is received and written by another connection: the database's work was
/// the sync's longest part, on one core of two (`cargo xtask bench --db postgres --scenario
/// sync`: 1.5 -> 1.2 s for 100,000 companies). SQLite lets one writer in at a time; the
/// next batch is read meanwhile.
const WRITES_AT_ONCE: usize = 2;

type Written = Result<Vec<Upserted>, crate::store::StoreError>;

/// The batch writes of a sync in flight, each with the ids it writes. They run inside the
/// sync's own future: when the sync stops, writes not yet committed are dropped (rolled back),
/// but for a SQLite write already on its thread, which ends there (committed or not; see
/// [`crate::store::Store::mirror_upsert_page`]).
#[derive(Default)]
struct Writes<'a> {
    running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'a, (Vec<String>, Written)>>,
    ids: std::collections::HashSet<String>,
}

impl<'a> Writes<'a> {
    fn full(&self) -> bool {
        self.running.len() >= WRITES_AT_ONCE
    }

    fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    fn have_any_of(&self, records: &[SyncedRecord]) -> bool {
        records.iter().any(|record| self.ids.contains(&record.id))
    }

    fn start(&mut self, store: &'a crate::store::Store, entity: &'static str, records: Vec<SyncedRecord>) {
        self.ids.extend(records.iter().map(|record| record.id.clone()));
        self.running.push(Box::pin(async move {
            let records = std::sync::Arc::new(records);
            let written = store.mirror_upsert_page(entity, records.clone()).await;
            let ids = match std::sync::Arc::try_unwrap(records) {
                Ok(records) => records.into_iter().map(|record| record.id).collect(),
                Err(records) => records.iter().map(|record| record.id.clone()).collect(),
            };
            (ids, written)
        }));
    }

    /// The next write to end; pending forever when none runs.
    async fn next(&mut self) -> Written {
        let Some((ids, written)) = futures::StreamExt::next(&mut self.running).await else {
            return std::future::pending().await;
        };
        for id in ids {
            self.ids.remove(&id);
        }
        written
    }

    /// Waits for every write in flight and counts what they did into `report`; whether there
    /// was any. The first failure is returned once all have ended.
    async fn finish_into(&mut self, report: &mut SyncReport) -> Result<bool, crate::store::StoreError> {
        let mut any = false;
        let mut failure = None;
        while !self.is_empty() {
            any = true;
            match self.next().await {
                Ok(outcomes) => report.tally(outcomes),
                Err(error) => failure = failure.or(Some(error)),
            }
        }
        failure.map_or(Ok(any), Err)
    }
}

impl SyncReport {
    fn tally(&mut self, outcomes: Vec<Upserted>) {
        for outcome in outcomes {
            match outcome {
                Upserted::Inserted => self.inserted += 1,
                Upserted::Updated => self.updated += 1,
                Upserted::Unchanged => self.unchanged += 1,
            }
        }
    }
}

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
        let mut result = self.sync_pages(info, &owner, progress).await;
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
        let store = self.store();
        let client = self.client()?;
        let previous = store.sync_state(info.route).await?.cursor;
        let deleted_here = store.mirror_tombstone_set(info.route).await?;
        let (sender, fetched) = mpsc::channel(PAGES_AHEAD);
        let (read, mut pages) = mpsc::channel(PAGES_AHEAD);
        let from = start(previous.as_deref(), self.sync_overlap());
        let fetch = Fetching(vec![
            tokio::spawn(fetch_pages(client.clone(), info, from, sender)),
            tokio::spawn(read_pages(info, fetched, read)),
        ]);
        let mut report = SyncReport { entity: info.route.to_string(), cursor: previous.clone(), ..Default::default() };
        let report_progress = |report: &mut SyncReport| {
            report.seconds = started.elapsed().as_secs_f64();
            progress(report);
        };
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
                    let before = records.len() + page.records.len();
                    records.extend(page.records.into_iter().filter(|record| !deleted_here.contains(&record.id)));
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
        let report = tokio::select! {
            report = store_pages => report?,
            lost = renew_lease => return Err(lost),
        };
        fetch.ended().await?;
        Ok(report)
    }
}

/// The tasks that fetch and read a sync's pages; stopped when dropped (with the sync).
struct Fetching(Vec<tokio::task::JoinHandle<()>>);

impl Fetching {
    /// Whether the tasks ended as they should, after their last page or failure: a task that
    /// panicked sent neither, and its pages would look like the whole of them.
    async fn ended(mut self) -> Result<(), FieldReportError> {
        for task in &mut self.0 {
            task.await.map_err(|e| {
                FieldReportError::Internal(format!("fetching the pages of a sync ended abnormally: {e}"))
            })?;
        }
        Ok(())
    }
}

impl Drop for Fetching {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch that writes a record again waits for the write in flight that has it; the
    /// newer copy ends stored.
    #[tokio::test]
    async fn writes_in_flight_know_their_records() {
        for test in crate::store::testing::stores_on_both_databases().await {
            let store = &test.store;
            let mut writes = Writes::default();
            assert!(writes.is_empty() && !writes.full());
            writes.start(store, "tags", vec![SyncedRecord::named("1", "old"), SyncedRecord::named("2", "old")]);
            assert!(writes.have_any_of(&[SyncedRecord::named("3", "new"), SyncedRecord::named("2", "new")]));
            assert!(!writes.have_any_of(&[SyncedRecord::named("3", "new")]));
            writes.start(store, "tags", vec![SyncedRecord::named("3", "new")]);
            assert!(writes.full(), "{} at once", WRITES_AT_ONCE);
            let mut report = SyncReport::default();
            assert!(writes.finish_into(&mut report).await.unwrap());
            assert_eq!((report.inserted, report.updated, report.unchanged), (3, 0, 0));
            assert!(writes.is_empty());
            assert!(!writes.finish_into(&mut report).await.unwrap(), "nothing left to wait for");
            assert!(
                !writes.have_any_of(&[SyncedRecord::named("1", "new"), SyncedRecord::named("3", "new")]),
                "ended writes are forgotten"
            );
            writes.start(store, "tags", vec![SyncedRecord::named("2", "new")]);
            assert_eq!(writes.next().await.unwrap(), [Upserted::Updated]);
            assert_eq!(store.mirror_get("tags", "2").await.unwrap().unwrap().document["Name"], "new");
            drop(writes);
            test.finish().await;
        }
    }

    /// The fetching task's pages end when it ends: one that panicked must not pass for one
    /// that sent its last page.
    #[tokio::test]
    async fn a_fetching_that_panicked_is_an_error_of_the_sync() {
        let panicked = Fetching(vec![tokio::spawn(async { panic!("a fault of the fetching") })]);
        let ended = panicked.ended().await;
        assert!(matches!(ended, Err(FieldReportError::Internal(ref m)) if m.contains("abnormally")), "{ended:?}");
        assert!(Fetching(vec![tokio::spawn(async {})]).ended().await.is_ok());
    }

    /// Dropped with its sync, the fetching stops: it no longer holds the pages' sender.
    #[tokio::test]
    async fn a_dropped_fetching_stops() {
        let (sender, mut pages) = mpsc::channel::<()>(1);
        let fetching = Fetching(vec![tokio::spawn(async move {
            let _sender = sender;
            std::future::pending::<()>().await;
        })]);
        drop(fetching);
        assert!(pages.recv().await.is_none(), "the task was stopped and its sender dropped");
    }

    #[test]
    fn the_query_carries_expand_key_order_and_window() {
        let info = generated::fieldreport::by_set("Companies").unwrap();
        let after = From::After(Stamp::parse("2026-01-01T00:00:00Z"), 1234);
        assert_eq!(
            query(info, &after),
            "%24expand=Contacts%2CTags%2CServiceObjects%2CMainContact&%24filter=DateModified+gt+2026-01-01T00%3A00%3A00Z+or+%28DateModified+eq+2026-01-01T00%3A00%3A00Z+and+Id+gt+1234L%29&%24orderby=DateModified%2CId&%24top=500"
        );
        let tags = generated::fieldreport::by_set("Tags").unwrap();
        assert_eq!(query(tags, &From::Everything), "%24orderby=DateModified%2CId&%24top=500");
    }

    #[test]
    fn a_sync_starts_the_overlap_before_its_cursor() {
        let overlap = std::time::Duration::from_secs(300);
        assert_eq!(start(None, overlap), From::Everything);
        let from = start(Some("2026-01-01T00:05:00Z"), overlap);
        assert_eq!(from.filter().unwrap(), "DateModified ge 2026-01-01T00:00:00Z");
    }

    #[test]
    fn a_key_not_after_the_query_start_is_refused() {
        let after = From::After(Stamp::parse("2026-01-01T00:00:00Z"), 7);
        assert!(after.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 8)));
        assert!(after.precedes(&(Stamp::parse("2026-01-01T00:00:00.1Z"), 1)));
        assert!(!after.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 7)));
        let since = From::Since(Stamp::parse("2026-01-01T00:00:00Z"));
        assert!(since.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 1)));
        assert!(!since.precedes(&(Stamp::parse("2025-12-31T23:59:59Z"), 9)));
    }
}
