//! The jobs routes: queue long work (a field-report sync, reconcile, setup or post, an ERP
//! setup or pull) and follow it by id, page the history, cancel. The work itself runs in the
//! job runner of one instance ([`crate::jobs`]); the tool routes that run it inside the
//! request stay as they are.

use dropshot::{HttpResponseAccepted, HttpResponseOk, Path, Query, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::paging::{Cursor, CursorParam, PageMeta, PageQuery};
use crate::auth::ability::Ability;
use crate::error::ApiError;
use crate::jobs::kind::JobKind;
use crate::store::jobs::JobRow;
use crate::vocabulary::key_page::StampedKey;
use crate::vocabulary::owner::Viewer;

/// Jobs per page at most.
const MAX_PER_PAGE: u32 = 100;

/// The kinds of job, as a schema (the body takes any text, so that an unknown kind is
/// answered 422 naming `kind`).
fn kind_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    let kinds: Vec<&str> = JobKind::ALL.iter().map(|k| k.name()).collect();
    let description =
        "The kind of job: what it runs (`fieldreport.*` on the field-report mirror, `erp.*` on the ERP mirror).";
    serde_json::from_value(json!({"type": "string", "enum": kinds, "description": description}))
        .expect("a valid schema")
}

fn status_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    let description = "A job's status: `queued`, then `running`, then `succeeded`, `failed` or `cancelled`.";
    serde_json::from_value(json!({"type": "string", "enum": crate::jobs::STATUSES, "description": description}))
        .expect("a valid schema")
}

/// A job to queue.
#[derive(Deserialize, JsonSchema)]
#[schemars(example = "JobCreate::example")]
pub struct JobCreate {
    /// What to run: `fieldreport.sync`, `fieldreport.reconcile` (a sync, then removing the
    /// local records the field-report system no longer has), `fieldreport.setup`,
    /// `fieldreport.post` (push the writes made without forwarding, every type), `erp.setup`
    /// (a full pull) or `erp.pull` (an incremental pull).
    #[schemars(schema_with = "kind_schema")]
    pub kind: String,
    /// What to run it on: an entity set (`costCenters` or `CostCenters`) for the
    /// `fieldreport.sync`, `.reconcile` and `.post` kinds, a stage (`1`, `2`, `3`) for
    /// `fieldreport.setup`, a model (`customer`) for the `erp` kinds. Absent or null: every
    /// target of the kind, one after the other.
    #[serde(default)]
    pub target: Option<String>,
}

impl JobCreate {
    fn example() -> Value {
        json!({"kind": "fieldreport.sync", "target": "companies"})
    }
}

/// How far a job got.
#[derive(Serialize, JsonSchema)]
pub struct JobProgress {
    /// Records handled so far: fetched by a sync or pull, handled by a post.
    pub done: i64,
    /// Records to handle, when known (a post: those pending in the sets begun so far).
    pub total: Option<i64>,
    /// The entity set or model being worked on.
    pub current: Option<String>,
}

