//! `update/{model}/{id}`: one record fetched again by id.

use generated::erp::ModelInfo;

use super::{PullReport, check_id, erp_record};
use crate::erp::{ErpError, ErpService};
use crate::store::erp::ErpRecord;
use crate::upstream::{System, UpstreamError};

impl ErpService {
    /// Re-fetches one record by id: stored when the ERP has it, removed locally (with its mapped
    /// field-report record) when not. A record that left the mirror while the answer was on
    /// its way (a delete webhook processed meanwhile) may have been read before the ERP
    /// deleted it: it is asked for once more.
    pub async fn refresh_one(&self, info: &ModelInfo, id: &str) -> Result<PullReport, ErpError> {
        check_id(id)?;
        let asked_at = crate::store::now_ms();
        let report = self.refresh_once(info, id).await?;
        if report.removed == 0 && self.removed_since(info, asked_at, id).await? {
            return self.refresh_once(info, id).await;
        }
        Ok(report)
    }

    /// One fetch of [`Self::refresh_one`].
    async fn refresh_once(&self, info: &ModelInfo, id: &str) -> Result<PullReport, ErpError> {
        let mut report = PullReport::new(info.name);
        match self.fetch_record(info, id).await? {
            Some(record) => {
                report.fetched = 1;
                for outcome in self.store().erp_upsert(info.name, &[record]).await? {
                    report.count(outcome);
                }
            }
            None => {
                if self.remove_gone(info, id).await?.0 {
                    report.removed = 1;
                } else {
                    return Err(ErpError::NotFound { model: info.name.into(), id: id.into() });
                }
            }
        }
        Ok(report)
    }

    /// Record `id` as the ERP has it now; `None` when the ERP answers that it has none (404).
    /// Every read of one record by id goes through here (a webhook call, a refresh, a pull's
    /// confirmation of an absence). An answer without an id (a proxy's page, a document cut
    /// short) says nothing of the record: it is an error, never its absence, which would
    /// remove the record here and delete its mapped field-report record upstream.
    pub(crate) async fn fetch_record(&self, info: &ModelInfo, id: &str) -> Result<Option<ErpRecord>, ErpError> {
        let Some(document) = self.client()?.get(info.name, id).await? else { return Ok(None) };
        let record = erp_record(document).ok_or_else(|| UpstreamError::Malformed {
            system: System::Erp,
            detail: format!("{} {id} came without an id", info.name),
        })?;
        Ok(Some(record))
    }
}
