//! The upstream's side of a write: a create sent or found after a lost answer, a record
//! taken from the upstream, a refused delete put back.

use generated::fieldreport::EntityInfo;

use serde_json::Value;

use super::{FieldReportError, FieldReportService, is_annotation, not_applied};
use crate::store::StoreError;
use crate::store::fieldreport::records::MirrorRecord;
use crate::upstream::UpstreamError;
use crate::vocabulary::json_integer::json_integer;
use generated::fieldreport::SYSTEM_FIELDS;

/// `upstream`'s fields over `document`, its annotations left out.
fn overlay(document: &mut Value, upstream: &Value) {
    if let (Value::Object(target), Value::Object(fields)) = (document, upstream) {
        target.extend(fields.iter().filter(|(k, v)| !is_annotation(k, v)).map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// A record as written, with what the upstream answered to the write: the fields of the record
/// it answered over those sent (a server may set some itself: `DateModified`, its own
/// `Version`, which the next update must carry), at the `Version` answered (the one sent when
/// it answered none), under the record's own Id.
pub(in crate::fieldreport) fn answered(written: MirrorRecord, answer: &Value) -> MirrorRecord {
    let mut document = written.document;
    overlay(&mut document, answer);
    let version = answer.get("Version").and_then(json_integer).unwrap_or(written.version);
    document["Id"] = Value::String(written.id.clone());
    document["Version"] = Value::from(version);
    MirrorRecord { id: written.id, version, document }
}

/// `replacement` as it lands on the stored document `now`. When a local write of the record
/// waits for a push (`pending`: an ERP webhook's, which leaves the Version as it was), its
/// fields stay over the replacement's, so that `post` sends them on top: the fields of `now`
/// that differ from `read`, the stored document the replacement was made from (its own
/// changes are in the replacement). Without one (`None`: the replacement is the upstream's
/// copy, which holds none of the local write, and the pending document is what `post` sends,
/// as a sync leaves it) every field of `now` stays, but the record's identity and the fields
/// the upstream sets itself.
fn keeping_local(replacement: &MirrorRecord, read: Option<&Value>, now: Value, pending: bool) -> MirrorRecord {
    let mut document = replacement.document.clone();
    if let (true, Value::Object(target), Value::Object(now)) = (pending, &mut document, now) {
        let read = read.and_then(Value::as_object);
        let upstreams = |key: &str| key == "Id" || key == "Version" || SYSTEM_FIELDS.contains(&key);
        let local = now
            .into_iter()
            .filter(|(key, value)| !upstreams(key) && read.is_none_or(|read| read.get(key) != Some(value)));
        target.extend(local);
    }
    MirrorRecord { document, ..replacement.clone() }
}

/// What [`FieldReportService::keep_newer`] does with a record removed from the mirror meanwhile.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::fieldreport) enum Removed {
    /// Leaves it removed: a create stands as the upstream answered it.
    Leave,
    /// Inserts it again: a record put back after a refused delete.
    InsertAgain,
}

/// What the mirror holds after [`FieldReportService::keep_newer`].
pub(in crate::fieldreport) enum Kept {
    /// This copy of the record: the one given, or a newer one stored meanwhile.
    Copy(MirrorRecord),
    /// Nothing: the record was removed meanwhile and left so.
    Removed,
    /// The record as written by others, which changed it on every try.
    Contended,
}

impl FieldReportService {
    /// The upstream's create: sent, or found after a lost answer. A create with an
    /// `ExternalId` whose earlier attempt has an unknown outcome looks for that attempt first
    /// (the upstream finds records by `ExternalId`; it has no other key a client chooses).
    pub(super) async fn create_upstream(&self, entity: &EntityInfo, body: &Value) -> Result<Value, FieldReportError> {
        let client = self.client()?;
        let external = body.get("ExternalId").and_then(Value::as_str).filter(|e| !e.is_empty());
        if let Some(external) = external
            && self.store.create_unsettled(entity.route, external).await?
        {
            let earlier = self.upstream_by_external_id(entity, external).await.map_err(|read| {
                FieldReportError::OutcomeUnknown(format!(
                    "an earlier create of {} {external:?} may have reached the field-report system, and it cannot be \
                     asked now ({read}); nothing was sent",
                    entity.route
                ))
            })?;
            self.store.settle_create(entity.route, external).await?;
            if let Some(earlier) = earlier {
                return Ok(earlier);
            }
        }
        let error = match client.create(entity.set, body).await {
            Ok(answer) => return Ok(answer),
            Err(error) if error.may_have_applied() => error,
            Err(error) => return Err(error.into()),
        };
        let Some(external) = external else {
            return Err(FieldReportError::OutcomeUnknown(format!(
                "the create of a {} record may or may not have reached the field-report system ({error}); without an \
                 ExternalId it cannot be looked up: a sync shows whether it arrived",
                entity.route
            )));
        };
        // A create the upstream took without naming its record (202 Accepted: made later) may
        // not be found yet: that is no proof it was not applied.
        let took = matches!(error, UpstreamError::Unnamed { .. });
        let looked = match self.upstream_by_external_id(entity, external).await {
            Ok(Some(found)) => return Ok(found),
            Ok(None) if !took => return Err(not_applied("create", entity, external, &error)),
            Ok(None) => "the field-report system shows no record of that ExternalId yet".to_string(),
            Err(read) => format!("looking it up failed too: {read}"),
        };
        self.store.mark_create_unsettled(entity.route, external).await?;
        Err(FieldReportError::OutcomeUnknown(format!(
            "the create of {} {external:?} may or may not have reached the field-report system ({error}; {looked}); \
             sending the same create again looks for this one first",
            entity.route
        )))
    }

    /// The upstream's record with this `ExternalId`, if it has one.
    pub(in crate::fieldreport) async fn upstream_by_external_id(
        &self,
        entity: &EntityInfo,
        external_id: &str,
    ) -> Result<Option<Value>, FieldReportError> {
        let filter = format!("ExternalId eq '{}'", external_id.replace('\'', "''"));
        let query = url::form_urlencoded::Serializer::new(String::new()).append_pair("$filter", &filter).finish();
        let page = self.client()?.page(entity.set, &query, None).await?;
        let Some(first) = page.records.first() else { return Ok(None) };
        Ok(Some(crate::upstream::parse_json(crate::upstream::System::FieldReport, first.get())?))
    }

    /// Replaces the stored record, if still at `expected_version`, with `replacement`,
    /// keeping a local write of it that waits for a push (see [`keeping_local`]: `read` is the
    /// stored document the replacement was made from, none for the upstream's copy); the
    /// record written, `None` when its version changed or it is gone. A local write leaves the
    /// version as it was, so a replace checked by version alone lost it.
    pub(in crate::fieldreport) async fn replace_keeping_local(
        &self,
        entity: &EntityInfo,
        replacement: &MirrorRecord,
        expected_version: i64,
        read: Option<&Value>,
    ) -> Result<Option<MirrorRecord>, FieldReportError> {
        let write = |now, pending| keeping_local(replacement, read, now, pending);
        Ok(self.store.mirror_replace_with(entity.route, &replacement.id, expected_version, write).await?)
    }

    /// The mirror takes the upstream's copy of a record: its fields over the stored document
    /// (a record read by key carries no expanded relations; the stored ones are kept), but
    /// those of a local write waiting for a push, at its `Version` (the stored one when it
    /// has none, see [`answered`]).
    pub(in crate::fieldreport) async fn take_upstream(
        &self,
        entity: &EntityInfo,
        stored: &MirrorRecord,
        upstream: &Value,
    ) -> Result<MirrorRecord, FieldReportError> {
        let record = answered(stored.clone(), upstream);
        self.replace_keeping_local(entity, &record, stored.version, None).await?.ok_or_else(|| {
            FieldReportError::Conflict(format!(
                "{} record {} was changed by another request; read it again and retry",
                entity.route, record.id
            ))
        })
    }

    /// Puts a record back after the upstream refused its delete: as the upstream holds it when
    /// that is known (`upstream`; at the stored `Version` when that copy has none), else as it
    /// was. A sync that ran while the delete was in flight skipped the record (its tombstone)
    /// and moved its cursor past the record's later changes, so the copy read before the
    /// delete stayed behind until a reconciling. A sync whose tombstones were read before the
    /// delete may have stored the record meanwhile: the newer of the two copies stays
    /// (inserting failed, and the refusal was answered 500); one removed meanwhile is put back.
    pub(in crate::fieldreport) async fn restore(
        &self,
        entity: &EntityInfo,
        stored: &MirrorRecord,
        upstream: Option<&Value>,
    ) -> Result<(), FieldReportError> {
        let record = upstream.map_or_else(|| stored.clone(), |upstream| answered(stored.clone(), upstream));
        self.store.mirror_forget_tombstone(entity.route, &stored.id).await?;
        // Written again and again meanwhile: the mirror holds the record, by the latest writer.
        self.keep_newer(entity, &record, Removed::InsertAgain).await?;
        Ok(())
    }

    /// Stores `record`, the upstream's copy, where a sync may store the record meanwhile: it
    /// is inserted while the key is free; else the newer copy stays (the stored one at the
    /// same or a later `Version`; otherwise `record` replaces it, keeping a local write that
    /// waits for a push). One removed meanwhile is left removed, or inserted again, as
    /// `removed` says. Tried three times while other writers change the record.
    pub(in crate::fieldreport) async fn keep_newer(
        &self,
        entity: &EntityInfo,
        record: &MirrorRecord,
        removed: Removed,
    ) -> Result<Kept, FieldReportError> {
        for attempt in 0..3 {
            if attempt == 0 || removed == Removed::InsertAgain {
                match self.store.mirror_insert(entity.route, record, None).await {
                    Ok(()) => return Ok(Kept::Copy(record.clone())),
                    Err(StoreError::Duplicate(_)) => {}
                    Err(other) => return Err(other.into()),
                }
            }
            match self.store.mirror_get(entity.route, &record.id).await? {
                None if removed == Removed::Leave => return Ok(Kept::Removed),
                None => {}
                Some(stored) if stored.version >= record.version => return Ok(Kept::Copy(stored)),
                Some(stored) => {
                    if let Some(written) = self.replace_keeping_local(entity, record, stored.version, None).await? {
                        return Ok(Kept::Copy(written));
                    }
                }
            }
        }
        Ok(Kept::Contended)
    }
}
