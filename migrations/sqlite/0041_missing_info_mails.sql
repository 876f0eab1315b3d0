-- When the missing-info mail of a financing request last left (src/store/leasing/mails.rs):
-- a wait that finds a request in MissingInfo sends it, and a caller repeating the wait made
-- the service send a mail per call, without bound, to the address the caller wrote as the
-- lessee's. A request's mail now leaves at most once per MISSING_INFO_MAIL_INTERVAL_SECONDS.
-- One row per request that was ever in MissingInfo, keyed by its id in lower case.
CREATE TABLE leasing_missing_info_mails (
    financing_id TEXT PRIMARY KEY,
    sent_at BIGINT NOT NULL
);
