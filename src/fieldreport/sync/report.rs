//! What one sync did.

use serde::Serialize;

use crate::store::fieldreport::records::Upserted;

/// What one sync did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct SyncReport {
    /// Route name of the entity set.
    pub entity: String,
    pub fetched: u64,
    pub inserted: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Records without an `Id`, skipped.
    pub skipped: u64,
    /// Records deleted here whose delete the upstream has not confirmed yet (pending for
    /// `post`, or in flight): not stored again.
    #[serde(default)]
    pub deleted_here: u64,
    pub pages: u64,
    pub seconds: f64,
    /// The newest `DateModified` now synced.
    pub cursor: Option<String>,
    /// Records the paging in key order skipped (a server ignoring `$orderby`), told by the
    /// server's count and fetched by Id, that were stored anew or changed.
    #[serde(default)]
    pub recovered: u64,
    /// The field-report system could not count its records (`<Set>/$count` refused), or its
    /// counts never met what it listed: what the sync read was not checked against its count,
    /// and records a server ignoring `$orderby` skipped may have been missed (a reconciling
    /// finds them).
    #[serde(default)]
    pub unverified: bool,
    /// With `reconcile`: what the reconciling that followed the sync removed and kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<crate::fieldreport::reconcile_report::ReconcileReport>,
}

impl SyncReport {
    pub(super) fn tally(&mut self, outcomes: Vec<Upserted>) {
        for outcome in outcomes {
            match outcome {
                Upserted::Inserted => self.inserted += 1,
                Upserted::Updated => self.updated += 1,
                Upserted::Unchanged => self.unchanged += 1,
            }
        }
    }
}
