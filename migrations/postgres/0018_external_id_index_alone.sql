-- The `ExternalId` index holds the ExternalId alone, without the set, as on SQLite
-- (migrations/sqlite/0018): shorter entries, fewer bytes compared for each record written.
-- The lookup of a record by its `ExternalId` in one set (src/store/fieldreport.rs) finds the
-- records of every set with that ExternalId and keeps those of its set: a few rows at most.
--
-- The index is built under this migration's lock on the table (README, "Upgrading").
DROP INDEX fieldreport_records_external_id;
CREATE INDEX fieldreport_records_external_id ON fieldreport_records (external_id)
    WHERE external_id IS NOT NULL;
