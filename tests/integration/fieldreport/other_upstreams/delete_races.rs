//! A forwarded delete that the field-report system refuses, while a sync reads the record
//! meanwhile: the server's answer to the delete is held until the test lets it go (see
//! [`serving`]), so the sync runs, or stores its page, while the delete is on its way.

use std::sync::Arc;

use crate::common::{Api, Db, TestService, error_body};
use integration_service::sandbox::http::{SimRequest, empty, json};
use integration_service::store::fieldreport::records::SyncedRecord;
use reqwest::Method;
use serde_json::Value;

use super::fake::{Fake, Held, first_sync, mirror, reconcile_to_equal, refused, serving_held, sync};

/// The service, its field-report system `fake` (which lists), answering a company by key as
/// it holds it and a delete by removing it, or with 403 when `refuse_deletes`. The answers to
/// the requests `held_if` picks are held until the test lets each go (`arrived` is told when
/// one has come: for a delete, its tombstone is written).
async fn serving(
    db: Db,
    fake: &Arc<Fake>,
    refuse_deletes: bool,
    held_if: fn(&SimRequest) -> bool,
) -> (TestService, String, Held) {
    let served = fake.clone();
    let answer = move |req: &SimRequest| {
        let segments = req.segments();
        let key = segments.get(1).and_then(|s| s.strip_prefix("Companies(")).and_then(|s| s.strip_suffix("L)"));
        let key = key.and_then(|key| key.parse::<i64>().ok());
        let mut records = served.records.lock().unwrap();
        match (&req.method, key) {
            (&Method::DELETE, Some(_)) if refuse_deletes => refused(403, "the company has open field reports"),
            (&Method::DELETE, Some(id)) => match records.remove(&id) {
                Some(_) => empty(http::StatusCode::NO_CONTENT),
                None => refused(404, "no such company"),
            },
            (&Method::GET, Some(id)) => match records.get(&id) {
                Some(record) => json(http::StatusCode::OK, record),
                None => refused(404, "no such company"),
            },
            _ => {
                drop(records);
                served.answer(req)
            }
        }
    };
    serving_held(db, answer, held_if).await
}

fn a_delete(req: &SimRequest) -> bool {
    req.method == Method::DELETE
}

/// The service in front of 30 companies synced, refusing deletes and holding their answers,
/// and the status and `error_code` of a delete refused with nothing racing it.
async fn refusing_deletes(db: Db) -> (Arc<Fake>, TestService, String, Held, (u16, Value)) {
    let fake = Fake::seeded(30, "");
    let (svc, token, held) = serving(db, &fake, true, a_delete).await;
    first_sync(&svc, &token, 30).await;
    held.answers.notify_one();
    let refused = svc.call(&token, Method::DELETE, "/api/v1/fieldreport/companies/1001", None).await;
    held.arrived.notified().await;
    let refusal = status_and_code(refused).await;
    (fake, svc, token, held, refusal)
}

async fn status_and_code(answer: reqwest::Response) -> (u16, Value) {
    let status = answer.status().as_u16();
    let body = error_body(answer, status).await;
    (status, body["error_code"].clone())
}

/// A record changed at the server long before the newest change there, deleted here while a
/// sync runs: the sync skips it (its tombstone) and its cursor moves past the change. The
/// server refuses the delete, and the record was put back as it was read before the delete,
/// a Version behind the server, where no later sync looks (only a reconciling). It is put
/// back as the server holds it.
async fn a_refused_delete_puts_back_what_a_sync_skipped_meanwhile(db: Db) {
    let (fake, svc, token, held, refusal) = refusing_deletes(db).await;
    let Held { answers: answers_held, arrived: deletes_arrived } = held;
    fake.put(1005, 2, "2026-01-01T00:01:00");
    fake.put(1020, 2, "2026-01-01T02:00:00");
    let item = "/api/v1/fieldreport/companies/1005";
    let syncing = async {
        deletes_arrived.notified().await;
        let (status, report) = sync(&svc, &token, "").await;
        assert_eq!((status, report["data"][0]["deleted_here"].clone()), (200, 1.into()), "{report}");
        answers_held.notify_one();
    };
    let (refused, ()) = tokio::join!(svc.call(&token, Method::DELETE, item, None), syncing);
    assert_eq!(status_and_code(refused).await, refusal);
    let (status, report) = sync(&svc, &token, "").await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(mirror(&svc).await, fake.visible(), "{report}");
    svc.stop().await;
}

/// A sync whose tombstones were read before a delete stores the record while the delete is
/// on its way, at a later Version the server holds. The server refuses the delete: putting
/// the record back failed on the copy the sync stored, and the refusal was answered 500. It
/// is answered as a refusal, and the mirror keeps the later copy.
async fn a_refused_delete_of_a_record_a_sync_stored_meanwhile_is_answered_as_refused(db: Db) {
    let (fake, svc, token, held, refusal) = refusing_deletes(db).await;
    let Held { answers: answers_held, arrived: deletes_arrived } = held;
    fake.put(1005, 2, "2026-01-01T00:01:00");
    let stored_meanwhile = async {
        deletes_arrived.notified().await;
        let copy = Value::Object(fake.records.lock().unwrap()[&1005].clone());
        let document = serde_json::value::to_raw_value(&copy).unwrap();
        let page = vec![SyncedRecord { id: "1005".into(), version: 2, external_id: None, document }];
        svc.store().mirror_upsert_page("companies", page).await.unwrap();
        answers_held.notify_one();
    };
    let item = "/api/v1/fieldreport/companies/1005";
    let (refused, ()) = tokio::join!(svc.call(&token, Method::DELETE, item, None), stored_meanwhile);
    assert_eq!(status_and_code(refused).await, refusal);
    assert_eq!(mirror(&svc).await, fake.visible());
    svc.stop().await;
}

/// A reconciling fetches a record whose Version differs from the server's while a client
/// deletes it through the service: the fetch, answered before the server deleted it, stored
/// it after the delete was answered done (the tombstones are read once, before). The record
/// stayed here, deleted at the server, until the next reconciling. It leaves before the
/// reconciling ends.
async fn a_record_deleted_while_a_reconciling_fetched_it_stays_deleted(db: Db) {
    let fake = Fake::seeded(30, "");
    let fetch_of_1005 = |req: &SimRequest| {
        let query = req.query.as_deref().unwrap_or_default();
        url::form_urlencoded::parse(query.as_bytes()).any(|(name, value)| name == "$filter" && value == "Id eq 1005L")
    };
    let (svc, token, Held { answers: fetch_held, arrived: fetch_arrived }) =
        serving(db, &fake, false, fetch_of_1005).await;
    first_sync(&svc, &token, 30).await;
    // Changed long ago (a late commit): beyond the overlap, only a reconciling fetches it.
    fake.put(1005, 2, "2025-01-01T00:00:00");
    let deleting = async {
        fetch_arrived.notified().await;
        let deleted = svc.call(&token, Method::DELETE, "/api/v1/fieldreport/companies/1005", None).await;
        assert_eq!(deleted.status(), 204, "{}", deleted.text().await.unwrap());
        fetch_held.notify_one();
    };
    tokio::join!(reconcile_to_equal(&svc, &token, &fake), deleting);
    assert!(!fake.visible().contains_key("1005"));
    svc.stop().await;
}

on_both_databases!(
    a_record_deleted_while_a_reconciling_fetched_it_stays_deleted,
    a_refused_delete_puts_back_what_a_sync_skipped_meanwhile,
    a_refused_delete_of_a_record_a_sync_stored_meanwhile_is_answered_as_refused,
);
