-- One index of the mirror serves both the statements on one record and the pages' order, as
-- on Postgres since migration 0016: a unique index on (entity, LENGTH(record_id), record_id)
-- replaces the primary key on (entity, record_id) and the page index of migration 0007 (the
-- same order). A record's id gives its length, so the new index allows no pair (entity,
-- record_id) twice, as the key did. Every statement on one record already names the id's
-- length (src/store/fieldreport.rs), so it finds the record by the new index.
--
-- Each record written now enters three B-trees instead of four (the table, this index and the
-- `ExternalId` index). In SQLite alone (Python's `sqlite3` under callgrind: 100,000 documents
-- shaped as the bench's companies, 2,000 a transaction) inserting into the mirror took 3,677
-- million instructions in the old shape and 2,915 million in this one (-21%); into a table of
-- two columns (id and document), 1,503 million.
--
-- SQLite cannot drop a primary key: the table is copied into one without it (the rows keep
-- their rowids and order), its indexes and triggers made again as migrations 0006, 0010 and
-- 0014 made them, in this migration's transaction: 0.6 s for 100,000 companies on the project
-- machine (README, "Upgrading").
CREATE TABLE fieldreport_records_rebuilt (
    entity TEXT NOT NULL,
    record_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    document TEXT NOT NULL,
    -- 'create' or 'update' when written without forwarding and not yet pushed
    pending_push TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    push_claimed_until BIGINT,
    push_attempts INTEGER NOT NULL DEFAULT 0,
    external_id TEXT
);

INSERT INTO fieldreport_records_rebuilt
    (rowid, entity, record_id, version, document, pending_push, created_at, updated_at,
     push_claimed_until, push_attempts, external_id)
SELECT rowid, entity, record_id, version, document, pending_push, created_at, updated_at,
       push_claimed_until, push_attempts, external_id
FROM fieldreport_records ORDER BY rowid;

-- Dropping the table drops its indexes and triggers; the record counts stay as they are (the
-- same records are copied).
DROP TABLE fieldreport_records;
ALTER TABLE fieldreport_records_rebuilt RENAME TO fieldreport_records;

CREATE UNIQUE INDEX fieldreport_records_key ON fieldreport_records (entity, LENGTH(record_id), record_id);
CREATE INDEX fieldreport_records_pending_push ON fieldreport_records (entity, pending_push)
    WHERE pending_push IS NOT NULL;
CREATE INDEX fieldreport_records_external_id ON fieldreport_records (entity, external_id)
    WHERE external_id IS NOT NULL;

CREATE TRIGGER fieldreport_records_count_inserted AFTER INSERT ON fieldreport_records
BEGIN
    INSERT INTO fieldreport_record_counts (entity, records) VALUES (NEW.entity, 1)
    ON CONFLICT (entity) DO UPDATE SET records = records + 1;
END;

CREATE TRIGGER fieldreport_records_count_deleted AFTER DELETE ON fieldreport_records
BEGIN
    UPDATE fieldreport_record_counts SET records = records - 1 WHERE entity = OLD.entity;
END;

CREATE TRIGGER fieldreport_records_keep_entity BEFORE UPDATE OF entity ON fieldreport_records
WHEN OLD.entity IS NOT NEW.entity
BEGIN
    SELECT RAISE(ABORT, 'a field-report record cannot move to another set');
END;

CREATE TRIGGER fieldreport_records_fill_external_id_inserted AFTER INSERT ON fieldreport_records
WHEN NEW.external_id IS NULL AND json_type(NEW.document, '$.ExternalId') IN ('text', 'integer', 'real')
BEGIN
    UPDATE fieldreport_records SET external_id = CAST(json_extract(NEW.document, '$.ExternalId') AS TEXT)
    WHERE rowid = NEW.rowid;
END;

CREATE TRIGGER fieldreport_records_fill_external_id_updated AFTER UPDATE OF document ON fieldreport_records
WHEN NEW.external_id IS OLD.external_id
 AND NEW.external_id IS NOT (CASE WHEN json_type(NEW.document, '$.ExternalId') IN ('text', 'integer', 'real')
                                  THEN CAST(json_extract(NEW.document, '$.ExternalId') AS TEXT) END)
BEGIN
    UPDATE fieldreport_records
    SET external_id = CASE WHEN json_type(NEW.document, '$.ExternalId') IN ('text', 'integer', 'real')
                           THEN CAST(json_extract(NEW.document, '$.ExternalId') AS TEXT) END
    WHERE rowid = NEW.rowid;
END;
