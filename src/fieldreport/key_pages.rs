//! Reading a set back by key (`?after=<cursor>&limit=N`): pages in key order whose cost does
//! not depend on their depth, and which a record inserted or deleted meanwhile never shifts
//! (see `src/store/key_pages.rs`). Paging by position (`page`, `per_page`) stays for existing
//! callers.

use generated::fieldreport::EntityInfo;
use serde_json::value::RawValue;

use super::service::{FieldReportError, FieldReportService, MAX_PER_PAGE};
use crate::vocabulary::field_errors::FieldErrors;
use crate::vocabulary::key_page::key_page;

/// Records of a page when the caller names no `limit`.
pub const DEFAULT_LIMIT: u32 = 50;

/// One page of records after a key, each document as stored.
#[derive(Debug)]
pub struct KeyPage {
    pub records: Vec<Box<RawValue>>,
    /// The Id of the page's last record when more records follow it: the key of the next page.
    /// None on the last page.
    pub next: Option<String>,
}

/// The limit asked, or a field error naming `limit`.
pub fn checked_limit(limit: Option<u32>) -> Result<u32, FieldErrors> {
    match limit.unwrap_or(DEFAULT_LIMIT) {
        limit @ 1..=MAX_PER_PAGE => Ok(limit),
        _ => Err(FieldErrors::from([("limit".to_string(), vec![format!("limit is 1 to {MAX_PER_PAGE}.")])])),
    }
}

impl FieldReportService {
    /// Up to `limit` records (default 50, at most 500) of a set after the record with Id
    /// `after` (from the start without one), in key order: numeric Ids in numeric order.
    pub async fn list_after(
        &self,
        entity: &EntityInfo,
        after: Option<&str>,
        limit: Option<u32>,
    ) -> Result<KeyPage, FieldReportError> {
        let limit = checked_limit(limit).map_err(FieldReportError::Invalid)?;
        let rows = self.store().mirror_after(entity.route, after, i64::from(limit) + 1).await?;
        let (rows, next) = key_page(rows, limit, |(id, _)| id.clone());
        Ok(KeyPage { records: rows.into_iter().map(|(_, document)| document).collect(), next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_one_to_the_page_size() {
        assert_eq!(checked_limit(None), Ok(DEFAULT_LIMIT));
        assert!(checked_limit(Some(0)).is_err() && checked_limit(Some(MAX_PER_PAGE + 1)).is_err());
    }
}
