-- When the provider began answering 404 or 410 for a watched request (epoch ms; null while
-- it answers). A request it has not had for `LEASING_WATCH_GONE_SECONDS` is read no more: it
-- was read hourly for ever.
ALTER TABLE leasing_watches ADD COLUMN gone_since BIGINT;
