-- The top-level fields that the local writes of a record pending as an update changed since its
-- last push, as a JSON array of their names, gathered across those writes: `post` sends only
-- these over the field-report system's current record, so that a field another client changed
-- there meanwhile stays as it is there (sending the whole stored document put back every field
-- as last synced). NULL for a record not pending, for a pending create (sent whole), and for an
-- update made pending before this migration, whose fields were not recorded: `post` sends that
-- one's whole document, as it did when it was written.
ALTER TABLE fieldreport_records ADD COLUMN pending_fields TEXT;
