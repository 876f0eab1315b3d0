-- Each list answer carries its set's record count. Counting it per request walked the whole
-- set: after `cargo xtask bench`'s sync (100,000 companies) Postgres counted with a sequential
-- scan of the table (about 130 MB) on every page. The count is now kept per set, by
-- statement-level triggers that add up each statement's inserted and deleted rows (one update
-- of the count per statement, not per row). A record never moves to another set (`entity` is
-- not updated), so updates leave the counts alone.
-- No instance may add or remove records between the count below and the triggers' creation
-- (a rolling deploy): they would be missed by both for good.
LOCK TABLE fieldreport_records IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE fieldreport_record_counts (
    entity TEXT PRIMARY KEY,
    records BIGINT NOT NULL
);

INSERT INTO fieldreport_record_counts (entity, records)
SELECT entity, COUNT(*) FROM fieldreport_records GROUP BY entity;

CREATE FUNCTION fieldreport_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fieldreport_record_counts AS c (entity, records)
    SELECT entity, COUNT(*) FROM inserted_records GROUP BY entity
    ON CONFLICT (entity) DO UPDATE SET records = c.records + EXCLUDED.records;
    RETURN NULL;
END
$$;

CREATE FUNCTION fieldreport_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE fieldreport_record_counts AS c SET records = c.records - d.records
    FROM (SELECT entity, COUNT(*) AS records FROM deleted_records GROUP BY entity) AS d
    WHERE c.entity = d.entity;
    RETURN NULL;
END
$$;

CREATE TRIGGER fieldreport_records_count_inserted
    AFTER INSERT ON fieldreport_records
    REFERENCING NEW TABLE AS inserted_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_count_inserted();

CREATE TRIGGER fieldreport_records_count_deleted
    AFTER DELETE ON fieldreport_records
    REFERENCING OLD TABLE AS deleted_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_count_deleted();

CREATE FUNCTION fieldreport_keep_entity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a field-report record cannot move to another set';
END
$$;

CREATE TRIGGER fieldreport_records_keep_entity
    BEFORE UPDATE OF entity ON fieldreport_records
    FOR EACH ROW WHEN (OLD.entity IS DISTINCT FROM NEW.entity)
    EXECUTE FUNCTION fieldreport_keep_entity();
