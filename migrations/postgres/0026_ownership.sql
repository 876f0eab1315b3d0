-- Who owns what (docs/api.md, "Who sees what"). A subscription belongs to the user who
-- created it and receives the events of the financing requests that user created through the
-- service (`leasing_watches.user_id`), or of every request when `all_requests` is set, which
-- only an operator (`users.operator`) may ask for. Subscriptions made before owners existed
-- have none: they keep receiving every event, and only operators see them. Jobs record who
-- queued them (NULL: a schedule or the command line).
ALTER TABLE users ADD COLUMN operator BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leasing_subscriptions ADD COLUMN user_id BIGINT;
ALTER TABLE leasing_subscriptions ADD COLUMN all_requests BIGINT NOT NULL DEFAULT 0;
UPDATE leasing_subscriptions SET all_requests = 1;
CREATE INDEX leasing_subscriptions_user ON leasing_subscriptions (user_id, created_at, id);
ALTER TABLE leasing_watches ADD COLUMN user_id BIGINT;
ALTER TABLE jobs ADD COLUMN created_by BIGINT;
CREATE INDEX jobs_created_by ON jobs (created_by, active_key);
