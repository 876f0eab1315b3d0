//! The ERP simulator, in the style of weclapp REST API v1 under [`API_ROOT`].
//!
//! Every call needs the header `AuthenticationToken: <API_KEY>` (else 401). Every entity of
//! `generated::erp::MODELS` is served (any other name is 404): `GET /<m>` → `{result: [...]}`,
//! `GET /<m>/count` → `{result: n}`, `GET /<m>/id/{id}` → the bare entity, `POST /<m>` → 201,
//! `PUT /<m>/id/{id}` → 200, `DELETE /<m>/id/{id}` → 204. Records are JSON objects; a create
//! assigns `id` (digits, increasing), `version` ("0") and `createdDate`/`lastModifiedDate`
//! (epoch milliseconds, `lastModifiedDate` strictly increasing over every write). A PUT
//! replaces the entity, or with `ignoreMissingProperties=true` only the given top-level
//! fields; a `version` in its body that differs from the stored one is a 409
//! `optimistic_lock`; a successful PUT counts `version` up by one.
//!
//! Lists take `page` (from 1), `pageSize` (default 100, at most 1000), `sort` (`field`,
//! `-field`, comma-separated; default by id) and filters on top-level properties
//! `<property>-<op>=value` with ops eq, ne, gt, ge, lt, le, in/notin (comma-separated or a
//! JSON array), like/ilike (`%` wildcard), null, notnull; values compare as numbers when both
//! sides are numbers, else as text. Other query names are ignored. Errors are problem JSON
//! `{type, title, status, detail, validationErrors}`, also for injected faults without a body.
//!
//! Webhooks: a `webhook` record `{entityName, atCreate, atUpdate, atDelete, requestMethod, url}`
//! makes every matching write through the API (not seeding) call `url` in the background:
//! `GET url?…&entityName=…&entityId=…&type=created|updated|deleted`, or `POST url` with the JSON
//! `{entityName, entityId, type}`.
//!
//! Seeded at start: the mail template `leasing-missing-info`, the customer attribute
//! definitions `fieldReportId` and `serviceLevel`, a unit, three customers, contacts and
//! articles.
//!
//! For tests (no authentication): `GET /__sandbox/received` lists every write received
//! (`{method, path, query, body}`); `GET /__sandbox/webhook-calls` lists the webhook calls made
//! (`{url, method, entityName, entityId, type, status}`, status 0 when the call failed);
//! `POST /__sandbox/seed {model, records: [...]}` inserts records as given (keeping a given
//! `id`) and `{model, count}` generates records, both without webhooks.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};
use slog::Logger;

use super::faults::Faults;
use super::http::{SimRequest, SimResponse, empty, json, serve};

/// The value the header `AuthenticationToken` must carry.
pub const API_KEY: &str = "sandbox-erp-key";
/// The path of the API root on the simulator's address.
pub const API_ROOT: &str = "/webapp/api/v1";
/// The name of the seeded mail template.
pub const MAIL_TEMPLATE: &str = "leasing-missing-info";
const DEFAULT_PAGE_SIZE: usize = 100;
const MAX_PAGE_SIZE: usize = 1000;

/// The records of one model, by id.
type Records = BTreeMap<u64, Map<String, Value>>;

#[derive(Default)]
struct State {
    models: HashMap<String, Records>,
    last_id: u64,
    last_modified: i64,
}

struct Erp {
    state: Mutex<State>,
    received: Mutex<Vec<Value>>,
    webhook_calls: Arc<Mutex<Vec<Value>>>,
    client: reqwest::Client,
    log: Logger,
}

/// Starts the simulator on `bind`, seeded; returns the bound address.
pub async fn start(bind: SocketAddr, log: Logger) -> std::io::Result<SocketAddr> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(std::io::Error::other)?;
    let mut state = State::default();
    seed_defaults(&mut state);
    let system = Arc::new(Erp {
        state: Mutex::new(state),
        received: Mutex::default(),
        webhook_calls: Arc::default(),
        client,
        log: log.clone(),
    });
    serve(bind, Arc::new(Faults::with_default_body(fault_problem)), log, move |req| {
        let system = system.clone();
        async move { system.handle(req) }
    })
    .await
}

