//! The scheduler: queues the jobs of `SCHEDULE` ([`super::config`]) at their intervals.
//!
//! Every instance runs the scheduler; the database decides which one queues a tick (the one
//! whose update moves the entry's next time on, [`crate::store::Store::schedule_take_tick`]),
//! and a tick whose kind and target still has a job queued or running is skipped.

use std::time::Duration;

use slog::Logger;
use tokio::task::JoinHandle;

use super::config::ScheduleEntry;
use super::{JobError, JobsService};
use crate::store::now_ms;

/// How often the scheduler looks for due entries.
const TICK: Duration = Duration::from_secs(1);

impl JobsService {
    /// Starts queueing the schedule's jobs; `None` when nothing is scheduled. The task runs
    /// until it is aborted.
    pub fn start_scheduler(&self, schedule: Vec<ScheduleEntry>, log: Logger) -> Option<JoinHandle<()>> {
        if schedule.is_empty() {
            return None;
        }
        Some(tokio::spawn(self.clone().schedule(schedule, log)))
    }

    async fn schedule(self, schedule: Vec<ScheduleEntry>, log: Logger) {
        for entry in &schedule {
            let interval_ms = i64::try_from(entry.every.as_millis()).unwrap_or(i64::MAX);
            // A new entry is due at once; a known one keeps its time.
            if let Err(error) = self.store.schedule_entry(entry.kind.name(), &entry.target, interval_ms, now_ms()).await
            {
                slog::warn!(log, "recording a schedule entry failed"; "kind" => entry.kind.name(), "error" => %error);
            }
        }
        let mut every = tokio::time::interval(TICK);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            for entry in &schedule {
                if let Err(error) = self.tick(entry, &log).await {
                    slog::warn!(log, "a scheduled job was not queued"; "kind" => entry.kind.name(),
                        "target" => &entry.target, "error" => %error);
                }
            }
        }
    }

    /// Queues the entry's job when it is due and this instance took the tick.
    async fn tick(&self, entry: &ScheduleEntry, log: &Logger) -> Result<(), JobError> {
        if !self.store.schedule_take_tick(entry.kind.name(), &entry.target).await? {
            return Ok(());
        }
        match self.enqueue_checked(entry.kind, &entry.target, true, None).await {
            Ok(job) => {
                slog::info!(log, "scheduled job queued"; "job" => job.id, "kind" => entry.kind.name(), "target" => &entry.target);
                Ok(())
            }
            Err(JobError::Active { id, status, .. }) => {
                slog::info!(log, "scheduled tick skipped: the previous job has not ended";
                    "job" => id, "status" => status, "kind" => entry.kind.name(), "target" => &entry.target);
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}
