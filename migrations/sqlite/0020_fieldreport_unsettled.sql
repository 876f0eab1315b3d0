-- Forwarded field-report writes whose outcome is unknown: the upstream gave no definite answer
-- and could not be asked whether it applied the write. The next write to the record (an
-- update: by `record_id`; a create: by its `ExternalId`) reads the upstream first and settles
-- it; a completed sync of the set settles the update marks made before it started
-- (docs/architecture.md, "Data rules").
CREATE TABLE fieldreport_unsettled (
    entity TEXT NOT NULL,
    -- the record's Id (an update), or '' (a create, known by its ExternalId only)
    record_id TEXT NOT NULL,
    external_id TEXT NOT NULL,
    since BIGINT NOT NULL,
    PRIMARY KEY (entity, record_id, external_id)
);
