-- The change feed of both mirrors (docs/architecture.md, "The change feed"): a consumer that
-- copied a set follows what changed in it since, in the order it was stored. Every write of a
-- record's document numbers the record anew in its set (`change_seq`); every removal leaves a
-- numbered tombstone in `mirror_removals`, kept `RETAIN_FEED_REMOVALS_DAYS` (the janitor
-- prunes them and records the newest number pruned in `expired_through`: a cursor before it is
-- answered 410 `cursor_expired`). The numbers of a set come from its row in `mirror_feed`,
-- taken in the writing transaction: SQLite commits one transaction at a time, so the numbers
-- are in commit order and a reader never sees a number after one not yet committed.
--
-- A sync's writer numbers its batches itself (its connection runs without triggers: see
-- src/store/engine/sqlite_sync_writes.rs); the triggers below number every other write.
CREATE TABLE mirror_feed (
    mirror TEXT NOT NULL,
    entity TEXT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0,
    expired_through BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (mirror, entity)
);

CREATE TABLE mirror_removals (
    mirror TEXT NOT NULL,
    entity TEXT NOT NULL,
    change_seq BIGINT NOT NULL,
    record_id TEXT NOT NULL,
    removed_at BIGINT NOT NULL,
    PRIMARY KEY (mirror, entity, change_seq)
);
CREATE INDEX mirror_removals_removed_at ON mirror_removals (removed_at);

-- The records already stored are numbered in the order they were stored (their rowids).
ALTER TABLE fieldreport_records ADD COLUMN change_seq BIGINT;
UPDATE fieldreport_records SET change_seq = rowid;
INSERT INTO mirror_feed (mirror, entity, last_seq)
SELECT 'fieldreport', entity, MAX(change_seq) FROM fieldreport_records GROUP BY entity;
CREATE INDEX fieldreport_records_changes ON fieldreport_records (entity, change_seq);

ALTER TABLE erp_records ADD COLUMN change_seq BIGINT;
UPDATE erp_records SET change_seq = rowid;
INSERT INTO mirror_feed (mirror, entity, last_seq)
SELECT 'erp', model, MAX(change_seq) FROM erp_records GROUP BY model;
CREATE INDEX erp_records_changes ON erp_records (model, change_seq);

CREATE TRIGGER fieldreport_records_feed_inserted AFTER INSERT ON fieldreport_records
WHEN NEW.change_seq IS NULL
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('fieldreport', NEW.entity, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    UPDATE fieldreport_records
        SET change_seq = (SELECT last_seq FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = NEW.entity)
        WHERE rowid = NEW.rowid;
END;

CREATE TRIGGER fieldreport_records_feed_updated AFTER UPDATE OF document, record_id ON fieldreport_records
WHEN NEW.change_seq IS OLD.change_seq
    AND (NEW.document IS NOT OLD.document OR NEW.record_id IS NOT OLD.record_id)
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('fieldreport', NEW.entity, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    UPDATE fieldreport_records
        SET change_seq = (SELECT last_seq FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = NEW.entity)
        WHERE rowid = NEW.rowid;
END;

-- A record removed, or renamed (a push gives a record created here the upstream's id): its
-- former id leaves the feed's consumers' copies.
CREATE TRIGGER fieldreport_records_feed_deleted AFTER DELETE ON fieldreport_records
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('fieldreport', OLD.entity, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    SELECT 'fieldreport', OLD.entity, last_seq, OLD.record_id,
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = OLD.entity;
END;

CREATE TRIGGER fieldreport_records_feed_renamed AFTER UPDATE OF record_id ON fieldreport_records
WHEN NEW.record_id IS NOT OLD.record_id
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('fieldreport', OLD.entity, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    SELECT 'fieldreport', OLD.entity, last_seq, OLD.record_id,
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = OLD.entity;
END;

CREATE TRIGGER erp_records_feed_inserted AFTER INSERT ON erp_records
WHEN NEW.change_seq IS NULL
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('erp', NEW.model, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    UPDATE erp_records
        SET change_seq = (SELECT last_seq FROM mirror_feed WHERE mirror = 'erp' AND entity = NEW.model)
        WHERE rowid = NEW.rowid;
END;

CREATE TRIGGER erp_records_feed_updated AFTER UPDATE OF document ON erp_records
WHEN NEW.change_seq IS OLD.change_seq AND NEW.document IS NOT OLD.document
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('erp', NEW.model, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    UPDATE erp_records
        SET change_seq = (SELECT last_seq FROM mirror_feed WHERE mirror = 'erp' AND entity = NEW.model)
        WHERE rowid = NEW.rowid;
END;

CREATE TRIGGER erp_records_feed_deleted AFTER DELETE ON erp_records
BEGIN
    INSERT INTO mirror_feed (mirror, entity, last_seq) VALUES ('erp', OLD.model, 1)
        ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = last_seq + 1;
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    SELECT 'erp', OLD.model, last_seq, OLD.record_id,
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM mirror_feed WHERE mirror = 'erp' AND entity = OLD.model;
END;
