//! Custom attributes: the ERP's `customAttributeDefinition` records and the values each record
//! carries in `customAttributes` (`[{attributeDefinitionId, stringValue | numberValue | …}]`).
//!
//! `entityPullAttr` pulls the definitions and a model's records (with their values) into the
//! mirror. Values the service sets locally (e.g. `fieldReportId` after a record reached the
//! field-report system) are marked pending on the record; `entityPushAttr` sends them back
//! with `PUT /<model>/id/{id}?ignoreMissingProperties=true`, carrying the mirrored `version`,
//! so a record changed in the ERP since it was pulled is refused (409) and reported, not
//! overwritten. The ERP replaces the whole `customAttributes` list on such a PUT, so a push
//! sends the record's full list.

use generated::erp::ModelInfo;
use serde::Serialize;
use serde_json::{Value, json};

use super::pull::{PullKind, erp_record};
use super::{ErpError, ErpService, RecordError};
use crate::store::erp::ErpRecord;
use crate::upstream::UpstreamError;

/// The ERP model holding the definitions.
pub const DEFINITIONS: &str = "customAttributeDefinition";

/// The definition key under which the field-report Id of a mapped record is kept.
pub const FIELD_REPORT_ID_KEY: &str = "fieldReportId";

/// Whether a definition applies to `model` (its `entities` list, or its
/// `attributeEntityType`, compared without case).
pub fn applies_to(definition: &Value, model: &str) -> bool {
    let listed = definition
        .get("entities")
        .and_then(Value::as_array)
        .is_some_and(|entities| entities.iter().any(|e| e.as_str().is_some_and(|e| e.eq_ignore_ascii_case(model))));
    let typed =
        definition.get("attributeEntityType").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case(model));
    listed || typed
}

fn definition_id(value: &Value) -> Option<&str> {
    value.get("attributeDefinitionId").and_then(Value::as_str)
}

/// What a custom attribute pull did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct AttributePullReport {
    pub model: String,
    /// Definitions pulled (all of the ERP's).
    pub definitions: u64,
    /// Definitions that apply to the model (or the one asked for).
    pub applicable: Vec<String>,
    pub records: u64,
    /// Values of the applicable definitions found on the model's records.
    pub values: u64,
    pub errors: Vec<RecordError>,
}

/// What a custom attribute push did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct AttributePushReport {
    pub model: String,
    pub pushed: u64,
    /// Records the ERP refused because they changed since they were pulled (409).
    pub conflicts: u64,
    pub failed: u64,
    pub errors: Vec<RecordError>,
}

/// A record's document and pending definitions with `definition` set to the string `value`;
/// `None` when it already has that value.
fn with_attribute(record: &ErpRecord, definition: &str, value: &str) -> Option<(Value, Vec<String>)> {
    let mut document = record.document.clone();
    let mut list: Vec<Value> = document.get("customAttributes").and_then(Value::as_array).cloned().unwrap_or_default();
    match list.iter_mut().find(|v| definition_id(v) == Some(definition)) {
        Some(entry) if entry.get("stringValue").and_then(Value::as_str) == Some(value) => return None,
        Some(entry) => entry["stringValue"] = Value::String(value.to_string()),
        None => list.push(json!({"attributeDefinitionId": definition, "stringValue": value})),
    }
    document["customAttributes"] = Value::Array(list);
    let mut pending = record.pending_attributes.clone();
    if !pending.iter().any(|p| p == definition) {
        pending.push(definition.to_string());
    }
    Some((document, pending))
}

impl ErpService {
    /// The mirrored definitions that apply to `model`; with `attribute` (a key or an id) only
    /// that one, which must exist.
    pub async fn definitions_for(&self, model: &str, attribute: Option<&str>) -> Result<Vec<Value>, ErpError> {
        let all = self.store().erp_all(DEFINITIONS).await?;
        let applicable: Vec<Value> = all.into_iter().map(|r| r.document).filter(|d| applies_to(d, model)).collect();
        match attribute {
            None => Ok(applicable),
            Some(wanted) => {
                let matching: Vec<Value> = applicable
                    .iter()
                    .filter(|d| {
                        d.get("attributeKey").and_then(Value::as_str) == Some(wanted)
                            || d.get("id").and_then(Value::as_str) == Some(wanted)
                    })
                    .cloned()
                    .collect();
                if matching.is_empty() {
                    let known: Vec<&str> =
                        applicable.iter().filter_map(|d| d.get("attributeKey").and_then(Value::as_str)).collect();
                    return Err(ErpError::NotFound {
                        model: format!("{DEFINITIONS} of {model}"),
                        id: format!("{wanted} (known: {})", known.join(", ")),
                    });
                }
                Ok(matching)
            }
        }
    }

