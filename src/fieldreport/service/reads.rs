//! The reads of the local mirror: one record, a search, a page.

use generated::fieldreport::EntityInfo;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{FieldReportError, FieldReportService, MAX_PER_PAGE, Page, invalid};
use crate::store::fieldreport::records::MirrorRecord;
use crate::vocabulary::field_errors::FieldErrors;

impl FieldReportService {
    pub(super) async fn load(&self, entity: &EntityInfo, id: &str) -> Result<MirrorRecord, FieldReportError> {
        self.store
            .mirror_get(entity.route, id)
            .await?
            .ok_or_else(|| FieldReportError::NotFound { entity: entity.route.into(), id: id.into() })
    }

    /// A record as stored (never parsed: it is answered as it is).
    pub async fn show(&self, entity: &EntityInfo, id: &str) -> Result<Box<RawValue>, FieldReportError> {
        self.store
            .mirror_document(entity.route, id)
            .await?
            .ok_or_else(|| FieldReportError::NotFound { entity: entity.route.into(), id: id.into() })
    }

    /// Records whose top-level field `attribute` equals `value` (compared as text) or, without
    /// a value, has any non-null value; by Id, at most 500.
    pub async fn find(
        &self,
        entity: &EntityInfo,
        attribute: &str,
        value: Option<&str>,
    ) -> Result<Vec<Value>, FieldReportError> {
        let valid = !attribute.is_empty()
            && attribute.len() <= 64
            && attribute.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(invalid("attribute", "A field name: letters, digits and _, at most 64 characters."));
        }
        let records = match value {
            Some(value) => self.store.mirror_find(entity.route, attribute, value).await?,
            None => self.store.mirror_having(entity.route, attribute).await?,
        };
        Ok(records.into_iter().map(|r| r.document).collect())
    }

    /// The record mapped from another system's record by its `ExternalId`, if there is one.
    pub async fn find_by_external_id(
        &self,
        entity: &EntityInfo,
        external_id: &str,
    ) -> Result<Option<Value>, FieldReportError> {
        Ok(self.store.mirror_by_external_id(entity.route, external_id).await?.map(|r| r.document))
    }

    pub async fn list(
        &self,
        entity: &EntityInfo,
        page: Option<u32>,
        per_page: Option<u32>,
    ) -> Result<Page, FieldReportError> {
        let page = page.unwrap_or(1);
        let per_page = per_page.unwrap_or(50);
        let mut errors = FieldErrors::new();
        if page == 0 {
            errors.insert("page".into(), vec!["page starts at 1.".into()]);
        }
        if per_page == 0 || per_page > MAX_PER_PAGE {
            errors.insert("per_page".into(), vec![format!("per_page must be between 1 and {MAX_PER_PAGE}.")]);
        }
        if !errors.is_empty() {
            return Err(FieldReportError::Invalid(errors));
        }
        let offset = i64::from(page - 1) * i64::from(per_page);
        let (records, total) = self.store.mirror_page(entity.route, offset, i64::from(per_page)).await?;
        Ok(Page { records, page, per_page, total })
    }
}
