//! The simulator's records by set, their keys in modification order, the writes it received
//! and the writes scripted to follow a page.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::sandbox::http::SimRequest;
use crate::vocabulary::stamp::Stamp;

/// How many writes `/__sandbox/received` remembers.
pub(super) const RECEIVED_KEPT: usize = 10_000;

/// The records of one entity set, by id.
pub(super) type Records = BTreeMap<i64, Stored>;

/// A stored record: its fields, and their JSON text, written once when the record is stored.
/// A list page that shows every field (a sync's, with every navigation property expanded)
/// copies the texts: serializing each record again for every page was 60% of the simulator's
/// CPU time in the bench's sync (0.33 s for 100,000 companies), on the two cores the service
/// under test has too.
pub(super) struct Stored {
    pub(super) fields: Map<String, Value>,
    pub(super) text: Box<RawValue>,
}

impl Stored {
    pub(super) fn new(fields: Map<String, Value>) -> Stored {
        let text = serde_json::value::to_raw_value(&fields).expect("a JSON object serializes");
        Stored { fields, text }
    }
}

#[derive(Default)]
pub(super) struct FieldReport {
    pub(super) sets: Mutex<HashMap<String, Records>>,
    pub(super) next_id: Mutex<i64>,
    pub(super) received: Mutex<Vec<Value>>,
    /// Per set, its keys (`DateModified`, `Id`) in order; dropped on every write to the set,
    /// so paging through a large set sorts it once, and a key filter finds its page by a
    /// binary search.
    pub(super) by_modified: Mutex<HashMap<String, Keys>>,
    /// Stamps in whole seconds (`POST /__sandbox/behaviour {"stamps": "seconds"}`).
    pub(super) whole_seconds: AtomicBool,
    /// The form a `$filter`'s stamps must take when not the described one
    /// (`POST /__sandbox/behaviour {"stamp_literals": "bare"}`).
    pub(super) stamp_literals: Mutex<Option<crate::sandbox::odata_filter::Written>>,
    pub(super) scripted: Mutex<Vec<Scripted>>,
}

/// The keys (`DateModified`, `Id`) of a set's records, in order.
pub(super) type Keys = Arc<Vec<(Stamp, i64)>>;

/// A stamp of now, in microseconds or, as some upstreams write them, whole seconds.
pub(super) fn stamp_of(instant: chrono::DateTime<chrono::Utc>, whole_seconds: bool) -> String {
    let format = if whole_seconds { chrono::SecondsFormat::Secs } else { chrono::SecondsFormat::Micros };
    instant.to_rfc3339_opts(format, true)
}

/// Records to change, as another client of the system would, once a number of list pages of
/// their set have been served (`POST /__sandbox/during-list`).
pub(super) struct Scripted {
    pub(super) set: String,
    pub(super) pages_left: u64,
    pub(super) touch: Vec<i64>,
}

impl FieldReport {
    /// The keys of a set in (`DateModified`, `Id`) order, cached until the set changes: a
    /// sync reads every page of the same ordered list.
    pub(super) fn in_modified_order(&self, set: &str, records: &Records) -> Keys {
        let mut cache = self.by_modified.lock().expect("lock");
        cache
            .entry(set.to_string())
            .or_insert_with(|| {
                // Each record's `DateModified` read once, not at every comparison (two lookups
                // each: the first page of a sync of 100,000 records took 37 ms).
                let mut ordered: Vec<(Stamp, i64)> = records
                    .iter()
                    .map(|(id, record)| {
                        let modified = record.fields.get("DateModified").and_then(Value::as_str).unwrap_or_default();
                        (Stamp::parse(modified), *id)
                    })
                    .collect();
                ordered.sort();
                Arc::new(ordered)
            })
            .clone()
    }

    /// Forgets the cached order of a set after a write to it.
    pub(super) fn changed(&self, set: &str) {
        self.by_modified.lock().expect("lock").remove(set);
    }

    pub(super) fn now(&self) -> String {
        stamp_of(chrono::Utc::now(), self.whole_seconds.load(AtomicOrdering::Relaxed))
    }

    /// Keeps the newest [`RECEIVED_KEPT`] writes: enough for tests, bounded under load.
    pub(super) fn record_write(&self, req: &SimRequest, body: Value) {
        let mut received = self.received.lock().expect("lock");
        if received.len() >= RECEIVED_KEPT {
            received.drain(..RECEIVED_KEPT / 2);
        }
        received.push(json!({"method": req.method.as_str(), "path": req.path, "body": body}));
    }
}
