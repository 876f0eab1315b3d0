//! The field-report simulator: OData at `/odata/<Set>` with HTTP Basic, `<Set>(<Id>L)` keys,
//! ids assigned on create, 409 on a stale `Version` (an update must carry the stored version
//! plus one), `DateModified` set on every write, paging with `$top`/`$skip` and
//! `@odata.nextLink` by position (`$skip`; server page size 100), `$filter` (comparisons joined
//! by `and`/`or`, see [`super::odata_filter`]), `$orderby=DateModified[,Id]` (else Id order),
//! `$expand` (navigation properties are served only when expanded), `$select`, and `$metadata`
//! served from `spec/upstream/fieldreport/metadata.xml`.
//!
//! For tests, what a real upstream does to a sync: `GET /__sandbox/received` lists the writes it
//! received (method, path, body; the newest 10,000); `POST /__sandbox/seed {set, count}` creates
//! generated records; `POST /__sandbox/behaviour {stamps}` stamps in whole seconds;
//! `POST /__sandbox/during-list {set, after_pages, touch}` has another client change records
//! while a sync pages; `POST /__sandbox/late {set, ago_seconds | at_newest, id?}` commits a
//! change stamped in the past; slow pages are a fault with a 2xx status and a delay.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use http::{Method, StatusCode, header};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use slog::Logger;

use super::faults::Faults;
use super::http::{SimRequest, SimResponse, empty, json, serve};
use super::odata_filter::Filter;
use crate::vocabulary::stamp::Stamp;

pub const USERNAME: &str = "sandbox";
pub const PASSWORD: &str = "sandbox-password";
const PAGE_SIZE: usize = 100;
/// How many writes `/__sandbox/received` remembers.
const RECEIVED_KEPT: usize = 10_000;
const METADATA: &str = include_str!("../../../spec/upstream/fieldreport/metadata.xml");

/// The records of one entity set, by id.
type Records = BTreeMap<i64, Stored>;

/// A stored record: its fields, and their JSON text, written once when the record is stored.
/// A list page that shows every field (a sync's, with every navigation property expanded)
/// copies the texts: serializing each record again for every page was 60% of the simulator's
/// CPU time in the bench's sync (0.33 s for 100,000 companies), on the two cores the service
/// under test has too.
struct Stored {
    fields: Map<String, Value>,
    text: Box<RawValue>,
}

impl Stored {
    fn new(fields: Map<String, Value>) -> Stored {
        let text = serde_json::value::to_raw_value(&fields).expect("a JSON object serializes");
        Stored { fields, text }
    }
}

#[derive(Default)]
struct FieldReport {
    sets: Mutex<HashMap<String, Records>>,
    next_id: Mutex<i64>,
    received: Mutex<Vec<Value>>,
    /// Per set, its keys (`DateModified`, `Id`) in order; dropped on every write to the set,
    /// so paging through a large set sorts it once, and a key filter finds its page by a
    /// binary search.
    by_modified: Mutex<HashMap<String, Keys>>,
    /// Stamps in whole seconds (`POST /__sandbox/behaviour {"stamps": "seconds"}`).
    whole_seconds: AtomicBool,
    scripted: Mutex<Vec<Scripted>>,
}

pub async fn start(bind: SocketAddr, log: Logger) -> std::io::Result<SocketAddr> {
    let system = Arc::new(FieldReport::default());
    serve(bind, Arc::new(Faults::default()), log, move |req| {
        let system = system.clone();
        async move { system.handle(req) }
    })
    .await
}

fn odata_error(status: StatusCode, code: &str, message: &str) -> SimResponse {
    json(status, &json!({"error": {"code": code, "message": message}}))
}

fn authorized(req: &SimRequest) -> bool {
    let expected =
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{USERNAME}:{PASSWORD}")));
    req.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(expected.as_str())
}

/// Splits `Companies(12L)` into the set and the key.
fn addressed(segment: &str) -> (String, Option<i64>) {
    match segment.split_once('(') {
        Some((set, rest)) => {
            let key = rest.trim_end_matches(')').trim_end_matches('L').trim_matches('\'');
            (set.to_string(), key.parse().ok())
        }
        None => (segment.to_string(), None),
    }
}

