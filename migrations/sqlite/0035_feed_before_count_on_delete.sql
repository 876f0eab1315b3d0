-- Postgres only: a delete there now numbers its change in the feed before it counts the set's
-- records down, the order an insert takes the two rows in (migrations/postgres/0035). SQLite
-- writes one transaction at a time, so its writes never wait for each other's rows; this file
-- keeps the two dialects' migration numbers in step.
SELECT 1;
