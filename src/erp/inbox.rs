//! The webhook inbox: calls are stored before they are acknowledged, then a worker processes
//! them: fetch the entity from the ERP by id, upsert the mirror (or remove the record when the
//! ERP no longer has it), and apply the mapped field-report write without forwarding.
//!
//! Processing is idempotent: a repeated or late call fetches the same (or a newer) record, the
//! mirror keeps the highest version, and a field-report write that would change nothing is
//! skipped. The calls of one record claimed together are processed together: one fetch,
//! made after every one of them arrived, answers for all. A failed attempt is retried with
//! exponential back-off (1 s, 2 s, 4 s … at most 5 min) up to [`MAX_ATTEMPTS`] times, then the call is marked `failed` and stays visible in
//! `show`. Claims are leases in the database, so a call taken by a process that died is taken
//! again when its lease expires, by any instance. Processed calls are forgotten after a week
//! ([`KEEP_DONE`]); failed ones stay until an operator looks at them.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use slog::Logger;

use super::mapping::{self, Mapping};
use super::webhook::WebhookCall;
use super::{ErpError, ErpService, model_named};
use crate::background::task::{Chore, Failed, Pace, Plan, Stop, Stopping, Task};
use crate::fieldreport::service::{FieldReportError, entity_named};
use crate::store::StoreError;
use crate::store::erp::InboxItem;
use crate::store::fieldreport::records::Upserted;
use crate::store::now_ms;

pub const MAX_ATTEMPTS: i64 = 12;
const BATCH: i64 = 16;
/// How often the worker looks for due calls when nobody wakes it (retries, other instances).
const POLL: Duration = Duration::from_millis(500);
/// Processed calls are kept this long (for `show`), then forgotten; failed ones stay.
pub const KEEP_DONE: Duration = Duration::from_secs(7 * 24 * 3600);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// At most this often, a worker behind a backlog has the database refresh the inbox's
/// statistics (see [`crate::store::Store::inbox_refresh_statistics`]).
const STATISTICS_EVERY: Duration = Duration::from_secs(60);

/// When to try again after `attempts` failed attempts, or `None` to give up.
pub fn next_attempt_after(attempts: i64) -> Option<Duration> {
    (attempts < MAX_ATTEMPTS).then(|| Duration::from_secs((1u64 << (attempts - 1).clamp(0, 9)).min(300)))
}

/// The worker that processes the inbox, a background task.
pub struct InboxWorker {
    service: ErpService,
    /// When this worker last had the inbox's statistics refreshed.
    statistics_at: Mutex<Option<Instant>>,
    log: Logger,
}

/// Forgets processed calls older than [`KEEP_DONE`], a background task.
pub struct InboxPruner {
    service: ErpService,
    log: Logger,
}

impl ErpService {
    /// Stores a webhook call durably; the worker is woken to process it.
    pub async fn accept(&self, call: &WebhookCall, payload: &Value) -> Result<i64, ErpError> {
        let id = self.store().inbox_store(&call.entity_name, &call.entity_id, call.event.as_str(), payload).await?;
        self.inner.wake.notify_one();
        Ok(id)
    }

    /// The inbox's background tasks: the worker and its pruning.
    pub fn inbox_tasks(&self, log: &Logger) -> (InboxWorker, InboxPruner) {
        let worker = InboxWorker { service: self.clone(), statistics_at: Mutex::new(None), log: log.clone() };
        (worker, InboxPruner { service: self.clone(), log: log.clone() })
    }
}

impl Task for InboxWorker {
    /// Up to [`BATCH`] due calls, each with a lease of `WORK_LEASE_SECONDS`.
    type Claim = Vec<InboxItem>;

    /// Claims again as soon as a batch was processed, after [`POLL`] when none was due (a call
    /// stored here wakes it), after four times that when the inbox failed; at a stop, the
    /// call in flight finishes and the calls claimed but not started are handed back.
    fn plan(&self) -> Plan {
        Plan {
            name: "erp_inbox",
            pace: Pace::WhenDue { idle: POLL, after_failure: POLL * 4, at_once: 1 },
            stop: Stop::Finish { within: None },
            wake: Some(self.service.inner.wake.clone()),
        }
    }

    async fn claim(&self) -> Result<Option<Vec<InboxItem>>, Failed> {
        let store = self.service.store();
        match store.inbox_claim(BATCH, store.work_lease_ms()).await {
            Ok(items) => Ok((!items.is_empty()).then_some(items)),
            Err(error) => {
                slog::warn!(self.log, "webhook inbox unavailable"; "error" => %error);
                Err(Failed)
            }
        }
    }

    async fn work(&self, items: Vec<InboxItem>, stopping: &Stopping) -> Result<(), Failed> {
        // A full claim means a backlog, which the statistics may not know of.
        let backlog = items.len() as i64 == BATCH;
        if let Err(error) = self.service.process_claimed(items, stopping).await {
            slog::warn!(self.log, "webhook inbox unavailable"; "error" => %error);
            return Err(Failed);
        }
        if backlog
            && self.statistics_due()
            && let Err(error) = self.service.store().inbox_refresh_statistics().await
        {
            slog::warn!(self.log, "refreshing the webhook inbox's statistics failed"; "error" => %error);
        }
        Ok(())
    }

