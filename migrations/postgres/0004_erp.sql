-- The local mirror of the ERP: each record as the whole JSON document, keyed by model and id.
-- `version` is the ERP's version (a number sent as a string); the mirror keeps the highest.
-- `pending_attributes`: JSON array of custom attribute definition ids changed locally and not
-- yet pushed back to the ERP.
CREATE TABLE erp_records (
    model TEXT NOT NULL,
    record_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    last_modified BIGINT NOT NULL,
    document TEXT NOT NULL,
    pending_attributes TEXT,
    pulled_at BIGINT NOT NULL,
    PRIMARY KEY (model, record_id)
);

-- Per model: the newest lastModifiedDate pulled (the cursor of incremental pulls), when it was
-- last pulled, and the lease that lets one pull of a model run at a time across instances.
CREATE TABLE erp_pull_state (
    model TEXT PRIMARY KEY,
    cursor_value BIGINT,
    last_pull_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);

-- Webhook calls as received, stored before they are acknowledged, processed by a worker.
-- state: 'pending' (to process at next_attempt_at), 'done', 'failed' (gave up).
CREATE TABLE erp_webhook_inbox (
    id BIGSERIAL PRIMARY KEY,
    received_at BIGINT NOT NULL,
    entity_name TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    last_error TEXT,
    outcome TEXT,
    processed_at BIGINT
);
CREATE INDEX erp_webhook_inbox_due ON erp_webhook_inbox (state, next_attempt_at);
