//! Checking what a sync read in key order against the server's listing of the same records.
//!
//! Each query of a sync goes on after the last key read, which is right only when the server
//! sent the first records of its order: a server that ignores `$orderby` and pages below what is
//! asked sends others, often in key order within the page, so no look at a page tells it, and
//! the records before the last key that it left out are never asked for again. The records never
//! modified, read first in Id order (`Id gt <last>`), are skipped the same way. Once the pages
//! are read, the Ids of the records of each part of the sync that read a record are listed as a
//! reconciling lists them ([`FieldReportService::upstream_ids_besides`], each page checked
//! against the server's count of its range, halving until every part lists what it counts):
//! those never modified that the sync asked for, and those stamped from where it started until
//! a step after the newest stamp it read (see [`ReadSince::add`]). The ones the sync did not
//! read are fetched by Id. A count of the whole part cannot stand for the listing: a record the
//! sync read that another client deleted (or changed past the part's end) before the count
//! leaves it one short, as many as were read when the paging skipped one. Runs of a listing
//! window of consecutive Ids that the sync read are not listed (no other record has an Id
//! there), so a set read whole costs a few requests more. A server that cannot count, or whose
//! counts never meet what it lists, leaves the sync with what it read and listed, and its report
//! says so. A count the server answers with a server error, busy or away (a 5xx but 501 Not
//! Implemented, or any refusal asking for a wait) fails the sync, as the same answer to a page
//! does.

use std::collections::HashSet;
use std::time::Duration;

use generated::fieldreport::EntityInfo;

use super::SyncReport;
use super::query::{Forms, From};
use crate::fieldreport::service::{FieldReportError, FieldReportService};
use crate::vocabulary::stamp::Stamp;

/// The records a sync read from where it started: what the server must list.
pub(super) struct ReadSince {
    /// Where the sync started: with the records never modified (see [`super::query::start`]).
    start: From,
    /// Where the records with a `DateModified` started (see [`From::modified`]).
    from: From,
    /// The records never modified read that the start's filter holds.
    unmodified: HashSet<String>,
    /// The records with a `DateModified` read from `from` on.
    ids: HashSet<String>,
    newest: Option<Stamp>,
    /// The widest step of the stamps read (see [`Stamp::step`]).
    widest: Duration,
}

impl ReadSince {
    pub(super) fn new(start: From) -> ReadSince {
        let from = start.modified();
        ReadSince { start, from, unmodified: HashSet::new(), ids: HashSet::new(), newest: None, widest: Duration::ZERO }
    }

    /// A record read, with its `DateModified`. A server that keeps finer stamps than it writes
    /// keeps a stamp it writes `T` before `T` plus its step (after `T` when it cuts the digits
    /// off, within half a step when it rounds them): the window listed ends before the newest
    /// stamp read plus the widest step read, so that it holds every record stamped as one read,
    /// wherever the server keeps it. (Ending at the newest stamp, a record the paging skipped
    /// that the server keeps after it went unseen.)
    pub(super) fn add(&mut self, id: &str, modified: &Stamp) {
        if !self.from.precedes(&(modified.clone(), i64::MIN)) {
            return;
        }
        if self.newest.as_ref().is_none_or(|newest| modified > newest) {
            self.newest = Some(modified.clone());
        }
        self.widest = self.widest.max(modified.step());
        self.ids.insert(id.to_string());
    }

    /// A record never modified read, with its `DateOfCreation`: kept when the start's filter
    /// holds it (created since the window, or without a `DateOfCreation`).
    pub(super) fn add_unmodified(&mut self, id: &str, created: Option<&Stamp>) {
        let since = match &self.start {
            From::Unmodified { since, .. } => since.as_ref(),
            _ => None,
        };
        if since.is_none_or(|since| created.is_none_or(|created| created >= since)) {
            self.unmodified.insert(id.to_string());
        }
    }

