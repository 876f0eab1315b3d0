-- A removal numbers its change in the set's feed before it counts the set's records down, as
-- an insert does. An insert takes the set's `mirror_feed` row first (its row trigger, before
-- the row is written, migration 0029), then its `fieldreport_record_counts` row (the
-- statement trigger after it, migration 0010). A delete ran its two statement triggers in the
-- order of their names (Postgres fires triggers of one event alphabetically): the count's
-- (`…_count_deleted`) before the feed's (`…_feed_deleted`, migration 0031), so it took the
-- two rows the other way round. A create and a delete of one set at once then waited for each
-- other until Postgres broke the deadlock by failing one of them (a 500 to its client, a
-- create already accepted upstream missing from the mirror). The count's trigger now has a
-- name that comes after the feed's: both writes lock the feed's row first.
ALTER TRIGGER fieldreport_records_count_deleted ON fieldreport_records
    RENAME TO fieldreport_records_recount_deleted;
