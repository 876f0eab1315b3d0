-- The history a change feed's positions belong to. A position counts the changes of one
-- database's history: a database restored from a backup (or a Postgres dump restored into
-- another database) numbers its own changes again from the backup's numbers, so a position
-- answered before the restore could be followed into another history, and the copy silently
-- differ from the mirror. Each position now carries the history's `generation`; a restore
-- gives the restored database a new one (src/store/backup.rs), so positions of any other
-- history are refused and their consumers copy again. Positions answered before this
-- migration carry none: they are followed while the history has not changed since
-- (`legacy_positions`).
CREATE TABLE mirror_feed_history (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL,
    bound_to TEXT NOT NULL DEFAULT '',
    legacy_positions INTEGER NOT NULL DEFAULT 1
);
INSERT INTO mirror_feed_history (id, generation) VALUES (1, 100000 + abs(random() % 900000));
