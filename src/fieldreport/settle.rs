//! Settling forwarded writes whose answer was lost (a time-out, a cut connection, a 5xx): the
//! upstream is read back to learn whether the write applied, before anything is answered
//! (docs/architecture.md, "Data rules").

use generated::fieldreport::EntityInfo;
use serde_json::Value;

use super::service::{FieldReportError, FieldReportService, WriteOutcome, carries, not_applied, version_of};
use crate::store::fieldreport::records::MirrorRecord;
use crate::upstream::UpstreamError;

impl FieldReportService {
    /// A forwarded delete without a definite answer: the upstream is asked for the record.
    /// Gone → the delete applied (success); still there → it did not, the record is put back
    /// and the call's error answered; the read fails too → the delete stays pending (its
    /// tombstone kept, `post` sends it again) and the caller is told the outcome is unknown.
    pub(super) async fn settle_delete(
        &self,
        entity: &EntityInfo,
        stored: MirrorRecord,
        error: UpstreamError,
    ) -> Result<WriteOutcome, FieldReportError> {
        match self.client()?.get(entity.set, &stored.id).await {
            Err(gone) if gone.is_gone() => {
                self.store().mirror_forget_tombstone(entity.route, &stored.id).await?;
                Ok(WriteOutcome { data: Value::Bool(true), upstream: None })
            }
            Ok(upstream) => {
                self.restore(entity, &stored, Some(&upstream)).await?;
                Err(not_applied("delete", entity, &stored.id, &error))
            }
            Err(read) => Err(FieldReportError::OutcomeUnknown(format!(
                "the delete of {} record {} may or may not have reached the field-report system ({error}; \
                 reading the record back failed too: {read}); it stays deleted here and pending: \
                 `post` sends it again",
                entity.route, stored.id
            ))),
        }
    }

    /// A forwarded update without a definite answer: the upstream's record is read. At the
    /// version the update carried, with the fields it changed as sent → it applied (the
    /// upstream's record is the answer; the version alone could be another client's write of
    /// the same number); at the stored version → it did not (nothing changed); at another, or
    /// with other values (someone else wrote it) → the mirror takes the upstream's record and
    /// the update is answered as not applied; gone → the mirror lets it go. The read failing too → the record is marked, and its next update reads
    /// the upstream first.
    pub(super) async fn settle_update(
        &self,
        entity: &EntityInfo,
        stored: &MirrorRecord,
        sent: &MirrorRecord,
        body: &Value,
        error: UpstreamError,
    ) -> Result<Value, FieldReportError> {
        match self.client()?.get(entity.set, &stored.id).await {
            Ok(upstream) if version_of(&upstream) == sent.version && carries(&upstream, &sent.document, body) => {
                Ok(upstream)
            }
            Ok(upstream) => {
                if version_of(&upstream) != stored.version {
                    self.take_upstream(entity, stored, &upstream).await?;
                }
                Err(not_applied("update", entity, &stored.id, &error))
            }
            Err(gone) if gone.is_gone() => {
                self.store().mirror_delete(entity.route, &stored.id).await?;
                Err(FieldReportError::NotFound { entity: entity.route.into(), id: stored.id.clone() })
            }
            Err(read) => {
                self.store().mark_update_unsettled(entity.route, &stored.id).await?;
                Err(FieldReportError::OutcomeUnknown(format!(
                    "the update of {} record {} may or may not have reached the field-report system ({error}; reading \
                     it back failed too: {read}); its next update reads the field-report system first, so sending it \
                     again is safe",
                    entity.route, stored.id
                )))
            }
        }
    }

    /// The upstream refused an update as stale: the mirror takes the upstream's record, so
    /// that the caller can read it again and retry. When the upstream cannot be read, the
    /// record is marked unsettled instead (its next update reads the upstream first).
    pub(super) async fn catch_up_after_conflict(
        &self,
        entity: &EntityInfo,
        stored: &MirrorRecord,
        error: UpstreamError,
    ) -> FieldReportError {
        let caught_up = match self.client().map(|client| client.get(entity.set, &stored.id)) {
            Ok(read) => match read.await {
                Ok(upstream) => self.take_upstream(entity, stored, &upstream).await.map(|record| Some(record.version)),
                Err(_) => {
                    self.store().mark_update_unsettled(entity.route, &stored.id).await.map(|_| None).map_err(Into::into)
                }
            },
            Err(unconfigured) => Err(unconfigured),
        };
        match caught_up {
            Ok(Some(version)) => FieldReportError::UpstreamConflict(format!(
                "{error}; the record changed at the field-report system, and the local copy now has its version \
                 {version}: read it again and retry"
            )),
            Ok(None) => FieldReportError::UpstreamConflict(format!(
                "{error}; the record changed at the field-report system: retry, the next update reads it first"
            )),
            Err(failure) => failure,
        }
    }

    /// Before an update of a record marked unsettled: the mirror takes the upstream's record
    /// (gone there → gone here, 404), then the mark goes.
    pub(super) async fn settle_before_update(
        &self,
        entity: &EntityInfo,
        stored: MirrorRecord,
    ) -> Result<MirrorRecord, FieldReportError> {
        let upstream = match self.client()?.get(entity.set, &stored.id).await {
            Ok(upstream) => upstream,
            Err(gone) if gone.is_gone() => {
                self.store().mirror_delete(entity.route, &stored.id).await?;
                self.store().settle_update(entity.route, &stored.id).await?;
                return Err(FieldReportError::NotFound { entity: entity.route.into(), id: stored.id });
            }
            Err(read) => {
                return Err(FieldReportError::OutcomeUnknown(format!(
                    "{} record {} has an earlier update of unknown outcome, and the field-report system cannot be \
                     asked now ({read}); nothing was sent",
                    entity.route, stored.id
                )));
            }
        };
        let record = if version_of(&upstream) == stored.version {
            stored
        } else {
            self.take_upstream(entity, &stored, &upstream).await?
        };
        self.store().settle_update(entity.route, &record.id).await?;
        Ok(record)
    }
}
