-- The deliveries a user asked to send again (`POST …/deliveries/{id}/retry`), one row each,
-- counted for `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` (src/store/rates.rs): a retry
-- re-queues a delivery at once, and was unlimited. A user's rows older than the minute
-- counted are removed at that user's next retry, so each user keeps at most that many.
CREATE TABLE leasing_delivery_retries (
    user_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX leasing_delivery_retries_by_user ON leasing_delivery_retries (user_id, created_at);
