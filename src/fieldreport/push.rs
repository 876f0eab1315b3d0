//! Post: a bulk push of internal writes.
//!
//! Post sends records that were written without forwarding (e.g. by an ERP webhook)
//! to the upstream, `create` ones with POST, `update` ones with PUT (the fields written here
//! over the upstream's current record) and local deletes (their tombstones) with DELETE, and
//! marks each one pushed as soon as the upstream accepted it, so
//! a rerun sends nothing twice; a record the upstream refuses is reported and stays pending,
//! the batch goes on.

use generated::fieldreport::EntityInfo;
use serde::Serialize;
use serde_json::Value;

use super::service::{FieldReportError, FieldReportService, record_id};
use crate::store::fieldreport::records::MirrorRecord;
use crate::vocabulary::field_errors::FieldErrors;

/// One record the upstream refused.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PushFailure {
    pub id: String,
    pub message: String,
}

/// What a push of one entity set did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct PushReport {
    pub entity: String,
    /// `create`, `update` or `delete`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::push_kind")]
    pub kind: String,
    pub pushed: u64,
    /// Records an earlier, interrupted run had already delivered: found at the upstream and
    /// marked pushed without sending them again (for deletes: records the upstream no longer
    /// had).
    pub recovered: u64,
    /// Records another run was pushing at the same time, left to it.
    pub skipped: u64,
    pub failed: u64,
    pub failures: Vec<PushFailure>,
}

impl FieldReportService {
    /// Pushes the pending writes of `kind` (`create`, `update`, or both when `None`) of one
    /// entity set.
    pub async fn push(&self, info: &EntityInfo, kind: &str) -> Result<PushReport, FieldReportError> {
        self.push_with_progress(info, kind, &|_, _| {}).await
    }

    /// [`FieldReportService::push`], telling `progress` the report and the number of pending
    /// records after every record.
    pub async fn push_with_progress(
        &self,
        info: &EntityInfo,
        kind: &str,
        progress: &(dyn Fn(&PushReport, usize) + Sync),
    ) -> Result<PushReport, FieldReportError> {
        if kind == "delete" {
            return self.push_deletes(info, progress).await;
        }
        let client = self.client()?;
        let mut report = PushReport { entity: info.route.to_string(), kind: kind.to_string(), ..Default::default() };
        let pending = self.store().mirror_pending(info.route, kind).await?;
        let total = pending.len();
        for listed in pending {
            progress(&report, total);
            self.check_stop()?;
            let Some(claim) = self.store().mirror_claim_push(info.route, &listed.id, kind).await? else {
                report.skipped += 1;
                continue;
            };
            // As claimed: a local write made since the list was read goes with it.
            let record = &claim.record;
            if claim.attempts > 1 && kind == "create" {
                match self.created_earlier(info, record).await {
                    Ok(Some(upstream)) => {
                        self.mark_pushed(info, kind, &record.id, record, &upstream, &claim).await?;
                        report.recovered += 1;
                        continue;
                    }
                    Ok(None) => {}
                    Err(error) => {
                        self.store().mirror_release_push(info.route, &record.id).await?;
                        report.failed += 1;
                        report.failures.push(PushFailure { id: record.id.clone(), message: error.to_string() });
                        continue;
                    }
                }
            }
            let sent = match kind {
                "create" => client
                    .create(info.set, &record.document)
                    .await
                    .map(|answer| (answer, record.clone()))
                    .map_err(FieldReportError::from),
                _ => self.send_update(info, record, claim.fields.as_deref()).await,
            };
            match sent {
                Ok((answer, sent)) => {
                    self.mark_pushed(info, kind, &record.id, &sent, &answer, &claim).await?;
                    report.pushed += 1;
                }
                Err(FieldReportError::Upstream(gone)) if kind == "update" && gone.is_gone() => {
                    // Deleted at the field-report system meanwhile: the mirror follows it.
                    self.store().mirror_delete(info.route, &record.id).await?;
                    report.failed += 1;
                    report.failures.push(PushFailure {
                        id: record.id.clone(),
                        message: "deleted at the field-report system meanwhile; removed here, the local change with it"
                            .to_string(),
                    });
                }
                Err(error) => {
                    self.store().mirror_release_push(info.route, &record.id).await?;
                    report.failed += 1;
                    report.failures.push(PushFailure { id: record.id.clone(), message: error.to_string() });
                }
            }
        }
        progress(&report, total);
        Ok(report)
    }
}

