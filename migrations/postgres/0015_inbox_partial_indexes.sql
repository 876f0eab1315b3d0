-- The webhook inbox's indexes hold only the calls not done: the pending ones in id order (the
-- worker's claim, the pending count and list) and the failed ones (their count and list).
--
-- With (state, next_attempt_at) and (state, id) over every call, Postgres planned the claim
-- from whatever statistics it had: on a table without them (a new database, before autovacuum
-- analysed it) it fetched every pending call through (state, next_attempt_at) and sorted them
-- for each claim of 16, 25-40 ms behind a backlog of 70,000 (`cargo xtask bench --db postgres
-- --scenario baseline,webhook-ingest`; the statement log showed 1,152 claims over 10 ms). An
-- index of exactly the pending calls is walked in id order with or without statistics.
-- Done calls (kept a week) no longer weigh on any index but the primary key.
DROP INDEX erp_webhook_inbox_due;
DROP INDEX erp_webhook_inbox_state_id;
CREATE INDEX erp_webhook_inbox_pending ON erp_webhook_inbox (id) WHERE state = 'pending';
CREATE INDEX erp_webhook_inbox_failed ON erp_webhook_inbox (id) WHERE state = 'failed';
