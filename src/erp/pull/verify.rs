//! Lists of a model's ids in id order, and the pulls and reconcilings checked against the ERP's
//! count of what they should have read.
//!
//! A list by id goes on after the greatest id of the page before (`id-gt`), which is right only
//! when the ERP sent the lowest ids left: an ERP that ignores `sort` (it ignores unknown query
//! names, and may treat a sort it cannot apply alike) and keeps its records in another order
//! than their ids' (the order they were last written, say), serving pages shorter than asked,
//! answers each page in id order, yet not the lowest ids, and the query after it selects none
//! of those it left out. The same holds for an incremental pull's key (`lastModifiedDate`,
//! `id`). No look at a page tells it, so the ERP counts what the pages should have held
//! (`/<model>/count`); when it counts more than they held, the ranges between the ids read are
//! counted and listed again until each lists what it counts (see [`ErpService::unlisted`]).

use std::collections::HashSet;

use generated::erp::ModelInfo;

use super::position::{Position, check_filtered};
use super::{PullReport, erp_record, id_order};
use crate::erp::{ErpError, ErpService};
use crate::store::erp::ErpRecord;
use crate::upstream::erp::MAX_PAGE_SIZE;
use crate::upstream::{System, UpstreamError};

/// A range of ids between two ids (neither included; `None`: no end on that side).
type IdRange = (Option<String>, Option<String>);

impl ErpService {
    /// After a pull's pages, which read the records `read` of those `filters` select (every
    /// record for a full pull, the matching ones, or for an incremental pull those stamped from
    /// where it started through the newest stamp it read): the records the ERP counts there and
    /// the pages did not hold are listed (see [`Self::unlisted`]) and fetched by id, before the
    /// cursor moves; their ids.
    pub(super) async fn recover_skipped(
        &self,
        info: &ModelInfo,
        owner: &str,
        filters: &[(String, String)],
        read: &HashSet<String>,
        report: &mut PullReport,
    ) -> Result<Vec<String>, ErpError> {
        let listed = self.unlisted(info, owner, filters, read, report).await?;
        let mut skipped: Vec<String> = listed.into_iter().map(|record| record.id).collect();
        if skipped.is_empty() {
            return Ok(skipped);
        }
        skipped.sort_by(|a, b| id_order(a, b));
        skipped.dedup();
        let (fetched, written, removed) = self.fetch_by_id(info, owner, skipped.iter().collect()).await?;
        report.fetched += fetched;
        report.updated += written;
        report.removed += removed;
        Ok(skipped)
    }

    /// A reconciling's list: the ids, versions and stamps of every record, checked against the
    /// ERP's count.
    pub(super) async fn list_counted(
        &self,
        info: &ModelInfo,
        owner: &str,
        report: &mut PullReport,
    ) -> Result<Vec<ErpRecord>, ErpError> {
        let mut listed = self.list_by_id(info, owner, &[], None, report).await?;
        let ids = listed.iter().map(|record| record.id.clone()).collect();
        listed.extend(self.unlisted(info, owner, &[], &ids, report).await?);
        Ok(listed)
    }

    /// The records `filters` select that the ERP counts and that are not among `listed`: none
    /// when it counts no more than were listed. Else each range between listed ids, the whole
    /// at first, is counted (`id-gt`, `id-lt`): one that holds more than was listed in it is
    /// halved at its middle listed id, and one with no listed id inside is listed (from its
    /// lower end), then counted again with what that brought. A range counted above what it
    /// holds whose listing brings no id not known before is an ERP that counts records it does
    /// not list: the pull cannot tell what it skipped, and fails.
    async fn unlisted(
        &self,
        info: &ModelInfo,
        owner: &str,
        filters: &[(String, String)],
        listed: &HashSet<String>,
        report: &mut PullReport,
    ) -> Result<Vec<ErpRecord>, ErpError> {
        let client = self.client()?;
        if client.count(info.name, filters).await? <= listed.len() as u64 {
            return Ok(Vec::new());
        }
        let mut known: Vec<String> = listed.iter().cloned().collect();
        known.sort_by(|a, b| id_order(a, b));
        let mut found = Vec::new();
        let mut ranges: Vec<IdRange> = vec![(None, None)];
        while let Some((above, below)) = ranges.pop() {
            let first = above.as_ref().map_or(0, |above| known.partition_point(|id| id_order(id, above).is_le()));
            let end =
                below.as_ref().map_or(known.len(), |below| known.partition_point(|id| id_order(id, below).is_lt()));
            let inside = end.saturating_sub(first);
            let mut range = filters.to_vec();
            range.extend(below.clone().map(|below| ("id-lt".to_string(), below)));
            let mut counted = range.clone();
            counted.extend(above.clone().map(|above| ("id-gt".to_string(), above)));
            if client.count(info.name, &counted).await? <= inside as u64 {
                continue;
            }
            if inside > 0 {
                let middle = known[first + inside / 2].clone();
                ranges.push((above, Some(middle.clone())));
                ranges.push((Some(middle), below));
                continue;
            }
            let records = self.list_by_id(info, owner, &range, above.clone(), report).await?;
            let new: Vec<ErpRecord> = records
                .into_iter()
                .filter(|record| known.binary_search_by(|id| id_order(id, &record.id)).is_err())
                .collect();
            if new.is_empty() {
                let query = counted.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>();
                let detail = format!("{} counts records for `{}` that it does not list", info.name, query.join("&"));
                return Err(UpstreamError::Malformed { system: System::Erp, detail }.into());
            }
            for record in &new {
                let at = known.partition_point(|id| id_order(id, &record.id).is_lt());
                known.insert(at, record.id.clone());
            }
            found.extend(new);
            ranges.push((above, below));
        }
        Ok(found)
    }

    /// The ids, versions and stamps (`properties`) of the records `filters` select with an id
    /// above `above` (every one for `None`), in id order (`id-gt`), each page checked to answer
    /// its query, under the pull's lease.
    pub(super) async fn list_by_id(
        &self,
        info: &ModelInfo,
        owner: &str,
        filters: &[(String, String)],
        above: Option<String>,
        report: &mut PullReport,
    ) -> Result<Vec<ErpRecord>, ErpError> {
        let client = self.client()?;
        let mut listed = Vec::new();
        let mut position = Position::IdAbove(above);
        loop {
            let mut query = filters.to_vec();
            query.extend(position.query());
            query.push(("properties".into(), "id,version,lastModifiedDate".into()));
            query.push(("pageSize".into(), MAX_PAGE_SIZE.to_string()));
            let records: Vec<ErpRecord> =
                client.list(info.name, &query).await?.into_iter().filter_map(erp_record).collect();
            report.pages += 1;
            check_filtered(info, &position, &query, &records)?;
            let next = position.next(&records);
            listed.extend(records);
            match self.go_on(info, owner, next).await? {
                Some(next) => position = next,
                None => return Ok(listed),
            }
        }
    }
}
