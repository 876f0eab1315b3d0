//! The simulator's server: its routes and what each write does.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};
use slog::Logger;

use super::api::{API_KEY, bad_request, fault_problem, not_found, problem, query_pairs, result};
use super::query::{ListQuery, compare_values, text};
use super::seed::{sample, seed_defaults};
use super::state::State;
use super::webhooks::call_webhook;
use crate::sandbox::faults::Faults;
use crate::sandbox::http::{SimRequest, SimResponse, empty, json, serve};

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
            (&Method::POST, ["__sandbox", "behaviour"]) => self.behaviour(&req),
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
        let mut query = match ListQuery::parse(req.query.as_deref()) {
            Ok(query) => query,
            Err(response) => return response,
        };
        if let Some(most) = self.state.lock().expect("lock").most_per_page {
            query.page_size = query.page_size.min(most);
        }
        if self.state.lock().expect("lock").sort_ignored {
            query.sort.retain(|(field, descending)| field == "id" && !descending);
        }
        if self.state.lock().expect("lock").listed_by_change {
            query.sort = vec![("lastModifiedDate".into(), false), ("id".into(), false)];
        }
        let skip = (query.page - 1).saturating_mul(query.page_size);
        if query.by_id() {
            // In id order, the order the records are kept in: the page is read from the
            // first id the filters admit, copying only its own records (a key-paged pull of a
            // large model stays linear).
            let state = self.state.lock().expect("lock");
            let start = query.ids_after().map_or(Bound::Unbounded, Bound::Excluded);
            let page: Vec<Value> = state
                .models
                .get(model)
                .map(|records| {
                    records
                        .range((start, Bound::Unbounded))
                        .map(|(_, record)| record)
                        .filter(|record| query.filters.iter().all(|f| f.matches(record)))
                        .skip(skip)
                        .take(query.page_size)
                        .map(|record| Value::Object(record.clone()))
                        .collect()
                })
                .unwrap_or_default();
            return result(StatusCode::OK, Value::Array(page));
        }
        let records = self.matching(model, &query);
        let page: Vec<Value> = records.into_iter().skip(skip).take(query.page_size).map(Value::Object).collect();
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

    /// `{"most_per_page": n | null, "sort": "ignored" | "by-change" | "honoured",
    /// "clock_offset_ms": n}`: serve at most `n` records a page whatever `pageSize` asks; list
    /// in id order (or in the order of their last writes) whatever `sort` asks; stamp writes `n` ms after now (a clock ahead; 0 sets it right, and the
    /// stamps go back with it). The body sets all three (an absent one is the default: as
    /// asked, a right clock).
    fn behaviour(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let most = match body.get("most_per_page") {
            Some(Value::Null) | None => None,
            Some(value) => match value.as_u64().filter(|n| *n > 0) {
                Some(n) => Some(n as usize),
                None => return bad_request("most_per_page must be a positive number or null"),
            },
        };
        let (sort_ignored, listed_by_change) = match body.get("sort").and_then(Value::as_str) {
            Some("ignored") => (true, false),
            Some("by-change") => (true, true),
            Some("honoured") | None => (false, false),
            Some(_) => return bad_request("sort must be \"ignored\", \"by-change\" or \"honoured\""),
        };
        let clock_offset_ms = match body.get("clock_offset_ms") {
            None => 0,
            Some(value) => match value.as_i64() {
                Some(n) => n,
                None => return bad_request("clock_offset_ms must be a whole number"),
            },
        };
        let mut state = self.state.lock().expect("lock");
        state.most_per_page = most;
        state.sort_ignored = sort_ignored;
        state.listed_by_change = listed_by_change;
        state.set_clock_offset(clock_offset_ms);
        json(StatusCode::OK, &body)
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
