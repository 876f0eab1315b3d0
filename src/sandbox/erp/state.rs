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
}

impl State {
    /// The next `lastModifiedDate`: now in epoch milliseconds, or one past the last one.
    pub(super) fn tick(&mut self) -> i64 {
        self.last_modified = chrono::Utc::now().timestamp_millis().max(self.last_modified + 1);
        self.last_modified
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
