//! The metrics every background task has ([`crate::background`]): its runs, its failures and
//! its lag, by `task`. Every started task has its series from the start (at 0), so that a rate
//! or an alert needs no `absent()`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::exposition::Exposition;

#[derive(Default)]
struct TaskCounts {
    /// Claims that found work, and the ticks of periodic tasks.
    runs: u64,
    failures: u64,
    /// How late the last run began.
    lag: Duration,
}

/// A family of the task metrics: its name, type and help, and what it counts of a task.
type Family = (&'static str, &'static str, &'static str, fn(&TaskCounts) -> String);

/// The background tasks of this instance, by name (a handful, fixed by the code).
#[derive(Default)]
pub struct BackgroundMetrics(Mutex<BTreeMap<&'static str, TaskCounts>>);

impl BackgroundMetrics {
    fn with(&self, task: &'static str, change: impl FnOnce(&mut TaskCounts)) {
        let mut tasks = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        change(tasks.entry(task).or_default());
    }

    pub fn started(&self, task: &'static str) {
        self.with(task, |_| {});
    }

    pub fn ran(&self, task: &'static str, lag: Duration) {
        self.with(task, |counts| {
            counts.runs += 1;
            counts.lag = lag;
        });
    }

    pub fn failed(&self, task: &'static str) {
        self.with(task, |counts| counts.failures += 1);
    }

    pub fn render(&self, out: &mut Exposition) {
        let tasks = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let families: [Family; 3] = [
            (
                "integration_background_runs_total",
                "counter",
                "Runs of each background task at this instance: claims that found work, and the ticks of periodic tasks.",
                |counts| counts.runs.to_string(),
            ),
            (
                "integration_background_failures_total",
                "counter",
                "Claims and runs of each background task that failed at this instance (the log says why).",
                |counts| counts.failures.to_string(),
            ),
            (
                "integration_background_lag_seconds",
                "gauge",
                "How late the last run of a background task began: after its claimed work was due, or after its planned tick.",
                |counts| counts.lag.as_secs_f64().to_string(),
            ),
        ];
        for (name, kind, help, value) in families {
            out.family(name, kind, help);
            for (task, counts) in tasks.iter() {
                out.sample(name, &[("task", task)], value(counts));
            }
        }
    }
}
