//! The sync and the reconciling of the field-report mirror against an OData v3 server other
//! than the simulator, answering as a real one may: stamps of a .NET clock (seven fractional
//! digits, and `datetime'…'` literals of at most seven, as `System.DateTime` parses them),
//! server-side paging that withholds rows after paging (soft-deleted ones), so that a window of
//! only such rows is an empty page with a next link, in the middle of the set, records never
//! modified (a null `DateModified`, sorted first), texts holding a NUL character, and full
//! metadata (annotated records, Int64 as strings, stamps with an offset).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::common::{Api, Db, TestService};
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, SimResponse, json, serve};
use integration_service::sandbox::odata_filter::{Filter, Written};
use integration_service::vocabulary::stamp::Stamp;
use serde_json::{Map, Value, json};

/// Rows a page holds at most, whatever `$top` asks.
const PAGE_SIZE: usize = 10;

/// The companies of the fake, by Id, and the Ids of those withheld after paging.
#[derive(Default)]
struct Fake {
    records: Mutex<BTreeMap<i64, Map<String, Value>>>,
    hidden: Mutex<HashSet<i64>>,
    /// No next links: the client pages by `$top` (FACTS: the fall-back of a v3 server).
    unlinked: std::sync::atomic::AtomicBool,
    /// `$orderby` ignored: lists in Id order.
    unordered: std::sync::atomic::AtomicBool,
    /// Every empty page has a next link (see [`Links`]), for this many list requests more.
    links_on_empty: Mutex<Option<(Links, usize)>>,
    /// The `DateModified` stored, by Id, where finer than the one shown: filtered and ordered
    /// by, never served (a server that writes its stamps coarser than it keeps them).
    finer: Mutex<BTreeMap<i64, String>>,
}

/// The next link of an empty page, at a server with a paging bug: two links that lead to each
/// other, or a `$skiptoken` counting up forever.
#[derive(Clone, Copy)]
enum Links {
    Cycle,
    Endless,
}

impl Fake {
    /// `count` companies from Id 1001, stamped a second apart, each stamp's seconds followed
    /// by `fraction`.
    fn seeded(count: i64, fraction: &str) -> Arc<Fake> {
        let fake = Fake::default();
        for n in 0..count {
            fake.put(1001 + n, 1, &format!("2026-01-01T00:{:02}:{:02}{fraction}", n / 60, n % 60));
        }
        Arc::new(fake)
    }

    fn put(&self, id: i64, version: i64, stamp: &str) {
        let record = json!({"Id": id.to_string(), "Name": format!("Company {id}"), "Version": version,
                            "DateModified": stamp});
        self.records.lock().unwrap().insert(id, record.as_object().unwrap().clone());
    }

    /// A record never modified: no `DateModified` (null, as the description allows it), and
    /// its `DateOfCreation` when it has one.
    fn put_unmodified(&self, id: i64, created: Option<&str>) {
        let record = json!({"Id": id.to_string(), "Name": format!("Company {id}"), "Version": 1,
                            "DateModified": null, "DateOfCreation": created});
        self.records.lock().unwrap().insert(id, record.as_object().unwrap().clone());
    }

    fn visible(&self) -> BTreeMap<String, Value> {
        let hidden = self.hidden.lock().unwrap();
        let records = self.records.lock().unwrap();
        let visible = records.iter().filter(|(id, _)| !hidden.contains(id));
        visible.map(|(id, record)| (id.to_string(), record["Version"].clone())).collect()
    }

