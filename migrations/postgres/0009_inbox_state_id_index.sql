-- The webhook worker claims the oldest due calls: `state = 'pending' … ORDER BY id LIMIT n`.
-- With only (state, next_attempt_at) to go by, every due call was fetched and sorted on each
-- claim (2 s for one claim behind a backlog of 85,000 calls on Postgres, `cargo xtask
-- bench`); this index hands pending calls out in id order.
CREATE INDEX erp_webhook_inbox_state_id ON erp_webhook_inbox (state, id);
