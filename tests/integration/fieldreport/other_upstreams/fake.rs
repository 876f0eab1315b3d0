//! The fake OData v3 server of these tests: its companies, its paging and its dialect.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::common::{Api, Db, TestService};
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, SimResponse, json, serve};
use integration_service::sandbox::odata_filter::{Filter, Written};
use integration_service::vocabulary::stamp::Stamp;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// Rows a page holds at most, whatever `$top` asks.
const PAGE_SIZE: usize = 10;

/// The companies of the fake, by Id, and the Ids of those withheld after paging.
#[derive(Default)]
pub(super) struct Fake {
    pub(super) records: Mutex<BTreeMap<i64, Map<String, Value>>>,
    pub(super) hidden: Mutex<HashSet<i64>>,
    /// No next links: the client pages by `$top` (FACTS: the fall-back of a v3 server).
    pub(super) unlinked: std::sync::atomic::AtomicBool,
    /// `$orderby` ignored: lists in Id order.
    pub(super) unordered: std::sync::atomic::AtomicBool,
    /// Every empty page has a next link (see [`Links`]), for this many list requests more.
    pub(super) links_on_empty: Mutex<Option<(Links, usize)>>,
    /// The `DateModified` stored, by Id, where finer than the one shown: filtered and ordered
    /// by, never served (a server that writes its stamps coarser than it keeps them).
    pub(super) finer: Mutex<BTreeMap<i64, String>>,
    /// `DateOfCreation` typed otherwise than `DateModified` (an `Edm.DateTime`, written
    /// `datetime'…'`): the prefix its literals must have.
    pub(super) created_typed_as: Mutex<Option<&'static str>>,
    /// An Id purged (deleted for good) once an empty page's next link is served, before the
    /// link is followed: the rows after it move one place back.
    pub(super) purged_after_link: Mutex<Option<i64>>,
    /// OData v2's JSON (verbose): lists as `d.results` with `__next`, stamps served as
    /// `/Date(<ms>)/` (stored, filtered and ordered as the instants they are), and a
    /// `datetime'…'` literal that is no ISO 8601 timestamp refused.
    pub(super) verbose: std::sync::atomic::AtomicBool,
    /// `$orderby` ignored: lists in this order (a heap's, the order rows were written in), the
    /// Ids it lacks after them in Id order.
    pub(super) heap_order: Mutex<Option<Vec<i64>>>,
    /// `$orderby` ignored: lists in descending Id order (a table read backwards by its index).
    pub(super) descending: std::sync::atomic::AtomicBool,
    /// `<Set>/$count` refused (404), as by a server that cannot count.
    pub(super) uncounted: std::sync::atomic::AtomicBool,
    /// Rows every `<Set>/$count` counts beyond what its `$filter` lists: a count that never
    /// meets the listing, however narrow the filter.
    pub(super) miscounted: std::sync::atomic::AtomicUsize,
    /// `<Set>/$count` answered with this status and `Retry-After` (seconds), if any: a busy
    /// server.
    pub(super) count_refused: Mutex<Option<(u16, Option<u64>)>>,
    /// Next links relative to the service root (`Companies?…`), as OData v3 may write them.
    pub(super) relative_links: std::sync::atomic::AtomicBool,
    /// The server's own offset (`-05:00`), as an `Edm.DateTime` of .NET's local kind has it:
    /// its stamps are kept as local times and served with this offset, and a literal is read
    /// as .NET reads one (`RoundtripKind`): one with an offset converted to local time, one
    /// with `Z` or no zone compared by its digits.
    pub(super) local_offset: Mutex<Option<&'static str>>,
}

/// The next link of an empty page, at a server with a paging bug: two links that lead to each
/// other, or a `$skiptoken` counting up forever.
#[derive(Clone, Copy)]
pub(super) enum Links {
    Cycle,
    Endless,
}

impl Fake {
    /// `count` companies from Id 1001, stamped a second apart, each stamp's seconds followed
    /// by `fraction`.
    pub(super) fn seeded(count: i64, fraction: &str) -> Arc<Fake> {
        let fake = Fake::default();
        for n in 0..count {
            fake.put(1001 + n, 1, &format!("2026-01-01T00:{:02}:{:02}{fraction}", n / 60, n % 60));
        }
        Arc::new(fake)
    }

    pub(super) fn put(&self, id: i64, version: i64, stamp: &str) {
        let record = json!({"Id": id.to_string(), "Name": format!("Company {id}"), "Version": version,
                            "DateModified": stamp});
        self.records.lock().unwrap().insert(id, record.as_object().unwrap().clone());
    }

