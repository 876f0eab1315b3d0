//! A fake OData server for forwarded writes, answering as servers other than the simulator
//! may: a create answered `204 No Content` with the new record's address in `OData-EntityId`
//! (`Prefer: return=minimal`) or `201` without a body, `412 Precondition Failed` to a stale
//! version, `410 Gone` for a record deleted there, and error bodies in XML or HTML.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::fake::refused;
use crate::common::{Db, TestService};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use integration_service::sandbox::http::{SimRequest, SimResponse, empty, json};
use serde_json::{Map, Value, json};

/// How the fake answers a create.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Created {
    /// 201 with the record.
    Record,
    /// 204 without a body, the record's address in `OData-EntityId` and `Location`.
    NoContent,
    /// 201 without a body, the record's address in `Location` only.
    LocationOnly,
    /// 201 with the record in OData v2's verbose form, `{"d": {"__metadata": …, …}}`, no address.
    Verbose,
    /// 202 Accepted without a body or an address: the record is made later, when the test
    /// calls [`WriteFake::process_accepted`].
    Accepted,
}

/// How the fake answers an update it takes.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Updated {
    /// 204 without a body.
    NoContent,
    /// 200 with the record as stored: its `Version` the server's own (the one sent plus 100,
    /// written as OData v3 writes an Int64, a string) and its `DateModified` set.
    Record,
    /// The same record in OData v2's verbose form, `{"d": …}`.
    Verbose,
    /// 204 without a body, the server's `Version` in a weak `ETag` (`W/"102"`).
    ETagOnly,
}

/// One answer given instead of the fake's own, to the next request of its method.
pub(super) struct Scripted {
    pub(super) method: Method,
    pub(super) status: u16,
    pub(super) content_type: &'static str,
    pub(super) body: String,
    pub(super) headers: Vec<(&'static str, String)>,
}

pub(super) struct WriteFake {
    pub(super) records: Mutex<BTreeMap<i64, Map<String, Value>>>,
    pub(super) created: Mutex<Created>,
    pub(super) updated: Mutex<Updated>,
    /// The status a stale `Version` is refused with (409, or 412 at a server of ETags).
    pub(super) stale_status: Mutex<u16>,
    /// The status for a record the server no longer has (404, or 410).
    pub(super) gone_status: Mutex<u16>,
    pub(super) scripted: Mutex<VecDeque<Scripted>>,
    /// The `Version` a created record starts at whatever was sent, as a string (OData v3's
    /// Int64), if the server assigns it.
    pub(super) first_version: Mutex<Option<i64>>,
    /// The address a create is answered with (`{id}` standing for the new Id), when not the
    /// server's own.
    pub(super) address: Mutex<Option<String>>,
    /// Creates answered 202, not made yet.
    accepted: Mutex<Vec<(i64, Map<String, Value>)>>,
    next_id: Mutex<i64>,
}

impl WriteFake {
    pub(super) fn new() -> Arc<WriteFake> {
        Arc::new(WriteFake {
            records: Mutex::default(),
            created: Mutex::new(Created::Record),
            updated: Mutex::new(Updated::NoContent),
            stale_status: Mutex::new(409),
            gone_status: Mutex::new(404),
            scripted: Mutex::default(),
            first_version: Mutex::default(),
            accepted: Mutex::default(),
            address: Mutex::default(),
            next_id: Mutex::new(5000),
        })
    }

    /// Id → Version, as the server has them.
    pub(super) fn versions(&self) -> BTreeMap<String, Value> {
        let records = self.records.lock().unwrap();
        records.iter().map(|(id, record)| (id.to_string(), record["Version"].clone())).collect()
    }

    /// Makes the records of the creates answered 202 (see [`Created::Accepted`]).
    pub(super) fn process_accepted(&self) {
        let accepted = std::mem::take(&mut *self.accepted.lock().unwrap());
        self.records.lock().unwrap().extend(accepted);
    }

    pub(super) fn script(&self, method: Method, status: u16, content_type: &'static str, body: &str) {
        self.script_with(method, status, content_type, body, &[]);
    }

