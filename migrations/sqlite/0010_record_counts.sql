-- Each list answer carries its set's record count. Counting it per request walked the whole
-- set's index entries on every page (100,000 after `cargo xtask bench`'s sync). The count is
-- now kept per set by triggers on insert and delete. A record never moves to another set
-- (`entity` is not updated), so updates leave the counts alone.
CREATE TABLE fieldreport_record_counts (
    entity TEXT PRIMARY KEY,
    records INTEGER NOT NULL
);

INSERT INTO fieldreport_record_counts (entity, records)
SELECT entity, COUNT(*) FROM fieldreport_records GROUP BY entity;

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
