//! The batch writes of a sync in flight.

use super::report::SyncReport;
use crate::store::fieldreport::records::{SyncedRecord, Upserted};

/// Writes of synced batches at most this many at a time. On Postgres, one batch is written
/// while the next is received and written by another connection: the database's work was
/// the sync's longest part, on one core of two (`cargo xtask bench --db postgres --scenario
/// sync`: 1.5 -> 1.2 s for 100,000 companies); they reserve their change numbers, so neither
/// waits for the other's commit (migration 0033). SQLite lets one writer in at a time; the
/// next batch is read meanwhile.
pub(super) const WRITES_AT_ONCE: usize = 2;

pub(super) type Written = Result<Vec<Upserted>, crate::store::StoreError>;

/// The batch writes of a sync in flight, each with the ids it writes. They run inside the
/// sync's own future: when the sync stops, writes not yet committed are dropped (rolled back),
/// but for a SQLite write already on its thread, which ends there (committed or not; see
/// [`crate::store::Store::mirror_upsert_page`]).
#[derive(Default)]
pub(super) struct Writes<'a> {
    running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'a, (Vec<String>, Written)>>,
    ids: std::collections::HashSet<String>,
}

impl<'a> Writes<'a> {
    pub(super) fn full(&self) -> bool {
        self.running.len() >= WRITES_AT_ONCE
    }

    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    pub(super) fn have_any_of(&self, records: &[SyncedRecord]) -> bool {
        records.iter().any(|record| self.ids.contains(&record.id))
    }

    pub(super) fn start(&mut self, store: &'a crate::store::Store, entity: &'static str, records: Vec<SyncedRecord>) {
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
    pub(super) async fn next(&mut self) -> Written {
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
    pub(super) async fn finish_into(&mut self, report: &mut SyncReport) -> Result<bool, crate::store::StoreError> {
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
