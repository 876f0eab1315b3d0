//! The `jobs` and `job_schedule` tables: long work (a sync, a setup, a post, a pull) queued,
//! claimed by one instance's job runner with a lease, its progress and outcome; and when each
//! entry of `SCHEDULE` is next due.
//!
//! One job of a kind and target is active (queued or running) at a time: `active_key` is set
//! while it is and unique, so the database refuses a second one whichever instance asks.

use crate::store::columns::IntBool;
use crate::store::lease::DueClaim;
use crate::store::rates::{Rated, rate_reached_on};
use crate::store::{Dialect, Store, StoreError, now_ms};

/// One job as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub kind: String,
    /// `''` for every target of the kind.
    pub target: String,
    pub status: String,
    #[sqlx(try_from = "IntBool")]
    pub cancel_requested: bool,
    /// Enqueued by `SCHEDULE` rather than by a caller.
    #[sqlx(try_from = "IntBool")]
    pub scheduled: bool,
    /// The user who queued it (none: a schedule or the command line).
    pub created_by: Option<i64>,
    #[sqlx(flatten)]
    pub progress: JobProgress,
    /// The work's report, as JSON text.
    pub result: Option<String>,
    pub error: Option<String>,
    /// How many times a runner claimed it (more than one: taken over or resumed).
    pub attempts: i64,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// How far a running job got.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct JobProgress {
    #[sqlx(rename = "progress_done")]
    pub done: i64,
    #[sqlx(rename = "progress_total")]
    pub total: Option<i64>,
    /// What it works on now: an entity set or a model.
    #[sqlx(rename = "progress_current")]
    pub current: Option<String>,
}

/// A page of the history.
#[derive(Debug, Clone, Default)]
pub struct JobFilter<'a> {
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
}

const COLUMNS: &str = "id, kind, target, status, cancel_requested, scheduled, progress_done, progress_total, \
     progress_current, result, error, attempts, created_at, started_at, finished_at, created_by";

/// What one user may have of jobs (`JOBS_ACTIVE_PER_USER`, `JOBS_PER_MINUTE_PER_USER`).
#[derive(Debug, Clone, Copy)]
pub struct UserJobBounds {
    pub active: u64,
    pub per_minute: u64,
}

/// What became of a job a user queues.
#[derive(Debug)]
pub enum Enqueued {
    Queued(JobRow),
    /// One of its kind and target is queued or running: this one.
    Active(JobRow),
    TooManyActive,
    TooFast {
        retry_after_seconds: u64,
    },
}

/// Inserts a queued job: $1 kind, $2 target, $3 active key, $4 scheduled, $5 now, $6 creator.
fn insert_job() -> sqlx::AssertSqlSafe<String> {
    sql!(
        "INSERT INTO jobs (kind, target, status, active_key, scheduled, created_at, created_by) \
         VALUES ($1, $2, 'queued', $3, $4, $5, $6) RETURNING {COLUMNS}"
    )
}

fn active_key(kind: &str, target: &str) -> String {
    format!("{kind} {target}")
}

/// A queued job, or a running one whose runner stopped renewing its lease ($1: now). Taken
/// over first are those whose runner died; then creators take turns: a queued job goes by how
/// many jobs of its creator run or wait before it (a user's first job before anyone's second),
/// then by age. So one user's many queued jobs delay another user's next job by at most one
/// job's run. Schedules and the command line (no creator) count as one creator.
const CLAIMABLE: &str = "(status = 'queued' OR (status = 'running' AND lease_until < $1)) \
     ORDER BY CASE WHEN status = 'running' THEN 0 ELSE 1 END, \
     (SELECT COUNT(*) FROM jobs o WHERE COALESCE(o.created_by, -1) = COALESCE(jobs.created_by, -1) \
      AND (o.status = 'running' OR (o.status = 'queued' AND (o.created_at < jobs.created_at \
      OR (o.created_at = jobs.created_at AND o.id < jobs.id))))), \
     created_at, id LIMIT 1";

