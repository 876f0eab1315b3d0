//! What a sync read, checked against the server's count, at servers whose paging or counting
//! the check must see through: records never modified skipped by a server ignoring `$orderby`,
//! stamps kept finer than written, a count that never meets the listing, a busy count.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::Db;
use serde_json::json;

use super::fake::{Fake, first_sync, mirror, reconcile_to_equal, serving, start, sync};

/// A server that ignores `$orderby=Id` and lists in its rows' written order, ten a page: of the
/// twenty records never modified (no `DateModified`), read first by `Id gt <last>`, the ten
/// written last have the lower Ids. The first page is in ascending Id order, the query after
/// it (`Id gt 2020L`) answers none, and the sync went on to the stamped records: the ten were
/// never read, and no later sync asks for them (created before its window). The server's count
/// of the records never modified tells of them; the mirror ends equal to the server.
async fn records_never_modified_skipped_by_the_paging_are_recovered(db: Db) {
    let fake = Fake::seeded(30, "");
    for id in 2001..=2020 {
        fake.put_unmodified(id, Some("2025-12-31T00:00:00"));
    }
    *fake.heap_order.lock().unwrap() = Some((2011..=2020).chain(2001..=2010).collect());
    let (svc, token) = start(db, &fake).await;
    let (status, first) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(mirror(&svc).await, fake.visible(), "the records never modified skipped: {first}");
    let report = &first["data"][0];
    assert_eq!((report["recovered"].clone(), report["unverified"].clone()), (json!(10), json!(false)), "{first}");
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["recovered"].clone()), (200, json!(0)), "{again}");
    svc.stop().await;
}

/// A server that keeps finer stamps than it writes (ticks kept, whole seconds written), and
/// ignores `$orderby` (lists in Id order, ten a page): thirty records changed within the second
/// it writes `00:02:00`, kept after it; five changed a minute before, listed after them. The
/// sync reads the thirty (past the tie, by Id) and never the five. The count of the records
/// stamped up to the newest stamp read (`DateModified le 00:02:00`) left out the thirty read,
/// kept after that stamp, so it counted fewer than were read and the five went unseen. Counted
/// until a step after the newest stamp, the thirty are counted and the five told of.
async fn records_kept_after_the_newest_stamp_written_are_counted(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    for id in 1001..=1030 {
        fake.put(id, 2, "2026-01-01T00:02:00");
        let tick = 5_000_000 + (id - 1000) * 1_000;
        fake.finer.lock().unwrap().insert(id, format!("2026-01-01T00:02:00.{tick:07}"));
    }
    for n in 0..5 {
        fake.put(1031 + n, 2, &format!("2026-01-01T00:01:{n:02}"));
    }
    fake.unordered.store(true, Ordering::Relaxed);
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "the records changed before the tie skipped: {next}");
    let report = &next["data"][0];
    assert_eq!((report["recovered"].clone(), report["unverified"].clone()), (json!(5), json!(false)), "{next}");
    svc.stop().await;
}

