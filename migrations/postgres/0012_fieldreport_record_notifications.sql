-- Every instance on Postgres keeps recently read field-report records and pages in memory
-- (src/store/record_cache.rs) and must forget them as soon as the mirror changes anywhere: a
-- sync, a write, a push, or a statement run by hand. Each statement that inserts, updates or
-- deletes records sends, when its transaction commits, `<entity> <record id>` for each record
-- it touched (forget that record and its set's pages), or, past 16 records, `<entity>` for
-- each set it touched (forget the set); a TRUNCATE sends `*` (forget everything). An update
-- sends the record's id from before (a push may give a record the upstream's id).
--
-- The service's own connections (`integration_service.notifies_changes` set on each) are
-- skipped: the service notifies in a statement of its own after each commit. A transaction
-- that notifies holds a cluster-wide lock from its commit until its commit record is flushed
-- (that keeps notifications in commit order), so mirror writes that notified from here were
-- committed one at a time: the webhook worker's rate halved in `cargo xtask bench`.
CREATE FUNCTION fieldreport_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('integration_service.notifies_changes', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF (SELECT COUNT(*) FROM (SELECT 1 FROM changed_records LIMIT 17) AS touched) <= 16 THEN
        -- A notification's payload must stay under 8000 bytes: a record with a longer id
        -- than this makes its whole set forgotten.
        PERFORM pg_notify('fieldreport_records_changed',
                          CASE WHEN octet_length(record_id) <= 1000 THEN entity || ' ' || record_id ELSE entity END)
        FROM changed_records;
    ELSE
        PERFORM pg_notify('fieldreport_records_changed', entity)
        FROM (SELECT DISTINCT entity FROM changed_records) AS sets;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION fieldreport_notify_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The service never truncates the mirror: this is someone's statement, from any session.
    PERFORM pg_notify('fieldreport_records_changed', '*');
    RETURN NULL;
END
$$;

-- A trigger with a transition table serves one event only.
CREATE TRIGGER fieldreport_records_notify_inserted
    AFTER INSERT ON fieldreport_records
    REFERENCING NEW TABLE AS changed_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_notify_changed();

CREATE TRIGGER fieldreport_records_notify_updated
    AFTER UPDATE ON fieldreport_records
    REFERENCING OLD TABLE AS changed_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_notify_changed();

CREATE TRIGGER fieldreport_records_notify_deleted
    AFTER DELETE ON fieldreport_records
    REFERENCING OLD TABLE AS changed_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_notify_changed();

CREATE TRIGGER fieldreport_records_notify_truncated
    AFTER TRUNCATE ON fieldreport_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_notify_truncated();
