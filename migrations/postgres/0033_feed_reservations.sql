-- A sync's batches of one set are written by two transactions at a time (src/fieldreport/
-- sync/writes.rs), but the numbers of migration 0029, taken in the writing transaction, kept the
-- set's `mirror_feed` row locked until it committed: the second writer waited for the first,
-- and the database wrote a sync on one core (bench/HISTORY.md, 2026-11-29).
--
-- A sync's writer now reserves its numbers instead: the reservation is committed at once (the
-- row is locked only for that), and names the writing transaction. A reader of the feed does
-- not pass the first number of a reservation whose writer has not committed as of the reader's
-- snapshot (`mirror_feed_passable`): whatever is numbered after it waits, so a reader still
-- never passes a number that may yet be committed. A reservation whose writer committed or
-- rolled back blocks nothing, and the next reservation of the set removes it.
--
-- Every other writer keeps taking its numbers in its own transaction (`mirror_feed_next`).
CREATE TABLE mirror_feed_reservations (
    mirror TEXT NOT NULL,
    entity TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    writer XID8 NOT NULL,
    PRIMARY KEY (mirror, entity, first_seq)
);

-- Whether a reservation's writer may still commit numbers that the current statement's
-- snapshot does not show. An id at or after the snapshot's xmax was never given here (a row
-- restored from another cluster's dump): it blocks nothing, and is not looked up (its status
-- would be an error).
CREATE FUNCTION mirror_feed_writer_open(writer XID8) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN writer >= pg_snapshot_xmax(pg_current_snapshot()) THEN false
        WHEN pg_visible_in_snapshot(writer, pg_current_snapshot()) THEN false
        ELSE pg_xact_status(writer) IN ('in progress', 'committed')
    END
$$;

-- The last number of a set that a reader may pass: before the first open reservation, else the
-- set's last number.
CREATE FUNCTION mirror_feed_passable(mirror_name TEXT, entity_name TEXT) RETURNS BIGINT
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(
        (SELECT MIN(r.first_seq) - 1 FROM mirror_feed_reservations r
         WHERE r.mirror = mirror_name AND r.entity = entity_name AND mirror_feed_writer_open(r.writer)),
        (SELECT f.last_seq FROM mirror_feed f WHERE f.mirror = mirror_name AND f.entity = entity_name),
        0)
$$;

-- `n` numbers of a set reserved for the transaction `writer`; the last of them. Called in a
-- transaction of its own, which commits without waiting for the WAL flush: the writer's
-- records come after it in the log, so a crash that loses the reservation loses them too.
CREATE FUNCTION mirror_feed_reserve(mirror_name TEXT, entity_name TEXT, n BIGINT, writer_id TEXT)
RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    last BIGINT;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    DELETE FROM mirror_feed_reservations r
    WHERE r.mirror = mirror_name AND r.entity = entity_name AND NOT mirror_feed_writer_open(r.writer)
      AND r.writer <> writer_id::xid8;
    last := mirror_feed_next(mirror_name, entity_name, n);
    INSERT INTO mirror_feed_reservations (mirror, entity, first_seq, writer)
    VALUES (mirror_name, entity_name, last - n + 1, writer_id::xid8);
    RETURN last;
END
$$;
