-- The change feed's removals are numbered once a statement, not once a row (migration 0029
-- numbered each removed row with its own update of the set's row in `mirror_feed`). Postgres
-- keeps every version of a row updated again within one transaction until it ends, and each
-- update walks past those before it: a statement that removed 100,000 records updated the same
-- row 100,000 times and took minutes (bench/HISTORY.md, 2026-11-29), as the record counts
-- would have, had migration 0010 not counted per statement. Now the removed rows of a
-- statement take their numbers together, one update per set, in the order of their ids.
--
-- A renamed record (`record_id` changed, which a transition table cannot watch column by
-- column) keeps its row trigger from migration 0029: renames come one at a time.

CREATE FUNCTION fieldreport_feed_removed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH per_set AS (
        SELECT entity, COUNT(*) AS n FROM removed_records GROUP BY entity
    ), taken AS MATERIALIZED (
        SELECT entity, n, mirror_feed_next('fieldreport', entity, n) AS last FROM per_set
    )
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    SELECT 'fieldreport', r.entity,
           t.last - t.n + ROW_NUMBER() OVER (PARTITION BY r.entity ORDER BY LENGTH(r.record_id), r.record_id),
           r.record_id, (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT
    FROM removed_records r JOIN taken t ON t.entity = r.entity;
    RETURN NULL;
END
$$;

CREATE FUNCTION erp_feed_removed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH per_model AS (
        SELECT model, COUNT(*) AS n FROM removed_records GROUP BY model
    ), taken AS MATERIALIZED (
        SELECT model, n, mirror_feed_next('erp', model, n) AS last FROM per_model
    )
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    SELECT 'erp', r.model,
           t.last - t.n + ROW_NUMBER() OVER (PARTITION BY r.model ORDER BY LENGTH(r.record_id), r.record_id),
           r.record_id, (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT
    FROM removed_records r JOIN taken t ON t.model = r.model;
    RETURN NULL;
END
$$;

DROP TRIGGER fieldreport_records_feed_deleted ON fieldreport_records;
CREATE TRIGGER fieldreport_records_feed_deleted
    AFTER DELETE ON fieldreport_records
    REFERENCING OLD TABLE AS removed_records
    FOR EACH STATEMENT EXECUTE FUNCTION fieldreport_feed_removed_rows();

DROP TRIGGER erp_records_feed_deleted ON erp_records;
CREATE TRIGGER erp_records_feed_deleted
    AFTER DELETE ON erp_records
    REFERENCING OLD TABLE AS removed_records
    FOR EACH STATEMENT EXECUTE FUNCTION erp_feed_removed_rows();
-- The ERP's row function served only the trigger just replaced.
DROP FUNCTION erp_feed_removed();