    fn answer(&self, req: &SimRequest) -> SimResponse {
        if req.segments() != ["odata", "Companies"] {
            return refused(404, "no such resource");
        }
        let pairs: BTreeMap<String, String> =
            url::form_urlencoded::parse(req.query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
        let filter = match pairs.get("$filter") {
            None => None,
            Some(text) if !stamps_fit_a_datetime(text) => return refused(400, "Unrecognized 'Edm.DateTime' literal"),
            Some(text) => match Filter::parse(text) {
                Some(filter) if filter.writes_stamps_as(&Written::Typed("datetime".into())) => Some(filter),
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
        let id = |record: &Map<String, Value>| record["Id"].as_str().unwrap().parse::<i64>().unwrap();
        // A record without a stamp sorts first, as null does in SQL Server's ascending order.
        let ordered = !self.unordered.load(std::sync::atomic::Ordering::Relaxed);
        if ordered && pairs.get("$orderby").is_some_and(|order| order == "DateModified,Id") {
            chosen.sort_by_key(|(kept, _)| (kept["DateModified"].as_str().map(Stamp::parse), id(kept)));
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
            body["odata.nextLink"] = json!(format!("https://fake/odata/Companies?{query}"));
        }
        json(http::StatusCode::OK, &body)
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

fn refused(status: u16, message: &str) -> SimResponse {
    let status = http::StatusCode::from_u16(status).unwrap();
    json(status, &json!({"odata.error": {"code": "", "message": {"lang": "en-US", "value": message}}}))
}

/// The service, its field-report system the fake.
async fn start(db: Db, fake: &Arc<Fake>) -> (TestService, String) {
    let served = fake.clone();
    let log = slog::Logger::root(slog::Discard, slog::o!());
    let address = serve("127.0.0.1:0".parse().unwrap(), Arc::new(Faults::default()), log, move |req| {
        let answer = served.answer(&req);
        async move { answer }
    })
    .await
    .unwrap();
    let (svc, token) = TestService::with_user(db, &[("FIELDREPORT_BASE_URL", &format!("http://{address}"))]).await;
    (svc, token)
}

/// A sync or reconciling of the companies: its status and report.
async fn sync(svc: &TestService, token: &str, query: &str) -> (u16, Value) {
    let response = svc.get(token, &format!("/api/v1/fieldreport/sync/companies{query}")).await;
    let status = response.status().as_u16();
    (status, response.json::<Value>().await.unwrap())
}

/// A set's first sync, which must insert `inserted` records; its answer.
async fn first_sync(svc: &TestService, token: &str, inserted: u64) -> Value {
    let (status, first) = sync(svc, token, "").await;
    assert_eq!((status, first["data"][0]["inserted"].clone()), (200, json!(inserted)), "{first}");
    first
}

/// A reconciling sync, after which the mirror must equal what `fake` shows; its report.
async fn reconcile_to_equal(svc: &TestService, token: &str, fake: &Fake) -> Value {
    let (status, reconciled) = sync(svc, token, "?reconcile=true").await;
    assert_eq!(status, 200, "{reconciled}");
    assert_eq!(mirror(svc).await, fake.visible(), "{reconciled}");
    reconciled["data"][0]["reconcile"].clone()
}

/// The mirror's companies, Id → Version.
async fn mirror(svc: &TestService) -> BTreeMap<String, Value> {
    let records = svc.store().mirror_after("companies", None, 1_000).await.unwrap();
    let version = |document: &serde_json::value::RawValue| {
        serde_json::from_str::<Value>(document.get()).unwrap()["Version"].clone()
    };
    records.into_iter().map(|(id, document)| (id, version(&document))).collect()
}

/// Stamps of seven fractional digits: the next sync asks from the overlap before its cursor,
/// a stamp the server must be able to read. `DateTime` takes at most seven digits; the
/// same instant written with nine is refused, in the typed form and the bare one alike.
async fn stamps_of_seven_fractional_digits_are_asked_as_written(db: Db) {
    let fake = Fake::seeded(30, ".1234567");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 30).await;
    fake.put(1005, 2, "2026-01-01T00:00:40.7654321");
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["data"][0]["updated"], 1, "{next}");
    assert_eq!(mirror(&svc).await, fake.visible());
    svc.stop().await;
}

/// A window of rows the server withholds after paging (soft-deleted) is an empty page with a
/// next link, in the middle of the set: it is no end of a sync, which reads the records after
/// it.
async fn an_empty_page_with_a_next_link_is_no_end_of_a_sync(db: Db) {
    let fake = Fake::seeded(50, "");
    fake.hidden.lock().unwrap().extend(1011..=1020);
    let (svc, token) = start(db, &fake).await;
    let (status, first) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    svc.stop().await;
}

/// Nor of a reconciling's list of Ids: the records after it are not taken for deleted.
async fn an_empty_page_with_a_next_link_is_no_end_of_a_reconciling(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.hidden.lock().unwrap().extend(1011..=1020);
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!(reconciled["removed"], 10, "{reconciled}");
    svc.stop().await;
}

/// A server that pages below what is asked and writes no next link: the reconciling fetches
/// the stale records by Id, forty a request, and an answer of ten is no proof that the thirty
/// it left out are gone. Each is fetched again, and the mirror ends equal to the server.
async fn a_short_answer_to_a_fetch_by_id_is_asked_again(db: Db) {
    let fake = Fake::seeded(50, "");
    fake.unlinked.store(true, std::sync::atomic::Ordering::Relaxed);
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    // Changed long ago (a late commit): beyond the overlap, only a reconciling sees them.
    for id in 1011..1036 {
        fake.put(id, 2, "2025-01-01T00:00:00");
    }
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!(reconciled["refreshed"], 25, "{reconciled}");
    svc.stop().await;
}

/// Records never modified have no `DateModified`, and the server sorts them first: the first
/// page of a first sync holds only such records, with no key to go on from. Every one is
/// taken; a later sync finds those created since the overlap before its cursor, and every
/// one with no stamp at all.
async fn records_never_modified_are_taken(db: Db) {
    let fake = Fake::seeded(30, "");
    for id in 2001..2016 {
        fake.put_unmodified(id, Some("2025-12-31T00:00:00"));
    }
    fake.put_unmodified(2016, None);
    let (svc, token) = start(db, &fake).await;
    let first = first_sync(&svc, &token, 46).await;
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    // Created after the first sync and never modified since, beside a record modified.
    fake.put_unmodified(2017, Some("2026-01-01T00:00:40"));
    fake.put(1005, 2, "2026-01-01T00:00:41");
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!((next["data"][0]["inserted"].clone(), next["data"][0]["updated"].clone()), (json!(1), json!(1)));
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    // Without either stamp it has no place in time: every sync reads such records again, so
    // the next one brings it and the one after counts it unchanged.
    fake.put_unmodified(2018, None);
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!((status, next["data"][0]["inserted"].clone()), (200, json!(1)), "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["inserted"].clone()), (200, json!(0)), "{again}");
    svc.stop().await;
}

/// A NUL character (U+0000) in a record's texts, its `ExternalId` among them: no text of
/// Postgres holds one. The record is stored as the upstream wrote it, and the sync completes.
async fn a_nul_in_a_record_is_stored_as_written(db: Db) {
    let fake = Fake::seeded(5, "");
    let nul = json!({"ExternalId": "erp\u{0}3", "Name": "A\u{0}B"});
    fake.records.lock().unwrap().get_mut(&1003).unwrap().extend(nul.as_object().unwrap().clone());
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 5).await;
    let record: Value = svc.get_json(&token, "/api/v1/fieldreport/companies/1003").await;
    assert_eq!((&record["ExternalId"], &record["Name"]), (&nul["ExternalId"], &nul["Name"]), "{record}");
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["unchanged"].clone()), (200, json!(5)), "{again}");
    svc.stop().await;
}

/// A server that ignores `$orderby` lists in Id order. When the record changed last is listed
/// last on a page, it is the page's greatest key, whatever the order of the records before it:
/// going on after it skipped every record of a later page stamped before it, and the sync
/// completed with them missing. A page out of key order fails the sync, and a sync from a
/// server that orders brings every record.
async fn a_page_out_of_key_order_fails_the_sync(db: Db) {
    let fake = Fake::seeded(30, "");
    fake.put(1003, 2, "2026-01-01T00:00:50");
    fake.put(1010, 2, "2026-01-01T00:01:00");
    fake.unordered.store(true, std::sync::atomic::Ordering::Relaxed);
    let (svc, token) = start(db, &fake).await;
    let (status, first) = sync(&svc, &token, "").await;
    assert_eq!((status, first["error_code"].clone()), (502, json!("upstream_invalid_response")), "{first}");
    fake.unordered.store(false, std::sync::atomic::Ordering::Relaxed);
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{again}");
    svc.stop().await;
}

/// A server answering in OData v3's full metadata: each record annotated (`odata.type`,
/// `odata.id`, `odata.editLink`, a property's `@odata.type`), its Int64 `Version` a string, and
/// `DateModified` with an offset (`+02:00`). The sync stores every record, a change made later
/// is brought by the next sync, and a sync with nothing new writes nothing (versions compared
/// as the server writes them).
async fn full_metadata_records_stamped_with_an_offset_converge(db: Db) {
    let fake = Fake::seeded(30, "+02:00");
    let annotate = |fake: &Fake| {
        for (id, record) in fake.records.lock().unwrap().iter_mut() {
            let Some(version) = record["Version"].as_i64().map(|n| n.to_string()) else { continue };
            let annotations = json!({"odata.type": "MFR.Company", "odata.id": format!("https://fake/odata/Companies({id}L)"),
                "odata.editLink": format!("Companies({id}L)"), "Version@odata.type": "Edm.Int64", "Version": version});
            record.extend(annotations.as_object().unwrap().clone());
        }
    };
    // The mirror keeps an Int64 as a number, as the description types it.
    let upstream = |fake: &Fake| -> BTreeMap<String, Value> {
        let number = |version: Value| json!(version.as_str().unwrap().parse::<i64>().unwrap());
        fake.visible().into_iter().map(|(id, version)| (id, number(version))).collect()
    };
    annotate(&fake);
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 30).await;
    assert_eq!(mirror(&svc).await, upstream(&fake));
    fake.put(1005, 2, "2026-01-01T00:00:40+02:00");
    annotate(&fake);
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!((status, next["data"][0]["updated"].clone()), (200, json!(1)), "{next}");
    assert_eq!(mirror(&svc).await, upstream(&fake), "{next}");
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["updated"].clone()), (200, json!(0)), "{again}");
    svc.stop().await;
}

