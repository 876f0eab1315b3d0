-- The financing requests a user asked the service to create (`POST /api/v1/leasing`, and the
-- create step of a one-shot flow), one row each, counted for
-- `LEASING_CREATES_PER_MINUTE_PER_USER` (src/store/rates.rs): each create is a request at the
-- provider and leaves a watch, its events and, for a flow, its record, and was unlimited. A
-- user's rows older than the minute counted are removed at that user's next create, so each
-- user keeps at most that many.
CREATE TABLE leasing_creates (
    user_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX leasing_creates_by_user ON leasing_creates (user_id, created_at);
