//! Jobs: the long work of the tool routes (a field-report sync, reconcile, setup or post, an
//! ERP setup or pull) queued in the database and run by the job runner of one instance, with
//! an id to ask about, progress, a history and cancellation; and `SCHEDULE`, which queues them
//! at intervals.
//!
//! A job is a row of `jobs` ([`crate::store::jobs`]): queued by [`JobsService::enqueue`],
//! claimed with a lease by [`runner`], its work done by [`work`] through the same services the
//! tool routes and the CLI use. One job of a kind and target is queued or running at a time,
//! across instances.

pub mod config;
pub mod error;
pub mod kind;
pub mod runner;
pub mod schedule;
pub mod work;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::erp::ErpService;
use crate::fieldreport::service::FieldReportService;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::store::jobs::{Enqueued, JobFilter, JobRow, UserJobBounds};
use crate::store::rates::Rated;
use crate::vocabulary::key_page::StampedKey;
use crate::vocabulary::owner::Viewer;
pub use error::JobError;
use error::invalid;
use kind::JobKind;

/// The statuses of a job: `queued` and `running` while it is active, then one of the others.
pub const STATUSES: [&str; 5] = ["queued", "running", "succeeded", "failed", "cancelled"];

/// What stops a running job: `cancel` says it was cancelled, `stop_work` ends its work at the
/// next page (also set when it lost its lease).
#[derive(Clone, Default)]
pub(crate) struct JobFlags {
    pub cancel: Arc<AtomicBool>,
    pub stop_work: Arc<AtomicBool>,
}

/// The jobs of one instance: queueing and reading them, and the runner's shared state. Cheap
/// to clone.
#[derive(Clone)]
pub struct JobsService {
    store: Store,
    fieldreport: FieldReportService,
    erp: ErpService,
    metrics: Arc<Metrics>,
    /// Wakes this instance's runner when a job was queued here.
    wake: Arc<tokio::sync::Notify>,
    /// The flags of the jobs running here, so that a cancel asked here stops its job at once
    /// (one asked at another instance arrives with the job's next heartbeat).
    running: Arc<Mutex<HashMap<i64, JobFlags>>>,
    /// Jobs one user may have queued or running (`JOBS_ACTIVE_PER_USER`).
    active_per_user: u64,
    /// Jobs one user may queue within a minute (`JOBS_PER_MINUTE_PER_USER`).
    per_minute_per_user: u64,
}

impl JobsService {
    pub fn new(store: Store, fieldreport: FieldReportService, erp: ErpService, metrics: Arc<Metrics>) -> JobsService {
        JobsService {
            store,
            fieldreport,
            erp,
            metrics,
            wake: Default::default(),
            running: Default::default(),
            active_per_user: crate::jobs::config::JobsConfig::default().active_per_user,
            per_minute_per_user: crate::jobs::config::JobsConfig::default().per_minute_per_user,
        }
    }

    /// At most `most` jobs queued per user within a minute (`JOBS_PER_MINUTE_PER_USER`): a
    /// queue-and-cancel loop writes no faster than that.
    pub fn with_per_minute_per_user(mut self, most: u64) -> JobsService {
        self.per_minute_per_user = most;
        self
    }

    /// At most `most` jobs queued or running per user (`JOBS_ACTIVE_PER_USER`).
    pub fn with_active_per_user(mut self, most: u64) -> JobsService {
        self.active_per_user = most;
        self
    }

    /// Queues a job of `kind` for `target` (every target of the kind without one), recording
    /// the user who asked (none: the command line).
    pub async fn enqueue(&self, kind: &str, target: Option<&str>, by: Option<i64>) -> Result<JobRow, JobError> {
        let kind = JobKind::parse(kind)?;
        let target = kind.target(target)?;
        if let Some(user) = by {
            if self.store.jobs_active_of(user).await? >= self.active_per_user {
                return Err(JobError::TooManyActive(self.active_per_user));
            }
            let rate = self.store.rate_reached(Rated::Jobs, user, self.per_minute_per_user).await?;
            if let Some(retry_after_seconds) = rate {
                return Err(JobError::TooFast { most: self.per_minute_per_user, retry_after_seconds });
            }
            // Counted again with the insert: jobs queued at once all pass the counts above.
            let bounds = UserJobBounds { active: self.active_per_user, per_minute: self.per_minute_per_user };
            return match self.store.job_enqueue_within(kind.name(), &target, user, bounds).await? {
                Enqueued::Queued(job) => self.queued(Ok(job)),
                Enqueued::Active(active) => self.queued(Err(active)),
                Enqueued::TooManyActive => Err(JobError::TooManyActive(self.active_per_user)),
                Enqueued::TooFast { retry_after_seconds } => {
                    Err(JobError::TooFast { most: self.per_minute_per_user, retry_after_seconds })
                }
            };
        }
        self.enqueue_checked(kind, &target, false, by).await
    }

