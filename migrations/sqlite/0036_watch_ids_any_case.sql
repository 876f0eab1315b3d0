-- The owner of a financing request is looked up by its id without regard to case
-- (src/store/leasing/owners.rs): the provider's ids are UUIDs, one id in any case, and a
-- provider may read `ABC…` as `abc…`. Looked up by the exact spelling, another user's id
-- in upper case found no owner and was let through to the provider.
CREATE INDEX leasing_watches_financing_id_any_case ON leasing_watches (lower(financing_id));
