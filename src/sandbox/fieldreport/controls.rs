//! The tests' controls (`/__sandbox/…`): scripted and late changes, stamps in whole seconds,
//! seeded records.

use std::sync::atomic::Ordering as AtomicOrdering;

use http::StatusCode;
use serde_json::{Value, json};

use super::odata::{edm_int64, odata_error};
use super::sets::navigations_to_many;
use super::state::{FieldReport, Scripted, Stored, stamp_of};
use crate::sandbox::http::{SimRequest, SimResponse, json};
use crate::sandbox::odata_filter::Written;
use generated::fieldreport::STAMP_LITERAL;

impl FieldReport {
    /// The scripted writes due after another page of `set`.
    pub(super) fn scripts_due(&self, set: &str) -> Vec<Vec<i64>> {
        let mut scripted = self.scripted.lock().expect("lock");
        let mut due = Vec::new();
        scripted.retain_mut(|script| {
            if script.set != set {
                return true;
            }
            script.pages_left = script.pages_left.saturating_sub(1);
            if script.pages_left > 0 {
                return true;
            }
            due.push(std::mem::take(&mut script.touch));
            false
        });
        due
    }

    /// Changes records as another client would: `Version` one up, `DateModified` now (or
    /// `stamp`). The records changed.
    pub(super) fn touch(&self, set: &str, ids: &[i64], stamp: Option<&str>) -> Vec<Value> {
        let now = stamp.map_or_else(|| self.now(), str::to_string);
        let mut sets = self.sets.lock().expect("lock");
        self.changed(set);
        let mut touched = Vec::new();
        for id in ids {
            if let Some(stored) = sets.get_mut(set).and_then(|records| records.get_mut(id)) {
                let mut fields = stored.fields.clone();
                let version = fields.get("Version").and_then(edm_int64).unwrap_or(0);
                fields.insert("Version".into(), json!(version + 1));
                fields.insert("DateModified".into(), json!(now));
                *stored = Stored::new(fields);
                touched.push(Value::Object(stored.fields.clone()));
            }
        }
        touched
    }

    /// `{"stamps": "seconds" | "micros"}`: how finely `DateModified` is stamped from now on;
    /// `{"stamp_literals": "typed" | "bare" | "offset" | "described"}`: which form of a stamp
    /// in a `$filter` is accepted (a server of the other OData version than its description;
    /// `offset`: a v3 one whose stamps are `Edm.DateTimeOffset`, `datetimeoffset'…'`).
    pub(super) fn behaviour(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let stamps = body.get("stamps").and_then(Value::as_str);
        let literals = body.get("stamp_literals").and_then(Value::as_str);
        let accepted = match literals {
            None => None,
            Some("described") => Some(None),
            Some("typed") => Some(Some(Written::Typed(STAMP_LITERAL.unwrap_or("datetime").to_string()))),
            Some("bare") => Some(Some(Written::Bare)),
            Some("offset") => Some(Some(Written::Typed("datetimeoffset".to_string()))),
            Some(_) => {
                let message = "stamp_literals: typed, bare, offset or described";
                return odata_error(StatusCode::BAD_REQUEST, "BadRequest", message);
            }
        };
        match stamps {
            Some("seconds") => self.whole_seconds.store(true, AtomicOrdering::Relaxed),
            Some("micros") => self.whole_seconds.store(false, AtomicOrdering::Relaxed),
            None if accepted.is_some() => {}
            _ => return odata_error(StatusCode::BAD_REQUEST, "BadRequest", "stamps: seconds or micros"),
        }
        if let Some(accepted) = accepted {
            *self.stamp_literals.lock().expect("lock") = accepted;
        }
        json(StatusCode::OK, &body)
    }

    /// How a stamp in a `$filter` must be written: as set by [`FieldReport::behaviour`], else as
    /// the description declares (`generated::fieldreport::STAMP_LITERAL`).
    pub(super) fn accepted_stamps(&self) -> Written {
        self.stamp_literals.lock().expect("lock").clone().unwrap_or_else(|| match STAMP_LITERAL {
            Some(prefix) => Written::Typed(prefix.to_string()),
            None => Written::Bare,
        })
    }

