//! The job runner of one instance: claims queued jobs (and running ones whose instance stopped
//! renewing their lease) from the database, runs up to [`MAX_RUNNING`] at a time, and records
//! their progress and outcome.
//!
//! While a job runs, a heartbeat renews its lease and records its progress every second (or
//! every third of the lease when that is shorter) and reads its cancel flag: a cancel asked at
//! any instance stops the work at its next page. A job whose lease was taken over stops the
//! same way and records nothing more. A job still running when its instance stops is handed
//! back to the queue: it runs again after a restart, or on another instance.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use slog::Logger;

use super::kind::JobKind;
use super::work::{self, Progress, Stopped};
use super::{JobFlags, JobsService};
use crate::background::task::{Failed, Pace, Plan, Stop, Stopping, Task};
use crate::store::jobs::JobRow;

/// Jobs one instance runs at a time.
pub const MAX_RUNNING: usize = 4;
/// How often an idle runner looks for queued jobs (a job queued at this instance wakes it).
const POLL: Duration = Duration::from_secs(1);
/// How long a stopping instance waits for its jobs to reach a page boundary.
const STOP_WAIT: Duration = Duration::from_secs(20);

/// The job runner of one instance, a background task.
pub struct JobRunner {
    jobs: JobsService,
    /// The lease owner of this instance's jobs.
    owner: String,
    log: Logger,
}

impl JobsService {
    /// This instance's job runner.
    pub fn runner(&self, log: Logger) -> JobRunner {
        JobRunner { jobs: self.clone(), owner: format!("jobs-{}", uuid::Uuid::new_v4().simple()), log }
    }
}

impl Task for JobRunner {
    /// One queued job (or a running one whose lease ran out).
    type Claim = JobRow;

    /// Claims a job whenever fewer than [`MAX_RUNNING`] run here, looks again every [`POLL`]
    /// (or when a job is queued here); at a stop, running jobs reach their next page (the
    /// process's stop was asked for already: `FieldReportService::request_stop`) and are handed
    /// back to the queue, within [`STOP_WAIT`].
    fn plan(&self) -> Plan {
        Plan {
            name: "jobs",
            pace: Pace::WhenDue { idle: POLL, after_failure: POLL, at_once: MAX_RUNNING },
            stop: Stop::Finish { within: Some(STOP_WAIT) },
            wake: Some(self.jobs.wake.clone()),
        }
    }

    async fn claim(&self) -> Result<Option<JobRow>, Failed> {
        // Once the process stops, a job handed back is not claimed again here.
        if self.jobs.fieldreport.stopping() {
            return Ok(None);
        }
        let store = &self.jobs.store;
        store.job_claim(&self.owner, store.lease_deadline()).await.map_err(|error| {
            slog::warn!(self.log, "claiming a job failed"; "error" => %error);
            Failed
        })
    }

    async fn work(&self, job: JobRow, _: &Stopping) -> Result<(), Failed> {
        self.jobs.run_one(job, &self.owner, &self.log).await
    }

    fn due_at(&self, job: &JobRow) -> Option<i64> {
        Some(job.created_at)
    }
}

impl JobsService {
    /// Runs one claimed job to its end, then records how it ended.
    async fn run_one(&self, job: JobRow, owner: &str, log: &Logger) -> Result<(), Failed> {
        let log = log.new(slog::o!("job" => job.id, "kind" => job.kind.clone(), "target" => job.target.clone()));
        let Ok(kind) = JobKind::parse(&job.kind) else {
            // A kind this build does not know (written by a newer one): left to it.
            slog::warn!(log, "a job of an unknown kind was handed back");
            let _ = self.store.job_release(job.id, owner).await;
            return Ok(());
        };
        slog::info!(log, "job started"; "attempt" => job.attempts);
        let cancel = Arc::new(AtomicBool::new(job.cancel_requested));
        let lost = Arc::new(AtomicBool::new(false));
        let stop_work = Arc::new(AtomicBool::new(job.cancel_requested));
        let flags = JobFlags { cancel: cancel.clone(), stop_work: stop_work.clone() };
        self.running.lock().expect("running jobs").insert(job.id, flags);
        let fieldreport = self.fieldreport.cancellable(stop_work.clone());
        let erp = self.erp.with_fieldreport(fieldreport.clone());
        let progress = Progress::default();
        let started = Instant::now();

        let outcome = {
            let work = work::run(kind, &job.target, &fieldreport, &erp, &progress);
            let heartbeat = self.heartbeat(&job, owner, &progress, &cancel, &lost, &stop_work, &log);
            tokio::pin!(work);
            // The heartbeat returns once it asked the work to stop; the work then ends at its
            // next page.
            let finished = tokio::select! {
                outcome = &mut work => Some(outcome),
                () = heartbeat => None,
            };
            match finished {
                Some(outcome) => outcome,
                None => work.await,
            }
        };
        self.running.lock().expect("running jobs").remove(&job.id);

        if lost.load(Ordering::SeqCst) {
            slog::warn!(log, "job stopped: another instance took it over");
            return Ok(());
        }
        let (status, result, error) = match outcome {
            Ok(done) => {
                let status = if done.failure.is_some() { "failed" } else { "succeeded" };
                (status, Some(done.result.to_string()), done.failure)
            }
            Err(Stopped::Interrupted) if cancel.load(Ordering::SeqCst) => ("cancelled", None, None),
            Err(Stopped::Interrupted) => {
                // The process is stopping: the job runs again after the restart.
                return self.store.job_release(job.id, owner).await.map(drop).map_err(|error| {
                    slog::warn!(log, "handing a job back failed"; "error" => %error);
                    Failed
                });
            }
            Err(Stopped::Failed(message)) => ("failed", None, Some(message)),
        };
        match self
            .store
            .job_finish(job.id, owner, status, result.as_deref(), error.as_deref(), &progress.snapshot())
            .await
        {
            Ok(true) => {
                self.metrics.job_finished(&job.kind, &job.target, status, started.elapsed());
                slog::info!(log, "job ended"; "status" => status, "error" => error.as_deref().unwrap_or(""));
            }
            Ok(false) => slog::warn!(log, "job ended after another instance took it over"; "status" => status),
            Err(store_error) => {
                slog::warn!(log, "recording a job's end failed"; "error" => %store_error);
                return Err(Failed);
            }
        }
        Ok(())
    }

    /// Renews the job's lease and records its progress until the job is cancelled or lost
    /// (then it sets `stop_work` and returns); runs as long as the work otherwise.
    #[allow(clippy::too_many_arguments)]
    async fn heartbeat(
        &self,
        job: &JobRow,
        owner: &str,
        progress: &Progress,
        cancel: &AtomicBool,
        lost: &AtomicBool,
        stop_work: &AtomicBool,
        log: &Logger,
    ) {
        let every = Duration::from_millis((self.store.work_lease_ms() / 3).clamp(1, 1_000) as u64);
        loop {
            if cancel.load(Ordering::SeqCst) {
                stop_work.store(true, Ordering::SeqCst);
                return;
            }
            tokio::time::sleep(every).await;
            match self.store.job_heartbeat(job.id, owner, self.store.lease_deadline(), &progress.snapshot()).await {
                Ok(Some(true)) => cancel.store(true, Ordering::SeqCst),
                Ok(Some(false)) => {}
                Ok(None) => {
                    lost.store(true, Ordering::SeqCst);
                    stop_work.store(true, Ordering::SeqCst);
                    return;
                }
                Err(error) => slog::warn!(log, "renewing a job's lease failed"; "error" => %error),
            }
        }
    }
}
