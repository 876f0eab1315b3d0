//! `fieldReportPost`: the ERP → field-report mapping run over the mirror, written with
//! forwarding, so the field-report system gets every mapped record.
//!
//! For each mapped ERP record the field-report record with `ExternalId` = the ERP id is looked
//! up locally: if it has reached the field-report system (a numeric Id) it is updated when the
//! mapping changes something; if it only exists locally (a placeholder Id from a webhook) or
//! not at all, it is created upstream (the local placeholder is then replaced by the record
//! with the upstream's Id). After a create, the field-report Id is kept on the ERP record as
//! the custom attribute `fieldReportId` (when the ERP defines it for the model), pending a push
//! with `entityPushAttr`.

use serde::Serialize;
use serde_json::Value;

use super::attributes::FIELD_REPORT_ID_KEY;
use super::mapping::{self, MAPPINGS, Mapping};
use super::{ErpError, ErpService, RecordError};
use crate::fieldreport::service::{entity_named, record_id};
use crate::store::erp::ErpRecord;

/// What a post of one mapping did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct PostReport {
    pub model: String,
    pub entity: String,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub failed: u64,
    /// ERP records on which the `fieldReportId` attribute was set (pending a push).
    pub attributes_marked: u64,
    pub errors: Vec<RecordError>,
}

enum Posted {
    Created(String),
    Updated,
    Unchanged,
}

impl ErpService {
    /// Posts the mapped records of every mapping, of one model, or one record of a model.
    pub async fn post_to_field_report(
        &self,
        model: Option<&str>,
        id: Option<&str>,
    ) -> Result<Vec<PostReport>, ErpError> {
        let mappings: Vec<&Mapping> = match model {
            None => MAPPINGS.iter().collect(),
            Some(name) => {
                let info = super::model_named(name)?;
                let mapping = mapping::mapping_for(info.name).ok_or_else(|| ErpError::Invalid {
                    field: "request".into(),
                    message: format!(
                        "{name} has no field-report mapping; mapped models: {}",
                        MAPPINGS.iter().map(|m| m.model).collect::<Vec<_>>().join(", ")
                    ),
                })?;
                vec![mapping]
            }
        };
        self.fieldreport().client_ready()?;
        let mut reports = Vec::new();
        for mapping in mappings {
            let records = match id {
                Some(id) => vec![
                    self.store()
                        .erp_get(mapping.model, id)
                        .await?
                        .ok_or_else(|| ErpError::NotFound { model: mapping.model.into(), id: id.into() })?,
                ],
                None => self.store().erp_all(mapping.model).await?,
            };
            let field_report_id = self.definitions_for(mapping.model, None).await?.into_iter().find_map(|d| {
                (d.get("attributeKey").and_then(Value::as_str) == Some(FIELD_REPORT_ID_KEY))
                    .then(|| d.get("id").and_then(Value::as_str).map(str::to_string))
                    .flatten()
            });
            let mut report =
                PostReport { model: mapping.model.into(), entity: mapping.entity.into(), ..Default::default() };
            for record in records {
                match self.post_one(mapping, &record).await {
                    Ok(Posted::Created(new_id)) => {
                        report.created += 1;
                        if let Some(definition) = &field_report_id
                            && self.set_attribute(mapping.model, &record.id, definition, &new_id).await?
                        {
                            report.attributes_marked += 1;
                        }
                    }
                    Ok(Posted::Updated) => report.updated += 1,
                    Ok(Posted::Unchanged) => report.unchanged += 1,
                    Err(error @ ErpError::Store(_)) => return Err(error),
                    Err(error) => {
                        report.failed += 1;
                        report.errors.push(RecordError::new(mapping.model, Some(&record.id), error.to_string()));
                    }
                }
            }
            reports.push(report);
        }
        Ok(reports)
    }

    async fn post_one(&self, mapping: &Mapping, record: &ErpRecord) -> Result<Posted, ErpError> {
        let info = entity_named(mapping.entity)?;
        let fields = (mapping.map)(&record.document)
            .map_err(|message| ErpError::Invalid { field: mapping.model.into(), message })?;
        let existing = self.mapped_record(mapping, &record.id).await?;
        let existing_id = existing.as_ref().and_then(|e| record_id(&e["Id"]));
        match (existing, existing_id) {
            (Some(existing), Some(id)) if !mapping::is_placeholder(&id) => {
                if mapping::already_applied(&existing, &fields) {
                    return Ok(Posted::Unchanged);
                }
                self.fieldreport().update_forwarded(info, &id, Value::Object(fields)).await?;
                Ok(Posted::Updated)
            }
            (existing, placeholder) => {
                // New upstream: the local fields (if any) with the mapped ones over them.
                let mut body = match existing {
                    Some(Value::Object(local)) => local,
                    _ => Default::default(),
                };
                body.extend(fields);
                body.insert("Id".into(), Value::String("0".into()));
                body.entry("Version").or_insert(Value::from(1));
                for system in ["DateModified", "DateOfCreation"] {
                    body.remove(system);
                }
                let created = self.fieldreport().create_forwarded(info, Value::Object(body)).await?;
                if let Some(placeholder) = placeholder {
                    self.fieldreport().delete_pending(info, &placeholder).await?;
                }
                Ok(Posted::Created(record_id(&created.data["Id"]).unwrap_or_default()))
            }
        }
    }
}
