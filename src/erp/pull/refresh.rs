//! `update/{model}/{id}`: one record fetched again by id.

use generated::erp::ModelInfo;

use super::{PullReport, check_id, erp_record};
use crate::erp::{ErpError, ErpService};

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
        match self.client()?.get(info.name, id).await? {
            Some(document) => {
                report.fetched = 1;
                let record = erp_record(document).ok_or_else(|| {
                    ErpError::Upstream(crate::upstream::UpstreamError::Malformed {
                        system: crate::upstream::System::Erp,
                        detail: format!("{} {id} came without an id", info.name),
                    })
                })?;
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
}
