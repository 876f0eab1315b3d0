//! The writes: a record's checks, then create, update and delete, forwarded or pending.

use generated::fieldreport::EntityInfo;

use serde_json::{Map, Value};

use super::upstream::{Kept, Removed, answered};
use super::{
    FieldReportError, FieldReportService, MAX_ID_LEN, WriteOutcome, invalid, record_id, version_of,
    without_system_fields,
};
use crate::fieldreport::merge::deep_merge;
use crate::store::StoreError;
use crate::store::fieldreport::deletes::LocalDelete;
use crate::store::fieldreport::records::MirrorRecord;
use crate::vocabulary::field_errors::FieldErrors;

/// An `ExternalId` given as text has at most [`MAX_ID_LEN`] characters, as an `Id`: it is
/// indexed, and a Postgres index entry holds about 2,700 bytes, so a longer one failed the
/// write with 500 after the field-report system had taken it.
fn check_external_id(body: &Value, errors: &mut FieldErrors) {
    if body.get("ExternalId").and_then(Value::as_str).is_some_and(|e| e.chars().count() > MAX_ID_LEN) {
        let message = format!("The ExternalId may not be longer than {MAX_ID_LEN} characters.");
        errors.insert("ExternalId".into(), vec![message]);
    }
}

impl FieldReportService {
    fn object(body: &Value) -> Result<&Map<String, Value>, FieldReportError> {
        body.as_object().ok_or_else(|| invalid("body", "The record must be a JSON object."))
    }

    /// Checks `Id` (string, 1 to 255 characters) and `Version` (integer).
    pub fn validate_new(body: &Value) -> Result<(String, i64), FieldReportError> {
        let object = Self::object(body)?;
        let mut errors = FieldErrors::new();
        let id = match object.get("Id") {
            Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= MAX_ID_LEN => Some(id.clone()),
            Some(Value::String(id)) if !id.is_empty() => {
                errors.insert("Id".into(), vec![format!("The Id may not be longer than {MAX_ID_LEN} characters.")]);
                None
            }
            Some(Value::String(_)) | None | Some(Value::Null) => {
                errors.insert("Id".into(), vec!["The Id field is required.".into()]);
                None
            }
            Some(_) => {
                errors.insert("Id".into(), vec!["The Id must be a string.".into()]);
                None
            }
        };
        let version = match object.get("Version") {
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            None | Some(Value::Null) => {
                errors.insert("Version".into(), vec!["The Version field is required.".into()]);
                None
            }
            Some(_) => {
                errors.insert("Version".into(), vec!["The Version must be an integer.".into()]);
                None
            }
        };
        check_external_id(body, &mut errors);
        match (id, version) {
            (Some(id), Some(version)) if errors.is_empty() => Ok((id, version)),
            _ => Err(FieldReportError::Invalid(errors)),
        }
    }

