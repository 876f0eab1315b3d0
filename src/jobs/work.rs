//! A job's work: the same service calls as the tool routes make, one entity set or model
//! after the other, telling the job's progress as they go. Cancellation reaches the work
//! through the cancellable field-report handle it is given: every sync, reconcile, push and
//! pull checks it at its page (or record) boundaries.

use std::sync::Mutex;

use serde_json::Value;

use super::kind::JobKind;
use crate::erp::pull::{PullKind, PullReport};
use crate::erp::{ErpError, ErpService, RecordError};
use crate::fieldreport::service::{FieldReportError, FieldReportService};
use crate::store::jobs::JobProgress;

/// How far the work got, shared with the runner's heartbeat that records it.
#[derive(Debug, Default)]
pub struct Progress(Mutex<JobProgress>);

impl Progress {
    pub fn snapshot(&self) -> JobProgress {
        self.0.lock().expect("progress").clone()
    }

    fn set(&self, done: u64, total: Option<u64>, current: &str) {
        let mut progress = self.0.lock().expect("progress");
        progress.done = i64::try_from(done).unwrap_or(i64::MAX);
        progress.total = total.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        progress.current = Some(current.to_string());
    }
}

/// What the work did: its reports (the `data` of the matching tool route), and why the job
/// counts as failed though it ran to the end (a model whose pull failed), if it does.
#[derive(Debug)]
pub struct Done {
    pub result: Value,
    pub failure: Option<String>,
}

/// Why the work ended early.
#[derive(Debug)]
pub enum Stopped {
    /// The job was cancelled, lost its lease, or the process is stopping.
    Interrupted,
    Failed(String),
}

impl From<FieldReportError> for Stopped {
    fn from(error: FieldReportError) -> Self {
        match error {
            FieldReportError::Interrupted => Stopped::Interrupted,
            other => Stopped::Failed(other.to_string()),
        }
    }
}

impl From<ErpError> for Stopped {
    fn from(error: ErpError) -> Self {
        match error {
            ErpError::FieldReport(error) => error.into(),
            other => Stopped::Failed(other.to_string()),
        }
    }
}

fn json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("a report serialises")
}

/// Runs the work of a job of `kind` for `target` (`''`: every target).
pub async fn run(
    kind: JobKind,
    target: &str,
    fieldreport: &FieldReportService,
    erp: &ErpService,
    progress: &Progress,
) -> Result<Done, Stopped> {
    let target = Some(target).filter(|t| !t.is_empty());
    match kind {
        JobKind::FieldReportSync | JobKind::FieldReportReconcile => {
            let entities = match target {
                Some(name) => vec![crate::fieldreport::service::entity_named(name)?],
                None => generated::fieldreport::ENTITIES.iter().collect(),
            };
            sync(fieldreport, entities, kind == JobKind::FieldReportReconcile, progress).await
        }
        JobKind::FieldReportSetup => {
            let entities = crate::fieldreport::stages::stage_entities(target)?;
            sync(fieldreport, entities, false, progress).await
        }
        JobKind::FieldReportPost => post(fieldreport, target, progress).await,
        JobKind::ErpSetup | JobKind::ErpPull => {
            let models = match target {
                Some(name) => vec![crate::erp::model_named(name)?],
                None => ErpService::all_models(),
            };
            let pull = if kind == JobKind::ErpSetup { PullKind::Full } else { PullKind::Incremental };
            self::pull(erp, models, &pull, progress).await
        }
        JobKind::ErpReconcile => {
            let models = match target {
                Some(name) => vec![crate::erp::model_named(name)?],
                None => erp.mirrored_models().await?,
            };
            self::pull(erp, models, &PullKind::Reconcile, progress).await
        }
    }
}

/// Syncs (and reconciles) entity sets in order; progress counts the records fetched.
async fn sync(
    service: &FieldReportService,
    entities: Vec<&'static generated::fieldreport::EntityInfo>,
    reconcile: bool,
    progress: &Progress,
) -> Result<Done, Stopped> {
    let mut reports = Vec::new();
    let mut before = 0;
    for info in entities {
        service.check_stop()?;
        progress.set(before, None, info.route);
        let tell =
            |report: &crate::fieldreport::sync::SyncReport| progress.set(before + report.fetched, None, info.route);
        let report = match reconcile {
            true => service.sync_and_reconcile(info, &tell).await?,
            false => service.sync(info, &tell).await?,
        };
        before += report.fetched;
        reports.push(report);
    }
    Ok(Done { result: json(reports), failure: None })
}

/// Pushes the writes of every type of one entity set (or of every stage); progress counts
/// the records handled, out of those pending in the sets begun so far.
async fn post(service: &FieldReportService, entity: Option<&str>, progress: &Progress) -> Result<Done, Stopped> {
    let entities = match entity {
        Some(name) => vec![crate::fieldreport::service::entity_named(name)?],
        None => crate::fieldreport::stages::stage_entities(None)?,
    };
    let mut reports = Vec::new();
    let mut before = 0;
    for info in entities {
        for kind in crate::fieldreport::push::push_kinds(None)? {
            service.check_stop()?;
            let tell = |report: &crate::fieldreport::push::PushReport, total: usize| {
                let done = report.pushed + report.recovered + report.skipped + report.failed;
                progress.set(before + done, Some(before + total as u64), info.route);
            };
            let report = service.push_with_progress(info, kind, &tell).await?;
            before += report.pushed + report.recovered + report.skipped + report.failed;
            reports.push(report);
        }
    }
    Ok(Done { result: json(reports), failure: None })
}

/// Pulls models in order; a model whose pull fails is reported in its entry (as the tool
/// routes do) and the others go on, but the job counts as failed. Progress counts the records
/// fetched.
async fn pull(
    erp: &ErpService,
    models: Vec<&'static generated::erp::ModelInfo>,
    kind: &PullKind,
    progress: &Progress,
) -> Result<Done, Stopped> {
    erp.client()?;
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    let mut before = 0;
    for info in models {
        progress.set(before, None, info.name);
        let report = match erp.pull(info, kind, &|n| progress.set(before + n, None, info.name)).await {
            Ok(report) => report,
            Err(error @ (ErpError::Store(_) | ErpError::FieldReport(FieldReportError::Interrupted))) => {
                return Err(error.into());
            }
            Err(error) => {
                failed.push(info.name);
                PullReport {
                    model: info.name.to_string(),
                    errors: vec![RecordError::new(info.name, None, error.to_string())],
                    ..Default::default()
                }
            }
        };
        before += report.fetched;
        reports.push(report);
    }
    let failure = (!failed.is_empty()).then(|| format!("the pull of {} failed", failed.join(", ")));
    Ok(Done { result: json(reports), failure })
}
