-- Postgres only: the triggers that tell every instance to forget cached field-report records
-- (migrations/postgres/0012). SQLite reads records in place and caches none; this file keeps
-- the two dialects' migration numbers in step.
SELECT 1;
