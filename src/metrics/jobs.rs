//! The metrics of jobs: how many ended by status and how long they ran (kept in memory by the
//! instance that ran them, like every counter here), and when each kind and target last
//! succeeded (read from the database when scraped: the truth across instances and restarts,
//! which the freshness alerts need).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::exposition::Exposition;
use super::timing::Timing;

/// The label value of a job for every target of its kind.
pub const EVERY_TARGET: &str = "*";

fn target_label(target: &str) -> &str {
    if target.is_empty() { EVERY_TARGET } else { target }
}

/// Jobs ended at this instance, by kind, target and status. Labels are bounded: six kinds,
/// their targets (entity sets, stages, models) and five statuses.
#[derive(Default)]
pub struct JobTimings(Mutex<BTreeMap<(String, String, String), Timing>>);

impl JobTimings {
    pub fn observe(&self, kind: &str, target: &str, status: &str, elapsed: Duration) {
        let mut timings = self.0.lock().expect("job metrics");
        let key = (kind.to_string(), target_label(target).to_string(), status.to_string());
        timings.entry(key).or_default().observe(elapsed);
    }

    pub fn render(&self, out: &mut Exposition) {
        let timings = self.0.lock().expect("job metrics");
        let name = "integration_jobs_finished_total";
        out.family(
            name,
            "counter",
            "Jobs that ended at this instance, by kind, target (`*`: every target of the kind) and status (succeeded, failed, cancelled).",
        );
        for ((kind, target, status), timing) in timings.iter() {
            out.sample(name, &[("kind", kind), ("target", target), ("status", status)], timing.count());
        }
        let name = "integration_job_duration_seconds";
        out.family(name, "histogram", "How long the jobs that ended at this instance ran, by kind, target and status.");
        for ((kind, target, status), timing) in timings.iter() {
            out.histogram(name, &[("kind", kind), ("target", target), ("status", status)], &timing.snapshot());
        }
    }
}

/// `integration_job_last_success_timestamp_seconds` from the database's (kind, target, epoch
/// ms) rows.
pub fn render_last_successes(out: &mut Exposition, successes: &[(String, String, i64)]) {
    let name = "integration_job_last_success_timestamp_seconds";
    out.family(
        name,
        "gauge",
        "When the last job of a kind and target (`*`: every target of the kind) succeeded, at any instance, since the Unix epoch in seconds.",
    );
    for (kind, target, at) in successes {
        out.sample(name, &[("kind", kind), ("target", target_label(target))], *at as f64 / 1000.0);
    }
}
