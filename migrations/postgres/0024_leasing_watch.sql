-- The leasing state watcher (docs/reliability.md, "Leasing state events"): the financing
-- requests the service watches, the subscriptions told of their state changes, the outbox of
-- events and one delivery per event and subscription.

-- A subscription. `secret` (`whsec_<base64>`) signs every delivery, so it is kept as it is
-- (a hash could not sign); it is shown once, when created or rotated, and never logged.
-- After a rotation `previous_secret` signs alongside it until `previous_secret_until`.
-- `events`: the event types it wants, space separated. `failing_since`: the first failed
-- attempt since the last success; `disabled_at`: set after five days of failures.
CREATE TABLE leasing_subscriptions (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    description TEXT,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_until BIGINT,
    created_at BIGINT NOT NULL,
    failing_since BIGINT,
    disabled_at BIGINT
);

-- A watched financing request: its last observed state (and when it was read), when it is
-- next read (NULL once terminal), how many reads failed in a row. A poller claims due rows
-- with a lease (`lease_owner`, `lease_until`), as the job runner claims jobs.
CREATE TABLE leasing_watches (
    financing_id TEXT PRIMARY KEY,
    request_id TEXT,
    state TEXT NOT NULL,
    observed_at BIGINT NOT NULL,
    terminal BIGINT NOT NULL DEFAULT 0,
    next_poll_at BIGINT,
    failures BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX leasing_watches_due ON leasing_watches (next_poll_at);

-- The outbox: one row per observed change, written in the transaction that records the new
-- state. `id` is the `webhook-id` of every delivery of it; `seq` orders events.
CREATE TABLE leasing_events (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    financing_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- One event to one subscription. status: 'pending', 'delivered', 'failed'. A pending delivery
-- is sent once no older pending delivery of the same subscription and financing request is
-- left (order per request), at `next_attempt_at`, claimed with a lease.
CREATE TABLE leasing_deliveries (
    id BIGSERIAL PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    event_seq BIGINT NOT NULL,
    financing_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_status_code BIGINT,
    last_error TEXT,
    next_attempt_at BIGINT,
    created_at BIGINT NOT NULL,
    last_attempt_at BIGINT,
    finished_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX leasing_deliveries_due ON leasing_deliveries (status, next_attempt_at);
CREATE INDEX leasing_deliveries_order ON leasing_deliveries (subscription_id, financing_id, status, id);
