//! OData on the entity sets: pages of a set (with `$filter`, `$orderby`, `$expand`,
//! `$select`), and a record read, created, updated and deleted.

use http::StatusCode;
use serde_json::{Value, json};

use super::odata::{edm_int64, odata_error, query_params};
use super::state::{FieldReport, Records, Stored};
use crate::sandbox::http::{SimRequest, SimResponse, empty, json};
use crate::sandbox::odata_filter::Filter;

const PAGE_SIZE: usize = 100;

impl FieldReport {
    /// A page of a set; the writes scripted to follow it are made once it is written out.
    pub(super) fn list(&self, set: &str, req: &SimRequest) -> SimResponse {
        let answer = self.list_page(set, req);
        for touch in self.scripts_due(set) {
            self.touch(set, &touch, None);
        }
        answer
    }

    pub(super) fn list_page(&self, set: &str, req: &SimRequest) -> SimResponse {
        let params = query_params(req.query.as_deref());
        let sets = self.sets.lock().expect("lock");
        let ordered = params.get("$orderby").is_some_and(|o| o.starts_with("DateModified"));
        let filter = match params.get("$filter") {
            Some(text) => match Filter::parse(text) {
                Some(filter) => {
                    // As an OData server of one version, a stamp in the other's form is a
                    // syntax error.
                    let accepted = self.accepted_stamps();
                    if !filter.writes_stamps_as(&accepted) {
                        let message =
                            format!("Syntax error in $filter {text:?}: a stamp is written {}.", accepted.form());
                        return odata_error(StatusCode::BAD_REQUEST, "BadRequest", &message);
                    }
                    Some((text.as_str(), filter))
                }
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
            None => {
                let ids = filter.as_ref().map_or(i64::MIN..=i64::MAX, |(_, f)| f.id_bounds());
                Box::new(all.range(ids).map(|(_, record)| record).filter(matching).skip(skip))
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

    /// `<Set>/$count`: how many records `$filter` holds, as a number in plain text.
    pub(super) fn count(&self, set: &str, req: &SimRequest) -> SimResponse {
        let params = query_params(req.query.as_deref());
        let filter = match params.get("$filter").map(|text| (text, Filter::parse(text))) {
            Some((text, None)) => {
                return odata_error(StatusCode::BAD_REQUEST, "BadRequest", &format!("unsupported $filter {text:?}"));
            }
            Some((_, filter)) => filter,
            None => None,
        };
        let sets = self.sets.lock().expect("lock");
        // Only the records within the filter's bounds of Ids are looked at, as a server's index
        // would: a sync's check counts its window in ranges of Ids.
        let ids = filter.as_ref().map_or(i64::MIN..=i64::MAX, Filter::id_bounds);
        let records = sets.get(set).map(|all| all.range(ids).map(|(_, record)| record));
        let count =
            records.map_or(0, |all| all.filter(|r| filter.as_ref().is_none_or(|f| f.matches(&r.fields))).count());
        http::Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "text/plain")
            .body(http_body_util::Full::new(bytes::Bytes::from(count.to_string())))
            .expect("a valid response")
    }

    pub(super) fn get(&self, set: &str, id: i64) -> SimResponse {
        let sets = self.sets.lock().expect("lock");
        match sets.get(set).and_then(|records| records.get(&id)) {
            Some(record) => json(StatusCode::OK, &record.text),
            None => odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist.")),
        }
    }

    pub(super) fn create(&self, set: &str, req: &SimRequest) -> SimResponse {
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

    pub(super) fn update(&self, set: &str, id: i64, req: &SimRequest) -> SimResponse {
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

    pub(super) fn delete(&self, set: &str, id: i64, req: &SimRequest) -> SimResponse {
        self.record_write(req, Value::Null);
        let mut sets = self.sets.lock().expect("lock");
        self.changed(set);
        match sets.get_mut(set).and_then(|records| records.remove(&id)) {
            Some(_) => empty(StatusCode::NO_CONTENT),
            None => odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("{set}({id}L) does not exist.")),
        }
    }
}

/// The navigation properties whose model type is a list, by set: `(set, property)`.
pub(super) fn navigations_to_many() -> Vec<(&'static str, String)> {
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