/// A server whose empty pages link to each other (`$skiptoken=0` to `=1` and back): the sync,
/// at its last query (which answers no record), followed them for ever, holding the set's
/// lease. The fake stops linking after 500 requests, so a sync that follows them ends; one
/// that finds the cycle ends at once, with a malformed answer, and asks no more.
async fn empty_pages_linking_to_each_other_end_the_sync(db: Db) {
    let fake = Fake::seeded(5, "");
    *fake.links_on_empty.lock().unwrap() = Some((Links::Cycle, 500));
    let (svc, token) = start(db, &fake).await;
    let (status, first) = sync(&svc, &token, "").await;
    assert_eq!((status, first["error_code"].clone()), (502, json!("upstream_invalid_response")), "{first}");
    assert!(first["message"].as_str().unwrap().contains("next link"), "{first}");
    let left = fake.links_on_empty.lock().unwrap().unwrap().1;
    assert!(left > 490, "followed {} links", 500 - left);
    svc.stop().await;
}

/// A server whose empty pages link onward for ever (`$skiptoken` counting up), past its set's
/// end: the sync followed them as long as the server linked them. It follows at most
/// `EMPTY_PAGES_FOLLOWED` in a row, then ends with a malformed answer.
async fn empty_pages_linking_onward_for_ever_end_the_sync(db: Db) {
    let most = integration_service::upstream::fieldreport::EMPTY_PAGES_FOLLOWED;
    let fake = Fake::seeded(5, "");
    *fake.links_on_empty.lock().unwrap() = Some((Links::Endless, most + 100));
    let (svc, token) = start(db, &fake).await;
    let (status, first) = sync(&svc, &token, "").await;
    assert_eq!((status, first["error_code"].clone()), (502, json!("upstream_invalid_response")), "{first}");
    assert!(first["message"].as_str().unwrap().contains("in a row"), "{first}");
    // The first empty page, and one page for each link followed.
    assert_eq!(fake.links_on_empty.lock().unwrap().unwrap().1, 99);
    svc.stop().await;
}

