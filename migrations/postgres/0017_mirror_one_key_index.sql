-- SQLite only: the mirror's table rebuilt without its primary key (migrations/sqlite/0017),
-- as migration 0016 did here; this file keeps the two dialects' migration numbers in step.
SELECT 1;
