//! Ids and stamps as real OData servers write them: Ids as JSON numbers beside Int64 strings,
//! of every digit count (a text order of them is no numeric one), stamps with offsets, without
//! a zone and with seven fractional digits in one set (a text order of them is no order of
//! instants), and next links relative to the service root.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::common::Db;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use super::fake::{Fake, first_sync, mirror, reconcile_to_equal, start, sync, sync_updating};

/// Ids of 3, 9, 10 and 19 digits, half of them JSON numbers, eight to a stamp (a page holds
/// ten): each query after a page's last key asks `Id gt K` across a change of digit count. Every
/// sync and the reconciling leave the mirror equal to the server.
async fn ids_of_every_digit_count_are_paged_as_numbers(db: Db) {
    let fake = Arc::new(Fake::default());
    let ids: Vec<i64> = (100..106)
        .chain(999_999_995..1_000_000_005)
        .chain(9_000_000_000_000_000_000..9_000_000_000_000_000_004)
        .collect();
    for (n, id) in ids.iter().enumerate() {
        fake.put(*id, 1, &format!("2026-01-01T00:00:{:02}", n / 8));
        if n % 2 == 0 {
            fake.records.lock().unwrap().get_mut(id).unwrap()["Id"] = json!(id);
        }
    }
    let (svc, token) = start(db, &fake).await;
    let first = first_sync(&svc, &token, ids.len() as u64).await;
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    for id in [105, 999_999_999, 1_000_000_000, 9_000_000_000_000_000_001] {
        fake.put(id, 2, "2026-01-01T00:01:00");
    }
    sync_updating(&svc, &token, &fake, 4).await;
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!((reconciled["fetched_missing"].clone(), reconciled["refreshed"].clone()), (json!(0), json!(0)));
    svc.stop().await;
}

/// `2026-01-01T00:00:00Z` plus `seconds`, written in the form `n` picks: with an offset east
/// (`+02:00`), west (`-05:00`), without a zone, or with seven fractional digits (.NET).
fn stamp(seconds: i64, n: usize) -> String {
    let at: DateTime<Utc> = "2026-01-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::seconds(seconds);
    match n % 4 {
        0 => (at + Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S+02:00").to_string(),
        1 => (at - Duration::hours(5)).format("%Y-%m-%dT%H:%M:%S-05:00").to_string(),
        2 => at.format("%Y-%m-%dT%H:%M:%S").to_string(),
        _ => at.format("%Y-%m-%dT%H:%M:%S.1234567Z").to_string(),
    }
}

/// Stamps of every form in one set, a second apart: their texts sort nowhere near their
/// instants. A change after the cursor and a late commit stamped within the overlap before it
/// are each brought by the next sync, written in every form; a sync with nothing new writes
/// nothing, and the reconciling finds nothing to repair.
async fn stamps_of_every_form_are_compared_as_instants(db: Db) {
    let fake = Arc::new(Fake::default());
    for n in 0..30 {
        fake.put(1001 + n as i64, 1, &stamp(n as i64, n));
    }
    let (svc, token) = start(db, &fake).await;
    let first = first_sync(&svc, &token, 30).await;
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    for n in 0..4 {
        fake.put(1001 + n as i64, 2, &stamp(40 + n as i64, n));
        // Committed late: stamped ten seconds before the newest stamp synced.
        fake.put(1011 + n as i64, 2, &stamp(19, n));
    }
    sync_updating(&svc, &token, &fake, 8).await;
    let (status, again) = sync(&svc, &token, "").await;
    assert_eq!((status, again["data"][0]["updated"].clone()), (200, json!(0)), "{again}");
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!((reconciled["fetched_missing"].clone(), reconciled["refreshed"].clone()), (json!(0), json!(0)));
    svc.stop().await;
}

/// A server west of UTC keeping its stamps as local times (an `Edm.DateTime` of .NET's local
/// kind, served `…-05:00`) reads a literal with `Z` by its digits. The sync asked for the
/// overlap before its cursor as `datetime'…Z'`, five hours after the cursor in the server's
/// time: a change after the cursor and a late commit within the overlap were never read, and
/// the sync reported nothing changed. Written with the offset the server wrote, both come.
async fn stamps_keep_the_offset_the_server_wrote(db: Db) {
    let fake = Arc::new(Fake::default());
    *fake.local_offset.lock().unwrap() = Some("-05:00");
    for n in 0..30 {
        fake.put(1001 + n, 1, &stamp(n, 1));
    }
    let (svc, token) = start(db, &fake).await;
    let first = first_sync(&svc, &token, 30).await;
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    fake.put(1005, 2, &stamp(40, 1));
    fake.put(1015, 2, &stamp(19, 1));
    sync_updating(&svc, &token, &fake, 2).await;
    svc.stop().await;
}

/// OData v3 next links relative to the service root (`Companies?$skip=…`), on empty pages of
/// rows withheld after paging in the middle of the set: the sync and the reconciling follow
/// them to the records after.
async fn next_links_relative_to_the_service_root_are_followed(db: Db) {
    let fake = Fake::seeded(50, "");
    fake.relative_links.store(true, Ordering::Relaxed);
    fake.hidden.lock().unwrap().extend(1011..=1020);
    let (svc, token) = start(db, &fake).await;
    let first = first_sync(&svc, &token, 40).await;
    assert_eq!(mirror(&svc).await, fake.visible(), "{first}");
    fake.hidden.lock().unwrap().extend(1021..=1030);
    let reconciled = reconcile_to_equal(&svc, &token, &fake).await;
    assert_eq!(reconciled["removed"], 10, "{reconciled}");
    svc.stop().await;
}

on_both_databases!(
    ids_of_every_digit_count_are_paged_as_numbers,
    stamps_of_every_form_are_compared_as_instants,
    next_links_relative_to_the_service_root_are_followed,
    stamps_keep_the_offset_the_server_wrote,
);