    /// Pulls every definition, then the model's records with their values.
    pub async fn pull_attributes(
        &self,
        info: &ModelInfo,
        attribute: Option<&str>,
    ) -> Result<AttributePullReport, ErpError> {
        let definitions = self.pull(super::model_named(DEFINITIONS)?, &PullKind::Full, &|_| {}).await?;
        let applicable = self.definitions_for(info.name, attribute).await?;
        let ids: Vec<&str> = applicable.iter().filter_map(|d| d.get("id").and_then(Value::as_str)).collect();
        let records = self.pull(info, &PullKind::Full, &|_| {}).await?;
        let mut values = 0;
        for record in self.store().erp_all(info.name).await? {
            values += record
                .document
                .get("customAttributes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|v| definition_id(v).is_some_and(|d| ids.contains(&d)))
                .count() as u64;
        }
        let mut errors = definitions.errors;
        errors.extend(records.errors);
        Ok(AttributePullReport {
            model: info.name.to_string(),
            definitions: definitions.fetched,
            applicable: applicable
                .iter()
                .filter_map(|d| d.get("attributeKey").and_then(Value::as_str).map(str::to_string))
                .collect(),
            records: records.fetched,
            values,
            errors,
        })
    }

    /// Sets a string attribute on a mirrored record locally and marks it for a push; false
    /// when the value was already set.
    pub async fn set_attribute(&self, model: &str, id: &str, definition: &str, value: &str) -> Result<bool, ErpError> {
        self.store()
            .erp_edit_attributes(model, id, |record| with_attribute(record, definition, value))
            .await?
            .ok_or_else(|| ErpError::NotFound { model: model.into(), id: id.into() })
    }

    /// Pushes the pending values of a model (only records with a pending value of
    /// `attribute`, when given) back to the ERP.
    pub async fn push_attributes(
        &self,
        info: &ModelInfo,
        attribute: Option<&str>,
    ) -> Result<AttributePushReport, ErpError> {
        let client = self.client()?;
        let only: Option<Vec<String>> = match attribute {
            Some(_) => Some(
                self.definitions_for(info.name, attribute)
                    .await?
                    .iter()
                    .filter_map(|d| d.get("id").and_then(Value::as_str).map(str::to_string))
                    .collect(),
            ),
            None => None,
        };
        let mut report = AttributePushReport { model: info.name.to_string(), ..Default::default() };
        for record in self.store().erp_pending_attributes(info.name).await? {
            if let Some(only) = &only
                && !record.pending_attributes.iter().any(|p| only.contains(p))
            {
                continue;
            }
            let body = json!({
                "id": record.id,
                "version": record.version.to_string(),
                "customAttributes": record.document.get("customAttributes").cloned().unwrap_or(json!([])),
            });
            match client.update_partial(info.name, &record.id, &body).await {
                Ok(answer) => {
                    let answer = erp_record(answer);
                    self.store().erp_attributes_pushed(info.name, &record, answer.as_ref()).await?;
                    report.pushed += 1;
                }
                Err(UpstreamError::Refused { status: 409, message, .. }) => {
                    report.conflicts += 1;
                    report.errors.push(RecordError::new(
                        info.name,
                        Some(&record.id),
                        format!(
                            "version conflict: the ERP record changed since it was pulled ({message}); pull it again (entityPullAttr) and push again"
                        ),
                    ));
                }
                Err(error) => {
                    report.failed += 1;
                    report.errors.push(RecordError::new(info.name, Some(&record.id), error.to_string()));
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_apply_by_entity_list_or_type() {
        assert!(applies_to(&json!({"entities": ["customer", "article"]}), "customer"));
        assert!(applies_to(&json!({"attributeEntityType": "CUSTOMER"}), "customer"));
        assert!(!applies_to(&json!({"entities": ["article"]}), "customer"));
        assert!(!applies_to(&json!({}), "customer"));
    }
}
