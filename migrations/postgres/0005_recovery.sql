-- Recovery after a crash: a running flow holds a lease its process renews; a flow whose lease
-- ran out is marked interrupted. A push claims its record, so that a run after a crash knows
-- the record may have reached the upstream already and checks before sending it again.
ALTER TABLE leasing_flows ADD COLUMN lease_until BIGINT;
ALTER TABLE fieldreport_records ADD COLUMN push_claimed_until BIGINT;
ALTER TABLE fieldreport_records ADD COLUMN push_attempts INTEGER NOT NULL DEFAULT 0;
