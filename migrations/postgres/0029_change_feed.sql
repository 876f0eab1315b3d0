-- The change feed of both mirrors (docs/architecture.md, "The change feed"): a consumer that
-- copied a set follows what changed in it since, in the order it was stored. Every write of a
-- record's document numbers the record anew in its set (`change_seq`); every removal leaves a
-- numbered tombstone in `mirror_removals`, kept `RETAIN_FEED_REMOVALS_DAYS` (the janitor
-- prunes them and records the newest number pruned in `expired_through`: a cursor before it is
-- answered 410 `cursor_expired`).
--
-- The numbers of a set come from its row in `mirror_feed`, updated in the writing transaction:
-- the row stays locked until that transaction ends, so the next writer of the set takes its
-- numbers after this one committed, and a reader never sees a number after one not yet
-- committed (a sequence would not do: its numbers are taken in one order and committed in
-- another). A sync numbers its batches itself (`mirror_feed_next`); the triggers below number
-- every other write, and skip a row that comes numbered.
-- No instance may write records between the numbering below and the triggers' creation.
LOCK TABLE fieldreport_records IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE erp_records IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE mirror_feed (
    mirror TEXT NOT NULL,
    entity TEXT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0,
    expired_through BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (mirror, entity)
);

CREATE TABLE mirror_removals (
    mirror TEXT NOT NULL,
    entity TEXT NOT NULL,
    change_seq BIGINT NOT NULL,
    record_id TEXT NOT NULL,
    removed_at BIGINT NOT NULL,
    PRIMARY KEY (mirror, entity, change_seq)
);
CREATE INDEX mirror_removals_removed_at ON mirror_removals (removed_at);

-- `n` numbers taken for a set: the last of them is answered (the first is that minus n, plus 1).
CREATE FUNCTION mirror_feed_next(mirror_name TEXT, entity_name TEXT, n BIGINT) RETURNS BIGINT
LANGUAGE sql AS $$
    INSERT INTO mirror_feed AS f (mirror, entity, last_seq) VALUES (mirror_name, entity_name, n)
    ON CONFLICT (mirror, entity) DO UPDATE SET last_seq = f.last_seq + EXCLUDED.last_seq
    RETURNING last_seq
$$;

-- The records already stored are numbered per set in key order.
CREATE TEMPORARY SEQUENCE feed_numbering;
ALTER TABLE fieldreport_records ADD COLUMN change_seq BIGINT;
UPDATE fieldreport_records SET change_seq = nextval('feed_numbering');
INSERT INTO mirror_feed (mirror, entity, last_seq)
SELECT 'fieldreport', entity, MAX(change_seq) FROM fieldreport_records GROUP BY entity;
CREATE INDEX fieldreport_records_changes ON fieldreport_records (entity, change_seq);

ALTER TABLE erp_records ADD COLUMN change_seq BIGINT;
UPDATE erp_records SET change_seq = nextval('feed_numbering');
INSERT INTO mirror_feed (mirror, entity, last_seq)
SELECT 'erp', model, MAX(change_seq) FROM erp_records GROUP BY model;
CREATE INDEX erp_records_changes ON erp_records (model, change_seq);

CREATE FUNCTION fieldreport_feed_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_seq := mirror_feed_next('fieldreport', NEW.entity, 1);
    RETURN NEW;
END
$$;

CREATE FUNCTION fieldreport_feed_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    VALUES ('fieldreport', OLD.entity, mirror_feed_next('fieldreport', OLD.entity, 1), OLD.record_id,
            (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
    RETURN NULL;
END
$$;

CREATE TRIGGER fieldreport_records_feed_inserted
    BEFORE INSERT ON fieldreport_records
    FOR EACH ROW WHEN (NEW.change_seq IS NULL)
    EXECUTE FUNCTION fieldreport_feed_number();

CREATE TRIGGER fieldreport_records_feed_updated
    BEFORE UPDATE ON fieldreport_records
    FOR EACH ROW WHEN (NEW.change_seq IS NOT DISTINCT FROM OLD.change_seq
        AND (NEW.document IS DISTINCT FROM OLD.document OR NEW.record_id IS DISTINCT FROM OLD.record_id))
    EXECUTE FUNCTION fieldreport_feed_number();

-- A record removed, or renamed (a push gives a record created here the upstream's id): its
-- former id leaves the feed's consumers' copies.
CREATE TRIGGER fieldreport_records_feed_deleted
    AFTER DELETE ON fieldreport_records
    FOR EACH ROW EXECUTE FUNCTION fieldreport_feed_removed();

CREATE TRIGGER fieldreport_records_feed_renamed
    AFTER UPDATE OF record_id ON fieldreport_records
    FOR EACH ROW WHEN (NEW.record_id IS DISTINCT FROM OLD.record_id)
    EXECUTE FUNCTION fieldreport_feed_removed();

CREATE FUNCTION erp_feed_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_seq := mirror_feed_next('erp', NEW.model, 1);
    RETURN NEW;
END
$$;

CREATE FUNCTION erp_feed_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at)
    VALUES ('erp', OLD.model, mirror_feed_next('erp', OLD.model, 1), OLD.record_id,
            (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT);
    RETURN NULL;
END
$$;

CREATE TRIGGER erp_records_feed_inserted
    BEFORE INSERT ON erp_records
    FOR EACH ROW WHEN (NEW.change_seq IS NULL)
    EXECUTE FUNCTION erp_feed_number();

CREATE TRIGGER erp_records_feed_updated
    BEFORE UPDATE ON erp_records
    FOR EACH ROW WHEN (NEW.change_seq IS NOT DISTINCT FROM OLD.change_seq
        AND NEW.document IS DISTINCT FROM OLD.document)
    EXECUTE FUNCTION erp_feed_number();

CREATE TRIGGER erp_records_feed_deleted
    AFTER DELETE ON erp_records
    FOR EACH ROW EXECUTE FUNCTION erp_feed_removed();
