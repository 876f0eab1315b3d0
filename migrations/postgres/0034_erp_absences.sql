-- ERP records a delete webhook found absent from the mirror. A pull's page read at the ERP
-- before such a delete (the record created and deleted while the page was on its way) would
-- store the record, and its delete left no tombstone in `mirror_removals` to say it is gone:
-- a pull reads the ids noted here, as it reads the tombstones, again by id after storing a
-- page (src/erp/pull.rs, `recheck_removed`). Pruned with the tombstones
-- (`RETAIN_FEED_REMOVALS_DAYS`); a pull needs only the last minutes.
CREATE TABLE erp_absences (
    model TEXT NOT NULL,
    record_id TEXT NOT NULL,
    noted_at BIGINT NOT NULL,
    PRIMARY KEY (model, record_id)
);
CREATE INDEX erp_absences_noted_at ON erp_absences (noted_at);
