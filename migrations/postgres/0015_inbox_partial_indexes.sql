-- The webhook inbox's indexes hold only the calls not done: the pending ones in the order the
-- worker claims them (due time, then id), and the failed ones (their count and list). Done
-- calls (kept a week) weigh on no index but the primary key.
--
-- With (state, next_attempt_at) and (state, id) over every call, the claim (`state =
-- 'pending' … ORDER BY id LIMIT n`) had two ways in and neither served both its condition and
-- its order. Postgres, without statistics that count the pending calls (a new database, or a
-- burst faster than autovacuum), fetched every pending call through (state, next_attempt_at)
-- and sorted them for each claim of 16: 25-40 ms behind a backlog of 70,000 (`cargo xtask
-- bench --db postgres --scenario baseline,webhook-ingest`). The (state, id) walk that SQLite
-- used instead passes every call waiting for a retry before it reaches a due one. This index
-- answers the claim's condition and order at once; the worker has Postgres refresh the
-- inbox's statistics when it meets a backlog (without them Postgres may still sort).
--
-- On Postgres the DROP and the two CREATE INDEX take the inbox's lock while they run: webhook
-- calls wait until the migration commits (README, "Upgrading").
DROP INDEX erp_webhook_inbox_due;
DROP INDEX erp_webhook_inbox_state_id;
CREATE INDEX erp_webhook_inbox_pending ON erp_webhook_inbox (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX erp_webhook_inbox_failed ON erp_webhook_inbox (id) WHERE state = 'failed';
