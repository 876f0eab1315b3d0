-- The Idempotency-Key a one-shot leasing flow ran under (docs/api.md, "The one-shot flow"):
-- a retry with the same key finds the flow its first attempt started, and never creates a
-- second financing request, even when the first attempt's process died before it answered.
ALTER TABLE leasing_flows ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX leasing_flows_user_idempotency_key ON leasing_flows (user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