    fn due_at(&self, items: &Vec<InboxItem>) -> Option<i64> {
        items.iter().map(|item| item.next_attempt_at).min()
    }
}

impl InboxWorker {
    /// Whether to refresh the statistics now: at most every [`STATISTICS_EVERY`].
    fn statistics_due(&self) -> bool {
        let mut at = self.statistics_at.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let due = at.is_none_or(|at| at.elapsed() >= STATISTICS_EVERY);
        if due {
            *at = Some(Instant::now());
        }
        due
    }
}

/// Every instance prunes (pruning twice removes nothing more), at start and then every
/// [`PRUNE_EVERY`].
impl Chore for InboxPruner {
    const NAME: &'static str = "erp_inbox_prune";

    fn every(&self) -> Duration {
        PRUNE_EVERY
    }

    async fn run(&self) -> Result<(), Failed> {
        let before = now_ms() - KEEP_DONE.as_millis() as i64;
        self.service.store().inbox_prune(before).await.map(drop).map_err(|error| {
            slog::warn!(self.log, "pruning the webhook inbox failed"; "error" => %error);
            Failed
        })
    }
}

impl ErpService {
    /// Processes claimed calls. The calls of one record among them are processed together:
    /// one fetch from the ERP answers for all of them, since each was received before it.
    /// Calls not started when the service stops are released for the next run.
    async fn process_claimed(&self, items: Vec<InboxItem>, stopping: &Stopping) -> Result<(), StoreError> {
        for calls in calls_by_record(items) {
            if stopping.asked() {
                for call in &calls {
                    self.store().inbox_release(call.id).await?;
                }
                continue;
            }
            match self.process(&calls[0]).await {
                Ok(outcome) => {
                    let ids: Vec<i64> = calls.iter().map(|call| call.id).collect();
                    self.store().inbox_done(&ids, &outcome.to_string()).await?
                }
                Err(error) => {
                    let permanent = matches!(error, ErpError::UnknownModel(_));
                    for call in &calls {
                        let attempts = call.attempts + 1;
                        let next = if permanent { None } else { next_attempt_after(attempts) };
                        let next_at = next.map(|d| now_ms() + d.as_millis() as i64);
                        self.store().inbox_attempt_failed(call.id, &error.to_string(), next_at).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One call: fetch, mirror, map. Answers a description of what it did.
    ///
    /// A delete processed while the fetch's answer was on its way (another instance's call for
    /// the record, a pull) may have come after the ERP's reading: the record that answer
    /// brought back is asked for once more, and leaves again when the ERP no longer has it.
    async fn process(&self, item: &InboxItem) -> Result<Value, ErpError> {
        let info = model_named(&item.entity_name)?;
        let id = item.entity_id.as_str();
        let asked_at = now_ms();
        let (mut mirror, mut field_report) = self.fetch_and_apply(info, id).await?;
        if matches!(mirror, "inserted" | "updated" | "unchanged") && self.removed_since(info, asked_at, id).await? {
            (mirror, field_report) = self.fetch_and_apply(info, id).await?;
        }
        Ok(json!({"mirror": mirror, "fieldReport": field_report}))
    }

    /// Fetches a record by id and mirrors and maps it, or removes it (with its mapped record)
    /// when the ERP no longer has it: what the mirror did, and what was done to the mapped
    /// record.
    async fn fetch_and_apply(
        &self,
        info: &generated::erp::ModelInfo,
        id: &str,
    ) -> Result<(&'static str, Option<Value>), ErpError> {
        let fetched = self.fetch_record(info, id).await?;
        let mapping = mapping::mapping_for(info.name);
        let (mirror, field_report) = match fetched {
            Some(record) => {
                let outcome = self.store().erp_upsert(info.name, &[record]).await?;
                let mirror = match outcome.first() {
                    Some(Upserted::Inserted) => "inserted",
                    Some(Upserted::Updated) => "updated",
                    _ => "unchanged",
                };
                // The mapping reads the mirror: it holds the highest version seen.
                let stored = self.store().erp_get(info.name, id).await?;
                let field_report = match (mapping, stored) {
                    (Some(mapping), Some(stored)) => Some(self.apply_internal(mapping, id, &stored.document).await?),
                    _ => None,
                };
                (mirror, field_report)
            }
            None => {
                let (removed, field_report) = self.remove_gone(info, id).await?;
                (if removed { "deleted" } else { "absent" }, field_report)
            }
        };
        Ok((mirror, field_report))
    }

    /// A record the ERP no longer has: it leaves the mirror, and its mapped field-report record
    /// is deleted locally without forwarding (pending for `post`, never brought back by a
    /// sync meanwhile). Whether the mirror had it, and what was done to the mapped record.
    pub(crate) async fn remove_gone(
        &self,
        info: &generated::erp::ModelInfo,
        id: &str,
    ) -> Result<(bool, Option<Value>), ErpError> {
        let removed = self.store().erp_delete(info.name, id).await?;
        let field_report = match mapping::mapping_for(info.name) {
            Some(mapping) => Some(self.remove_internal(mapping, id).await?),
            None => None,
        };
        Ok((removed, field_report))
    }

    /// The field-report record mapped from an ERP record, if there is one locally.
    pub(crate) async fn mapped_record(&self, mapping: &Mapping, erp_id: &str) -> Result<Option<Value>, ErpError> {
        let info = entity_named(mapping.entity)?;
        Ok(self.fieldreport().find_by_external_id(info, erp_id).await?)
    }

    /// Writes the mapped field-report record locally, without forwarding.
    async fn apply_internal(&self, mapping: &Mapping, erp_id: &str, document: &Value) -> Result<Value, ErpError> {
        let info = entity_named(mapping.entity)?;
        let fields =
            (mapping.map)(document).map_err(|message| ErpError::Invalid { field: mapping.model.into(), message })?;
        let (action, id) = match self.mapped_record(mapping, erp_id).await? {
            Some(existing) if mapping::already_applied(&existing, &fields) => ("unchanged", existing["Id"].clone()),
            Some(existing) => {
                let id = crate::fieldreport::service::record_id(&existing["Id"]).unwrap_or_default();
                self.fieldreport().update_pending(info, &id, Value::Object(fields)).await?;
                ("updated", Value::String(id))
            }
            None => {
                let id = mapping::placeholder_id(mapping.model, erp_id);
                let mut body = fields;
                body.insert("Id".into(), Value::String(id.clone()));
                body.insert("Version".into(), Value::from(1));
                match self.fieldreport().create_pending(info, Value::Object(body)).await {
                    Ok(_) => ("created", Value::String(id)),
                    Err(FieldReportError::Conflict(message)) => return Err(ErpError::Busy(message)),
                    Err(error) => return Err(error.into()),
                }
            }
        };
        Ok(json!({"entity": mapping.entity, "id": id, "action": action, "fieldReportResponse": null}))
    }

    /// Removes the mapped field-report record locally, without forwarding.
    async fn remove_internal(&self, mapping: &Mapping, erp_id: &str) -> Result<Value, ErpError> {
        let info = entity_named(mapping.entity)?;
        let (action, id) = match self.mapped_record(mapping, erp_id).await? {
            Some(existing) => {
                let id = crate::fieldreport::service::record_id(&existing["Id"]).unwrap_or_default();
                match self.fieldreport().delete_pending(info, &id).await {
                    Ok(_) | Err(FieldReportError::NotFound { .. }) => ("deleted", Value::String(id)),
                    Err(error) => return Err(error.into()),
                }
            }
            None => ("none", Value::Null),
        };
        Ok(json!({"entity": mapping.entity, "id": id, "action": action, "fieldReportResponse": null}))
    }
}

/// The claimed calls grouped by the record they name, each group in the order of its first
/// call.
fn calls_by_record(items: Vec<InboxItem>) -> Vec<Vec<InboxItem>> {
    let mut groups: Vec<Vec<InboxItem>> = Vec::new();
    for item in items {
        let same = groups
            .iter_mut()
            .find(|group| group[0].entity_name == item.entity_name && group[0].entity_id == item.entity_id);
        match same {
            Some(group) => group.push(item),
            None => groups.push(vec![item]),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: i64, entity_name: &str, entity_id: &str) -> InboxItem {
        InboxItem {
            id,
            received_at: 0,
            entity_name: entity_name.into(),
            entity_id: entity_id.into(),
            event: "updated".into(),
            state: "pending".into(),
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            outcome: None,
        }
    }

    #[test]
    fn the_calls_of_one_record_go_together_in_the_order_of_their_first_call() {
        let items = vec![
            call(1, "customer", "5"),
            call(2, "contact", "5"),
            call(3, "customer", "5"),
            call(4, "customer", "6"),
            call(5, "contact", "5"),
        ];
        let groups: Vec<Vec<i64>> =
            calls_by_record(items).iter().map(|group| group.iter().map(|c| c.id).collect()).collect();
        assert_eq!(groups, vec![vec![1, 3], vec![2, 5], vec![4]]);
    }

    #[test]
    fn back_off_doubles_up_to_five_minutes_then_gives_up() {
        assert_eq!(next_attempt_after(1), Some(Duration::from_secs(1)));
        assert_eq!(next_attempt_after(2), Some(Duration::from_secs(2)));
        assert_eq!(next_attempt_after(5), Some(Duration::from_secs(16)));
        assert_eq!(next_attempt_after(11), Some(Duration::from_secs(300)));
        assert_eq!(next_attempt_after(MAX_ATTEMPTS), None);
    }
}
