//! Background work: every kind of it (the job runner, the schedule, the leasing watcher's reads
//! and deliveries, the ERP inbox and its pruning, the janitor, the last-use writer) is a
//! [`Task`] run by one driver with one loop: claim what is due (with a lease in the database,
//! where instances share the work), work on it, wait as the task's [`Plan`] says, and stop as
//! it says. [`Background`] is the one handle `server.rs` starts and stops.
//!
//! Every task has the same metrics, by `task`: runs, failures and lag
//! ([`crate::metrics::Metrics::background_ran`]).

pub mod janitor;
pub mod task;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{Notify, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::metrics::Metrics;
pub use task::{Chore, Failed, Pace, Plan, Stop, Stopping, Task};

/// The background tasks of one running service; [`Background::stop`] ends them.
pub struct Background {
    stop: watch::Sender<bool>,
    running: Vec<(Stop, JoinHandle<()>)>,
    metrics: Arc<Metrics>,
}

impl Background {
    pub fn new(metrics: Arc<Metrics>) -> Background {
        Background { stop: watch::channel(false).0, running: Vec::new(), metrics }
    }

    /// Starts running `task` as its plan says.
    pub fn start<T: Task>(&mut self, task: T) {
        let plan = task.plan();
        self.metrics.background_task(plan.name);
        let stop = plan.stop;
        let stopping = Stopping(self.stop.subscribe());
        let handle = tokio::spawn(drive(Arc::new(task), plan, stopping, self.metrics.clone()));
        self.running.push((stop, handle));
    }

    /// Stops every task at once: none claims again, and each task's work in flight is dropped
    /// or let finish as its plan says.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let waits = self.running.into_iter().map(|(stop, mut handle)| async move {
            match stop {
                Stop::Finish { within: Some(within) } => {
                    if tokio::time::timeout(within, &mut handle).await.is_err() {
                        handle.abort();
                    }
                }
                Stop::Finish { within: None } | Stop::Drop => {
                    let _ = handle.await;
                }
            }
        });
        futures::future::join_all(waits).await;
    }
}

/// The one loop: claims while the task has room and its next claim is due, hands each claim to
/// the work (a task of its own), and waits for the next claim, room, a wake-up or the stop.
async fn drive<T: Task>(task: Arc<T>, plan: Plan, stopping: Stopping, metrics: Arc<Metrics>) {
    let at_once = match plan.pace {
        Pace::WhenDue { at_once, .. } => at_once.max(1),
        Pace::Every(_) => 1,
    };
    let mut stop = stopping.0.clone();
    let mut running: JoinSet<Result<(), Failed>> = JoinSet::new();
    let mut next_claim = Instant::now();
    loop {
        if stopping.asked() {
            break;
        }
        let now = Instant::now();
        if running.len() < at_once && now >= next_claim {
            let claimed = match plan.stop {
                // A claim in flight is dropped at the stop like the work.
                Stop::Drop => tokio::select! {
                    claimed = task.claim() => claimed,
                    _ = stop.wait_for(|asked| *asked) => break,
                },
                Stop::Finish { .. } => task.claim().await,
            };
            let after = match &claimed {
                Ok(Some(_)) => Next::Found,
                Ok(None) => Next::Idle,
                Err(Failed) => Next::Failed,
            };
            if let Ok(Some(claim)) = claimed {
                let lag = match task.due_at(&claim) {
                    Some(due_at) => since_epoch_ms(due_at),
                    None => now.saturating_duration_since(next_claim),
                };
                metrics.background_ran(plan.name, lag);
                let (task, stopping) = (task.clone(), stopping.clone());
                running.spawn(async move { task.work(claim, &stopping).await });
            } else if after == Next::Failed {
                metrics.background_failed(plan.name);
            }
            next_claim = plan.pace.next_claim(after, next_claim, Instant::now());
            continue;
        }
        let room = running.len() < at_once;
        tokio::select! {
            // The stop, or a handle dropped without one.
            _ = stop.wait_for(|asked| *asked) => break,
            () = woken(plan.wake.as_deref()) => next_claim = Instant::now(),
            Some(ended) = running.join_next(), if !running.is_empty() => {
                // Room again: a task that claims when due looks at once, unless its work failed.
                let after = if matches!(ended, Ok(Ok(()))) { Next::Found } else { Next::Failed };
                if after == Next::Failed {
                    metrics.background_failed(plan.name);
                }
                if let Pace::WhenDue { .. } = plan.pace {
                    next_claim = plan.pace.next_claim(after, next_claim, Instant::now());
                }
            }
            () = tokio::time::sleep_until(next_claim.into()), if room => {}
        }
    }
    match plan.stop {
        // Dropping the set aborts the work in flight.
        Stop::Drop => drop(running),
        Stop::Finish { .. } => {
            while let Some(ended) = running.join_next().await {
                if !matches!(ended, Ok(Ok(()))) {
                    metrics.background_failed(plan.name);
                }
            }
        }
    }
    task.stopped().await;
}

/// What the last claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Found,
    Idle,
    Failed,
}

impl Pace {
    /// When to claim next after a claim planned for `planned` found `after` at `now`.
    fn next_claim(self, after: Next, planned: Instant, now: Instant) -> Instant {
        match (self, after) {
            (Pace::WhenDue { .. }, Next::Found) => now,
            (Pace::WhenDue { idle, .. }, Next::Idle) => now + idle,
            (Pace::WhenDue { after_failure, .. }, Next::Failed) => now + after_failure,
            // A run later than a period moves the following ones on (tokio's `Delay`).
            (Pace::Every(period), _) if planned + period > now => planned + period,
            (Pace::Every(period), _) => now + period,
        }
    }
}

async fn woken(wake: Option<&Notify>) {
    match wake {
        Some(wake) => wake.notified().await,
        None => std::future::pending().await,
    }
}

fn since_epoch_ms(at: i64) -> Duration {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    Duration::from_millis(now.saturating_sub(at).max(0) as u64)
}

#[cfg(test)]
mod tests;
