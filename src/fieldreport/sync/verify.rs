//! Checking what a sync read in key order against the server's count.
//!
//! Each query of a sync goes on after the last key read, which is right only when the server
//! sent the first records of its order: a server that ignores `$orderby` and pages below what is
//! asked sends others, often in key order within the page, so no look at a page tells it, and
//! the records before the last key that it left out are never asked for again. Once the pages
//! are read, the server counts the records stamped from where the sync started up to the newest
//! stamp it read (`<Set>/$count?$filter=…`); when it counts more than the sync read, the Ids of
//! those records are listed as a reconciling lists them ([`FieldReportService::upstream_ids_within`],
//! halving until every part lists what it counts) and the ones the sync did not read are fetched
//! by Id. A server that cannot count leaves the sync as it read, and its report says so.

use std::collections::HashSet;

use generated::fieldreport::EntityInfo;

use super::SyncReport;
use super::query::{From, Literal};
use crate::fieldreport::service::{FieldReportError, FieldReportService};
use crate::vocabulary::stamp::Stamp;

/// The records with a `DateModified` that a sync read from where it started: what the server
/// must count.
pub(super) struct ReadSince {
    /// Where the records with a `DateModified` started (see [`From::modified`]).
    from: From,
    ids: HashSet<String>,
    newest: Option<Stamp>,
}

impl ReadSince {
    pub(super) fn new(from: From) -> ReadSince {
        ReadSince { from, ids: HashSet::new(), newest: None }
    }

    /// A record read, with its `DateModified`.
    pub(super) fn add(&mut self, id: &str, modified: &Stamp) {
        if !self.from.precedes(&(modified.clone(), i64::MIN)) {
            return;
        }
        if self.newest.as_ref().is_none_or(|newest| modified > newest) {
            self.newest = Some(modified.clone());
        }
        self.ids.insert(id.to_string());
    }
}

impl FieldReportService {
    /// Checks `read` against the server's count (see the module's description) and fetches by
    /// Id what the sync skipped, counting it in `report`; records deleted here are not fetched.
    pub(super) async fn verify_sync(
        &self,
        info: &'static EntityInfo,
        owner: &str,
        read: ReadSince,
        literal: Literal,
        deleted_here: &HashSet<String>,
        report: &mut SyncReport,
    ) -> Result<(), FieldReportError> {
        // Nothing read: the first query answered no record, so none was skipped after a key.
        let Some(newest) = &read.newest else { return Ok(()) };
        let window = format!("{} and DateModified le {}", read.from.filter(literal), newest.literal(literal.0));
        match self.count_records(info, Some(&window)).await? {
            None => report.unverified = true,
            Some(counted) if counted > read.ids.len() as u64 => {
                let listed = self.upstream_ids_within(info, owner, Some(&window)).await?;
                report.unverified = listed.unverified;
                let mut skipped: Vec<String> = listed
                    .versions
                    .into_keys()
                    .chain(listed.counted_unlisted)
                    .filter(|id| !read.ids.contains(id) && !deleted_here.contains(id))
                    .collect();
                skipped.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
                skipped.dedup();
                report.recovered = self.fetch_by_id(info, owner, &skipped).await?.0;
            }
            Some(_) => {}
        }
        Ok(())
    }
}