    /// Queues a job whose kind and target were checked; `Active` names the job already queued
    /// or running.
    pub(crate) async fn enqueue_checked(
        &self,
        kind: JobKind,
        target: &str,
        scheduled: bool,
        by: Option<i64>,
    ) -> Result<JobRow, JobError> {
        self.queued(self.store.job_enqueue(kind.name(), target, scheduled, by).await?)
    }

    /// The job queued (the runner is woken), or the active one of its kind and target.
    fn queued(&self, outcome: Result<JobRow, JobRow>) -> Result<JobRow, JobError> {
        match outcome {
            Ok(job) => {
                self.wake.notify_one();
                Ok(job)
            }
            Err(active) => {
                Err(JobError::Active { id: active.id, kind: active.kind, target: active.target, status: active.status })
            }
        }
    }

    pub async fn get(&self, id: i64) -> Result<JobRow, JobError> {
        self.store.job(id).await?.ok_or(JobError::NotFound(id))
    }

    /// A page of the history, newest first, and the number of matching jobs.
    pub async fn list(
        &self,
        kind: Option<&str>,
        status: Option<&str>,
        page: u32,
        per_page: u32,
    ) -> Result<(Vec<JobRow>, i64), JobError> {
        check_filter(kind, status)?;
        Ok(self.store.jobs_page(&JobFilter { kind, status }, page, per_page).await?)
    }

    /// Up to `limit` jobs (plus one, to learn whether more follow), newest first, after the job
    /// `after` (a [`StampedKey`]'s text; from the newest without one, or for a text that
    /// spells no key).
    pub async fn list_after(
        &self,
        kind: Option<&str>,
        status: Option<&str>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<JobRow>, JobError> {
        check_filter(kind, status)?;
        let after = after.and_then(StampedKey::parse).and_then(|key| Some((key.at, key.numeric_id()?)));
        Ok(self.store.jobs_after(&JobFilter { kind, status }, after, i64::from(limit) + 1).await?)
    }

    /// Cancels a queued job, or asks a running one to stop at its next page. Over the API
    /// (`by` a user) only the job's creator or an operator may; the command line may always.
    pub async fn cancel(&self, id: i64, by: Option<Viewer>) -> Result<JobRow, JobError> {
        if let Some(viewer) = by
            && !viewer.operator
        {
            let job = self.get(id).await?;
            if job.created_by != Some(viewer.user_id) {
                return Err(JobError::NotYours(id));
            }
        }
        let job = self.store.job_cancel(id).await?.ok_or(JobError::NotFound(id))?;
        match job.status.as_str() {
            "running" => {
                if let Some(flags) = self.running.lock().expect("running jobs").get(&id) {
                    flags.cancel.store(true, Ordering::SeqCst);
                    flags.stop_work.store(true, Ordering::SeqCst);
                }
                Ok(job)
            }
            // Cancelled now, or earlier: the same answer.
            "cancelled" => Ok(job),
            _ => Err(JobError::Ended { id, status: job.status }),
        }
    }
}

/// A 422 naming `kind` or `status` when the history is asked for one it has no name for.
fn check_filter(kind: Option<&str>, status: Option<&str>) -> Result<(), JobError> {
    if let Some(kind) = kind {
        JobKind::parse(kind)?;
    }
    if let Some(status) = status
        && !STATUSES.contains(&status)
    {
        return Err(invalid("status", format!("unknown status {status:?}; known: {}", STATUSES.join(", "))));
    }
    Ok(())
}