fn query_params(query: Option<&str>) -> HashMap<String, String> {
    query
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

/// The keys (`DateModified`, `Id`) of a set's records, in order.
type Keys = Arc<Vec<(Stamp, i64)>>;

/// A stamp of now, in microseconds or, as some upstreams write them, whole seconds.
fn stamp_of(instant: chrono::DateTime<chrono::Utc>, whole_seconds: bool) -> String {
    let format = if whole_seconds { chrono::SecondsFormat::Secs } else { chrono::SecondsFormat::Micros };
    instant.to_rfc3339_opts(format, true)
}

/// Records to change, as another client of the system would, once a number of list pages of
/// their set have been served (`POST /__sandbox/during-list`).
struct Scripted {
    set: String,
    pages_left: u64,
    touch: Vec<i64>,
}

impl FieldReport {
    /// The keys of a set in (`DateModified`, `Id`) order, cached until the set changes: a
    /// sync reads every page of the same ordered list.
    fn in_modified_order(&self, set: &str, records: &Records) -> Keys {
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
    fn changed(&self, set: &str) {
        self.by_modified.lock().expect("lock").remove(set);
    }

    fn now(&self) -> String {
        stamp_of(chrono::Utc::now(), self.whole_seconds.load(AtomicOrdering::Relaxed))
    }

    fn handle(&self, req: SimRequest) -> SimResponse {
        let segments = req.segments();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, ["__sandbox", "received"]) => {
                json(StatusCode::OK, &Value::Array(self.received.lock().expect("lock").clone()))
            }
            (&Method::POST, ["__sandbox", "seed"]) => self.seed(&req),
            (&Method::POST, ["__sandbox", "behaviour"]) => self.behaviour(&req),
            (&Method::POST, ["__sandbox", "during-list"]) => self.script(&req),
            (&Method::POST, ["__sandbox", "late"]) => self.late(&req),
            _ if !authorized(&req) => {
                odata_error(StatusCode::UNAUTHORIZED, "Unauthorized", "Basic authentication required.")
            }
            (&Method::GET, ["odata", "$metadata"]) => http::Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/xml")
                .body(http_body_util::Full::new(bytes::Bytes::from_static(METADATA.as_bytes())))
                .expect("a valid response"),
            (method, ["odata", target]) => {
                let (set, key) = addressed(target);
                if !METADATA.contains(&format!("EntitySet Name=\"{set}\"")) {
                    return odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("No entity set {set}."));
                }
                match (method, key) {
                    (&Method::GET, None) => self.list(&set, &req),
                    (&Method::GET, Some(id)) => self.get(&set, id),
                    (&Method::POST, None) => self.create(&set, &req),
                    (&Method::PUT, Some(id)) => self.update(&set, id, &req),
                    (&Method::DELETE, Some(id)) => self.delete(&set, id, &req),
                    _ => odata_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "Not supported."),
                }
            }
            _ => odata_error(StatusCode::NOT_FOUND, "NotFound", "No such resource."),
        }
    }

    /// Keeps the newest [`RECEIVED_KEPT`] writes: enough for tests, bounded under load.
    fn record_write(&self, req: &SimRequest, body: Value) {
        let mut received = self.received.lock().expect("lock");
        if received.len() >= RECEIVED_KEPT {
            received.drain(..RECEIVED_KEPT / 2);
        }
        received.push(json!({"method": req.method.as_str(), "path": req.path, "body": body}));
    }

    /// A page of a set; the writes scripted to follow it are made once it is written out.
    fn list(&self, set: &str, req: &SimRequest) -> SimResponse {
        let answer = self.list_page(set, req);
        for touch in self.scripts_due(set) {
            self.touch(set, &touch, None);
        }
        answer
    }

    /// The scripted writes due after another page of `set`.
    fn scripts_due(&self, set: &str) -> Vec<Vec<i64>> {
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
    fn touch(&self, set: &str, ids: &[i64], stamp: Option<&str>) -> Vec<Value> {
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

    /// `{"stamps": "seconds" | "micros"}`: how finely `DateModified` is stamped from now on.
    fn behaviour(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        match body.get("stamps").and_then(Value::as_str) {
            Some("seconds") => self.whole_seconds.store(true, AtomicOrdering::Relaxed),
            Some("micros") => self.whole_seconds.store(false, AtomicOrdering::Relaxed),
            _ => return odata_error(StatusCode::BAD_REQUEST, "BadRequest", "stamps: seconds or micros"),
        }
        json(StatusCode::OK, &body)
    }

    /// `{"set", "after_pages": n, "touch": [ids]}`: once `n` more list pages of the set have
    /// been served, the records are changed as by another client ([`FieldReport::touch`]).
    fn script(&self, req: &SimRequest) -> SimResponse {
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
    fn late(&self, req: &SimRequest) -> SimResponse {
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

    fn list_page(&self, set: &str, req: &SimRequest) -> SimResponse {
        let params = query_params(req.query.as_deref());
        let sets = self.sets.lock().expect("lock");
        let ordered = params.get("$orderby").is_some_and(|o| o.starts_with("DateModified"));
        let filter = match params.get("$filter") {
            Some(text) => match Filter::parse(text) {
                Some(filter) => Some((text.as_str(), filter)),
                None => {
                    return odata_error(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("unsupported $filter {text:?}"),
                    );
                }
            },
            None => None,
        };
        let skip: usize = params.get("$skip").and_then(|v| v.parse().ok()).unwrap_or(0);
        let top: usize = params.get("$top").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
        let limit = top.min(PAGE_SIZE);
        // Only the page and one record past it are collected (that one tells whether a next
        // page exists): a sync of 100,000 records reads 200 pages, and collecting the whole set
        // for each made the simulator the bench's bottleneck.
        let empty = Records::new();
        let all = sets.get(set).unwrap_or(&empty);
        let order = ordered.then(|| self.in_modified_order(set, all));
        let matching = |record: &&Stored| filter.as_ref().is_none_or(|(_, f)| f.matches(&record.fields));
        let candidates: Box<dyn Iterator<Item = &Stored>> = match &order {
            // From a key filter's start on: found by a binary search, not by a scan.
            // A key filter holds for every record from its start on: the records are not
            // matched one by one (parsing their stamps per page was most of a sync's pages).
            Some(keys) => match filter.as_ref().and_then(|(_, f)| f.key_start()) {
                Some(start) => {
                    let from = keys.partition_point(|(stamp, id)| !start.admits(stamp, *id));
                    Box::new(keys[from..].iter().filter_map(|(_, id)| all.get(id)).skip(skip))
                }
                None => Box::new(keys.iter().filter_map(|(_, id)| all.get(id)).filter(matching).skip(skip)),
            },
            // In Id order from a key on: found in the map, not by a scan.
            None if let Some(above) = filter.as_ref().and_then(|(_, f)| f.id_above()) => {
                Box::new(all.range(above.saturating_add(1)..).map(|(_, record)| record).skip(skip))
            }
            None => Box::new(all.values().filter(matching).skip(skip)),
        };
        let window: Vec<&Stored> = candidates.take(limit.saturating_add(1)).collect();
        let more = window.len() > limit;
        let records = &window[..window.len().min(limit)];
        let expanded = params.get("$expand").map(|e| {
            e.split(',').map(|p| p.split('/').next().unwrap_or_default().trim().to_string()).collect::<Vec<_>>()
        });
        let navigation = generated::fieldreport::by_set(set).map(|e| e.expand).unwrap_or_default();
        let selected: Option<Vec<String>> =
            params.get("$select").map(|s| s.split(',').map(|f| f.trim().to_string()).collect());
        // Navigation properties appear only when expanded, as at the real system. The records
        // are written out from the set, not copied first (a deep copy of each record was most
        // of the simulator's work in the bench's sync).
        let hidden: Vec<&str> = navigation
            .iter()
            .map(|p| p.split('/').next().unwrap_or_default())
            .filter(|property| !expanded.as_ref().is_some_and(|e| e.iter().any(|x| x == property)))
            .collect();
        let shown = |key: &str| {
            !hidden.contains(&key)
                && selected.as_ref().is_none_or(|fields| {
                    fields.iter().any(|f| f == key) || expanded.as_ref().is_some_and(|e| e.iter().any(|x| x == key))
                })
        };
        let every_field = hidden.is_empty() && selected.is_none();
        let shown: Option<&dyn Fn(&str) -> bool> = (!every_field).then_some(&shown);
        let page: Vec<ServedRecord> = records.iter().map(|record| ServedRecord { record, shown }).collect();
        let mut next_link = None;
        let served = records.len();
        let page_end = skip + served;
        let remaining_wanted = top.saturating_sub(served);
        if more && remaining_wanted > 0 {
            let mut next: Vec<(String, String)> =
                params.into_iter().filter(|(k, _)| k != "$skip" && k != "$top").collect();
            next.sort();
            next.push(("$skip".into(), page_end.to_string()));
            if top != usize::MAX {
                next.push(("$top".into(), remaining_wanted.to_string()));
            }
            let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(next).finish();
            next_link = Some(format!("/odata/{set}?{query}"));
        }
        json(StatusCode::OK, &ListAnswer { context: format!("$metadata#{set}"), value: page, next_link })
    }

    fn get(&self, set: &str, id: i64) -> SimResponse {
        let sets = self.sets.lock().expect("lock");
        match sets.get(set).and_then(|records| records.get(&id)) {
            Some(record) => json(StatusCode::OK, &record.text),
            None => odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist.")),
        }
    }

    fn create(&self, set: &str, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut record)) = req.json() else {
            return odata_error(StatusCode::BAD_REQUEST, "BadRequest", "A JSON object is required.");
        };
        self.record_write(req, Value::Object(record.clone()));
        let id = {
            let mut next = self.next_id.lock().expect("lock");
            *next += 1;
            1000 + *next
        };
        record.insert("Id".into(), json!(id.to_string()));
        record.entry("Version").or_insert(json!(1));
        record.insert("DateOfCreation".into(), json!(self.now()));
        record.insert("DateModified".into(), json!(self.now()));
        let record = Stored::new(record);
        let answer = json(StatusCode::CREATED, &record.text);
        self.sets.lock().expect("lock").entry(set.to_string()).or_default().insert(id, record);
        self.changed(set);
        answer
    }

    fn update(&self, set: &str, id: i64, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut record)) = req.json() else {
            return odata_error(StatusCode::BAD_REQUEST, "BadRequest", "A JSON object is required.");
        };
        self.record_write(req, Value::Object(record.clone()));
        let mut sets = self.sets.lock().expect("lock");
        self.changed(set);
        let Some(stored) = sets.get_mut(set).and_then(|records| records.get_mut(&id)) else {
            return odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist."));
        };
        let stored_version = stored.fields.get("Version").and_then(edm_int64).unwrap_or(0);
        let sent_version = record.get("Version").and_then(edm_int64);
        if sent_version != Some(stored_version + 1) {
            return odata_error(
                StatusCode::CONFLICT,
                "Conflict",
                &format!(
                    "Version {} is stale; the record is at version {stored_version}.",
                    sent_version.map(|v| v.to_string()).unwrap_or("none".into())
                ),
            );
        }
        record.insert("Id".into(), json!(id.to_string()));
        record.insert("DateModified".into(), json!(self.now()));
        if let Some(created) = stored.fields.get("DateOfCreation").cloned() {
            record.insert("DateOfCreation".into(), created);
        }
        *stored = Stored::new(record);
        json(StatusCode::OK, &stored.text)
    }

    fn delete(&self, set: &str, id: i64, req: &SimRequest) -> SimResponse {
        self.record_write(req, Value::Null);
        let mut sets = self.sets.lock().expect("lock");
        self.changed(set);
        match sets.get_mut(set).and_then(|records| records.remove(&id)) {
            Some(_) => empty(StatusCode::NO_CONTENT),
            None => odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist.")),
        }
    }

    fn seed(&self, req: &SimRequest) -> SimResponse {
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

/// An `Edm.Int64` as OData JSON writes it: a number (v4), or its digits as a string (v3).
fn edm_int64(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.parse().ok())
}

