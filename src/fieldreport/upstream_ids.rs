//! The Ids and versions of a set as a reconciling reads them (`$select=Id,Version`), or of the
//! records of a `$filter` as a sync checks what it read (`sync/verify.rs`), in key
//! windows (`Id gt <last>`, never `$skip`, so that a record deleted meanwhile cannot shift
//! another out of sight), each checked against the server's count.
//!
//! A window goes on from the highest Id of the page before, which is right only when the server
//! sent the lowest Ids of the window: a server that ignores `$orderby=Id` and pages below what
//! is asked sends others, and the Ids below the highest that it left out would never be asked
//! for again. No look at a page tells it (its records may well be in ascending order), so the
//! server is asked how many records it has up to that Id (`<Set>/$count?$filter=…`): when it
//! counts more than it listed, the range is listed again in halves until every part lists what
//! it counts. A single Id counted and never listed (a row the server withholds after paging,
//! say) is asked for by Id. A server that cannot count (an error, or no number) leaves the
//! listing unverified, and the report says so; so does one whose counts never meet what it
//! lists (a count that disagrees with the listing would have it halve without end): at most
//! [`LISTED_AGAIN_AT_MOST`] parts halved from parts that listed no Id not listed before are
//! listed again, then the listing goes on uncounted. A count
//! answered with a server error, busy or away (a 5xx but 501 Not Implemented, or a refusal
//! asking for a wait) fails the listing, as the same answer to a page does.

use std::collections::{HashMap, HashSet};

use generated::fieldreport::EntityInfo;
use serde_json::Value;

use super::service::{FieldReportError, FieldReportService, record_id};
use crate::upstream::{System, UpstreamError};
use crate::vocabulary::json_integer::json_integer;

/// Ids asked for per request.
const WINDOW: usize = 500;

/// Parts of ranges listed again (halves) at most by one listing, of those halved from a part
/// that listed no Id not listed before. A server whose count disagrees with its listing (it
/// counts rows that no `$filter` of Ids lists) has every part halved again down to single Ids,
/// across the whole Int64 range: a listing that never ends, holding the set's lease, whose
/// parts list nothing new. A server that ignores `$orderby=Id` has a few parts listed again for
/// each page it served out of its order, about two for every five Ids of a set it lists
/// backwards ten a page, and each lists Ids not listed before: those are not counted here (a
/// fixed number of parts left a set of a few thousand Ids listed backwards uncounted, its lowest
/// Ids never asked for). A part listing an Id not listed before is no runaway: the server has as
/// many Ids as it has, so there are at most twice as many such parts.
const LISTED_AGAIN_AT_MOST: usize = 1_000;

/// What a reconciling read of the upstream's Ids.
#[derive(Default)]
pub(super) struct UpstreamIds {
    /// Every Id listed, with its version.
    pub(super) versions: HashMap<String, i64>,
    /// Ids the server counted and never listed: asked for by Id.
    pub(super) counted_unlisted: Vec<String>,
    /// The server could not count, or its counts never met what it listed: Ids it skipped
    /// could not be told.
    pub(super) unverified: bool,
    /// Parts listed again so far that were halved from a part listing nothing new (see
    /// [`LISTED_AGAIN_AT_MOST`]).
    listed_again: usize,
}

impl UpstreamIds {
    /// Queues `parts` to be listed again, halved from a part that listed an Id not listed
    /// before (`fruitful`) or while the listing may list parts again; past that, the listing
    /// is unverified, and no part is counted any more.
    fn list_again(&mut self, ranges: &mut Vec<Range>, parts: Vec<Range>, fruitful: bool) {
        if fruitful {
            ranges.extend(parts);
            return;
        }
        if self.listed_again + parts.len() > LISTED_AGAIN_AT_MOST {
            self.unverified = true;
            return;
        }
        self.listed_again += parts.len();
        ranges.extend(parts);
    }
}

/// The Ids above `lo` and up to `hi` (`i128`, so that the whole Int64 range is one).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    lo: i128,
    hi: i128,
}

