-- Lists walk a set's records in Id order (shorter Ids first, so numeric Ids sort as numbers):
-- with this index a page is read in order instead of sorting the whole set on every request.
CREATE INDEX fieldreport_records_page ON fieldreport_records (entity, LENGTH(record_id), record_id);