    /// `{"set", "after_pages": n, "touch": [ids]}`: once `n` more list pages of the set have
    /// been served, the records are changed as by another client ([`FieldReport::touch`]).
    pub(super) fn script(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let set = body.get("set").and_then(Value::as_str).unwrap_or_default().to_string();
        let pages_left = body.get("after_pages").and_then(Value::as_u64).unwrap_or(1).max(1);
        let touch: Vec<i64> = body
            .get("touch")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_i64().or_else(|| id.as_str()?.parse().ok()))
            .collect();
        self.scripted.lock().expect("lock").push(Scripted { set, pages_left, touch });
        json(StatusCode::OK, &body)
    }

    /// A late commit: `{"set", "ago_seconds": s}` stamps a change `s` seconds before now,
    /// `{"set", "at_newest": true}` with the newest stamp the set holds (the same instant as
    /// the last one a sync read); with `"id"` the record is changed, else one is created.
    /// The record as stored.
    pub(super) fn late(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let set = body.get("set").and_then(Value::as_str).unwrap_or_default().to_string();
        let stamp = if body.get("at_newest").and_then(Value::as_bool) == Some(true) {
            let sets = self.sets.lock().expect("lock");
            let records = sets.get(&set);
            let newest =
                records.map(|records| self.in_modified_order(&set, records)).and_then(|keys| keys.last().cloned());
            match newest {
                Some((stamp, _)) => stamp.text().to_string(),
                None => return odata_error(StatusCode::BAD_REQUEST, "BadRequest", "the set has no record"),
            }
        } else {
            let ago = body.get("ago_seconds").and_then(Value::as_f64).unwrap_or(0.0);
            let at = chrono::Utc::now() - chrono::Duration::milliseconds((ago * 1000.0) as i64);
            stamp_of(at, self.whole_seconds.load(AtomicOrdering::Relaxed))
        };
        let id = match body.get("id").and_then(|id| id.as_i64().or_else(|| id.as_str()?.parse().ok())) {
            Some(id) => id,
            None => {
                let id = {
                    let mut next = self.next_id.lock().expect("lock");
                    *next += 1;
                    1000 + *next
                };
                let record = json!({"Id": id.to_string(), "Version": 0, "Name": format!("late {id}"),
                                    "ExternalId": format!("late-{id}"), "DateOfCreation": stamp});
                if let Value::Object(record) = record {
                    self.sets.lock().expect("lock").entry(set.clone()).or_default().insert(id, Stored::new(record));
                }
                id
            }
        };
        match self.touch(&set, &[id], Some(&stamp)).pop() {
            Some(record) => json(StatusCode::OK, &record),
            None => odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist.")),
        }
    }

    pub(super) fn seed(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let set = body.get("set").and_then(Value::as_str).unwrap_or_default().to_string();
        let count = body.get("count").and_then(Value::as_u64).unwrap_or(0);
        let navigation = generated::fieldreport::by_set(&set).map(|e| e.expand).unwrap_or_default();
        let to_many = navigations_to_many();
        let mut sets = self.sets.lock().expect("lock");
        self.changed(&set);
        let records = sets.entry(set.clone()).or_default();
        let mut next = self.next_id.lock().expect("lock");
        for n in 0..count {
            *next += 1;
            let id = 1000 + *next;
            let mut record = json!({"Id": id.to_string(), "Version": 1, "Name": format!("{set} {n}"), "ExternalId": format!("seed-{id}"),
                                    "DateOfCreation": self.now(), "DateModified": self.now()});
            // Related records, served only when expanded: a list, or one record for a
            // navigation to one (as the set's model types it).
            for property in navigation.iter().map(|p| p.split('/').next().unwrap_or_default()) {
                let related = json!({"Id": format!("{}", id * 10), "Name": format!("{property} of {id}")});
                record[property] =
                    if to_many.iter().any(|(s, p)| *s == set && p == property) { json!([related]) } else { related };
            }
            if let Value::Object(record) = record {
                records.insert(id, Stored::new(record));
            }
        }
        json(StatusCode::OK, &json!({"set": set, "seeded": count}))
    }
}
