-- A subscription's deliveries read by key, newest first (`?after=<cursor>`): a walk of this
-- index from the cursor's delivery, whatever its depth. `leasing_deliveries_order` leads with
-- the financing id and cannot serve it.
CREATE INDEX leasing_deliveries_by_subscription ON leasing_deliveries (subscription_id, id);
