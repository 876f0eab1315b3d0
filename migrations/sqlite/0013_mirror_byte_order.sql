-- Postgres only: set names and record ids of the mirror compare byte by byte
-- (migrations/postgres/0013), as SQLite's BINARY collation always did; this file keeps the two
-- dialects' migration numbers in step.
SELECT 1;