/// A problem-style error answer; `kind` ends the `type` and is the `title`.
fn problem(status: StatusCode, kind: &str, detail: &str) -> SimResponse {
    json(status, &problem_body(status.as_u16(), kind, detail))
}

fn problem_body(status: u16, kind: &str, detail: &str) -> Value {
    json!({"type": format!("{API_ROOT}/problems/{kind}"), "title": kind, "status": status, "detail": detail,
           "validationErrors": []})
}

/// The body of an injected fault, e.g. `too_many_requests` for a 429.
fn fault_problem(status: u16) -> Value {
    let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("injected fault");
    problem_body(status, &reason.to_lowercase().replace(' ', "_"), "injected fault")
}

fn not_found(model: &str, id: &str) -> SimResponse {
    problem(StatusCode::NOT_FOUND, "not_found", &format!("{model} with id {id} does not exist"))
}

fn bad_request(detail: &str) -> SimResponse {
    problem(StatusCode::BAD_REQUEST, "bad_request", detail)
}

fn result(status: StatusCode, result: Value) -> SimResponse {
    json(status, &json!({ "result": result }))
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

impl State {
    /// The next `lastModifiedDate`: now in epoch milliseconds, or one past the last one.
    fn tick(&mut self) -> i64 {
        self.last_modified = chrono::Utc::now().timestamp_millis().max(self.last_modified + 1);
        self.last_modified
    }

    fn records(&mut self, model: &str) -> &mut Records {
        self.models.entry(model.to_string()).or_default()
    }

    /// Stores a new record under `id` (or the next id) with version "0" and fresh dates.
    fn insert(&mut self, model: &str, mut record: Map<String, Value>, id: Option<u64>) -> Map<String, Value> {
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

impl Erp {
    fn handle(&self, req: SimRequest) -> SimResponse {
        let segments = req.segments();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, ["__sandbox", "received"]) => {
                json(StatusCode::OK, &Value::Array(self.received.lock().expect("lock").clone()))
            }
            (&Method::GET, ["__sandbox", "webhook-calls"]) => {
                json(StatusCode::OK, &Value::Array(self.webhook_calls.lock().expect("lock").clone()))
            }
            (&Method::POST, ["__sandbox", "seed"]) => self.seed(&req),
            _ if req.headers.get("AuthenticationToken").and_then(|v| v.to_str().ok()) != Some(API_KEY) => {
                problem(StatusCode::UNAUTHORIZED, "unauthorized", "a valid AuthenticationToken header is required")
            }
            (method, ["webapp", "api", "v1", name, rest @ ..]) => {
                let Some(model) = generated::erp::model(name) else {
                    return problem(StatusCode::NOT_FOUND, "not_found", &format!("no entity {name}"));
                };
                let model = model.name;
                if method != Method::GET {
                    self.record_write(&req);
                }
                match (method, rest) {
                    (&Method::GET, []) => self.list(model, &req),
                    (&Method::GET, ["count"]) => self.count(model, &req),
                    (&Method::POST, []) => self.create(model, &req),
                    (method, ["id", id]) => match (method, id.parse::<u64>()) {
                        (_, Err(_)) => not_found(model, id),
                        (&Method::GET, Ok(id)) => self.get(model, id),
                        (&Method::PUT, Ok(id)) => self.update(model, id, &req),
                        (&Method::DELETE, Ok(id)) => self.delete(model, id),
                        _ => problem(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "not supported"),
                    },
                    _ => problem(StatusCode::NOT_FOUND, "not_found", &format!("no such resource {}", req.path)),
                }
            }
            _ => problem(StatusCode::NOT_FOUND, "not_found", &format!("no such resource {}", req.path)),
        }
    }

    fn record_write(&self, req: &SimRequest) {
        let body = match req.body.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&req.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned())),
        };
        self.received
            .lock()
            .expect("lock")
            .push(json!({"method": req.method.as_str(), "path": req.path, "query": req.query, "body": body}));
    }

    /// The records matching the query's filters, sorted (by id unless `sort` says otherwise).
    fn matching(&self, model: &str, query: &ListQuery) -> Vec<Map<String, Value>> {
        let state = self.state.lock().expect("lock");
        let mut records: Vec<Map<String, Value>> = state
            .models
            .get(model)
            .map(|records| records.values().filter(|r| query.filters.iter().all(|f| f.matches(r))).cloned().collect())
            .unwrap_or_default();
        records.sort_by(|a, b| {
            query
                .sort
                .iter()
                .map(|(field, descending)| {
                    let order = compare_values(a.get(field), b.get(field));
                    if *descending { order.reverse() } else { order }
                })
                .find(|order| order.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        records
    }

    fn list(&self, model: &str, req: &SimRequest) -> SimResponse {
        let query = match ListQuery::parse(req.query.as_deref()) {
            Ok(query) => query,
            Err(response) => return response,
        };
        let records = self.matching(model, &query);
        let page: Vec<Value> = records
            .into_iter()
            .skip((query.page - 1).saturating_mul(query.page_size))
            .take(query.page_size)
            .map(Value::Object)
            .collect();
        result(StatusCode::OK, Value::Array(page))
    }

    fn count(&self, model: &str, req: &SimRequest) -> SimResponse {
        match ListQuery::parse(req.query.as_deref()) {
            Ok(query) => result(StatusCode::OK, json!(self.matching(model, &query).len())),
            Err(response) => response,
        }
    }

    fn get(&self, model: &str, id: u64) -> SimResponse {
        let state = self.state.lock().expect("lock");
        match state.models.get(model).and_then(|records| records.get(&id)) {
            Some(record) => json(StatusCode::OK, &Value::Object(record.clone())),
            None => not_found(model, &id.to_string()),
        }
    }

    fn create(&self, model: &str, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut record)) = req.json() else {
            return bad_request("the body must be a JSON object");
        };
        record.remove("id");
        let mut state = self.state.lock().expect("lock");
        let created = state.insert(model, record, None);
        self.fire_webhooks(&state, model, &created["id"], "created");
        json(StatusCode::CREATED, &Value::Object(created))
    }

    fn update(&self, model: &str, id: u64, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(body)) = req.json() else {
            return bad_request("the body must be a JSON object");
        };
        let partial =
            query_pairs(req.query.as_deref()).iter().any(|(k, v)| k == "ignoreMissingProperties" && v == "true");
        let mut state = self.state.lock().expect("lock");
        let Some(stored) = state.models.get(model).and_then(|records| records.get(&id)).cloned() else {
            return not_found(model, &id.to_string());
        };
        let stored_version = stored.get("version").and_then(text).unwrap_or_default();
        if let Some(sent) = body.get("version").filter(|v| !v.is_null()).and_then(text)
            && sent != stored_version
        {
            return problem(
                StatusCode::CONFLICT,
                "optimistic_lock",
                &format!("version {sent} is stale: {model} {id} is at version {stored_version}"),
            );
        }
        let mut record = if partial { stored.clone() } else { Map::new() };
        record.extend(body);
        for kept in ["id", "createdDate"] {
            if let Some(value) = stored.get(kept) {
                record.insert(kept.into(), value.clone());
            }
        }
        let version = stored_version.parse::<u64>().unwrap_or(0) + 1;
        record.insert("version".into(), json!(version.to_string()));
        record.insert("lastModifiedDate".into(), json!(state.tick()));
        state.records(model).insert(id, record.clone());
        self.fire_webhooks(&state, model, &record["id"], "updated");
        json(StatusCode::OK, &Value::Object(record))
    }

    fn delete(&self, model: &str, id: u64) -> SimResponse {
        let mut state = self.state.lock().expect("lock");
        match state.records(model).remove(&id) {
            Some(_) => {
                self.fire_webhooks(&state, model, &json!(id.to_string()), "deleted");
                empty(StatusCode::NO_CONTENT)
            }
            None => not_found(model, &id.to_string()),
        }
    }

    /// Calls, in the background, every webhook registered for `kind` writes of `model`.
    fn fire_webhooks(&self, state: &State, model: &str, id: &Value, kind: &'static str) {
        let flag = match kind {
            "created" => "atCreate",
            "updated" => "atUpdate",
            _ => "atDelete",
        };
        let event = json!({"entityName": model, "entityId": id, "type": kind});
        for hook in state.models.get("webhook").into_iter().flat_map(|hooks| hooks.values()) {
            if hook.get("entityName").and_then(Value::as_str) != Some(model) || hook.get(flag) != Some(&json!(true)) {
                continue;
            }
            let get = hook.get("requestMethod").and_then(Value::as_str).is_some_and(|m| m.eq_ignore_ascii_case("GET"));
            let url = hook.get("url").and_then(Value::as_str).unwrap_or_default().to_string();
            let call = call_webhook(self.client.clone(), url, get, event.clone());
            let (calls, log) = (self.webhook_calls.clone(), self.log.clone());
            tokio::spawn(async move {
                let entry = call.await;
                slog::debug!(log, "webhook called"; "entry" => %entry);
                calls.lock().expect("lock").push(entry);
            });
        }
    }

    fn seed(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let name = body.get("model").and_then(Value::as_str).unwrap_or_default();
        let Some(model) = generated::erp::model(name).map(|m| m.name) else {
            return problem(StatusCode::NOT_FOUND, "not_found", &format!("no entity {name:?}"));
        };
        let mut state = self.state.lock().expect("lock");
        let mut created = Vec::new();
        if let Some(count) = body.get("count").and_then(Value::as_u64) {
            let existing = state.models.get(model).map_or(0, BTreeMap::len);
            for n in existing..existing + count as usize {
                let record = sample(&state, model, n);
                created.push(Value::Object(state.insert(model, record, None)));
            }
        }
        for record in body.get("records").and_then(Value::as_array).into_iter().flatten() {
            let Value::Object(record) = record.clone() else {
                return bad_request("records must be JSON objects");
            };
            let id = match record.get("id").map(|id| text(id).and_then(|id| id.parse::<u64>().ok())) {
                Some(None) => return bad_request("an id must be a string of digits"),
                Some(id) => id,
                None => None,
            };
            created.push(Value::Object(state.insert(model, record, id)));
        }
        result(StatusCode::CREATED, Value::Array(created))
    }
}

