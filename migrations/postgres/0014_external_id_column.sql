-- A record's `ExternalId` (a text or a number, as text) now has a column of its own, which the
-- service writes with the document. The index of migration 0008 parsed every document written
-- (`document::jsonb`) to find it: half of Postgres's time in a sync's inserts (`cargo xtask
-- bench --db postgres --scenario sync`, 100,000 companies). The service reads the field while
-- it reads the record anyway.
--
-- Every other writer (a statement run by hand, an instance of an earlier release during a
-- rolling deploy) has the column filled from the document by a trigger. Connections of this
-- release say that they write the column (`integration_service.writes_external_id`), and
-- their writes skip the trigger.
ALTER TABLE fieldreport_records ADD COLUMN external_id TEXT COLLATE "C";

CREATE FUNCTION fieldreport_external_id(document TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(value) IN ('string', 'number') THEN value #>> '{}' END
    FROM (SELECT document::jsonb -> 'ExternalId' AS value) AS field
$$;

CREATE FUNCTION fieldreport_fill_external_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.external_id := fieldreport_external_id(NEW.document);
    RETURN NEW;
END
$$;

CREATE TRIGGER fieldreport_records_fill_external_id
    BEFORE INSERT OR UPDATE OF document ON fieldreport_records
    FOR EACH ROW WHEN (current_setting('integration_service.writes_external_id', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION fieldreport_fill_external_id();

UPDATE fieldreport_records SET external_id = fieldreport_external_id(document)
WHERE document LIKE '%"ExternalId"%';

DROP INDEX fieldreport_records_external_id;
CREATE INDEX fieldreport_records_external_id ON fieldreport_records (entity, external_id)
    WHERE external_id IS NOT NULL;