impl Store {
    /// Queues a job; `Err` with the active job when one of the same kind and target is queued
    /// or running.
    pub async fn job_enqueue(
        &self,
        kind: &str,
        target: &str,
        scheduled: bool,
        created_by: Option<i64>,
    ) -> Result<Result<JobRow, JobRow>, StoreError> {
        let key = active_key(kind, target);
        // The active job may end between the refused insert and the read: then try again.
        for _ in 0..3 {
            let _turn = self.write_turn().await?;
            let inserted = sqlx::query_as::<_, JobRow>(insert_job())
                .bind(kind)
                .bind(target)
                .bind(&key)
                .bind(i64::from(scheduled))
                .bind(now_ms())
                .bind(created_by)
                .fetch_one(self.pool())
                .await;
            drop(_turn);
            match inserted {
                Ok(job) => return Ok(Ok(job)),
                Err(error) => match StoreError::from(error) {
                    StoreError::Duplicate(_) => {
                        if let Some(active) = self.job_active(kind, target).await? {
                            return Ok(Err(active));
                        }
                    }
                    other => return Err(other),
                },
            }
        }
        Err(StoreError::Query(format!("the active job of {key} kept changing")))
    }

    /// As [`Store::job_enqueue`], for a job `user_id` queues within the user's bounds: at most
    /// `bounds.active` jobs queued or running, at most `bounds.per_minute` queued a minute.
    /// Counted and inserted in one transaction that holds the user ([`Store::hold_user`]):
    /// jobs queued at once are counted one after the other.
    pub async fn job_enqueue_within(
        &self,
        kind: &str,
        target: &str,
        user_id: i64,
        bounds: UserJobBounds,
    ) -> Result<Enqueued, StoreError> {
        let key = active_key(kind, target);
        // The active job may end between the refused insert and the read: then try again.
        for _ in 0..3 {
            let mut tx = self.write_transaction().await?;
            self.hold_user(&mut tx, user_id).await?;
            let active: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE created_by = $1 AND active_key IS NOT NULL")
                    .bind(user_id)
                    .fetch_one(&mut *tx)
                    .await?;
            if active.max(0) as u64 >= bounds.active {
                return Ok(Enqueued::TooManyActive);
            }
            if let Some(seconds) = rate_reached_on(&mut tx, Rated::Jobs, user_id, bounds.per_minute).await? {
                return Ok(Enqueued::TooFast { retry_after_seconds: seconds });
            }
            let inserted = sqlx::query_as::<_, JobRow>(insert_job())
                .bind(kind)
                .bind(target)
                .bind(&key)
                .bind(0_i64)
                .bind(now_ms())
                .bind(Some(user_id))
                .fetch_one(&mut *tx)
                .await;
            match inserted {
                Ok(job) => {
                    tx.commit().await?;
                    return Ok(Enqueued::Queued(job));
                }
                Err(error) => match StoreError::from(error) {
                    StoreError::Duplicate(_) => {
                        // Ended (rolled back) first: on SQLite it holds the write turn.
                        drop(tx);
                        if let Some(active) = self.job_active(kind, target).await? {
                            return Ok(Enqueued::Active(active));
                        }
                    }
                    other => return Err(other),
                },
            }
        }
        Err(StoreError::Query(format!("the active job of {key} kept changing")))
    }

