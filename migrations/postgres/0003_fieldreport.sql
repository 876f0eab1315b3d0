-- The local mirror of the field-report system: each record as the whole JSON document.
CREATE TABLE fieldreport_records (
    entity TEXT NOT NULL,
    record_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    document TEXT NOT NULL,
    -- 'create' or 'update' when written without forwarding and not yet pushed
    pending_push TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (entity, record_id)
);

-- Per entity: the newest DateModified synced, and the lease that lets one sync run at a time
-- across instances.
CREATE TABLE fieldreport_sync_state (
    entity TEXT PRIMARY KEY,
    cursor_value TEXT,
    last_sync_at BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);
