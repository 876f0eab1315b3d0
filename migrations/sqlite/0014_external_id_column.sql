-- A record's `ExternalId` (a text or a number, as text) now has a column of its own, which the
-- service writes with the document: the expression index of migration 0008 read it out of
-- every document written, in Postgres by parsing the whole document (see the Postgres
-- migration of the same number). Here too the index is now on the column.
--
-- Every other writer (a statement run by hand) has the column filled from the document by
-- these triggers: after an insert that left it empty although the document has one, and
-- after an update of the document that left it as it was although the document's changed.
-- The service's own writes have it right already, and the conditions let them pass.
ALTER TABLE fieldreport_records ADD COLUMN external_id TEXT;

UPDATE fieldreport_records SET external_id = CAST(json_extract(document, '$.ExternalId') AS TEXT)
WHERE json_type(document, '$.ExternalId') IN ('text', 'integer', 'real');

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

DROP INDEX fieldreport_records_external_id;
CREATE INDEX fieldreport_records_external_id ON fieldreport_records (entity, external_id)
    WHERE external_id IS NOT NULL;
