-- Long work run as jobs (docs/operations.md, "Jobs and schedules"): one row per job, claimed
-- by the job runner of one instance with a lease (`lease_owner`, `lease_until`), renewed
-- while it runs; a running job whose lease ran out is taken over by another instance.
-- status: 'queued', 'running', 'succeeded', 'failed', 'cancelled'.
-- target: an entity set, a stage or an ERP model; '' means every target of the kind.
-- active_key: '<kind> <target>' while the job is queued or running, NULL once it ended: the
-- unique index lets one job of a kind and target be active at a time, across instances.
CREATE TABLE jobs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    active_key TEXT,
    cancel_requested BIGINT NOT NULL DEFAULT 0,
    scheduled BIGINT NOT NULL DEFAULT 0,
    progress_done BIGINT NOT NULL DEFAULT 0,
    progress_total BIGINT,
    progress_current TEXT,
    result TEXT,
    error TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    finished_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE UNIQUE INDEX jobs_active_key ON jobs (active_key);
CREATE INDEX jobs_created ON jobs (created_at, id);
CREATE INDEX jobs_kind_target_status ON jobs (kind, target, status, finished_at);

-- SCHEDULE's entries: when each kind and target is next due. The instance whose conditional
-- UPDATE moves `next_at` on enqueues that tick's job, so a tick enqueues once across instances.
CREATE TABLE job_schedule (
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    interval_ms BIGINT NOT NULL,
    next_at BIGINT NOT NULL,
    PRIMARY KEY (kind, target)
);
