-- The push queue of the field-report mirror (records written without forwarding), counted on
-- every metrics scrape and read per entity by `fieldreport post`: a partial index keeps both
-- proportional to the queue, not to the mirror.
CREATE INDEX fieldreport_records_pending_push ON fieldreport_records (entity, pending_push)
    WHERE pending_push IS NOT NULL;