/// A server whose count never meets what it lists (it counts a row more than any `$filter`
/// lists): every part of a listing counted more than it listed, and was halved again, down to
/// single Ids across the whole Int64 range, without end, holding the set's lease. The halving
/// stops after a bounded number of parts; the sync and the reconciling complete, their reports
/// unverified, and the mirror equals the server.
async fn a_count_that_never_meets_the_listing_ends_unverified(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.put(1001, 2, "2026-01-01T00:01:00");
    fake.miscounted.store(1, Ordering::Relaxed);
    let ended = |what: &str| format!("the {what} of a server whose count never meets its listing never ended");
    let synced = tokio::time::timeout(Duration::from_secs(60), sync(&svc, &token, "")).await;
    let (status, next) = synced.unwrap_or_else(|_| panic!("{}", ended("sync")));
    assert_eq!(status, 200, "{next}");
    let report = &next["data"][0];
    assert_eq!((report["updated"].clone(), report["unverified"].clone()), (json!(1), json!(true)), "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    let reconciling = tokio::time::timeout(Duration::from_secs(60), sync(&svc, &token, "?reconcile=true")).await;
    let (status, reconciled) = reconciling.unwrap_or_else(|_| panic!("{}", ended("reconciling")));
    assert_eq!(status, 200, "{reconciled}");
    let report = &reconciled["data"][0]["reconcile"];
    assert_eq!((report["unverified"].clone(), report["removed"].clone()), (json!(true), json!(0)), "{reconciled}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{reconciled}");
    svc.stop().await;
}

/// A server that ignores `$orderby` (as in `a_server_ignoring_the_key_order_loses_no_change_to_a_sync`)
/// and answers its count 503 with `Retry-After`, busy: the count was taken for one the server
/// cannot give, and the sync completed unverified, its cursor past the ten records it skipped.
/// It fails as a page so answered fails it (`upstream_busy`), records no cursor, and the next
/// sync, once the server counts, recovers the ten.
async fn a_count_answered_busy_fails_the_sync(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.change_thirty_listing_ten_last();
    *fake.count_refused.lock().unwrap() = Some((503, Some(7)));
    let (status, busy) = sync(&svc, &token, "").await;
    assert_eq!((status, busy["error_code"].clone()), (503, json!("upstream_busy")), "{busy}");
    *fake.count_refused.lock().unwrap() = None;
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    let report = &next["data"][0];
    assert_eq!((report["recovered"].clone(), report["unverified"].clone()), (json!(10), json!(false)), "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{next}");
    svc.stop().await;
}

/// A server that keeps finer stamps than it writes and rounds them (ticks kept, the nearest
/// second written), and ignores `$orderby` (lists in Id order, ten a page). The next sync
/// starts at `23:55:00` (the overlap before its cursor): ten records written `23:55:00`, kept
/// after it, fill its first page, so it reads past that second by Id (`ge 23:54:59 and lt
/// 23:55:01`) and also reads a record kept at `23:54:59.7` (written `23:55:00`, rounded up),
/// before where it started. Ten records changed later fill a page, and one changed before them
/// is listed after them: skipped. The count of the window (`ge 23:55:00`) left out the record
/// kept before it, which was read: it counted as many as were read, and the skipped record
/// went unseen.
async fn a_record_kept_before_the_start_does_not_hide_a_skipped_one(db: Db) {
    let fake = Fake::seeded(1, "");
    fake.put(1011, 1, "2025-12-31T23:55:00");
    fake.finer.lock().unwrap().insert(1011, "2025-12-31T23:54:59.7".into());
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 2).await;
    for id in 1001..=1010 {
        fake.put(id, 2, "2025-12-31T23:55:00");
        fake.finer.lock().unwrap().insert(id, format!("2025-12-31T23:55:00.{:02}", id - 1000));
    }
    for n in 1..=10 {
        fake.put(1011 + n, 1, &format!("2025-12-31T23:56:{n:02}"));
    }
    fake.put(1022, 1, "2025-12-31T23:56:00");
    fake.unordered.store(true, Ordering::Relaxed);
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    assert_eq!(mirror(&svc).await, fake.visible(), "the record listed after the later ones skipped: {next}");
    let report = &next["data"][0];
    assert_eq!((report["recovered"].clone(), report["unverified"].clone()), (json!(1), json!(false)), "{next}");
    svc.stop().await;
}

/// The same server answering its count 500 (an internal error: a count that timed out in its
/// database, say), then 501 (Not Implemented). A 500 was taken for a server that cannot count:
/// the sync completed unverified, its cursor past the ten records it skipped. It says nothing
/// of whether the server counts, so it fails the sync (`upstream_error`) and records no cursor;
/// 501 says the server does not count, and the sync completes unverified.
async fn a_count_answered_500_fails_the_sync_and_501_cannot_count(db: Db) {
    let fake = Fake::seeded(50, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 50).await;
    fake.change_thirty_listing_ten_last();
    *fake.count_refused.lock().unwrap() = Some((500, None));
    let (status, failed) = sync(&svc, &token, "").await;
    assert_eq!((status, failed["error_code"].clone()), (502, json!("upstream_error")), "{failed}");
    *fake.count_refused.lock().unwrap() = Some((501, None));
    let (status, uncounted) = sync(&svc, &token, "").await;
    assert_eq!((status, uncounted["data"][0]["unverified"].clone()), (200, json!(true)), "{uncounted}");
    svc.stop().await;
}

