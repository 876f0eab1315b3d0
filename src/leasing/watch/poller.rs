//! The poller: claims the watched requests that are due (with a lease, so that instances
//! share them and a crashed instance's claims pass on), reads each at the provider,
//! `LEASING_WATCH_CONCURRENCY` at a time, records what it read and when to read it next. A
//! request the provider has answered 404 or 410 for since `LEASING_WATCH_GONE_SECONDS` is
//! read no more.

use std::time::Duration;

use futures::StreamExt;
use slog::Logger;

use super::Watcher;
use crate::background::task::{Failed, Pace, Plan, Stop, Stopping, Task};
use crate::metrics::ObservationSource;
use crate::store::leasing::watch::WatchRow;
use crate::store::now_ms;
use crate::upstream::leasing::LeasingClient;

/// How long an idle poller waits before looking for due requests again.
const IDLE: Duration = Duration::from_millis(500);

/// The poller of one instance, a background task.
pub struct Poller {
    watcher: Watcher,
    client: LeasingClient,
    /// The lease owner of this instance's reads.
    owner: String,
    log: Logger,
}

impl Watcher {
    /// This instance's poller, reading over `client`.
    pub fn poller(&self, client: LeasingClient, log: Logger) -> Poller {
        let owner = format!("watch-{}", uuid::Uuid::new_v4().simple());
        Poller { watcher: self.clone(), client, owner, log }
    }
}

impl Task for Poller {
    /// Up to 4 × `LEASING_WATCH_CONCURRENCY` due requests.
    type Claim = Vec<WatchRow>;

    /// Claims again as soon as a batch was read, after [`IDLE`] when none was due; reads in
    /// flight at a stop are dropped, and their claims pass on when their lease runs out.
    fn plan(&self) -> Plan {
        Plan {
            name: "leasing_poll",
            pace: Pace::WhenDue { idle: IDLE, after_failure: IDLE, at_once: 1 },
            stop: Stop::Drop,
            wake: None,
        }
    }

    /// Starts first the watches of requests created here that could not be started then.
    async fn claim(&self) -> Result<Option<Vec<WatchRow>>, Failed> {
        if let Err(error) = self.watcher.start_unstarted().await {
            slog::warn!(self.log, "starting the watch of a request created here failed"; "error" => %error);
            return Err(Failed);
        }
        let store = &self.watcher.store;
        let batch_size = (self.watcher.config.concurrency * 4) as i64;
        match store.watch_claim_due(&self.owner, store.lease_deadline(), batch_size).await {
            Ok(due) => Ok((!due.is_empty()).then_some(due)),
            Err(error) => {
                slog::warn!(self.log, "claiming watched requests failed"; "error" => %error);
                Err(Failed)
            }
        }
    }

    async fn work(&self, due: Vec<WatchRow>, _: &Stopping) -> Result<(), Failed> {
        let reads =
            futures::stream::iter(due).map(|watch| self.watcher.poll_one(&self.client, watch, &self.owner, &self.log));
        let outcomes: Vec<bool> = reads.buffer_unordered(self.watcher.config.concurrency).collect().await;
        if outcomes.contains(&false) { Err(Failed) } else { Ok(()) }
    }

    fn due_at(&self, due: &Vec<WatchRow>) -> Option<i64> {
        due.iter().filter_map(|watch| watch.next_poll_at).min()
    }
}

impl Watcher {
    /// Reads one claimed request and sets its next read; `false` when that was not recorded.
    async fn poll_one(&self, client: &LeasingClient, watch: WatchRow, owner: &str, log: &Logger) -> bool {
        let read_at = now_ms();
        let (next_poll_at, failures, gone_since) = match client.get(&watch.financing_id).await {
            Ok(request) => {
                self.observe(ObservationSource::Poll, &watch.financing_id, &request, read_at).await;
                (Some(self.next_poll_at()), 0, None)
            }
            Err(error) => {
                let failures = watch.failures + 1;
                // Another failure between two 404s says nothing of the request: the time goes on.
                let gone_since =
                    if error.is_gone() { Some(watch.gone_since.unwrap_or(read_at)) } else { watch.gone_since };
                let gone_for = gone_since.map_or(0, |since| read_at - since);
                // A 429, or a 503 in maintenance, may say how long to stay away.
                let retry_after = error.retry_after();
                let next_poll_at = (gone_for < self.config.gone_after.as_millis() as i64)
                    .then(|| self.retry_poll_at(failures, retry_after));
                slog::warn!(log, "reading a watched request failed";
                    "financing_id" => &watch.financing_id, "failures" => failures, "error" => %error,
                    "read_again" => next_poll_at.is_some());
                (next_poll_at, failures, gone_since)
            }
        };
        let rescheduled = self.store.watch_reschedule(&watch.financing_id, owner, next_poll_at, failures, gone_since);
        if let Err(error) = rescheduled.await {
            slog::warn!(log, "rescheduling a watched request failed; it is read again when its claim runs out";
                "financing_id" => &watch.financing_id, "error" => %error);
            return false;
        }
        true
    }
}
