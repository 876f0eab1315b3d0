-- The statistics a sync refreshes (`ANALYZE fieldreport_records (entity, record_id,
-- pending_push)`, src/store/fieldreport/sync.rs) are sampled at 20 rather than the default
-- 100: 6,000 rows instead of 30,000. The planner needs of these columns only the sets' names
-- (at most 20 most common values: there are 15 sets), that ids are unique, and how rare a
-- pending push is; none of them needs a finer histogram. After a sync of 100,000 companies
-- the ANALYZE took 104-123 ms at 100 and 20-22 ms at 20, about a tenth of the sync
-- (bench/HISTORY.md, 2026-11-29). Autovacuum's own analyzing follows the same targets.
ALTER TABLE fieldreport_records
    ALTER COLUMN entity SET STATISTICS 20,
    ALTER COLUMN record_id SET STATISTICS 20,
    ALTER COLUMN pending_push SET STATISTICS 20;