impl Range {
    const ALL: Range = Range { lo: i64::MIN as i128 - 1, hi: i64::MAX as i128 };

    /// The `$filter` of the Ids of the range among the records `within` holds (all without).
    fn filter(&self, within: Option<&str>) -> Option<String> {
        let above = (self.lo >= i64::MIN as i128).then(|| format!("Id gt {}L", self.lo));
        let to = (self.hi < i64::MAX as i128).then(|| format!("Id le {}L", self.hi));
        let within = within.map(|within| format!("({within})"));
        let terms: Vec<String> = [within, above, to].into_iter().flatten().collect();
        (!terms.is_empty()).then(|| terms.join(" and "))
    }

    /// The parts of the whole range but for every run of at least [`WINDOW`] consecutive Ids
    /// that `read` holds: no other record has an Id within such a run, so it need not be
    /// listed (a set read whole lists nothing again). Shorter runs are listed: each part costs
    /// at least a list and a count, more than a run shorter than a window saves.
    fn around(read: &HashSet<String>) -> Vec<Range> {
        let mut ids: Vec<i128> = read.iter().filter_map(|id| id.parse::<i64>().ok()).map(i128::from).collect();
        ids.sort_unstable();
        let mut parts = Vec::new();
        let mut lo = Range::ALL.lo;
        for run in ids.chunk_by(|a, b| b - a == 1).filter(|run| run.len() >= WINDOW) {
            parts.push(Range { lo, hi: run[0] - 1 });
            lo = run[run.len() - 1];
        }
        parts.push(Range { lo, hi: Range::ALL.hi });
        parts.retain(|part| part.hi > part.lo);
        parts
    }

    fn holds(&self, id: i64) -> bool {
        (self.lo..=self.hi).contains(&i128::from(id)) && i128::from(id) != self.lo
    }

    /// The parts to list again of a range whose server counted more than it listed (`listed`,
    /// ascending, within it): each narrower than the range, together the range but for what
    /// was listed at its ends.
    fn halves(self, listed: &[i64]) -> Vec<Range> {
        let parts = match listed {
            [] => {
                let middle = self.lo + (self.hi - self.lo) / 2;
                [Range { lo: self.lo, hi: middle }, Range { lo: middle, hi: self.hi }]
            }
            [only] => [Range { lo: self.lo, hi: i128::from(*only) - 1 }, Range { lo: i128::from(*only), hi: self.hi }],
            _ => {
                let middle = i128::from(listed[(listed.len() - 1) / 2]);
                [Range { lo: self.lo, hi: middle }, Range { lo: middle, hi: self.hi }]
            }
        };
        parts.into_iter().filter(|part| part.hi > part.lo).collect()
    }
}

impl FieldReportService {
    /// Every Id the field-report system has in the set, with its version (see the module's
    /// description); the lease is renewed with every request.
    pub(super) async fn upstream_ids(&self, info: &EntityInfo, owner: &str) -> Result<UpstreamIds, FieldReportError> {
        self.upstream_ids_in(info, owner, None, vec![Range::ALL]).await
    }

    /// The Ids of the records the `$filter` `within` holds, with their versions, read as
    /// [`Self::upstream_ids`] reads them, but for the runs of consecutive Ids that `read` holds
    /// (see [`Range::around`]): a sync checks with it what it read in key order.
    pub(super) async fn upstream_ids_besides(
        &self,
        info: &EntityInfo,
        owner: &str,
        within: &str,
        read: &HashSet<String>,
    ) -> Result<UpstreamIds, FieldReportError> {
        self.upstream_ids_in(info, owner, Some(within), Range::around(read)).await
    }

