//! The report of a reconciling sync ([`super::reconcile`]), apart from it so that a sync's
//! report ([`super::sync`]) can carry one without importing the reconciling, which reads pages
//! with the sync's reader.

use serde::Serialize;

/// What a reconciling sync of one set did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct ReconcileReport {
    /// Route name of the entity set.
    pub entity: String,
    /// Records the field-report system has.
    pub upstream: u64,
    /// Local records compared (those written before the reconciling began).
    pub checked: u64,
    /// Records the field-report system has and the mirror lacked, fetched and stored.
    pub fetched_missing: u64,
    /// Local records whose version differed from the field-report system's, fetched again.
    pub refreshed: u64,
    /// Local records removed: the field-report system no longer has them.
    pub removed: u64,
    /// Local records the field-report system no longer has, kept because a local change of
    /// theirs waits for it (a pending push, or an update of unknown outcome).
    pub kept_pending: u64,
    /// The Ids of those records (the first 100).
    pub kept_pending_ids: Vec<String>,
    /// The field-report system could not count its records (`<Set>/$count` refused), or its
    /// counts never met what it listed: the list of Ids was not checked against its count, and
    /// records a server ignoring `$orderby=Id` left out of it may have been missed (never
    /// removed: a removal is confirmed by Id).
    #[serde(default)]
    pub unverified: bool,
    pub seconds: f64,
}