    /// A record never modified: no `DateModified` (null, as the description allows it), and
    /// its `DateOfCreation` when it has one.
    pub(super) fn put_unmodified(&self, id: i64, created: Option<&str>) {
        let record = json!({"Id": id.to_string(), "Name": format!("Company {id}"), "Version": 1,
                            "DateModified": null, "DateOfCreation": created});
        self.records.lock().unwrap().insert(id, record.as_object().unwrap().clone());
    }

    /// Thirty records changed a second apart from `00:01:00`, listed in their rows' written
    /// order (`$orderby` ignored): the ten changed first come last, after a page whose last key
    /// is stamped after them, so a sync going on from that key skips them.
    pub(super) fn change_thirty_listing_ten_last(&self) {
        for n in 0..30 {
            self.put(1001 + n, 2, &format!("2026-01-01T00:01:{n:02}"));
        }
        *self.heap_order.lock().unwrap() = Some((1011..=1030).chain(1001..=1010).collect());
    }

    pub(super) fn visible(&self) -> BTreeMap<String, Value> {
        let hidden = self.hidden.lock().unwrap();
        let records = self.records.lock().unwrap();
        let visible = records.iter().filter(|(id, _)| !hidden.contains(id));
        visible.map(|(id, record)| (id.to_string(), record["Version"].clone())).collect()
    }

