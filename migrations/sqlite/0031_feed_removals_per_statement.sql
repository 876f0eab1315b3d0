-- Postgres only: the change feed's removals are numbered once a statement there
-- (migrations/postgres/0031), where updating the set's numbering row once per removed row
-- slowed with every row of a transaction. SQLite rewrites a row in place and has no such
-- cost; this file keeps the two dialects' migration numbers in step.
SELECT 1;