/// Makes one webhook call and returns its log entry.
async fn call_webhook(client: reqwest::Client, url: String, get: bool, event: Value) -> Value {
    let mut entry = json!({"url": url, "method": if get { "GET" } else { "POST" }, "entityName": event["entityName"],
                           "entityId": event["entityId"], "type": event["type"], "status": 0});
    let request = if get {
        let Ok(mut target) = url::Url::parse(&url) else { return entry };
        target
            .query_pairs_mut()
            .append_pair("entityName", event["entityName"].as_str().unwrap_or_default())
            .append_pair("entityId", event["entityId"].as_str().unwrap_or_default())
            .append_pair("type", event["type"].as_str().unwrap_or_default());
        entry["url"] = json!(target.as_str());
        client.get(target)
    } else {
        client.post(&url).json(&event)
    };
    if let Ok(response) = request.send().await {
        entry["status"] = json!(response.status().as_u16());
    }
    entry
}

/// A scalar as text, for comparing; arrays, objects and null have none.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Numbers compare as numbers when both sides are numbers, anything else as text.
fn compare_text(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(a), Ok(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        _ => a.cmp(b),
    }
}

/// Orders two property values for `sort`; missing values come first.
fn compare_values(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a.and_then(text), b.and_then(text)) {
        (Some(a), Some(b)) => compare_text(&a, &b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// SQL-style `like` with `%` as the only wildcard.
fn like(text: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('%').collect();
    let [first, middle @ .., last] = parts.as_slice() else { return text == pattern };
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    In,
    NotIn,
    Like,
    ILike,
    Null,
    NotNull,
}

/// One `<property>-<op>=value` filter.
struct Filter {
    property: String,
    op: Op,
    value: String,
}

impl Filter {
    /// Reads a query pair; `None` when its name is no filter.
    fn parse(name: &str, value: &str) -> Option<Filter> {
        let (property, op) = name.rsplit_once('-')?;
        let op = match op {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "le" => Op::Le,
            "in" => Op::In,
            "notin" => Op::NotIn,
            "like" => Op::Like,
            "ilike" => Op::ILike,
            "null" => Op::Null,
            "notnull" => Op::NotNull,
            _ => return None,
        };
        Some(Filter { property: property.to_string(), op, value: value.to_string() })
    }

    /// The values of `in`/`notin`: a JSON array or a comma-separated list.
    fn values(&self) -> Vec<String> {
        match serde_json::from_str::<Vec<Value>>(&self.value) {
            Ok(values) => values.iter().filter_map(text).collect(),
            Err(_) => self.value.split(',').map(|v| v.trim().to_string()).collect(),
        }
    }

    fn matches(&self, record: &Map<String, Value>) -> bool {
        let actual = record.get(&self.property).and_then(text);
        let equals = |expected: &str| actual.as_deref().is_some_and(|a| compare_text(a, expected).is_eq());
        match self.op {
            Op::Null => record.get(&self.property).is_none_or(Value::is_null),
            Op::NotNull => record.get(&self.property).is_some_and(|v| !v.is_null()),
            Op::Eq => equals(&self.value),
            Op::Ne => !equals(&self.value),
            Op::In => self.values().iter().any(|v| equals(v)),
            Op::NotIn => !self.values().iter().any(|v| equals(v)),
            Op::Like => actual.is_some_and(|a| like(&a, &self.value)),
            Op::ILike => actual.is_some_and(|a| like(&a.to_lowercase(), &self.value.to_lowercase())),
            Op::Gt | Op::Ge | Op::Lt | Op::Le => actual.is_some_and(|a| {
                let order = compare_text(&a, &self.value);
                match self.op {
                    Op::Gt => order.is_gt(),
                    Op::Ge => order.is_ge(),
                    Op::Lt => order.is_lt(),
                    _ => order.is_le(),
                }
            }),
        }
    }
}

/// The query of a list or count call.
struct ListQuery {
    page: usize,
    page_size: usize,
    /// Fields to sort by, each with "descending"; the id breaks ties.
    sort: Vec<(String, bool)>,
    filters: Vec<Filter>,
}

impl ListQuery {
    fn parse(query: Option<&str>) -> Result<ListQuery, SimResponse> {
        let mut parsed = ListQuery { page: 1, page_size: DEFAULT_PAGE_SIZE, sort: Vec::new(), filters: Vec::new() };
        for (name, value) in query_pairs(query) {
            match name.as_str() {
                "page" => match value.parse() {
                    Ok(page) if page >= 1 => parsed.page = page,
                    _ => return Err(bad_request(&format!("page must be a number from 1, not {value:?}"))),
                },
                "pageSize" => match value.parse() {
                    Ok(size) if (1..=MAX_PAGE_SIZE).contains(&size) => parsed.page_size = size,
                    _ => {
                        return Err(bad_request(&format!("pageSize must be from 1 to {MAX_PAGE_SIZE}, not {value:?}")));
                    }
                },
                "sort" => {
                    for field in value.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                        parsed.sort.push(match field.strip_prefix('-') {
                            Some(field) => (field.to_string(), true),
                            None => (field.trim_start_matches('+').to_string(), false),
                        });
                    }
                }
                _ => parsed.filters.extend(Filter::parse(&name, &value)),
            }
        }
        parsed.sort.push(("id".into(), false));
        Ok(parsed)
    }
}

/// The mail template the service sends when the leasing provider needs more information.
fn mail_template() -> Map<String, Value> {
    let text = "<p>Hello {{ lessee.CompanyName }},</p>\
        <p>to go on with your leasing request {{ request.RequestId or financing_id }} \
        (financing id {{ financing_id }}) we need some more \
        information from you. Please answer this email or call us.</p>\
        {% if technician_appointment_date %}<p>Technician appointment: {{ technician_appointment_date }}\
        {% if technician_appointment_time %} at {{ technician_appointment_time }}{% endif %}.</p>{% endif %}\
        <p>Kind regards<br>Your leasing team</p>";
    let template = json!({
        "name": MAIL_TEMPLATE,
        "subject": "Leasing request {{ request.RequestId or financing_id }}: information missing",
        "text": text,
        "toEmailAddresses": "",
        "ccEmailAddresses": "",
        "bccEmailAddresses": "leasing-archive@sandbox.example",
        "type": "EMAIL",
        "useAsDefault": true,
    });
    template.as_object().cloned().unwrap_or_default()
}

/// The `n`-th generated record of `model`; customers carry the seeded custom attributes.
fn sample(state: &State, model: &str, n: usize) -> Map<String, Value> {
    const COMPANIES: [(&str, &str, &str, &str, &str); 3] = [
        ("Müller Bürotechnik GmbH", "mueller-buerotechnik", "Hauptstraße 12", "10115", "Berlin"),
        ("Schmidt & Partner Steuerberatung", "schmidt-partner", "Marktplatz 3", "80331", "München"),
        ("Nordlicht Logistik KG", "nordlicht-logistik", "Hafenweg 40", "20457", "Hamburg"),
    ];
    const PEOPLE: [(&str, &str); 3] = [("Anna", "Becker"), ("Jonas", "Wagner"), ("Lea", "Hoffmann")];
    const ARTICLES: [(&str, &str); 3] = [
        ("Business Laptop 14\"", "Laptop with 16 GB RAM and 512 GB SSD"),
        ("USB-C Docking Station", "Docking station with two display ports"),
        ("Multifunction Printer A4", "Colour laser printer, scanner and copier"),
    ];
    let suffix = if n < 3 { String::new() } else { format!(" {n}") };
    let (company, slug, street, zipcode, city) = COMPANIES[n % 3];
    let record = match model {
        "customer" => {
            let attribute =
                |key: &str| {
                    state.models.get("customAttributeDefinition").into_iter().flat_map(|d| d.values()).find_map(|d| {
                        (d.get("attributeKey").and_then(Value::as_str) == Some(key)).then(|| d["id"].clone())
                    })
                };
            let mut attributes = Vec::new();
            if let Some(id) = attribute("fieldReportId").filter(|_| n % 3 != 2) {
                attributes.push(json!({"attributeDefinitionId": id, "stringValue": format!("legacy-{}", 1001 + n)}));
            }
            if let Some(id) = attribute("serviceLevel") {
                attributes
                    .push(json!({"attributeDefinitionId": id, "stringValue": (["gold", "silver", "bronze"][n % 3])}));
            }
            json!({
                "customerNumber": (10001 + n).to_string(), "company": format!("{company}{suffix}"),
                "email": format!("info{}@{slug}.example", if n < 3 { String::new() } else { n.to_string() }),
                "phone": format!("+49 30 555{n:04}"), "partyType": "ORGANIZATION",
                "addresses": [{"street1": street, "zipcode": zipcode, "city": city, "countryCode": "DE", "primeAddress": true}],
                "customAttributes": attributes,
            })
        }
        "contact" => {
            let (first, last) = PEOPLE[n % 3];
            json!({
                "firstName": first, "lastName": format!("{last}{suffix}"), "partyType": "PERSON",
                "email": format!("{}.{}{}@{slug}.example", first.to_lowercase(), last.to_lowercase(),
                                 if n < 3 { String::new() } else { n.to_string() }),
                "phone": format!("+49 40 777{n:04}"), "company": company,
            })
        }
        "article" => {
            let (name, description) = ARTICLES[n % 3];
            let unit = state.models.get("unit").and_then(|units| units.values().next()).map(|u| u["id"].clone());
            json!({"articleNumber": format!("A-{}", 100001 + n), "name": format!("{name}{suffix}"), "articleType": "BASIC",
                   "unitId": unit, "description": description, "active": true})
        }
        _ => json!({"name": format!("{model} {n}")}),
    };
    record.as_object().cloned().unwrap_or_default()
}

/// The records every simulator starts with; no webhooks fire for them.
fn seed_defaults(state: &mut State) {
    state.insert("mailTemplate", mail_template(), None);
    for (key, label) in [("fieldReportId", "Field-report id"), ("serviceLevel", "Service level")] {
        let definition = json!({"attributeKey": key, "label": label, "attributeType": "STRING",
                                "entities": ["customer"], "active": true, "mandatory": false});
        state.insert("customAttributeDefinition", definition.as_object().cloned().unwrap_or_default(), None);
    }
    let unit = json!({"name": "Stk.", "description": "Stück"});
    state.insert("unit", unit.as_object().cloned().unwrap_or_default(), None);
    for model in ["customer", "contact", "article"] {
        for n in 0..3 {
            let record = sample(state, model, n);
            state.insert(model, record, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compare_numbers_as_numbers_and_text_as_text() {
        let record = json!({"n": 10, "s": "b", "d": "9", "e": null}).as_object().cloned().unwrap();
        let check = |name: &str, value: &str| Filter::parse(name, value).unwrap().matches(&record);
        assert!(check("n-gt", "9"), "10 > 9 as numbers, not as text");
        assert!(check("d-lt", "10"));
        assert!(check("s-ge", "a") && !check("s-gt", "b"));
        assert!(check("s-in", "a,b") && check("n-in", r#"["10","11"]"#) && check("n-notin", "1,2"));
        assert!(check("e-null", "") && check("missing-null", "") && check("s-notnull", ""));
        assert!(check("s-ne", "a") && !check("s-eq", "a"));
        assert!(Filter::parse("pageSize", "1").is_none());
    }

    #[test]
    fn like_uses_percent_as_wildcard() {
        assert!(like("leasing-missing-info", "leasing%"));
        assert!(like("leasing-missing-info", "%missing%"));
        assert!(like("abc", "a%b%c"));
        assert!(!like("abc", "a%d"));
        assert!(!like("ab", "ab%b"));
    }

    #[test]
    fn the_seeded_mail_template_renders() {
        let template = mail_template();
        let env = minijinja::Environment::new();
        let context = minijinja::context! {
            financing_id => "F-1", request => json!({"RequestId": "180-42"}),
            lessee => json!({"CompanyName": "ACME GmbH", "Email": "a@example.com"}),
            technician_appointment_date => "2025-03-01", technician_appointment_time => "09:00",
        };
        let subject = env.render_str(template["subject"].as_str().unwrap(), &context).unwrap();
        assert_eq!(subject, "Leasing request 180-42: information missing");
        let text = env.render_str(template["text"].as_str().unwrap(), &context).unwrap();
        assert!(
            text.starts_with("<p>Hello ACME GmbH,</p>")
                && text.contains("Technician appointment: 2025-03-01 at 09:00."),
            "{text}"
        );
        let without = minijinja::context! { financing_id => "F-1", request => json!({}), lessee => json!({}) };
        let text = env.render_str(template["text"].as_str().unwrap(), &without).unwrap();
        assert!(text.contains("request F-1 (financing id F-1)") && !text.contains("Technician"), "{text}");
    }
}