    /// How many jobs a user has queued or running.
    pub async fn jobs_active_of(&self, user_id: i64) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE created_by = $1 AND active_key IS NOT NULL")
            .bind(user_id)
            .fetch_one(self.pool())
            .await?;
        Ok(n.max(0) as u64)
    }

    /// The queued or running job of a kind and target.
    pub async fn job_active(&self, kind: &str, target: &str) -> Result<Option<JobRow>, StoreError> {
        Ok(sqlx::query_as::<_, JobRow>(sql!("SELECT {COLUMNS} FROM jobs WHERE active_key = $1"))
            .bind(active_key(kind, target))
            .fetch_optional(self.pool())
            .await?)
    }

    pub async fn job(&self, id: i64) -> Result<Option<JobRow>, StoreError> {
        Ok(sqlx::query_as::<_, JobRow>(sql!("SELECT {COLUMNS} FROM jobs WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// A page of the history, newest first, and how many jobs match in all.
    pub async fn jobs_page(
        &self,
        filter: &JobFilter<'_>,
        page: u32,
        per_page: u32,
    ) -> Result<(Vec<JobRow>, i64), StoreError> {
        // Unset filters compare a bound NULL: one statement for every combination.
        let condition = "($1 IS NULL OR kind = $1) AND ($2 IS NULL OR status = $2)";
        let total: i64 = sqlx::query_scalar(sql!("SELECT COUNT(*) FROM jobs WHERE {condition}"))
            .bind(filter.kind)
            .bind(filter.status)
            .fetch_one(self.pool())
            .await?;
        let jobs = sqlx::query_as::<_, JobRow>(sql!(
            "SELECT {COLUMNS} FROM jobs WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
        ))
        .bind(filter.kind)
        .bind(filter.status)
        .bind(i64::from(per_page))
        .bind(i64::from(page.saturating_sub(1)) * i64::from(per_page))
        .fetch_all(self.pool())
        .await?;
        Ok((jobs, total))
    }

    /// Up to `limit` jobs of the history, newest first, after the job keyed `(created_at, id)`
    /// (from the newest without one): a walk of `jobs_created` from the key, whatever its depth.
    pub async fn jobs_after(
        &self,
        filter: &JobFilter<'_>,
        after: Option<(i64, i64)>,
        limit: i64,
    ) -> Result<Vec<JobRow>, StoreError> {
        let condition = "($1 IS NULL OR kind = $1) AND ($2 IS NULL OR status = $2)";
        let jobs = match after {
            None => {
                sqlx::query_as::<_, JobRow>(sql!(
                    "SELECT {COLUMNS} FROM jobs WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT $3"
                ))
                .bind(filter.kind)
                .bind(filter.status)
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
            Some((created_at, id)) => {
                sqlx::query_as::<_, JobRow>(sql!(
                    "SELECT {COLUMNS} FROM jobs WHERE {condition} AND (created_at, id) < ($3, $4) \
                     ORDER BY created_at DESC, id DESC LIMIT $5"
                ))
                .bind(filter.kind)
                .bind(filter.status)
                .bind(created_at)
                .bind(id)
                .bind(limit)
                .fetch_all(self.pool())
                .await?
            }
        };
        Ok(jobs)
    }

    /// Cancels a queued job at once, and asks a running one to stop at its next page; a job
    /// that ended is left as it is. `None` when there is no such job.
    pub async fn job_cancel(&self, id: i64) -> Result<Option<JobRow>, StoreError> {
        let now = now_ms();
        {
            let _turn = self.write_turn().await?;
            sqlx::query(
                "UPDATE jobs SET status = 'cancelled', active_key = NULL, finished_at = $1, cancel_requested = 1 \
                 WHERE id = $2 AND status = 'queued'",
            )
            .bind(now)
            .bind(id)
            .execute(self.pool())
            .await?;
            sqlx::query("UPDATE jobs SET cancel_requested = 1 WHERE id = $1 AND status = 'running'")
                .bind(id)
                .execute(self.pool())
                .await?;
        }
        self.job(id).await
    }

    /// Claims the oldest queued job (or a running one whose lease ran out) for `owner` until
    /// `until`. On Postgres the row is picked with `FOR UPDATE SKIP LOCKED`, so instances
    /// claiming together take different jobs; on SQLite the statement runs in the write turn.
    pub async fn job_claim(&self, owner: &str, until: i64) -> Result<Option<JobRow>, StoreError> {
        let set = "status = 'running', lease_owner = $2, lease_until = $3, attempts = attempts + 1, \
                   started_at = COALESCE(started_at, $1), progress_done = 0, progress_total = NULL, \
                   progress_current = NULL";
        let claim = DueClaim { from: "jobs", key: "id", due: CLAIMABLE, set, returning: COLUMNS };
        let statement = claim.statement(self.dialect());
        let _turn = self.write_turn().await?;
        Ok(sqlx::query_as::<_, JobRow>(statement)
            .bind(now_ms())
            .bind(owner)
            .bind(until)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Renews the lease of a running job and records its progress. `None` when `owner` no
    /// longer holds it (another instance took it over); else whether a cancel was asked for.
    pub async fn job_heartbeat(
        &self,
        id: i64,
        owner: &str,
        until: i64,
        progress: &JobProgress,
    ) -> Result<Option<bool>, StoreError> {
        let _turn = self.write_turn().await?;
        let cancel_requested: Option<IntBool> = sqlx::query_scalar(
            "UPDATE jobs SET lease_until = $1, progress_done = $2, progress_total = $3, progress_current = $4 \
             WHERE id = $5 AND lease_owner = $6 AND status = 'running' RETURNING cancel_requested",
        )
        .bind(until)
        .bind(progress.done)
        .bind(progress.total)
        .bind(progress.current.as_deref())
        .bind(id)
        .bind(owner)
        .fetch_optional(self.pool())
        .await?;
        Ok(cancel_requested.map(bool::from))
    }

    /// Records how a job held by `owner` ended (`succeeded`, `failed` or `cancelled`); false
    /// when it was no longer held.
    pub async fn job_finish(
        &self,
        id: i64,
        owner: &str,
        status: &str,
        result: Option<&str>,
        error: Option<&str>,
        progress: &JobProgress,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await?;
        let done = sqlx::query(
            "UPDATE jobs SET status = $1, result = $2, error = $3, finished_at = $4, active_key = NULL, \
             lease_owner = NULL, lease_until = NULL, progress_done = $5, progress_total = $6, progress_current = NULL \
             WHERE id = $7 AND lease_owner = $8 AND status = 'running'",
        )
        .bind(status)
        .bind(result)
        .bind(error)
        .bind(now_ms())
        .bind(progress.done)
        .bind(progress.total)
        .bind(id)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Hands a running job back to the queue (its instance is stopping): it runs again after
    /// a restart, or on another instance.
    pub async fn job_release(&self, id: i64, owner: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL \
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest success per kind and target (epoch ms), for the metrics.
    pub async fn job_last_successes(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT kind, target, MAX(finished_at) AS at FROM jobs WHERE status = 'succeeded' GROUP BY kind, target",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Adds a `SCHEDULE` entry (first due at `first_at`) or brings a known one to this
    /// interval: when the interval changed, it is next due no later than one new interval
    /// from now.
    pub async fn schedule_entry(
        &self,
        kind: &str,
        target: &str,
        interval_ms: i64,
        first_at: i64,
    ) -> Result<(), StoreError> {
        let least = match self.dialect() {
            Dialect::Postgres => "LEAST",
            Dialect::Sqlite => "MIN",
        };
        let _turn = self.write_turn().await?;
        sqlx::query(
            "INSERT INTO job_schedule (kind, target, interval_ms, next_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (kind, target) DO NOTHING",
        )
        .bind(kind)
        .bind(target)
        .bind(interval_ms)
        .bind(first_at)
        .execute(self.pool())
        .await?;
        sqlx::query(sql!(
            "UPDATE job_schedule SET interval_ms = $1, next_at = {least}(next_at, $2) \
             WHERE kind = $3 AND target = $4 AND interval_ms <> $1"
        ))
        .bind(interval_ms)
        .bind(now_ms().saturating_add(interval_ms))
        .bind(kind)
        .bind(target)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Takes the tick of an entry that is due (moving it one interval on): true for the one
    /// caller, of any instance, whose update moved it.
    pub async fn schedule_take_tick(&self, kind: &str, target: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let _turn = self.write_turn().await?;
        let taken = sqlx::query(
            "UPDATE job_schedule SET next_at = $1 + interval_ms WHERE kind = $2 AND target = $3 AND next_at <= $1",
        )
        .bind(now)
        .bind(kind)
        .bind(target)
        .execute(self.pool())
        .await?;
        Ok(taken.rows_affected() == 1)
    }
}

#[cfg(test)]
mod tests;