/// A job.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "Job::example")]
pub struct Job {
    pub id: i64,
    #[schemars(schema_with = "kind_schema")]
    pub kind: String,
    /// The entity set (route name), stage or model; null: every target of the kind.
    pub target: Option<String>,
    /// `queued`, `running`, then `succeeded`, `failed` or `cancelled`.
    #[schemars(schema_with = "status_schema")]
    pub status: String,
    /// Queued by `SCHEDULE` rather than by a caller.
    pub scheduled: bool,
    /// The id of the user who queued it (null: `SCHEDULE` or the command line). Only they,
    /// or an operator, may cancel it.
    pub created_by: Option<i64>,
    /// A cancel was asked for: a running job stops at its next page.
    pub cancel_requested: bool,
    /// Recorded about every second while it runs.
    pub progress: JobProgress,
    /// When it ran to the end: what the matching tool route answers as `data` (e.g. the
    /// reports of `GET /api/v1/fieldreport/sync`), one entry per entity set or model.
    pub result: Option<Value>,
    /// Why it failed.
    pub error: Option<String>,
    /// How many times a runner started it (more than 1: taken over from a stopped instance,
    /// or resumed after a restart).
    pub attempts: i64,
    /// When it was queued (RFC 3339).
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl Job {
    fn example() -> Value {
        json!({
            "id": 42, "kind": "fieldreport.sync", "target": "companies", "status": "running",
            "scheduled": false, "created_by": 1, "cancel_requested": false,
            "progress": {"done": 1500, "total": null, "current": "companies"},
            "result": null, "error": null, "attempts": 1,
            "created_at": "2026-11-27T09:30:00.000Z", "started_at": "2026-11-27T09:30:00.412Z", "finished_at": null
        })
    }
}

fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

impl From<JobRow> for Job {
    fn from(row: JobRow) -> Job {
        Job {
            id: row.id,
            kind: row.kind,
            target: Some(row.target).filter(|t| !t.is_empty()),
            status: row.status,
            scheduled: row.scheduled,
            created_by: row.created_by,
            cancel_requested: row.cancel_requested,
            progress: JobProgress { done: row.progress.done, total: row.progress.total, current: row.progress.current },
            result: row.result.and_then(|text| serde_json::from_str(&text).ok()),
            error: row.error,
            attempts: row.attempts,
            created_at: timestamp(row.created_at),
            started_at: row.started_at.map(timestamp),
            finished_at: row.finished_at.map(timestamp),
        }
    }
}

/// One page of the history, newest first. Read by position (`page`, `per_page`) it has
/// `meta`, with the count; read by key (`after`, `limit`) it has `next_cursor` and `next`
/// while older jobs follow this page, and neither on the last page.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "JobPage::example")]
pub struct JobPage {
    pub data: Vec<Job>,
    /// Read by position: the paging and the count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<PageMeta>,
    /// Read by key: the cursor to pass as `after` for the next page, while jobs follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Read by key: the path and query that read the next page, while jobs follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl JobPage {
    fn example() -> Value {
        json!({
            "data": [{
                "id": 41, "kind": "erp.pull", "target": null, "status": "succeeded",
                "scheduled": true, "created_by": null, "cancel_requested": false,
                "progress": {"done": 120, "total": null, "current": "customer"},
                "result": [{"model": "customer", "pages": 1, "fetched": 120, "inserted": 3, "updated": 7,
                            "unchanged": 110, "removed": 0, "cursor": 1764235800000_i64, "errors": []}],
                "error": null, "attempts": 1,
                "created_at": "2026-11-27T09:00:00.002Z", "started_at": "2026-11-27T09:00:00.120Z",
                "finished_at": "2026-11-27T09:00:02.480Z"
            }],
            "meta": {"current_page": 1, "per_page": 20, "total": 1, "last_page": 1}
        })
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct JobPath {
    /// The job's id.
    pub id: i64,
}

#[derive(Deserialize, JsonSchema)]
pub struct JobQuery {
    /// Only jobs of this kind.
    #[serde(default)]
    #[schemars(schema_with = "kind_schema")]
    pub kind: Option<String>,
    /// Only jobs in this status.
    #[serde(default)]
    #[schemars(schema_with = "status_schema")]
    pub status: Option<String>,
    /// Read by key: the jobs older than this cursor (a `next_cursor` answered before); from
    /// the newest without it. With `after` or `limit` the page has no `meta` (no count) and
    /// costs the same at any depth.
    pub after: Option<CursorParam>,
    /// Read by key: jobs per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Read by position (the slower way: a page costs what it skips): page number, from 1
    /// (default 1). Ignored with `after` or `limit`.
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Read by position: jobs per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Queue a job
///
/// Queues long work and answers at once (202) with the job; follow it at
/// `GET /api/v1/jobs/{id}`. The job runner of one instance runs it (once across instances
/// sharing the database), recording its progress; a queued job survives a restart, and a
/// running one whose instance stopped is taken over. 409 `job_active` while a job of the same
/// kind and target is queued or running (the message names it); 422 on an unknown `kind` or
/// `target`. Besides `jobs`, the token needs the ability of the routes whose work the job does
/// (`fieldreport:tools` for `fieldreport.*`, `erp` for `erp.*`; 403 `missing_ability`
/// otherwise). Example: `{"kind": "erp.pull"}` pulls every ERP model incrementally.
#[dropshot::endpoint { method = POST, path = "/api/v1/jobs", tags = ["jobs"] }]
pub async fn jobs_create(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Jobs>,
    body: TypedBody<JobCreate>,
) -> Result<HttpResponseAccepted<Job>, ApiError> {
    let mut caller = token.caller(&rqctx).await?;
    let body = body.into_inner();
    // An unknown kind is left to `enqueue`'s 422.
    if let Ok(kind) = JobKind::parse(&body.kind) {
        caller = caller.allowed(ability_of(kind))?;
    }
    let job = rqctx.context().jobs.enqueue(&body.kind, body.target.as_deref(), Some(caller.user.id)).await?;
    Ok(HttpResponseAccepted(job.into()))
}

/// The ability of the routes whose work a job of `kind` does: queuing it needs that besides
/// `jobs`, or a token could have done through a job what its abilities refuse it directly.
fn ability_of(kind: JobKind) -> Ability {
    match kind {
        JobKind::FieldReportSync
        | JobKind::FieldReportReconcile
        | JobKind::FieldReportSetup
        | JobKind::FieldReportPost => Ability::FieldreportTools,
        JobKind::ErpSetup | JobKind::ErpPull | JobKind::ErpReconcile => Ability::Erp,
    }
}

/// One job
///
/// The job's status, progress (recorded about every second while it runs), result when it
/// succeeded, error when it failed, and times. 404 when there is no such job.
#[dropshot::endpoint { method = GET, path = "/api/v1/jobs/{id}", tags = ["jobs"] }]
pub async fn jobs_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Jobs>,
    path: Path<JobPath>,
) -> Result<HttpResponseOk<Job>, ApiError> {
    token.caller(&rqctx).await?;
    Ok(HttpResponseOk(rqctx.context().jobs.get(path.into_inner().id).await?.into()))
}

/// The job history
///
/// Jobs, newest first, optionally of one kind and in one status (e.g.
/// `?kind=fieldreport.sync&status=failed`). Read by key: `limit` (1 to 100, default 20) jobs
/// older than the cursor `after` (from the newest without it), answered with `next_cursor` and
/// the `next` link while older jobs follow, and no count; a page costs the same at any depth,
/// and a job queued meanwhile makes no other job skip or repeat. Read by position (the slower
/// way, kept for existing callers): page `page` of `per_page` (1 to 100, default 20) jobs, with
/// the count in `meta`. 422 on an unknown kind or status.
#[dropshot::endpoint { method = GET, path = "/api/v1/jobs", tags = ["jobs"] }]
pub async fn jobs_list(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Jobs>,
    query: Query<JobQuery>,
) -> Result<HttpResponseOk<JobPage>, ApiError> {
    token.caller(&rqctx).await?;
    let query = query.into_inner();
    let (kind, status) = (query.kind.as_deref(), query.status.as_deref());
    let paging = PageQuery { after: query.after, limit: query.limit, page: query.page, per_page: query.per_page };
    let jobs = &rqctx.context().jobs;
    let page = paging
        .read(
            20,
            MAX_PER_PAGE,
            rqctx.request.uri(),
            |after, limit| async move { jobs.list_after(kind, status, after.as_deref(), limit).await },
            |page, per_page| jobs.list(kind, status, page, per_page),
            |job| StampedKey::new(job.created_at, job.id).text(),
        )
        .await?;
    let data = page.rows.into_iter().map(Job::from).collect();
    Ok(HttpResponseOk(JobPage { data, meta: page.meta, next_cursor: page.next.cursor, next: page.next.link }))
}

/// Cancel a job
///
/// A queued job is cancelled at once; a running one stops at its next page (the answer shows
/// `cancel_requested`; its status becomes `cancelled` when it stopped). What it stored until
/// then stays, and a sync or pull run later resumes from its cursor. Cancelling a cancelled
/// job answers it again; 409 `job_ended` when it has already succeeded or failed. Only the
/// user who queued the job, or an operator, may cancel it (403 `not_job_owner` otherwise).
#[dropshot::endpoint { method = POST, path = "/api/v1/jobs/{id}/cancel", tags = ["jobs"] }]
pub async fn jobs_cancel(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Jobs>,
    path: Path<JobPath>,
) -> Result<HttpResponseOk<Job>, ApiError> {
    let caller = token.caller(&rqctx).await?;
    let by = Viewer { user_id: caller.user.id, operator: caller.user.operator };
    Ok(HttpResponseOk(rqctx.context().jobs.cancel(path.into_inner().id, Some(by)).await?.into()))
}
