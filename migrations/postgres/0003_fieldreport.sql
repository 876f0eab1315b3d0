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