    /// A client's update may name the record's `Id` and `Version`: the `Id` must be the record's
    /// own (an Id never changes), and the `Version` the one stored, else the write is refused
    /// with 409, as the model's description says (someone changed the record since the client
    /// read it: read it again and retry). Without them the write merges into the stored record.
    fn check_identity(entity: &EntityInfo, stored: &MirrorRecord, body: &Value) -> Result<(), FieldReportError> {
        let mut errors = FieldErrors::new();
        match body.get("Id") {
            None | Some(Value::Null) => {}
            Some(Value::String(id)) if *id == stored.id => {}
            Some(Value::String(_)) => {
                let message = format!("The Id must be the record's own ({}); an Id cannot change.", stored.id);
                errors.insert("Id".into(), vec![message]);
            }
            Some(_) => {
                errors.insert("Id".into(), vec!["The Id must be a string.".into()]);
            }
        }
        let version = match body.get("Version") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            Some(_) => {
                errors.insert("Version".into(), vec!["The Version must be an integer.".into()]);
                None
            }
        };
        check_external_id(body, &mut errors);
        if !errors.is_empty() {
            return Err(FieldReportError::Invalid(errors));
        }
        match version {
            Some(version) if version != stored.version => Err(FieldReportError::Conflict(format!(
                "{} record {} is at Version {}, not {version}: it changed since it was read; read it again and retry",
                entity.route, stored.id, stored.version
            ))),
            _ => Ok(()),
        }
    }

    /// Creates a record at the field-report system, then here under the Id it assigned.
    pub async fn create_forwarded(&self, entity: &EntityInfo, body: Value) -> Result<WriteOutcome, FieldReportError> {
        self.create(entity, body, true).await
    }

    /// Creates a record here only, pending for `post` (writes made inside the service).
    pub async fn create_pending(&self, entity: &EntityInfo, body: Value) -> Result<WriteOutcome, FieldReportError> {
        self.create(entity, body, false).await
    }

    async fn create(&self, entity: &EntityInfo, body: Value, forward: bool) -> Result<WriteOutcome, FieldReportError> {
        let (requested_id, version) = Self::validate_new(&body)?;
        if self.store.mirror_get(entity.route, &requested_id).await?.is_some() {
            return Err(FieldReportError::Conflict(format!("{} record {requested_id} exists already", entity.route)));
        }
        let upstream = if forward { Some(self.create_upstream(entity, &body).await?) } else { None };
        let id = upstream.as_ref().and_then(|answer| answer.get("Id")).and_then(record_id).unwrap_or(requested_id);
        let mut document = body;
        document["Id"] = Value::String(id.clone());
        document["Version"] = Value::from(version);
        let mut record = MirrorRecord { id, version, document };
        // The server may set fields of a new record itself (its Version, which the next
        // update must carry; `DateOfCreation`): the mirror keeps the record it answered.
        if let Some(answer) = &upstream {
            record = answered(record, answer);
        }
        if forward {
            // The mirror may hold the Id the field-report system has just given the record: a
            // sync read it between the server's answer and this write (the server's Ids are
            // its own, so it is the same record). The create stands, as the server made it
            // (answering 409 told the client that a record the server holds was not made, and
            // its retry made a second one); the mirror keeps the newer copy.
            let record = match self.keep_newer(entity, &record, Removed::Leave).await? {
                Kept::Copy(kept) => kept,
                Kept::Removed => record,
                Kept::Contended => {
                    return Err(FieldReportError::Conflict(format!(
                        "{} record {} was made at the field-report system and is being changed here meanwhile; read \
                         it again",
                        entity.route, record.id
                    )));
                }
            };
            return Ok(WriteOutcome { data: record.document, upstream });
        }
        match self.store.mirror_insert(entity.route, &record, Some("create")).await {
            Ok(()) => Ok(WriteOutcome { data: record.document, upstream }),
            Err(StoreError::Duplicate(_)) => {
                Err(FieldReportError::Conflict(format!("{} record {} exists already", entity.route, record.id)))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Updates a record at the field-report system (the body deep-merged over the stored
    /// record), then here.
    pub async fn update_forwarded(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
    ) -> Result<WriteOutcome, FieldReportError> {
        self.update(entity, id, body, true).await
    }

    /// Updates a record here only (the body's fields replace the stored ones), pending for
    /// `post`.
    pub async fn update_pending(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
    ) -> Result<WriteOutcome, FieldReportError> {
        self.update(entity, id, body, false).await
    }

    async fn update(
        &self,
        entity: &EntityInfo,
        id: &str,
        body: Value,
        forward: bool,
    ) -> Result<WriteOutcome, FieldReportError> {
        Self::object(&body)?;
        let mut stored = self.load(entity, id).await?;
        if forward {
            Self::check_identity(entity, &stored, &body)?;
            // Sent on, the update was answered 404 and the record dropped as deleted there:
            // the local create was lost, and `post` never made it.
            if self.store.mirror_create_pending(entity.route, &stored.id).await? {
                return Err(FieldReportError::Conflict(format!(
                    "{} record {} was created here and is not at the field-report system yet: `post` creates it \
                     there; update it after that",
                    entity.route, stored.id
                )));
            }
        }
        if forward && self.store.update_unsettled(entity.route, &stored.id).await? {
            stored = self.settle_before_update(entity, stored).await?;
        }
        let mut document = stored.document.clone();
        if !forward {
            // Internal writes apply the body as it is: its fields replace the stored ones.
            if let (Value::Object(target), Value::Object(fields)) = (&mut document, &body) {
                target.extend(fields.clone());
            }
            let record = MirrorRecord { id: stored.id.clone(), version: version_of(&document), document };
            return self.replace(entity, record, stored.version, Some("update"), None).await;
        }
        deep_merge(&mut document, &body);
        let version = version_of(&stored.document).checked_add(1).ok_or_else(|| {
            FieldReportError::Conflict(format!(
                "{} record {} has the highest Version there is ({}); it cannot be updated",
                entity.route,
                stored.id,
                i64::MAX
            ))
        })?;
        document["Id"] = Value::String(stored.id.clone());
        document["Version"] = Value::from(version);
        let outgoing = without_system_fields(&document);
        let record = MirrorRecord { id: stored.id.clone(), version, document };
        let upstream = match self.client()?.update(entity.set, &stored.id, &outgoing).await {
            Ok(upstream) => upstream,
            Err(error) if error.may_have_applied() => {
                self.settle_update(entity, &stored, &record, &body, error).await?
            }
            Err(error) if error.is_stale() => {
                return Err(self.catch_up_after_conflict(entity, &stored, error).await);
            }
            Err(gone) if gone.is_gone() => {
                // Deleted at the field-report system by someone else: the mirror follows.
                self.store.mirror_delete(entity.route, &stored.id).await?;
                return Err(FieldReportError::NotFound { entity: entity.route.into(), id: stored.id });
            }
            Err(error) => return Err(error.into()),
        };
        let record = answered(record, &upstream);
        // A local write (an ERP webhook's, pending for `post`) made while the upstream was
        // called leaves the version as read: its fields stay over this write's, and it stays
        // pending, so that `post` sends it on top. Replacing the document lost it for good.
        let read = Some(&stored.document);
        if self.replace_keeping_local(entity, &record, stored.version, read).await?.is_some() {
            return Ok(WriteOutcome { data: record.document, upstream: Some(upstream) });
        }
        // The upstream took this write at its version, so a mirror already at that version
        // holds this very write: a concurrent update, refused upstream as stale, caught the
        // mirror up with the upstream's copy of it. It takes the record as answered. A mirror
        // past that version holds a later change made there, which a sync read meanwhile: the
        // write stands (answering 409 told the client it was not made), the mirror stays.
        let version = record.version;
        let now = self.store.mirror_get(entity.route, &record.id).await?.map(|now| now.version);
        let stands = match now {
            Some(now) if now > version => true,
            Some(now) if now == version => self.replace_keeping_local(entity, &record, version, read).await?.is_some(),
            _ => false,
        };
        if stands {
            return Ok(WriteOutcome { data: record.document, upstream: Some(upstream) });
        }
        Err(FieldReportError::Conflict(format!(
            "{} record {} was changed by another request; read it again and retry",
            entity.route, record.id
        )))
    }

    async fn replace(
        &self,
        entity: &EntityInfo,
        record: MirrorRecord,
        expected_version: i64,
        pending: Option<&str>,
        upstream: Option<Value>,
    ) -> Result<WriteOutcome, FieldReportError> {
        if !self.store.mirror_replace(entity.route, &record, expected_version, pending).await? {
            return Err(FieldReportError::Conflict(format!(
                "{} record {} was changed by another request; read it again and retry",
                entity.route, record.id
            )));
        }
        Ok(WriteOutcome { data: record.document, upstream })
    }

    /// Deletes a record locally, leaving a tombstone (see [`crate::store::fieldreport::deletes`])
    /// that keeps syncs from bringing it back until the upstream confirmed the delete. Without
    /// forwarding the delete stays pending for `post`; a placeholder that never reached the
    /// upstream is simply dropped. Forwarded, the upstream is called at once: done (or already
    /// gone there) → the tombstone goes; refused → the record is put back; no definite answer →
    /// see [`FieldReportService::settle_delete`].
    pub async fn delete_forwarded(&self, entity: &EntityInfo, id: &str) -> Result<WriteOutcome, FieldReportError> {
        self.delete(entity, id, true).await
    }

    /// Deletes a record here, the delete pending for `post` (see [`Self::delete_forwarded`]).
    pub async fn delete_pending(&self, entity: &EntityInfo, id: &str) -> Result<WriteOutcome, FieldReportError> {
        self.delete(entity, id, false).await
    }

    async fn delete(&self, entity: &EntityInfo, id: &str, forward: bool) -> Result<WriteOutcome, FieldReportError> {
        let client = if forward { Some(self.client()?) } else { None };
        let stored = self.load(entity, id).await?;
        let done = Ok(WriteOutcome { data: Value::Bool(true), upstream: None });
        match self.store.mirror_delete_tombstoned(entity.route, id).await? {
            LocalDelete::Missing => {
                return Err(FieldReportError::NotFound { entity: entity.route.into(), id: id.into() });
            }
            LocalDelete::Dropped => return done,
            LocalDelete::Tombstoned => {}
        }
        let Some(client) = client else { return done };
        match client.delete(entity.set, id).await {
            Ok(answer) => {
                self.store.mirror_forget_tombstone(entity.route, id).await?;
                Ok(WriteOutcome { data: Value::Bool(true), upstream: Some(answer) })
            }
            Err(gone) if gone.is_gone() => {
                self.store.mirror_forget_tombstone(entity.route, id).await?;
                done
            }
            Err(error) if error.may_have_applied() => self.settle_delete(entity, stored, error).await,
            Err(error) => {
                // Put back as the upstream has it now: a sync that ran meanwhile skipped it.
                match client.get(entity.set, id).await {
                    Ok(upstream) => self.restore(entity, &stored, Some(&upstream)).await?,
                    // Deleted there by someone else meanwhile: nothing to put back.
                    Err(gone) if gone.is_gone() => self.store.mirror_forget_tombstone(entity.route, id).await?,
                    Err(_) => self.restore(entity, &stored, None).await?,
                }
                Err(error.into())
            }
        }
    }
}
