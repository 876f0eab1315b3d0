-- Postgres only: the mirror's statistics targets (migrations/postgres/0032). SQLite's
-- statistics are not refreshed by a sync; this file keeps the two dialects' migration
-- numbers in step.
SELECT 1;
