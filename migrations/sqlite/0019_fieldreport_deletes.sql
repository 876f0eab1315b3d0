-- Tombstones of field-report records deleted locally whose delete the upstream has not
-- confirmed yet: a delete made without forwarding (an ERP webhook) until `post` sends it, and a
-- forwarded delete while it is in flight or its outcome is unknown. A sync never brings back a
-- record that has one (docs/architecture.md, "Data rules"); the row goes once the upstream
-- confirmed the delete (or no longer has the record).
CREATE TABLE fieldreport_deletes (
    entity TEXT NOT NULL,
    record_id TEXT NOT NULL,
    deleted_at BIGINT NOT NULL,
    -- a push of the delete in progress (as fieldreport_records.push_claimed_until)
    push_claimed_until BIGINT,
    push_attempts INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (entity, record_id)
);