/// A server that ignores `$orderby=Id` and lists in descending Id order, ten a page: each
/// window of a reconciling's list holds the highest Ids of its range, so the range is listed
/// again in parts, about two for every five Ids. Past 1,000 parts the list went on uncounted,
/// never reached the lowest Ids, and the reconciling completed without the five records
/// imported late under them. Parts that list Ids not listed before are no runaway: the mirror
/// ends equal to the server.
async fn a_large_set_listed_backwards_is_reconciled_whole(db: Db) {
    let fake = Fake::seeded(3_000, "");
    let (svc, token) = start(db, &fake).await;
    first_sync(&svc, &token, 3_000).await;
    // Stamped before the next sync's window, so that only the reconciling lists them.
    for id in 1001..=4000 {
        fake.put(id, 1, "2025-06-01T00:00:00");
    }
    for id in 1..=5 {
        fake.put(id, 1, "2025-01-01T00:00:00");
    }
    fake.descending.store(true, Ordering::Relaxed);
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!((reconciled["fetched_missing"].clone(), reconciled["removed"].clone()), (json!(5), json!(0)));
    assert_eq!(reconciled["unverified"], false, "{reconciled}");
    svc.stop().await;
}

/// A server that ignores `$orderby` and lists in its rows' written order, ten a page: of thirty
/// records changed after the last sync, the one written last (1012) is listed after records
/// stamped later, so the sync goes on past it and never asks for it again. Another client
/// deletes a record the sync read (1040) before the server counts: it counted as many records as
/// were read, the report said `unverified: false`, and the cursor moved past the skipped record,
/// which waited for a reconciling. The Ids of the window are listed, and the one not read is
/// fetched before the cursor moves.
async fn a_record_read_and_deleted_before_the_count_hides_no_skipped_one(db: Db) {
    let fake = Fake::seeded(50, "");
    let (counting, deleting) = (fake.clone(), Arc::new(AtomicBool::new(false)));
    let delete_at_count = deleting.clone();
    let (svc, token) = serving(db, move |req| {
        if req.segments().last() == Some(&"$count") && delete_at_count.swap(false, Ordering::Relaxed) {
            counting.records.lock().unwrap().remove(&1040);
        }
        counting.answer(req)
    })
    .await;
    first_sync(&svc, &token, 50).await;
    deleting.store(true, Ordering::Relaxed);
    for n in 0..30 {
        fake.put(1001 + n, 2, &format!("2026-01-01T00:01:{n:02}"));
    }
    let written = (1031..=1050).chain(1001..=1011).chain(1013..=1030).chain([1012]);
    *fake.heap_order.lock().unwrap() = Some(written.collect());
    let (status, next) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{next}");
    let mirrored = mirror(&svc).await;
    assert_eq!(mirrored.get("1012"), Some(&json!(2)), "the record the paging skipped: {next}");
    let report = &next["data"][0];
    assert_eq!((report["recovered"].clone(), report["unverified"].clone()), (json!(1), json!(false)), "{next}");
    // The deleted record stays until a reconciling, as any record deleted by another client.
    let mut expected = fake.visible();
    expected.insert("1040".into(), json!(1));
    assert_eq!(mirrored, expected, "{next}");
    svc.stop().await;
}

on_both_databases!(
    a_record_read_and_deleted_before_the_count_hides_no_skipped_one,
    a_large_set_listed_backwards_is_reconciled_whole,
    a_count_answered_500_fails_the_sync_and_501_cannot_count,
    a_record_kept_before_the_start_does_not_hide_a_skipped_one,
    records_never_modified_skipped_by_the_paging_are_recovered,
    records_kept_after_the_newest_stamp_written_are_counted,
    a_count_that_never_meets_the_listing_ends_unverified,
    a_count_answered_busy_fails_the_sync,
);
