//! The field-report simulator: OData at `/odata/<Set>` with HTTP Basic, `<Set>(<Id>L)` keys,
//! ids assigned on create, 409 on a stale `Version` (an update must carry the stored version
//! plus one), `DateModified` set on every write, paging with `$top`/`$skip` and
//! `@odata.nextLink` (server page size 100), `$filter` (`Id eq <n>L`, `Id gt <n>L`,
//! `<Field> eq 'x'`, `DateModified gt <time>`), `$orderby=DateModified` (else Id order), `$expand` (navigation properties are
//! served only when expanded), `$select`, and `$metadata` served from
//! `spec/upstream/fieldreport/metadata.xml`.
//!
//! For tests: `GET /__sandbox/received` lists the writes it received (method, path, body; the
//! newest 10,000);
//! `POST /__sandbox/seed {set, count}` creates generated records.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http::{Method, StatusCode, header};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use slog::Logger;

use super::faults::Faults;
use super::http::{SimRequest, SimResponse, empty, json, serve};

pub const USERNAME: &str = "sandbox";
pub const PASSWORD: &str = "sandbox-password";
const PAGE_SIZE: usize = 100;
/// How many writes `/__sandbox/received` remembers.
const RECEIVED_KEPT: usize = 10_000;
const METADATA: &str = include_str!("../../spec/upstream/fieldreport/metadata.xml");

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

/// A set and the text of a `$filter`, if any.
type OrderKey = (String, Option<String>);

#[derive(Default)]
struct FieldReport {
    sets: Mutex<HashMap<String, Records>>,
    next_id: Mutex<i64>,
    received: Mutex<Vec<Value>>,
    /// Per set and `$filter` text, the matching ids in `DateModified` order; dropped on every
    /// write to the set, so paging through a large set neither sorts nor filters it per page.
    by_modified: Mutex<HashMap<OrderKey, Arc<Vec<i64>>>>,
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

/// The `$filter` forms clients use: `Id eq 12L`, `Id gt 12L`, `<Field> eq 'text'`,
/// `DateModified gt <time>`.
enum Filter {
    Eq(String, Value),
    After(String),
    IdAbove(i64),
}

impl Filter {
    fn parse(text: &str) -> Option<Filter> {
        let (field, rest) = text.trim().split_once(' ')?;
        let (op, value) = rest.trim().split_once(' ')?;
        let value = value.trim();
        match (op, field) {
            ("gt", "DateModified") => Some(Filter::After(value.trim_matches('\'').to_string())),
            ("gt", "Id") => value.trim_end_matches('L').parse().ok().map(Filter::IdAbove),
            ("eq", _) => {
                let value = if let Some(text) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                    json!(text)
                } else {
                    json!(value.trim_end_matches('L'))
                };
                Some(Filter::Eq(field.to_string(), value))
            }
            _ => None,
        }
    }

    fn matches(&self, record: &Map<String, Value>) -> bool {
        match self {
            Filter::Eq(field, expected) => match (record.get(field), expected) {
                (Some(Value::String(actual)), Value::String(expected)) => actual == expected,
                (Some(actual), expected) => {
                    actual.to_string().trim_matches('"') == expected.as_str().unwrap_or_default()
                }
                (None, _) => false,
            },
            Filter::After(time) => {
                record.get("DateModified").and_then(Value::as_str).is_some_and(|modified| modified > time.as_str())
            }
            Filter::IdAbove(above) => record
                .get("Id")
                .and_then(|id| id.as_str().map(str::to_string).or_else(|| id.as_i64().map(|n| n.to_string())))
                .and_then(|id| id.parse::<i64>().ok())
                .is_some_and(|id| id > *above),
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

impl FieldReport {
    /// The Ids of a set in `DateModified` order, only those matching `filter` (given with its
    /// text) when there is one. Cached per set and filter until the set changes: a sync reads
    /// every page of the same ordered, filtered list.
    fn in_modified_order(&self, set: &str, records: &Records, filter: Option<(&str, &Filter)>) -> Arc<Vec<i64>> {
        let key = (set.to_string(), filter.map(|(text, _)| text.to_string()));
        let mut cache = self.by_modified.lock().expect("lock");
        cache
            .entry(key)
            .or_insert_with(|| {
                // Each record's `DateModified` read once, not at every comparison (two lookups
                // each: the first page of a sync of 100,000 records took 37 ms).
                let mut ordered: Vec<(&str, i64)> = records
                    .iter()
                    .filter(|(_, record)| filter.is_none_or(|(_, f)| f.matches(&record.fields)))
                    .map(|(id, record)| {
                        (record.fields.get("DateModified").and_then(Value::as_str).unwrap_or_default(), *id)
                    })
                    .collect();
                ordered.sort();
                Arc::new(ordered.into_iter().map(|(_, id)| id).collect())
            })
            .clone()
    }

    /// Forgets the cached orders of a set after a write to it.
    fn changed(&self, set: &str) {
        self.by_modified.lock().expect("lock").retain(|(cached, _), _| cached != set);
    }

    fn handle(&self, req: SimRequest) -> SimResponse {
        let segments = req.segments();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, ["__sandbox", "received"]) => {
                json(StatusCode::OK, &Value::Array(self.received.lock().expect("lock").clone()))
            }
            (&Method::POST, ["__sandbox", "seed"]) => self.seed(&req),
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

    fn list(&self, set: &str, req: &SimRequest) -> SimResponse {
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
        let order = ordered.then(|| self.in_modified_order(set, all, filter.as_ref().map(|(text, f)| (*text, f))));
        let candidates: Box<dyn Iterator<Item = &Stored>> = match &order {
            Some(ids) => Box::new(ids.get(skip..).unwrap_or_default().iter().filter_map(|id| all.get(id))),
            // In Id order from a key on: found in the map, not by a scan.
            None if let Some((_, Filter::IdAbove(above))) = &filter => {
                Box::new(all.range(above.saturating_add(1)..).map(|(_, record)| record).skip(skip))
            }
            None => {
                Box::new(all.values().filter(|r| filter.as_ref().is_none_or(|(_, f)| f.matches(&r.fields))).skip(skip))
            }
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
        record.insert("DateOfCreation".into(), json!(now()));
        record.insert("DateModified".into(), json!(now()));
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
        let stored_version = stored.fields.get("Version").and_then(Value::as_i64).unwrap_or(0);
        let sent_version = record.get("Version").and_then(Value::as_i64);
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
        record.insert("DateModified".into(), json!(now()));
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
                                    "DateOfCreation": now(), "DateModified": now()});
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