    /// Each `$filter` the server lists, its stamps written as `forms` says, with the Ids the
    /// sync read of it. A part of the sync that read nothing is not listed: its first query
    /// answered no record, so none was skipped after a key.
    fn windows(&self, forms: Forms) -> Vec<(String, &HashSet<String>)> {
        let mut windows = Vec::new();
        if !self.unmodified.is_empty()
            && let From::Unmodified { since, .. } = &self.start
        {
            let all = From::Unmodified { since: since.clone(), above: None };
            windows.push((all.filter(forms[all.stamped_field() as usize]), &self.unmodified));
        }
        if let Some(newest) = &self.newest {
            let literal = forms[self.from.stamped_field() as usize];
            // A text that is no timestamp has no later stamp to end before.
            let until = match newest.instant() {
                Some(_) => format!("DateModified lt {}", newest.later_by(self.widest).literal(literal.0)),
                None => format!("DateModified le {}", newest.literal(literal.0)),
            };
            windows.push((format!("{} and {until}", self.from.filter(literal)), &self.ids));
        }
        windows
    }
}

impl FieldReportService {
    /// Checks `read` against the server's listing (see the module's description) and fetches by
    /// Id what the sync skipped, counting it in `report`; records deleted here are not fetched.
    pub(super) async fn verify_sync(
        &self,
        info: &'static EntityInfo,
        owner: &str,
        read: ReadSince,
        forms: Forms,
        deleted_here: &HashSet<String>,
        report: &mut SyncReport,
    ) -> Result<(), FieldReportError> {
        let mut skipped = Vec::new();
        for (window, ids) in read.windows(forms) {
            // Every record of the window is listed, whatever a count of it says: a record read
            // and deleted (or changed past the window) before the count hides one skipped.
            let listed = self.upstream_ids_besides(info, owner, &window, ids).await?;
            report.unverified |= listed.unverified;
            skipped.extend(
                listed
                    .versions
                    .into_keys()
                    .chain(listed.counted_unlisted)
                    .filter(|id| !ids.contains(id) && !deleted_here.contains(id)),
            );
        }
        if !skipped.is_empty() {
            skipped.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
            skipped.dedup();
            report.recovered = self.fetch_by_id(info, owner, &skipped).await?.0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fieldreport::sync::query::{Literal, start};

    fn ids(read: &ReadSince, forms: Forms) -> Vec<(String, usize)> {
        read.windows(forms).into_iter().map(|(filter, ids)| (filter, ids.len())).collect()
    }

    /// The records never modified are listed as the sync asked for them; the others until a
    /// step after the newest stamp read, the widest step read.
    #[test]
    fn each_part_read_is_listed_to_where_the_server_keeps_it() {
        let forms = [Literal(Some("datetimeoffset")), Literal::DESCRIBED];
        let mut read = ReadSince::new(start(Some("2026-01-01T00:05:00"), Duration::from_secs(300)));
        assert!(ids(&read, forms).is_empty(), "nothing read, nothing skipped after a key");
        read.add_unmodified("1", Some(&Stamp::parse("2026-01-01T00:01:00")));
        read.add_unmodified("2", None);
        read.add_unmodified("3", Some(&Stamp::parse("2025-01-01T00:00:00")));
        read.add("4", &Stamp::parse("2026-01-01T00:06:00.25"));
        read.add("5", &Stamp::parse("2026-01-01T00:06:01"));
        read.add("6", &Stamp::parse("2025-01-01T00:00:00"));
        assert_eq!(
            ids(&read, forms),
            [
                (
                    "DateModified eq null and (DateOfCreation ge datetimeoffset'2026-01-01T00:00:00' or DateOfCreation \
                     eq null)"
                        .to_string(),
                    2
                ),
                (
                    "DateModified ge datetime'2026-01-01T00:00:00' and DateModified lt datetime'2026-01-01T00:06:02'"
                        .to_string(),
                    2
                ),
            ]
        );
        let mut first = ReadSince::new(start(None, Duration::from_secs(300)));
        first.add("7", &Stamp::parse("2026-01-01T00:06:00.1234567Z"));
        assert_eq!(
            ids(&first, [Literal(None); 2]),
            [("DateModified ne null and DateModified lt 2026-01-01T00:06:00.1234568Z".to_string(), 1)]
        );
        first.add("8", &Stamp::parse("no time"));
        assert_eq!(ids(&first, [Literal(None); 2])[0].0, "DateModified ne null and DateModified le no time");
    }
}