    pub(super) fn answer(&self, req: &SimRequest) -> SimResponse {
        let counted = match req.segments().as_slice() {
            ["odata", "Companies"] => false,
            ["odata", "Companies", "$count"] if !self.uncounted.load(std::sync::atomic::Ordering::Relaxed) => true,
            _ => return refused(404, "no such resource"),
        };
        if let Some((status, wait)) = *self.count_refused.lock().unwrap()
            && counted
        {
            let mut busy = refused(status, "the server is busy");
            let wait = wait.map(|seconds| http::HeaderValue::from_str(&seconds.to_string()).unwrap());
            busy.headers_mut().extend(wait.map(|wait| (http::header::RETRY_AFTER, wait)));
            return busy;
        }
        let pairs: BTreeMap<String, String> =
            url::form_urlencoded::parse(req.query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
        let local = *self.local_offset.lock().unwrap();
        let filter = pairs.get("$filter").map(|text| local.map_or(text.clone(), |offset| as_local(text, offset)));
        let filter = match filter.as_ref() {
            None => None,
            Some(text) if !stamps_fit_a_datetime(text) || !stamps_are_iso(text) => {
                return refused(400, "Unrecognized 'Edm.DateTime' literal");
            }
            Some(text) => match Filter::parse(text) {
                Some(filter) if stamps_typed(&filter, *self.created_typed_as.lock().unwrap()) => Some(filter),
                _ => return refused(400, "Syntax error in $filter"),
            },
        };
        let records = self.records.lock().unwrap();
        let finer = self.finer.lock().unwrap();
        // Each record as the server compares it (its stored stamp), beside the one it serves.
        let kept = records.iter().map(|(id, record)| {
            let mut kept = record.clone();
            kept.extend(finer.get(id).map(|stamp| ("DateModified".to_string(), json!(stamp))));
            (kept, record)
        });
        let mut chosen: Vec<_> = kept.filter(|(kept, _)| filter.as_ref().is_none_or(|f| f.matches(kept))).collect();
        // An Id as a string (Int64 in v3 JSON) or as a number.
        let id = |record: &Map<String, Value>| match &record["Id"] {
            Value::Number(n) => n.as_i64().unwrap(),
            other => other.as_str().unwrap().parse::<i64>().unwrap(),
        };
        // A record without a stamp sorts first, as null does in SQL Server's ascending order.
        let ordered = !self.unordered.load(std::sync::atomic::Ordering::Relaxed);
        if ordered && pairs.get("$orderby").is_some_and(|order| order == "DateModified,Id") {
            chosen.sort_by_key(|(kept, _)| (kept["DateModified"].as_str().map(Stamp::parse), id(kept)));
        }
        if let Some(order) = self.heap_order.lock().unwrap().as_ref() {
            chosen.sort_by_key(|(kept, _)| order.iter().position(|first| *first == id(kept)).unwrap_or(usize::MAX));
        }
        if self.descending.load(std::sync::atomic::Ordering::Relaxed) {
            chosen.sort_by_key(|(kept, _)| std::cmp::Reverse(id(kept)));
        }
        if counted {
            // Rows withheld after paging are counted: a count reads the table, not the pages.
            let text = (chosen.len() + self.miscounted.load(std::sync::atomic::Ordering::Relaxed)).to_string();
            return http::Response::builder().status(200).body(text.into()).unwrap();
        }
        let chosen = chosen.into_iter().map(|(_, served)| served);
        let number = |name: &str, default: usize| pairs.get(name).map_or(default, |n| n.parse().unwrap());
        let (skip, top) = (number("$skip", 0), number("$top", usize::MAX));
        let rest: Vec<_> = chosen.skip(skip).take(top).collect();
        let hidden = self.hidden.lock().unwrap();
        let page: Vec<Value> = rest
            .iter()
            .take(PAGE_SIZE)
            .filter(|record| !hidden.contains(&id(record)))
            .map(|record| select(record, pairs.get("$select")))
            .collect();
        let empty = page.is_empty();
        let verbose = self.verbose.load(std::sync::atomic::Ordering::Relaxed);
        let page: Vec<Value> = if verbose { page.into_iter().map(epoch_stamps).collect() } else { page };
        let mut body = json!({"odata.metadata": "https://fake/odata/$metadata#Companies", "value": page});
        let mut links_on_empty = self.links_on_empty.lock().unwrap();
        if let Some((links, left @ 1..)) = *links_on_empty
            && empty
        {
            *links_on_empty = Some((links, left - 1));
            let token = pairs.get("$skiptoken").map_or(0, |token| token.parse::<u64>().unwrap());
            let next = match links {
                Links::Cycle => 1 - token.min(1),
                Links::Endless => token + 1,
            };
            let mut query = pairs.clone();
            query.insert("$skiptoken".into(), next.to_string());
            let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish();
            body["odata.nextLink"] = json!(format!("https://fake/odata/Companies?{query}"));
        }
        if rest.len() > PAGE_SIZE && !self.unlinked.load(std::sync::atomic::Ordering::Relaxed) {
            let mut next = pairs.clone();
            next.insert("$skip".into(), (skip + PAGE_SIZE).to_string());
            if top != usize::MAX {
                next.insert("$top".into(), (top - PAGE_SIZE).to_string());
            }
            let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(next).finish();
            let root =
                if self.relative_links.load(std::sync::atomic::Ordering::Relaxed) { "" } else { "https://fake/odata/" };
            body["odata.nextLink"] = json!(format!("{root}Companies?{query}"));
        }
        drop(rest);
        drop(records);
        if empty
            && body.get("odata.nextLink").is_some()
            && let Some(purged) = self.purged_after_link.lock().unwrap().take()
        {
            self.records.lock().unwrap().remove(&purged);
        }
        if verbose {
            let next = body.get("odata.nextLink").cloned();
            body = json!({"d": {"results": body["value"].take(), "__next": next}});
        }
        json(http::StatusCode::OK, &body)
    }
}

/// `filter` with each stamp literal that has `Z` or no zone given `offset` instead: the digits
/// of such a literal are compared with the server's local times as they are.
fn as_local(filter: &str, offset: &str) -> String {
    let parts = filter.split('\'').enumerate().map(|(n, part)| {
        let naive = chrono::NaiveDateTime::parse_from_str(part.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S%.f");
        match (n % 2, naive) {
            (1, Ok(_)) => format!("{}{offset}", part.trim_end_matches('Z')),
            _ => part.to_string(),
        }
    });
    parts.collect::<Vec<_>>().join("'")
}

/// A record's stamps as OData v2 writes them: `/Date(<ms since the epoch>)/`.
fn epoch_stamps(mut record: Value) -> Value {
    for field in ["DateModified", "DateOfCreation"] {
        let Some(instant) = record.get(field).and_then(Value::as_str).and_then(|s| Stamp::parse(s).instant()) else {
            continue;
        };
        record[field] = json!(format!("/Date({})/", instant.timestamp_millis()));
    }
    record
}

/// Whether every `datetime'…'` literal of `filter` is an ISO 8601 timestamp (a year first).
fn stamps_are_iso(filter: &str) -> bool {
    filter.split("datetime'").skip(1).all(|rest| {
        let year = rest.split('-').next().unwrap_or_default();
        year.len() == 4 && year.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether every stamp of `filter` is typed as its field is: `datetime'…'`, or as `created`
/// says for a `DateOfCreation`.
fn stamps_typed(filter: &Filter, created: Option<&str>) -> bool {
    match filter {
        Filter::Or(terms) | Filter::And(terms) => terms.iter().all(|term| stamps_typed(term, created)),
        Filter::Compare { field, .. } => {
            let prefix = created.filter(|_| field == "DateOfCreation").unwrap_or("datetime");
            filter.writes_stamps_as(&Written::Typed(prefix.to_string()))
        }
    }
}

/// Whether every `datetime'…'` literal of `filter` has at most seven fractional digits: a
/// `System.DateTime` holds ticks of 100 ns, and its parser refuses more.
fn stamps_fit_a_datetime(filter: &str) -> bool {
    filter.split("datetime'").skip(1).all(|rest| {
        let literal = rest.split('\'').next().unwrap_or_default();
        let fraction = literal.split_once('.').map_or("", |(_, fraction)| fraction);
        fraction.chars().take_while(char::is_ascii_digit).count() <= 7
    })
}

fn select(record: &Map<String, Value>, fields: Option<&String>) -> Value {
    match fields {
        None => Value::Object(record.clone()),
        Some(fields) => {
            let chosen = fields.split(',').filter_map(|field| Some((field.to_string(), record.get(field)?.clone())));
            Value::Object(chosen.collect())
        }
    }
}

pub(super) fn refused(status: u16, message: &str) -> SimResponse {
    let status = http::StatusCode::from_u16(status).unwrap();
    json(status, &json!({"odata.error": {"code": "", "message": {"lang": "en-US", "value": message}}}))
}

/// The service, its field-report system the fake.
pub(super) async fn start(db: Db, fake: &Arc<Fake>) -> (TestService, String) {
    let served = fake.clone();
    serving(db, move |req| served.answer(req)).await
}

/// The service, its field-report system a server answering each request with `answer`.
pub(super) async fn serving(
    db: Db,
    answer: impl Fn(&SimRequest) -> SimResponse + Send + Sync + 'static,
) -> (TestService, String) {
    let (svc, token, _) = serving_held(db, answer, |_| false).await;
    (svc, token)
}

/// The answers a test holds back: each is let go by `answers.notify_one()`, and `arrived`
/// is told when one has come (the service has done what it does before it calls).
pub(super) struct Held {
    pub(super) answers: Arc<Notify>,
    pub(super) arrived: Arc<Notify>,
}

/// [`serving`], the answers to the requests `held_if` picks held until the test lets each go,
/// so that the test does something else while they are on their way.
pub(super) async fn serving_held(
    db: Db,
    answer: impl Fn(&SimRequest) -> SimResponse + Send + Sync + 'static,
    held_if: impl Fn(&SimRequest) -> bool + Send + Sync + 'static,
) -> (TestService, String, Held) {
    let held = Held { answers: Arc::new(Notify::new()), arrived: Arc::new(Notify::new()) };
    let (answers, arrived) = (held.answers.clone(), held.arrived.clone());
    let log = slog::Logger::root(slog::Discard, slog::o!());
    let address = serve("127.0.0.1:0".parse().unwrap(), Arc::new(Faults::default()), log, move |req| {
        let answered = answer(&req);
        let hold = held_if(&req).then(|| {
            arrived.notify_one();
            answers.clone()
        });
        async move {
            if let Some(hold) = hold {
                hold.notified().await;
            }
            answered
        }
    })
    .await
    .unwrap();
    let (svc, token) = TestService::with_user(db, &[("FIELDREPORT_BASE_URL", &format!("http://{address}"))]).await;
    (svc, token, held)
}

/// A sync or reconciling of the companies: its status and report.
pub(super) async fn sync(svc: &TestService, token: &str, query: &str) -> (u16, Value) {
    let response = svc.get(token, &format!("/api/v1/fieldreport/sync/companies{query}")).await;
    let status = response.status().as_u16();
    (status, response.json::<Value>().await.unwrap())
}

/// A set's first sync, which must insert `inserted` records; its answer.
pub(super) async fn first_sync(svc: &TestService, token: &str, inserted: u64) -> Value {
    let (status, first) = sync(svc, token, "").await;
    assert_eq!((status, first["data"][0]["inserted"].clone()), (200, json!(inserted)), "{first}");
    first
}

/// A later sync, which must update `updated` records and leave the mirror equal to what
/// `fake` shows.
pub(super) async fn sync_updating(svc: &TestService, token: &str, fake: &Fake, updated: u64) {
    let (status, next) = sync(svc, token, "").await;
    assert_eq!((status, next["data"][0]["updated"].clone()), (200, json!(updated)), "{next}");
    assert_eq!(mirror(svc).await, fake.visible(), "{next}");
}

/// A reconciling sync, after which the mirror must equal what `fake` shows; its report.
pub(super) async fn reconcile_to_equal(svc: &TestService, token: &str, fake: &Fake) -> Value {
    let (status, reconciled) = sync(svc, token, "?reconcile=true").await;
    assert_eq!(status, 200, "{reconciled}");
    assert_eq!(mirror(svc).await, fake.visible(), "{reconciled}");
    reconciled["data"][0]["reconcile"].clone()
}

/// The mirror's companies, Id → Version.
pub(super) async fn mirror(svc: &TestService) -> BTreeMap<String, Value> {
    let version = |document: &serde_json::value::RawValue| {
        serde_json::from_str::<Value>(document.get()).unwrap()["Version"].clone()
    };
    let mut mirrored = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let records = svc.store().mirror_after("companies", after.as_deref(), 1_000).await.unwrap();
        let Some((last, _)) = records.last() else { return mirrored };
        after = Some(last.clone());
        mirrored.extend(records.into_iter().map(|(id, document)| (id, version(&document))));
    }
}
