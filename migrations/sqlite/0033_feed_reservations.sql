-- Postgres only: a sync's reserved change numbers (migrations/postgres/0033). SQLite commits
-- one transaction at a time, so its writers take their numbers in their own transaction; this
-- file keeps the two dialects' migration numbers in step.
SELECT 1;
