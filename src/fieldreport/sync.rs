//! Pulling the field-report system into the mirror by OData.
//!
//! A sync of one entity set asks for every record newer than the set's cursor (the newest
//! `DateModified` of the last completed sync) with the set's expand relations, ordered by
//! `DateModified`. It follows the upstream's next links (v4 and v3 spellings) and, where the
//! upstream gives none, pages with `$top`/`$skip` until a short window. Each page is upserted
//! in one transaction without forwarding; the cursor is recorded only when the whole sync
//! completed, so an interrupted sync simply runs again (unchanged records count as such,
//! nothing is duplicated or lost). One sync per set runs at a time across instances: the run
//! holds a lease in the database, renewed with every page.

use std::time::Instant;

use generated::fieldreport::EntityInfo;
use serde::Serialize;
use serde_json::Value;

use super::service::{FieldReportError, FieldReportService, record_id};
use crate::store::fieldreport::{MirrorRecord, Upserted};

/// Records asked for per `$top` window.
const WINDOW: usize = 500;

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
    pub pages: u64,
    pub seconds: f64,
    /// The newest `DateModified` now synced.
    pub cursor: Option<String>,
}

fn query(info: &EntityInfo, cursor: Option<&str>, skip: usize) -> String {
    let mut parts = Vec::new();
    if !info.expand.is_empty() {
        parts.push(("$expand".to_string(), info.expand.join(",")));
    }
    if let Some(cursor) = cursor {
        parts.push(("$filter".to_string(), format!("DateModified gt {cursor}")));
    }
    parts.push(("$orderby".to_string(), "DateModified".to_string()));
    parts.push(("$top".to_string(), WINDOW.to_string()));
    if skip > 0 {
        parts.push(("$skip".to_string(), skip.to_string()));
    }
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(parts).finish()
}

fn mirror_record(record: Value) -> Option<MirrorRecord> {
    let id = record_id(record.get("Id")?)?;
    let version = record.get("Version").and_then(Value::as_i64).unwrap_or(0);
    Some(MirrorRecord { id, version, document: record })
}

impl FieldReportService {
    /// Syncs one entity set; `progress` sees the report after every page.
    pub async fn sync(
        &self,
        info: &EntityInfo,
        progress: &(dyn Fn(&SyncReport) + Sync),
    ) -> Result<SyncReport, FieldReportError> {
        let store = self.store();
        let owner = uuid::Uuid::new_v4().to_string();
        if !store.take_sync_lease(info.route, &owner, store.lease_deadline()).await? {
            return Err(FieldReportError::Conflict(format!("a sync of {} is already running", info.route)));
        }
        let result = self.sync_pages(info, &owner, progress).await;
        match &result {
            Ok(report) => store.finish_sync(info.route, &owner, report.cursor.as_deref()).await?,
            Err(_) => store.release_sync_lease(info.route, &owner).await?,
        }
        result
    }

    async fn sync_pages(
        &self,
        info: &EntityInfo,
        owner: &str,
        progress: &(dyn Fn(&SyncReport) + Sync),
    ) -> Result<SyncReport, FieldReportError> {
        let started = Instant::now();
        let store = self.store();
        let client = self.client()?;
        let previous = store.sync_state(info.route).await?.cursor;
        let mut report = SyncReport { entity: info.route.to_string(), cursor: previous.clone(), ..Default::default() };
        let mut skip = 0;
        loop {
            let window_query = query(info, previous.as_deref(), skip);
            let mut in_window = 0;
            let mut page = client.page(info.set, &window_query, None).await?;
            loop {
                report.pages += 1;
                report.fetched += page.records.len() as u64;
                in_window += page.records.len();
                let mut records = Vec::with_capacity(page.records.len());
                for record in page.records {
                    if let Some(modified) = record.get("DateModified").and_then(Value::as_str)
                        && report.cursor.as_deref().is_none_or(|c| modified > c)
                    {
                        report.cursor = Some(modified.to_string());
                    }
                    match mirror_record(record) {
                        Some(record) => records.push(record),
                        None => report.skipped += 1,
                    }
                }
                // The next page is fetched while this one is stored: the upstream's work and
                // ours overlap (a failed store leaves only a page read for nothing).
                let next_link = page.next_link;
                let fetch_next = async {
                    match &next_link {
                        Some(link) => client.page(info.set, &window_query, Some(link)).await.map(Some),
                        None => Ok(None),
                    }
                };
                let (stored, next_page) = tokio::join!(store.mirror_upsert_page(info.route, &records), fetch_next);
                for outcome in stored? {
                    match outcome {
                        Upserted::Inserted => report.inserted += 1,
                        Upserted::Updated => report.updated += 1,
                        Upserted::Unchanged => report.unchanged += 1,
                    }
                }
                if !store.take_sync_lease(info.route, owner, store.lease_deadline()).await? {
                    return Err(FieldReportError::Conflict(format!("the sync lease of {} was lost", info.route)));
                }
                report.seconds = started.elapsed().as_secs_f64();
                progress(&report);
                self.check_stop()?;
                match next_page? {
                    Some(next) => page = next,
                    None => break,
                }
            }
            if in_window < WINDOW {
                break;
            }
            skip += WINDOW;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_carries_expand_cursor_order_and_window() {
        let info = generated::fieldreport::by_set("Companies").unwrap();
        let q = query(info, Some("2026-01-01T00:00:00Z"), 500);
        assert_eq!(
            q,
            "%24expand=Contacts%2CTags%2CServiceObjects%2CMainContact&%24filter=DateModified+gt+2026-01-01T00%3A00%3A00Z&%24orderby=DateModified&%24top=500&%24skip=500"
        );
        let tags = generated::fieldreport::by_set("Tags").unwrap();
        assert_eq!(query(tags, None, 0), "%24orderby=DateModified&%24top=500");
    }
}