/// The navigation properties whose model type is a list, by set: `(set, property)`.
fn navigations_to_many() -> Vec<(&'static str, String)> {
    struct Lists(Vec<(&'static str, String)>);
    impl generated::fieldreport::EntityVisitor for Lists {
        fn visit<E: generated::fieldreport::MirroredEntity>(&mut self) {
            let schema = schemars::schema_for!(E::Model).schema;
            for (name, property) in schema.object.iter().flat_map(|o| o.properties.iter()) {
                let is_list = match property {
                    schemars::schema::Schema::Object(object) => {
                        object.instance_type.as_ref().is_some_and(|t| match t {
                            schemars::schema::SingleOrVec::Single(kind) => {
                                **kind == schemars::schema::InstanceType::Array
                            }
                            schemars::schema::SingleOrVec::Vec(kinds) => {
                                kinds.contains(&schemars::schema::InstanceType::Array)
                            }
                        })
                    }
                    schemars::schema::Schema::Bool(_) => false,
                };
                if is_list {
                    self.0.push((E::INFO.set, name.clone()));
                }
            }
        }
    }
    let mut lists = Lists(Vec::new());
    generated::fieldreport::visit_entities(&mut lists);
    lists.0
}

/// A list's answer, as the field-report system words it.
#[derive(serde::Serialize)]
struct ListAnswer<'a> {
    #[serde(rename = "@odata.context")]
    context: String,
    value: Vec<ServedRecord<'a>>,
    #[serde(rename = "@odata.nextLink", skip_serializing_if = "Option::is_none")]
    next_link: Option<String>,
}

/// A stored record written out with the fields that `shown` lets through: its stored text
/// when that is every field.
struct ServedRecord<'a> {
    record: &'a Stored,
    shown: Option<&'a dyn Fn(&str) -> bool>,
}

impl serde::Serialize for ServedRecord<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.shown {
            None => self.record.text.serialize(serializer),
            Some(shown) => serializer.collect_map(self.record.fields.iter().filter(|(key, _)| shown(key))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::addressed;

    #[test]
    fn keys_are_read_from_the_segment() {
        assert_eq!(addressed("Companies(12L)"), ("Companies".to_string(), Some(12)));
        assert_eq!(addressed("Companies"), ("Companies".to_string(), None));
        assert_eq!(addressed("Companies('7')"), ("Companies".to_string(), Some(7)));
    }
}
