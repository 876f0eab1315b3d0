-- A financing request is watched once, whatever the case its id is spelled in (the provider's
-- ids are UUIDs, one id in any case): watched again under another spelling, it had a second
-- watch, and each of its changes was announced once per spelling. The first watch of each
-- request is kept (its creator's, or its first watcher's); the later spellings' watches go,
-- their events and deliveries stay. The index of 0036 becomes unique.
DELETE FROM leasing_watches WHERE EXISTS (
    SELECT 1 FROM leasing_watches AS earlier
    WHERE lower(earlier.financing_id) = lower(leasing_watches.financing_id)
      AND (earlier.created_at < leasing_watches.created_at
           OR (earlier.created_at = leasing_watches.created_at
               AND earlier.financing_id < leasing_watches.financing_id))
);
DROP INDEX leasing_watches_financing_id_any_case;
CREATE UNIQUE INDEX leasing_watches_one_per_request ON leasing_watches (lower(financing_id));
