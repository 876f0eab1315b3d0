-- The history a change feed's positions belong to. A position counts the changes of one
-- database's history: a Postgres dump restored into another database numbers its own changes
-- again from the dump's numbers, so a position answered before the restore could be followed
-- into another history, and the copy silently differ from the mirror. Each position now
-- carries the history's `generation`. `bound_to` names the database that holds the table (the
-- cluster, the database and the table itself: a restore creates the table again, with another
-- identity); each start (`mirror_feed_bind`, after the migrations) gives a database that finds
-- another name there a new generation, so positions of any other history are refused and
-- their consumers copy again. Positions answered before this migration carry none: they are
-- followed while the history has not changed since (`legacy_positions`).
CREATE TABLE mirror_feed_history (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL,
    bound_to TEXT NOT NULL DEFAULT '',
    legacy_positions BOOLEAN NOT NULL DEFAULT true
);
INSERT INTO mirror_feed_history (id, generation) VALUES (1, 100000 + floor(random() * 900000)::bigint);

-- The name of the database holding the feed. The cluster's identifier may be refused to a
-- managed database's users: the database and the table still tell a restore.
CREATE FUNCTION mirror_feed_identity() RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    cluster TEXT := '';
BEGIN
    BEGIN
        SELECT system_identifier::text INTO cluster FROM pg_control_system();
    EXCEPTION WHEN insufficient_privilege OR undefined_function THEN
        cluster := '';
    END;
    RETURN cluster || '/' || (SELECT oid FROM pg_database WHERE datname = current_database())::text
        || '/' || 'mirror_feed_history'::regclass::oid::text;
END
$$;

-- Binds the feed to the database holding it: on the first start, its name is noted; in a
-- database restored from another's dump, a new generation is taken (another than the dump's),
-- and positions without one are refused from then on.
CREATE FUNCTION mirror_feed_bind() RETURNS VOID
LANGUAGE sql AS $$
    UPDATE mirror_feed_history SET
        generation = CASE WHEN bound_to = '' THEN generation
                          ELSE 100000 + (generation - 100000 + 1 + floor(random() * 899999)::bigint) % 900000 END,
        legacy_positions = legacy_positions AND bound_to = '',
        bound_to = mirror_feed_identity()
    WHERE bound_to <> mirror_feed_identity()
$$;