    /// [`WriteFake::script`] with headers of its own (a `Retry-After`, say).
    pub(super) fn script_with(
        &self,
        method: Method,
        status: u16,
        content_type: &'static str,
        body: &str,
        headers: &[(&'static str, &str)],
    ) {
        let headers = headers.iter().map(|(name, value)| (*name, value.to_string())).collect();
        let scripted = Scripted { method, status, content_type, body: body.to_string(), headers };
        self.scripted.lock().unwrap().push_back(scripted);
    }

    pub(super) fn answer(&self, req: &SimRequest) -> SimResponse {
        {
            let mut scripted = self.scripted.lock().unwrap();
            if let Some(at) = scripted.iter().position(|s| s.method == req.method) {
                let s = scripted.remove(at).unwrap();
                let mut answer = http::Response::builder().status(s.status).header("content-type", s.content_type);
                for (name, value) in s.headers {
                    answer = answer.header(name, value);
                }
                return answer.body(Full::new(Bytes::from(s.body))).unwrap();
            }
        }
        let segments = req.segments();
        let (Some(&"odata"), Some(resource)) = (segments.first(), segments.get(1)) else {
            return refused(404, "no such resource");
        };
        let key = resource.strip_prefix("Companies(").and_then(|rest| rest.strip_suffix("L)"));
        match (&req.method, key) {
            (&Method::GET, None) if *resource == "Companies" => self.list(req),
            (&Method::POST, None) if *resource == "Companies" => self.create(req),
            (method, Some(key)) => {
                let Ok(id) = key.parse::<i64>() else { return refused(400, "bad key") };
                match *method {
                    Method::GET => self.get(id),
                    Method::PUT => self.update(id, req),
                    Method::DELETE => self.delete(id),
                    _ => refused(405, "method not allowed"),
                }
            }
            _ => refused(404, "no such resource"),
        }
    }

    fn list(&self, req: &SimRequest) -> SimResponse {
        let pairs: BTreeMap<String, String> =
            url::form_urlencoded::parse(req.query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
        let wanted = pairs
            .get("$filter")
            .and_then(|f| f.strip_prefix("ExternalId eq '"))
            .and_then(|rest| rest.strip_suffix('\''))
            .map(|e| e.replace("''", "'"));
        let records = self.records.lock().unwrap();
        let chosen: Vec<&Map<String, Value>> = records
            .values()
            .filter(|record| wanted.as_ref().is_none_or(|e| record.get("ExternalId") == Some(&json!(e))))
            .collect();
        json(StatusCode::OK, &json!({"odata.metadata": "https://fake/odata/$metadata#Companies", "value": chosen}))
    }

    fn get(&self, id: i64) -> SimResponse {
        match self.records.lock().unwrap().get(&id) {
            Some(record) => json(StatusCode::OK, record),
            None => self.gone(id),
        }
    }

    fn create(&self, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut record)) = req.json() else { return refused(400, "an object is required") };
        let id = {
            let mut next = self.next_id.lock().unwrap();
            *next += 1;
            *next
        };
        record.insert("Id".into(), json!(id.to_string()));
        record.insert("DateModified".into(), json!("2026-01-01T00:00:00"));
        let first = *self.first_version.lock().unwrap();
        let answered = first.map(|version| json!(version.to_string()));
        record.extend(first.map(|version| ("Version".to_string(), json!(version))));
        let mut answer = record.clone();
        answer.extend(answered.map(|version| ("Version".to_string(), version)));
        if *self.created.lock().unwrap() == Created::Accepted {
            self.accepted.lock().unwrap().push((id, record));
            return empty(StatusCode::ACCEPTED);
        }
        self.records.lock().unwrap().insert(id, record.clone());
        let address = match &*self.address.lock().unwrap() {
            Some(template) => template.replace("{id}", &id.to_string()),
            None => format!("https://fake.example/odata/Companies({id}L)"),
        };
        match *self.created.lock().unwrap() {
            Created::Record => json(StatusCode::CREATED, &answer),
            Created::NoContent => http::Response::builder()
                .status(204)
                .header("OData-EntityId", &address)
                .header("Location", &address)
                .body(Full::new(Bytes::new()))
                .unwrap(),
            Created::LocationOnly => http::Response::builder()
                .status(201)
                .header("Location", &address)
                .body(Full::new(Bytes::new()))
                .unwrap(),
            Created::Verbose => json(StatusCode::CREATED, &verbose(answer, &address)),
            Created::Accepted => unreachable!("answered above"),
        }
    }

    fn update(&self, id: i64, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut record)) = req.json() else { return refused(400, "an object is required") };
        let mut records = self.records.lock().unwrap();
        let Some(stored) = records.get_mut(&id) else {
            drop(records);
            return self.gone(id);
        };
        let stored_version = stored["Version"].as_i64().unwrap_or(0);
        if record.get("Version").and_then(Value::as_i64) != Some(stored_version + 1) {
            let status = *self.stale_status.lock().unwrap();
            return refused(status, &format!("the record is at version {stored_version}"));
        }
        record.insert("Id".into(), json!(id.to_string()));
        let updated = *self.updated.lock().unwrap();
        if updated != Updated::NoContent {
            record.insert("Version".into(), json!(stored_version + 101));
            record.insert("DateModified".into(), json!("2026-02-02T00:00:00"));
        }
        *stored = record.clone();
        let mut answer = record;
        if updated != Updated::NoContent {
            answer.insert("Version".into(), json!((stored_version + 101).to_string()));
        }
        let address = format!("https://fake.example/odata/Companies({id}L)");
        match updated {
            Updated::NoContent => empty(StatusCode::NO_CONTENT),
            Updated::Record => json(StatusCode::OK, &answer),
            Updated::Verbose => json(StatusCode::OK, &verbose(answer, &address)),
            Updated::ETagOnly => http::Response::builder()
                .status(204)
                .header("ETag", format!("W/\"{}\"", stored_version + 101))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        }
    }

    fn delete(&self, id: i64) -> SimResponse {
        match self.records.lock().unwrap().remove(&id) {
            Some(_) => empty(StatusCode::NO_CONTENT),
            None => self.gone(id),
        }
    }

    fn gone(&self, id: i64) -> SimResponse {
        refused(*self.gone_status.lock().unwrap(), &format!("Companies({id}L) does not exist"))
    }
}

/// A record in OData v2's verbose form: inside `d`, with its `__metadata`, its relation
/// `MainContact` not expanded (a `__deferred` link).
fn verbose(mut record: Map<String, Value>, address: &str) -> Value {
    record.insert("__metadata".into(), json!({"uri": address, "type": "Fake.Company"}));
    record.insert("MainContact".into(), json!({"__deferred": {"uri": format!("{address}/MainContact")}}));
    json!({ "d": record })
}

/// The service, its field-report system the fake.
pub(super) async fn start(db: Db, fake: &Arc<WriteFake>) -> (TestService, String) {
    let served = fake.clone();
    super::fake::serving(db, move |req| served.answer(req)).await
}