impl FieldReportService {
    /// Sends the pending deletes of one entity set (its tombstones), each claimed for one
    /// attempt. A record the upstream no longer has counts as done (`recovered`: an earlier
    /// attempt arrived, or someone deleted it there); the tombstone goes once the upstream
    /// confirmed. A refused delete is reported and stays pending.
    async fn push_deletes(
        &self,
        info: &EntityInfo,
        progress: &(dyn Fn(&PushReport, usize) + Sync),
    ) -> Result<PushReport, FieldReportError> {
        let client = self.client()?;
        let mut report =
            PushReport { entity: info.route.to_string(), kind: "delete".to_string(), ..Default::default() };
        let pending = self.store().mirror_tombstones(info.route).await?;
        let total = pending.len();
        for id in pending {
            progress(&report, total);
            self.check_stop()?;
            if self.store().mirror_claim_delete(info.route, &id).await?.is_none() {
                report.skipped += 1;
                continue;
            }
            match client.delete(info.set, &id).await {
                Ok(_) => {
                    self.store().mirror_forget_tombstone(info.route, &id).await?;
                    report.pushed += 1;
                }
                Err(gone) if gone.is_gone() => {
                    self.store().mirror_forget_tombstone(info.route, &id).await?;
                    report.recovered += 1;
                }
                Err(error) => {
                    self.store().mirror_release_delete(info.route, &id).await?;
                    report.failed += 1;
                    report.failures.push(PushFailure { id, message: error.to_string() });
                }
            }
        }
        progress(&report, total);
        Ok(report)
    }

    /// Marks a record pushed as `sent` with what the upstream answered (a created record takes
    /// the Id the upstream gave it; a server's own `Version` is the one the next update must
    /// carry). An updated record that a local write changed while it was pushed (an ERP
    /// webhook) stays pending with that write, given back for the next push, which sends it on
    /// top of this one.
    async fn mark_pushed(
        &self,
        info: &EntityInfo,
        kind: &str,
        old_id: &str,
        sent: &MirrorRecord,
        upstream: &Value,
        claim: &crate::store::fieldreport::records::pushes::PushClaim,
    ) -> Result<(), FieldReportError> {
        let mut pushed = sent.clone();
        if kind == "create"
            && let Some(id) = upstream.get("Id").and_then(record_id)
        {
            pushed.document["Id"] = Value::String(id.clone());
            pushed = MirrorRecord { id, ..pushed };
        }
        let pushed = super::service::upstream::answered(pushed, upstream);
        let claimed_until = (kind == "update").then_some(claim.until);
        if !self.store().mirror_mark_pushed(info.route, old_id, &pushed, claimed_until).await? {
            self.store().mirror_release_push(info.route, old_id).await?;
        }
        Ok(())
    }

    /// A pending update, sent on top of the upstream's current record: the fields the local
    /// writes changed (`fields`; the whole local document when they were not recorded)
    /// deep-merged over it, with the upstream's `Version` + 1. The stored document holds every
    /// other field as last synced: sent whole, it put back what another client had changed
    /// there since. The internal writers (ERP webhooks) are the authority on the fields they
    /// write, so a change made upstream meanwhile does not refuse the update for ever. The
    /// answer and the record as sent, which the mirror then holds.
    async fn send_update(
        &self,
        info: &EntityInfo,
        record: &MirrorRecord,
        fields: Option<&[String]>,
    ) -> Result<(Value, MirrorRecord), FieldReportError> {
        let client = self.client()?;
        let current = client.get(info.set, &record.id).await?;
        let version = super::service::version_of(&current) + 1;
        let mut document = current;
        if let Value::Object(fields) = &mut document {
            fields.retain(|key, value| !super::service::is_annotation(key, value));
        }
        super::merge::deep_merge(&mut document, &written_here(&record.document, fields));
        document["Id"] = Value::String(record.id.clone());
        document["Version"] = Value::from(version);
        let answer = client.update(info.set, &record.id, &super::service::without_system_fields(&document)).await?;
        Ok((answer, MirrorRecord { id: record.id.clone(), version, document }))
    }

    /// After an interrupted attempt of a create: the upstream's copy when that attempt
    /// arrived, found by the record's `ExternalId` (a record without one cannot be checked and
    /// is sent again).
    async fn created_earlier(
        &self,
        info: &EntityInfo,
        record: &MirrorRecord,
    ) -> Result<Option<Value>, FieldReportError> {
        let Some(external_id) = record.document.get("ExternalId").and_then(Value::as_str) else {
            return Ok(None);
        };
        self.upstream_by_external_id(info, external_id).await
    }
}

/// What of a pending update's document its push sends: the fields named, or all of it.
fn written_here(document: &Value, fields: Option<&[String]>) -> Value {
    match (document, fields) {
        (Value::Object(all), Some(fields)) => Value::Object(
            all.iter().filter(|(name, _)| fields.contains(name)).map(|(n, v)| (n.clone(), v.clone())).collect(),
        ),
        _ => document.clone(),
    }
}

/// Checks the `type` of a post: `create`, `update` or `delete` (all three, in that order,
/// when none is given).
pub fn push_kinds(kind: Option<&str>) -> Result<Vec<&'static str>, FieldReportError> {
    match kind {
        None => Ok(vec!["create", "update", "delete"]),
        Some("create") => Ok(vec!["create"]),
        Some("update") => Ok(vec!["update"]),
        Some("delete") => Ok(vec!["delete"]),
        Some(_) => Err(FieldReportError::Invalid(FieldErrors::from([(
            "type".to_string(),
            vec!["The type is create, update or delete.".to_string()],
        )]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_kinds_are_create_update_delete() {
        assert_eq!(push_kinds(None).unwrap(), ["create", "update", "delete"]);
        assert_eq!(push_kinds(Some("delete")).unwrap(), ["delete"]);
        assert!(push_kinds(Some("remove")).is_err());
    }
}
