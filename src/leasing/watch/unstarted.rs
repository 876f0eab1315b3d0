//! The financing requests created by this instance whose watch could not be started (the
//! database refused the write after the provider had created them), with their creators, until
//! their watch is started (see [`super::owners`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One request created here whose watch is not started yet.
struct Created {
    /// The id as the provider answered it.
    financing_id: String,
    request: Value,
    read_at: i64,
    user_id: i64,
}

/// The requests created by this instance whose watch could not be started yet, by their id
/// in lower case (one request in any spelling). Cheap to clone.
#[derive(Clone, Default)]
pub(super) struct Unstarted(Arc<Mutex<HashMap<String, Created>>>);

fn key(financing_id: &str) -> String {
    crate::leasing::id::hyphenated(financing_id).to_lowercase()
}

impl Unstarted {
    /// The creator of `financing_id`, when it is one of these, and the id it was created as.
    pub(super) fn get(&self, financing_id: &str) -> Option<(String, i64)> {
        let held = self.0.lock().expect("unstarted watches lock");
        held.get(&key(financing_id)).map(|created| (created.financing_id.clone(), created.user_id))
    }

    /// The creator of `financing_id`, when it is one of these.
    pub(super) fn creator(&self, financing_id: &str) -> Option<i64> {
        self.get(financing_id).map(|(_, user_id)| user_id)
    }

    /// `financing_id` is watched now.
    pub(super) fn started(&self, financing_id: &str) {
        self.0.lock().expect("unstarted watches lock").remove(&key(financing_id));
    }

    /// Keeps `financing_id`, created by `user_id` (answered as `request` at `read_at`).
    pub(super) fn hold(&self, financing_id: &str, request: &Value, read_at: i64, user_id: i64) {
        let created = Created { financing_id: financing_id.to_string(), request: request.clone(), read_at, user_id };
        self.0.lock().expect("unstarted watches lock").insert(key(financing_id), created);
    }

    /// Every request kept: its id as created, the answer, when it was read, its creator.
    pub(super) fn snapshot(&self) -> Vec<(String, Value, i64, i64)> {
        let held = self.0.lock().expect("unstarted watches lock");
        held.values().map(|c| (c.financing_id.clone(), c.request.clone(), c.read_at, c.user_id)).collect()
    }
}
