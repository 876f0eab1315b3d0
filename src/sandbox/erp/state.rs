//! The simulator's records, by model and id, with their ids and modification dates.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

/// The records of one model, by id.
pub(super) type Records = BTreeMap<u64, Map<String, Value>>;

#[derive(Default)]
pub(super) struct State {
    pub(super) models: HashMap<String, Records>,
    pub(super) last_id: u64,
    pub(super) last_modified: i64,
    /// At most this many records a page whatever `pageSize` asks (`POST /__sandbox/behaviour
    /// {"most_per_page": n}`): an ERP with a lower limit than the documented one.
    pub(super) most_per_page: Option<usize>,
    /// Lists in id order whatever `sort` asks (`POST /__sandbox/behaviour {"sort":
    /// "ignored"}`): an ERP that ignores a sort it does not support, as it ignores unknown
    /// filter names.
    pub(super) sort_ignored: bool,
    /// Lists in the order the records were last written whatever `sort` asks (`{"sort":
    /// "by-change"}`): an ERP that ignores `sort` and lists its rows as stored, not by id.
    pub(super) listed_by_change: bool,
    /// How far ahead of now writes are stamped (`POST /__sandbox/behaviour
    /// {"clock_offset_ms": n}`): an ERP whose clock runs ahead, or was set right.
    clock_offset_ms: i64,
}

impl State {
    /// The next `lastModifiedDate`: now (by the simulator's clock) in epoch milliseconds, or
    /// one past the last one.
    pub(super) fn tick(&mut self) -> i64 {
        let now = chrono::Utc::now().timestamp_millis().saturating_add(self.clock_offset_ms);
        self.last_modified = now.max(self.last_modified + 1);
        self.last_modified
    }

    /// Sets the clock `offset_ms` ahead of now. A clock set back stamps behind the stamps
    /// written before (as a real clock corrected does), not one past them.
    pub(super) fn set_clock_offset(&mut self, offset_ms: i64) {
        if offset_ms < self.clock_offset_ms {
            self.last_modified = 0;
        }
        self.clock_offset_ms = offset_ms;
    }

    pub(super) fn records(&mut self, model: &str) -> &mut Records {
        self.models.entry(model.to_string()).or_default()
    }

    /// Stores a new record under `id` (or the next id) with version "0" and fresh dates.
    pub(super) fn insert(
        &mut self,
        model: &str,
        mut record: Map<String, Value>,
        id: Option<u64>,
    ) -> Map<String, Value> {
        let id = id.unwrap_or(self.last_id + 1);
        self.last_id = self.last_id.max(id);
        let now = self.tick();
        record.insert("id".into(), json!(id.to_string()));
        record.insert("version".into(), json!("0"));
        record.insert("createdDate".into(), json!(now));
        record.insert("lastModifiedDate".into(), json!(now));
        self.records(model).insert(id, record.clone());
        record
    }
}
