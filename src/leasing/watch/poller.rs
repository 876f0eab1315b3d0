//! The poller: claims the watched requests that are due (with a lease, so that instances
//! share them and a crashed instance's claims pass on), reads each at the provider,
//! `LEASING_WATCH_CONCURRENCY` at a time, records what it read and when to read it next.

use std::time::Duration;

use futures::StreamExt;
use slog::Logger;
use tokio::sync::watch;

use super::Watcher;
use crate::metrics::ObservationSource;
use crate::store::leasing::watch::WatchRow;
use crate::store::now_ms;
use crate::upstream::UpstreamError;
use crate::upstream::leasing::LeasingClient;

/// How long an idle poller waits before looking for due requests again.
const IDLE: Duration = Duration::from_millis(500);

/// The watcher's background tasks of one instance; [`WatchTasks::stop`] ends them.
pub struct WatchTasks {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl WatchTasks {
    /// Stops claiming; reads and deliveries in flight are dropped, and their claims pass on
    /// when their lease runs out (a delivery may then be sent again, with the same id).
    pub async fn stop(self) {
        self.stop.send_replace(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

impl Watcher {
    /// Starts this instance's poller (when the provider is configured) and deliverer.
    pub fn start_tasks(&self, client: Result<LeasingClient, UpstreamError>, log: Logger) -> WatchTasks {
        let (stop, stopped) = watch::channel(false);
        let mut tasks =
            vec![tokio::spawn(self.clone().deliver(stopped.clone(), log.new(slog::o!("task" => "deliver"))))];
        match client {
            Ok(client) => {
                tasks.push(tokio::spawn(self.clone().poll(client, stopped, log.new(slog::o!("task" => "poll")))))
            }
            Err(error) => slog::info!(log, "leasing requests are not watched"; "reason" => %error),
        }
        WatchTasks { stop, tasks }
    }

    async fn poll(self, client: LeasingClient, mut stopped: watch::Receiver<bool>, log: Logger) {
        let owner = format!("watch-{}", uuid::Uuid::new_v4().simple());
        let batch_size = (self.config.concurrency * 4) as i64;
        loop {
            if *stopped.borrow() {
                return;
            }
            let claimed = self.store.watch_claim_due(&owner, self.store.lease_deadline(), batch_size).await;
            let busy = match claimed {
                Ok(due) if !due.is_empty() => {
                    let reads = futures::stream::iter(due).for_each_concurrent(self.config.concurrency, |watch| {
                        self.poll_one(&client, watch, &owner, &log)
                    });
                    tokio::select! {
                        () = reads => {}
                        _ = stopped.changed() => return,
                    }
                    true
                }
                Ok(_) => false,
                Err(error) => {
                    slog::warn!(log, "claiming watched requests failed"; "error" => %error);
                    false
                }
            };
            if !busy {
                tokio::select! {
                    _ = stopped.changed() => {}
                    _ = tokio::time::sleep(IDLE) => {}
                }
            }
        }
    }

    async fn poll_one(&self, client: &LeasingClient, watch: WatchRow, owner: &str, log: &Logger) {
        let read_at = now_ms();
        let (next_poll_at, failures) = match client.get(&watch.financing_id).await {
            Ok(request) => {
                self.observe(ObservationSource::Poll, &watch.financing_id, &request, read_at).await;
                (self.next_poll_at(), 0)
            }
            Err(error) => {
                let failures = watch.failures + 1;
                let retry_after = match &error {
                    UpstreamError::Throttled { retry_after, .. } => *retry_after,
                    _ => None,
                };
                slog::warn!(log, "reading a watched request failed";
                    "financing_id" => &watch.financing_id, "failures" => failures, "error" => %error);
                (self.retry_poll_at(failures, retry_after), failures)
            }
        };
        if let Err(error) = self.store.watch_reschedule(&watch.financing_id, owner, next_poll_at, failures).await {
            slog::warn!(log, "rescheduling a watched request failed; it is read again when its claim runs out";
                "financing_id" => &watch.financing_id, "error" => %error);
        }
    }
}