/// A server that keeps finer stamps than it writes (ticks kept, whole seconds served) filters
/// and orders by the stamps it keeps: among records served with the same `DateModified`, the
/// order is not by Id, and `DateModified gt T` holds for the records of `T` already read.
/// Twenty-five records share a second, more than a page holds, kept in Id order and then in
/// the reverse: every sync completes and the mirror equals the server.
async fn a_server_keeping_finer_stamps_than_it_serves_is_synced_whole(db: Db) {
    let fake = Fake::seeded(40, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 40).await;
    for (order, version) in [(1, 2), (-1, 3)] {
        for id in 1001..1026 {
            fake.put(id, version, "2026-01-01T00:01:00");
            let tick = 5_000_000 + order * (id - 1013) * 1_000;
            fake.finer.lock().unwrap().insert(id, format!("2026-01-01T00:01:00.{tick:07}"));
        }
        let (status, next) = sync(&svc, &token, "").await;
        assert_eq!((status, next["data"][0]["updated"].clone()), (200, json!(25)), "{next}");
        assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    }
    svc.stop().await;
}

on_both_databases!(
    a_server_keeping_finer_stamps_than_it_serves_is_synced_whole,
    empty_pages_linking_to_each_other_end_the_sync,
    empty_pages_linking_onward_for_ever_end_the_sync,
    full_metadata_records_stamped_with_an_offset_converge,
    a_page_out_of_key_order_fails_the_sync,
    records_never_modified_are_taken,
    a_nul_in_a_record_is_stored_as_written,
    a_short_answer_to_a_fetch_by_id_is_asked_again,
    stamps_of_seven_fractional_digits_are_asked_as_written,
    an_empty_page_with_a_next_link_is_no_end_of_a_sync,
    an_empty_page_with_a_next_link_is_no_end_of_a_reconciling,
);
