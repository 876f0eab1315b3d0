//! The janitor: marks what crashed instances left running as interrupted (flows whose lease
//! ran out), and removes finished history older than `RETAIN_*` keeps it, counting what it
//! removed in the metrics.

use std::sync::Arc;
use std::time::Duration;

use slog::Logger;

use super::task::{Chore, Failed};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::store::retention::Retention;

pub struct Janitor {
    pub store: Store,
    pub retention: Retention,
    pub metrics: Arc<Metrics>,
    pub log: Logger,
}

/// Every instance runs it, at start and then once per work lease (a running flow renews its
/// lease more often than that).
impl Chore for Janitor {
    const NAME: &'static str = "janitor";

    fn every(&self) -> Duration {
        Duration::from_millis(self.store.work_lease_ms() as u64)
    }

    async fn run(&self) -> Result<(), Failed> {
        let mut outcome = Ok(());
        match self.store.interrupt_abandoned_flows().await {
            Ok(0) => {}
            Ok(count) => slog::warn!(self.log, "flows of a stopped instance marked interrupted"; "count" => count),
            Err(error) => {
                slog::warn!(self.log, "looking for abandoned flows failed"; "error" => %error);
                outcome = Err(Failed);
            }
        }
        match self.store.prune(&self.retention).await {
            Ok(pruned) => self.metrics.pruned(&pruned),
            Err(error) => {
                slog::warn!(self.log, "pruning old history failed"; "error" => %error);
                outcome = Err(Failed);
            }
        }
        outcome
    }
}
