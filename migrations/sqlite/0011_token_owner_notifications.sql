-- Postgres only: the triggers that tell every instance to forget a cached token owner
-- (migrations/postgres/0011). SQLite reads token owners in place and caches none; this file
-- keeps the two dialects' migration numbers in step.
SELECT 1;
