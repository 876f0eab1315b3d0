-- Set names and record ids compare byte by byte (collation "C"), as SQLite compares them.
-- Under the database's default collation (C.UTF-8 or a language's) every comparison of the
-- mirror's indexes on them went through the C library's strcoll: a tenth of Postgres's time in
-- a sync's inserts (`cargo xtask bench --db postgres --scenario sync`). Pages of ids of equal
-- length are now in the same order on both databases.
-- The type stays TEXT, so the table is not rewritten; its indexes on these columns are built
-- again, under this migration's lock (about a second per 100,000 records).
DROP TRIGGER fieldreport_records_keep_entity ON fieldreport_records;

ALTER TABLE fieldreport_records
    ALTER COLUMN entity TYPE TEXT COLLATE "C",
    ALTER COLUMN record_id TYPE TEXT COLLATE "C";

CREATE TRIGGER fieldreport_records_keep_entity
    BEFORE UPDATE OF entity ON fieldreport_records
    FOR EACH ROW WHEN (OLD.entity IS DISTINCT FROM NEW.entity)
    EXECUTE FUNCTION fieldreport_keep_entity();
