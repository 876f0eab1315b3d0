-- The per-user rates (`JOBS_PER_MINUTE_PER_USER`, `IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER`) read
-- a user's rows of the last minute, newest first (src/store/rates.rs): by these indexes they
-- read at most the rate's number of entries, however many rows the user keeps within the
-- retention (`RETAIN_*`).
CREATE INDEX idempotency_keys_user_created ON idempotency_keys (user_id, created_at);
CREATE INDEX jobs_created_by_created ON jobs (created_by, created_at);
