-- Idempotency keys of retried POSTs, and the record of every one-shot leasing flow.
CREATE TABLE idempotency_keys (
    user_id BIGINT NOT NULL,
    route TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status_code INTEGER,
    response_body TEXT,
    created_at BIGINT NOT NULL,
    completed_at BIGINT,
    PRIMARY KEY (user_id, route, idempotency_key)
);

CREATE TABLE leasing_flows (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    financing_id TEXT,
    error_code TEXT,
    message TEXT,
    started_at BIGINT NOT NULL,
    finished_at BIGINT
);

CREATE TABLE leasing_flow_steps (
    flow_id BIGINT NOT NULL REFERENCES leasing_flows(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL,
    detail TEXT,
    PRIMARY KEY (flow_id, position)
);
