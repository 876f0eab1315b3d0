-- Postgres only: one unique index on (entity, LENGTH(record_id), record_id) replaces the
-- primary key and the page index there (migrations/postgres/0016). SQLite would have to copy
-- the whole table to drop its primary key, for a smaller gain (each record written enters the
-- table, the key, the page index and the `ExternalId` index, and runs the count trigger); this
-- file keeps the two dialects' migration numbers in step.
SELECT 1;
