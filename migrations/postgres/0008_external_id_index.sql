-- Every ERP webhook looks up the field-report record mapped to its ERP record by `ExternalId`:
-- without this index each lookup parsed every document of the set (a full scan per webhook).
CREATE INDEX fieldreport_records_external_id
    ON fieldreport_records (entity, (document::jsonb ->> 'ExternalId'));
