-- The ERP mirror's records in the order its pages answer them (numeric ids in numeric order):
-- (model, LENGTH(record_id), record_id), as the field-report mirror's `fieldreport_records_key`
-- (migration 0016). A page after a cursor (`?after=`) starts at its key in this index and reads
-- only its own rows, whatever its depth; before, every page sorted the whole model.
--
-- Record ids compare byte by byte (collation "C"), as SQLite compares them and as the
-- field-report mirror's do (migration 0013): the same ids page in the same order on both
-- databases. The type stays TEXT, so the table is not rewritten; its primary key is built
-- again under this migration's lock (about a second per 100,000 records).
ALTER TABLE erp_records ALTER COLUMN record_id TYPE TEXT COLLATE "C";
CREATE UNIQUE INDEX erp_records_key ON erp_records (model, LENGTH(record_id), record_id);
