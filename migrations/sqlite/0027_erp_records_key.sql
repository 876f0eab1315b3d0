-- The ERP mirror's records in the order its pages answer them (numeric ids in numeric order):
-- (model, LENGTH(record_id), record_id), as the field-report mirror's `fieldreport_records_key`
-- (migration 0017). A page after a cursor (`?after=`) starts at its key in this index and reads
-- only its own rows, whatever its depth; before, every page sorted the whole model.
CREATE UNIQUE INDEX erp_records_key ON erp_records (model, LENGTH(record_id), record_id);