    /// The Ids of the records the `$filter` `within` holds (every one without) in `ranges`.
    async fn upstream_ids_in(
        &self,
        info: &EntityInfo,
        owner: &str,
        within: Option<&str>,
        mut ranges: Vec<Range>,
    ) -> Result<UpstreamIds, FieldReportError> {
        let mut read = UpstreamIds::default();
        while let Some(range) = ranges.pop() {
            let known = read.versions.len();
            let listed = self.list_ids(info, owner, &range, within, &mut read.versions).await?;
            let fruitful = read.versions.len() > known;
            let Some(&highest) = listed.last() else {
                // The end of the range, if the server counts none in it.
                match self.count_ids(info, &range, within, &mut read).await? {
                    Some(counted) if counted > 0 && range.hi == range.lo + 1 => {
                        read.counted_unlisted.push(range.hi.to_string());
                    }
                    Some(counted) if counted > 0 => read.list_again(&mut ranges, range.halves(&[]), false),
                    _ => {}
                }
                continue;
            };
            if i128::from(highest) < range.hi {
                ranges.push(Range { lo: i128::from(highest), hi: range.hi });
            }
            let window = Range { lo: range.lo, hi: i128::from(highest) };
            if self
                .count_ids(info, &window, within, &mut read)
                .await?
                .is_some_and(|counted| counted > listed.len() as u64)
            {
                read.list_again(&mut ranges, window.halves(&listed), fruitful);
            }
        }
        Ok(read)
    }

    /// The Ids of one page of `range` (the lowest, if the server keeps to `$orderby`), in
    /// ascending order; each with its version in `versions`.
    async fn list_ids(
        &self,
        info: &EntityInfo,
        owner: &str,
        range: &Range,
        within: Option<&str>,
        versions: &mut HashMap<String, i64>,
    ) -> Result<Vec<i64>, FieldReportError> {
        self.check_stop()?;
        let store = self.store();
        if !store.take_sync_lease(info.route, owner, store.lease_deadline()).await? {
            return Err(FieldReportError::Conflict(format!("the sync lease of {} was lost", info.route)));
        }
        let mut params = vec![("$select", "Id,Version".to_string()), ("$orderby", "Id".to_string())];
        params.extend(range.filter(within).map(|filter| ("$filter", filter)));
        params.push(("$top", WINDOW.to_string()));
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(params).finish();
        // An empty page with a next link is no end of the set (see `page_with_records`): the
        // Ids after it would be taken for deleted.
        let page = self.client()?.page_with_records(info.set, &query).await?;
        let malformed =
            |detail: String| FieldReportError::from(UpstreamError::Malformed { system: System::FieldReport, detail });
        let mut listed = Vec::with_capacity(page.records.len());
        for record in &page.records {
            let value: Value = crate::upstream::parse_json(System::FieldReport, record.get())?;
            let id = value
                .get("Id")
                .and_then(record_id)
                .ok_or_else(|| malformed(format!("a record of {} without an Id in a list of Ids", info.set)))?;
            let number = id
                .parse::<i64>()
                .map_err(|_| malformed(format!("{} has the Id {id:?}, not an Int64 key", info.set)))?;
            if range.holds(number) {
                listed.push(number);
            }
            versions.insert(id, value.get("Version").and_then(json_integer).unwrap_or(0));
        }
        if listed.is_empty() && !page.records.is_empty() {
            let filter = range.filter(within).unwrap_or_default();
            return Err(malformed(format!("{} answered `{filter}` with no Id it holds", info.set)));
        }
        listed.sort_unstable();
        listed.dedup();
        Ok(listed)
    }

    /// How many records of `range` the server counts; `None` once it could not count (the
    /// listing is then unverified, and it is not asked again).
    async fn count_ids(
        &self,
        info: &EntityInfo,
        range: &Range,
        within: Option<&str>,
        read: &mut UpstreamIds,
    ) -> Result<Option<u64>, FieldReportError> {
        if read.unverified {
            return Ok(None);
        }
        let counted = self.count_records(info, range.filter(within).as_deref()).await?;
        read.unverified = counted.is_none();
        Ok(counted)
    }

