//! The scheduler: queues the jobs of `SCHEDULE` ([`super::config`]) at their intervals.
//!
//! Every instance runs the scheduler; the database decides which one queues a tick (the one
//! whose update moves the entry's next time on, [`crate::store::Store::schedule_take_tick`]),
//! and a tick whose kind and target still has a job queued or running is skipped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use slog::Logger;

use super::config::ScheduleEntry;
use super::{JobError, JobsService};
use crate::background::task::{Failed, Pace, Plan, Stop, Stopping, Task};
use crate::store::now_ms;

/// How often the scheduler looks for due entries.
const TICK: Duration = Duration::from_secs(1);

/// The scheduler of one instance, a background task.
pub struct Scheduler {
    jobs: JobsService,
    schedule: Vec<ScheduleEntry>,
    /// Whether the entries were recorded (at the first tick).
    recorded: AtomicBool,
    log: Logger,
}

impl JobsService {
    /// The scheduler of `schedule`; `None` when nothing is scheduled.
    pub fn scheduler(&self, schedule: Vec<ScheduleEntry>, log: Logger) -> Option<Scheduler> {
        if schedule.is_empty() {
            return None;
        }
        Some(Scheduler { jobs: self.clone(), schedule, recorded: AtomicBool::new(false), log })
    }
}

impl Task for Scheduler {
    /// The entries whose tick this instance took.
    type Claim = Vec<ScheduleEntry>;

    /// Every [`TICK`]; a tick in flight at a stop is dropped (a tick taken and not queued is
    /// lost: the next one comes at the entry's interval).
    fn plan(&self) -> Plan {
        Plan { name: "schedule", pace: Pace::Every(TICK), stop: Stop::Drop, wake: None }
    }

    async fn claim(&self) -> Result<Option<Vec<ScheduleEntry>>, Failed> {
        let store = &self.jobs.store;
        if !self.recorded.swap(true, Ordering::SeqCst) {
            for entry in &self.schedule {
                let interval_ms = i64::try_from(entry.every.as_millis()).unwrap_or(i64::MAX);
                // A new entry is due at once; a known one keeps its time.
                if let Err(error) = store.schedule_entry(entry.kind.name(), &entry.target, interval_ms, now_ms()).await
                {
                    slog::warn!(self.log, "recording a schedule entry failed"; "kind" => entry.kind.name(), "error" => %error);
                }
            }
        }
        let mut taken = Vec::new();
        let mut failed = false;
        for entry in &self.schedule {
            match store.schedule_take_tick(entry.kind.name(), &entry.target).await {
                Ok(true) => taken.push(entry.clone()),
                Ok(false) => {}
                Err(error) => {
                    failed = true;
                    slog::warn!(self.log, "a scheduled job was not queued"; "kind" => entry.kind.name(),
                        "target" => &entry.target, "error" => %JobError::from(error));
                }
            }
        }
        match (taken.is_empty(), failed) {
            (true, true) => Err(Failed),
            (true, false) => Ok(None),
            (false, _) => Ok(Some(taken)),
        }
    }

    async fn work(&self, taken: Vec<ScheduleEntry>, _: &Stopping) -> Result<(), Failed> {
        let mut outcome = Ok(());
        for entry in &taken {
            if let Err(error) = self.jobs.queue_tick(entry, &self.log).await {
                slog::warn!(self.log, "a scheduled job was not queued"; "kind" => entry.kind.name(),
                    "target" => &entry.target, "error" => %error);
                outcome = Err(Failed);
            }
        }
        outcome
    }
}

impl JobsService {
    /// Queues the job of an entry whose tick this instance took.
    async fn queue_tick(&self, entry: &ScheduleEntry, log: &Logger) -> Result<(), JobError> {
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
