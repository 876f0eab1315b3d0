//! The sync and the reconciling of the field-report mirror against an OData v3 server other
//! than the simulator, answering as a real one may: stamps of a .NET clock (seven fractional
//! digits, and `datetime'…'` literals of at most seven, as `System.DateTime` parses them),
//! server-side paging that withholds rows after paging (soft-deleted ones), so that a window of
//! only such rows is an empty page with a next link, in the middle of the set, records never
//! modified (a null `DateModified`, sorted first), texts holding a NUL character, and full
//! metadata (annotated records, Int64 as strings, stamps with an offset).

use std::collections::BTreeMap;

use crate::common::{Api, Db};
use serde_json::{Value, json};

mod catch_up_races;
mod counted;
mod delete_races;
mod dialects;
mod fake;
mod push_answers;
mod write_answers;
mod write_fake;
mod writes;

use self::fake::{Fake, Links, first_sync, mirror, reconcile_to_equal, start, sync, sync_updating};

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

/// A server answering in OData v2's JSON (verbose): `d.results`, `__next`, and every stamp
/// written `/Date(<ms>)/`, which no `datetime'…'` literal takes. The sync asked for the
/// records after its first page's last key as `datetime'/Date(…)/'`, which the server refused
/// in every form, so no sync of more than one query ever completed. The stamps are the
/// instants they name: every sync completes, a change is brought by the next one, and a sync
/// with nothing new writes nothing.
async fn stamps_of_odata_v2_json_are_asked_as_instants(db: Db) {
    let fake = Fake::seeded(30, ".25");
    fake.verbose.store(true, std::sync::atomic::Ordering::Relaxed);
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 30).await;
    assert_eq!(mirror(&svc).await, fake.visible());
    fake.put(1005, 2, "2026-01-01T00:00:40.5");
    sync_updating(&svc, &token, &fake, 1).await;
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
        sync_updating(&svc, &token, &fake, 25).await;
    }
    svc.stop().await;
}

/// A server typing `DateOfCreation` otherwise than `DateModified` (an `Edm.DateTimeOffset`
/// beside an `Edm.DateTime`) takes another literal form for each. A later sync asks first for
/// the records never modified created since its window (a `DateOfCreation` filter), then for
/// those modified (a `DateModified` one): the form found for the first was kept for the
/// second, which the server refused, and every later sync failed.
async fn stamps_of_two_fields_typed_otherwise_are_each_asked_as_taken(db: Db) {
    let fake = Fake::seeded(30, "");
    fake.put_unmodified(2001, Some("2025-12-31T00:00:00"));
    *fake.created_typed_as.lock().unwrap() = Some("datetimeoffset");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 31).await;
    fake.put(1005, 2, "2026-01-01T00:00:40");
    fake.put_unmodified(2002, Some("2026-01-01T00:00:41"));
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!((next["data"][0]["inserted"].clone(), next["data"][0]["updated"].clone()), (json!(1), json!(1)));
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    svc.stop().await;
}

/// A row withheld after paging (soft-deleted) is purged between an empty page and the
/// following of its next link, which counts by position (`$skip`): the rows after it move one
/// place back, and the page the link leads to starts one record late. The reconciling took the
/// record it skipped for deleted upstream and removed it from the mirror; an incremental sync
/// never brought it back (it did not change).
async fn a_record_skipped_by_a_next_link_is_not_removed(db: Db) {
    let fake = Fake::seeded(50, "");
    // Stamped before the next sync's window, so that only the reconciling reads them.
    for id in 1001..=1030 {
        fake.put(id, 1, &format!("2025-06-01T00:00:{:02}", id - 1000));
    }
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.hidden.lock().unwrap().extend(1011..=1020);
    *fake.purged_after_link.lock().unwrap() = Some(1011);
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!(reconciled["removed"], 10, "{reconciled}");
    assert!(fake.purged_after_link.lock().unwrap().is_none(), "no row was purged");
    svc.stop().await;
}

/// A server that ignores `$orderby=Id` and lists in the order its rows were written, ten a
/// page: records imported late under lower Ids (stamped long ago, beyond the overlap) come
/// last. Each page is in ascending Id order, yet the window after its last Id (`Id gt 1010`)
/// never reaches them: the reconciling missed them. The server's count of the Ids up to a
/// page's last tells of the ones skipped; the mirror ends equal to the server.
async fn a_server_ignoring_the_id_order_is_reconciled_whole(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    for id in 901..=905 {
        fake.put(id, 1, "2025-01-01T00:00:00");
    }
    *fake.heap_order.lock().unwrap() = Some((1001..=1050).chain(901..=905).collect());
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!((reconciled["fetched_missing"].clone(), reconciled["removed"].clone()), (json!(5), json!(0)));
    assert_eq!(reconciled["unverified"], false, "{reconciled}");
    svc.stop().await;
}

/// The same server, unable to count (`$count` refused): the records skipped cannot be told, and
/// the report says that its list of Ids is unverified. No record it lists or has is removed.
async fn a_server_ignoring_the_id_order_that_cannot_count_is_reported(db: Db) {
    let fake = Fake::seeded(50, "");
    fake.uncounted.store(true, std::sync::atomic::Ordering::Relaxed);
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    *fake.heap_order.lock().unwrap() = Some((1031..=1050).chain(1001..=1030).collect());
    let (status, reconciled) = sync(&svc, &token, "?reconcile=true").await;
    assert_eq!(status, 200, "{reconciled}");
    assert_eq!(reconciled["data"][0]["reconcile"]["unverified"], true, "{reconciled}");
    assert_eq!(reconciled["data"][0]["reconcile"]["removed"], 0, "{reconciled}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{reconciled}");
    svc.stop().await;
}

/// A server that ignores `$orderby` and lists in its rows' written order, ten a page: thirty
/// records changed after the last sync, those written first listed last. Each page is in key
/// order, so the sync went on from its last key (`DateModified gt 00:01:19 or …`) and never
/// asked again for the ten changed records stamped before it. The server's count of the
/// records stamped since the overlap up to the newest read tells of them; the mirror ends
/// equal to the server.
async fn a_server_ignoring_the_key_order_loses_no_change_to_a_sync(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.change_thirty_listing_ten_last();
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    assert_eq!(
        (next["data"][0]["recovered"].clone(), next["data"][0]["unverified"].clone()),
        (json!(10), json!(false))
    );
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["recovered"].clone()), (200, json!(0)), "{again}");
    svc.stop().await;
}

/// The same server, unable to count: the sync pages as before, and its report says that what
/// it read was not checked against the server's count.
async fn a_sync_of_a_server_that_cannot_count_is_reported_unverified(db: Db) {
    let fake = Fake::seeded(50, "");
    fake.uncounted.store(true, std::sync::atomic::Ordering::Relaxed);
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.put(1001, 2, "2026-01-01T00:01:00");
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!((next["data"][0]["updated"].clone(), next["data"][0]["unverified"].clone()), (json!(1), json!(true)));
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    svc.stop().await;
}

on_both_databases!(
    a_server_ignoring_the_key_order_loses_no_change_to_a_sync,
    a_sync_of_a_server_that_cannot_count_is_reported_unverified,
    a_server_ignoring_the_id_order_is_reconciled_whole,
    a_server_ignoring_the_id_order_that_cannot_count_is_reported,
    stamps_of_odata_v2_json_are_asked_as_instants,
    stamps_of_two_fields_typed_otherwise_are_each_asked_as_taken,
    a_record_skipped_by_a_next_link_is_not_removed,
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