    /// How many records of the set `filter` holds (all without), as the server counts them;
    /// `None` for a server that cannot count.
    async fn count_records(&self, info: &EntityInfo, filter: Option<&str>) -> Result<Option<u64>, FieldReportError> {
        match self.client()?.count(info.set, filter).await {
            Ok(counted) => Ok(Some(counted)),
            // A server error, busy or away (after the retries of a transient failure): no word
            // on whether it counts (a 500 is as often a count that timed out in its database),
            // and a page so answered fails the sync, so the count does too (a `Retry-After`
            // answers `upstream_busy`). Taken for a server that does not count, the sync
            // completed unverified, its cursor past the records it skipped. Only 501 (Not
            // Implemented) says that it does not count.
            Err(error @ UpstreamError::Refused { status: 500 | 502..=599, .. })
            | Err(error @ UpstreamError::Refused { retry_after: Some(_), .. }) => Err(error.into()),
            // Refused otherwise (a 4xx, 501) or no number: a server that does not count, which
            // fails no reconciling.
            Err(UpstreamError::Refused { .. } | UpstreamError::Malformed { .. }) => Ok(None),
            Err(other) => Err(other.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::Range;

    #[test]
    fn ranges_are_asked_with_the_bounds_they_have() {
        assert_eq!(Range::ALL.filter(None), None);
        assert_eq!(Range { lo: 5, hi: Range::ALL.hi }.filter(None).unwrap(), "Id gt 5L");
        assert_eq!(Range { lo: Range::ALL.lo, hi: 9 }.filter(None).unwrap(), "Id le 9L");
        assert_eq!(Range { lo: 5, hi: 9 }.filter(None).unwrap(), "Id gt 5L and Id le 9L");
        assert_eq!(Range::ALL.filter(Some("A or B")).unwrap(), "(A or B)");
        assert_eq!(Range { lo: 5, hi: 9 }.filter(Some("A")).unwrap(), "(A) and Id gt 5L and Id le 9L");
        assert!(Range { lo: 5, hi: 9 }.holds(9) && !Range { lo: 5, hi: 9 }.holds(5));
        assert!(Range::ALL.holds(i64::MIN) && Range::ALL.holds(i64::MAX));
    }

    /// Every part is narrower than the range, and together they hold every Id of it but the
    /// listed ones at its ends: halving ends.
    #[test]
    fn halves_are_narrower_and_cover_the_range() {
        let range = Range { lo: 0, hi: 100 };
        for listed in [vec![], vec![40], vec![1], vec![100], vec![10, 20], vec![3, 50, 99]] {
            let parts = range.halves(&listed);
            for part in &parts {
                assert!(part.hi - part.lo < range.hi - range.lo, "{listed:?}: {part:?}");
            }
            for id in 1..=100 {
                let covered = parts.iter().any(|part| part.holds(id));
                assert!(covered || listed.contains(&id), "{listed:?}: {id}");
            }
        }
        assert_eq!(Range::ALL.halves(&[]).len(), 2);
    }

    /// Runs of a window of consecutive Ids read are left out, shorter ones and the gaps kept.
    #[test]
    fn runs_read_whole_are_not_listed() {
        let ids = |ids: &mut dyn Iterator<Item = i64>| ids.map(|id| id.to_string()).collect::<HashSet<_>>();
        assert_eq!(Range::around(&ids(&mut (1..=499))), [Range::ALL]);
        let read = ids(&mut (1..=500).chain(600..=1_099).chain([2_000]));
        assert_eq!(
            Range::around(&read),
            [Range { lo: Range::ALL.lo, hi: 0 }, Range { lo: 500, hi: 599 }, Range { lo: 1_099, hi: Range::ALL.hi }]
        );
        let ends = ids(&mut (i64::MIN..i64::MIN + 500).chain(i64::MAX - 499..=i64::MAX));
        assert_eq!(Range::around(&ends), [Range { lo: i128::from(i64::MIN + 499), hi: i128::from(i64::MAX - 500) }]);
    }
}
