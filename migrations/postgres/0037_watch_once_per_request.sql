-- A financing request is watched once, whatever the spelling of its id: the provider's ids
-- are UUIDs, and it reads one in any case and with or without its hyphens. Watched again
-- under another spelling, a request had a second watch, and each of its changes was announced
-- once per spelling (to the second watcher's subscriptions too). The routes now find a
-- request's watch by its id in any case, with the hyphens of a UUID (src/leasing/id.rs).
--
-- The first watch of each request is kept (its creator's, or its first watcher's); the later
-- spellings' watches go, their events and deliveries stay. A kept id of 32 hex digits is
-- written with its hyphens (in the case it had), and the index of 0036 becomes unique.
DELETE FROM leasing_watches WHERE financing_id IN (
    WITH keyed AS (
        SELECT financing_id, created_at,
            CASE WHEN length(financing_id) = 32 AND financing_id ~ '^[0-9A-Fa-f]{32}$'
                THEN lower(substr(financing_id, 1, 8) || '-' || substr(financing_id, 9, 4) || '-'
                    || substr(financing_id, 13, 4) || '-' || substr(financing_id, 17, 4) || '-'
                    || substr(financing_id, 21, 12))
                ELSE lower(financing_id) END AS request
        FROM leasing_watches
    )
    SELECT later.financing_id FROM keyed AS later JOIN keyed AS earlier ON earlier.request = later.request
    WHERE earlier.created_at < later.created_at
        OR (earlier.created_at = later.created_at AND earlier.financing_id < later.financing_id)
);
UPDATE leasing_watches
SET financing_id = substr(financing_id, 1, 8) || '-' || substr(financing_id, 9, 4) || '-'
    || substr(financing_id, 13, 4) || '-' || substr(financing_id, 17, 4) || '-' || substr(financing_id, 21, 12)
WHERE length(financing_id) = 32 AND financing_id ~ '^[0-9A-Fa-f]{32}$';
DROP INDEX leasing_watches_financing_id_any_case;
CREATE UNIQUE INDEX leasing_watches_one_per_request ON leasing_watches (lower(financing_id));
