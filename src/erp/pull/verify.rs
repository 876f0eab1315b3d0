//! Lists of a model's ids in id order, and an incremental pull checked against the ERP's count of
//! what it should have read.

use std::collections::HashSet;

use generated::erp::ModelInfo;

use super::position::{Position, check_filtered};
use super::{PullReport, erp_record, id_order};
use crate::erp::{ErpError, ErpService};
use crate::store::erp::ErpRecord;
use crate::upstream::erp::MAX_PAGE_SIZE;

impl ErpService {
    /// After an incremental pull's pages, which read the records `read` and stamps from `from`
    /// through `through`. An ERP that ignores `sort` and serves fewer records than a page asks
    /// (both are allowed: unknown query names are ignored, a short page is no end) may answer
    /// each page in key order, only not the first records of the order: the pull went on from
    /// a page's last key past records the page did not hold, and no look at a page tells it.
    /// So the ERP counts the records stamped from `from` through `through` (`/<model>/count`);
    /// when it counts more than the pull read, their ids are listed (`properties=id,…`, by
    /// `id-gt`) and those the pull did not read are fetched by id, before the cursor moves.
    pub(super) async fn recover_skipped(
        &self,
        info: &ModelInfo,
        owner: &str,
        (from, through): (i64, i64),
        read: &HashSet<String>,
        report: &mut PullReport,
    ) -> Result<(), ErpError> {
        let client = self.client()?;
        let range = vec![
            ("lastModifiedDate-ge".to_string(), from.to_string()),
            ("lastModifiedDate-le".to_string(), through.to_string()),
        ];
        if client.count(info.name, &range).await? <= read.len() as u64 {
            return Ok(());
        }
        let listed = self.list_by_id(info, owner, &range, report).await?;
        let mut skipped: Vec<String> =
            listed.into_iter().map(|record| record.id).filter(|id| !read.contains(id)).collect();
        skipped.sort_by(|a, b| id_order(a, b));
        skipped.dedup();
        let (fetched, written, removed) = self.fetch_by_id(info, owner, skipped.iter().collect()).await?;
        report.fetched += fetched;
        report.updated += written;
        report.removed += removed;
        Ok(())
    }

    /// The ids, versions and stamps (`properties`) of the records `filters` select, in id
    /// order (`id-gt`), each page checked to answer its query, under the pull's lease.
    pub(super) async fn list_by_id(
        &self,
        info: &ModelInfo,
        owner: &str,
        filters: &[(String, String)],
        report: &mut PullReport,
    ) -> Result<Vec<ErpRecord>, ErpError> {
        let client = self.client()?;
        let mut listed = Vec::new();
        let mut position = Position::IdAbove(None);
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
