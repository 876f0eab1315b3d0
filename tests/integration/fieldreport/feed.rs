//! Copying a mirror and following its change feed, as a consumer does (docs/api.md, "Copying
//! and following a set"): the export streams a set and ends with the position to follow from;
//! the feed answers what was stored after it, removals included; positions the feed cannot
//! follow are refused. Both databases. (The long histories follow the feed through every kind
//! of write: `histories/consumer.rs`.)

use crate::common::Api;
use std::collections::BTreeMap;

use integration_service::store::erp::ErpRecord;
use integration_service::store::fieldreport::records::{MirrorRecord, SyncedRecord};
use serde_json::{Value, json};

use crate::common::contract::Checked;
use crate::common::{Db, TestService, error_body};

async fn tag(svc: &TestService, id: &str, name: &str) {
    let record = MirrorRecord { id: id.into(), version: 1, document: json!({"Id": id, "Version": 1, "Name": name}) };
    let store = svc.store();
    if store.mirror_get("tags", id).await.unwrap().is_some() {
        assert!(store.mirror_replace("tags", &record, 1, None).await.unwrap());
    } else {
        store.mirror_insert("tags", &record, None).await.unwrap();
    }
}

/// The export's change lines as a copy, and the position its last line names.
async fn export(svc: &TestService, token: &str, path: &str) -> (BTreeMap<String, Value>, String) {
    let answer = svc.client.get(svc.url(path)).bearer_auth(token).checked().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "application/x-ndjson");
    let text = answer.text().await.unwrap();
    let mut lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let end = lines.pop().expect("the last line");
    assert_eq!(end["records"], json!(lines.len()), "{end}");
    let ids: Vec<&str> = lines.iter().map(|line| line["id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| (id.len(), id.to_string()));
    assert_eq!(ids, sorted, "an export is in key order");
    let mut copy = BTreeMap::new();
    for line in lines {
        assert_eq!(line["change"], "upsert", "{line}");
        copy.insert(line["id"].as_str().unwrap().to_string(), line["record"].clone());
    }
    (copy, end["next_cursor"].as_str().unwrap().to_string())
}

/// Follows `feed` from `since` (from the start when `None`) to its end, applying each change
/// to `copy`; the position reached.
async fn follow(
    svc: &TestService,
    token: &str,
    feed: &str,
    since: Option<String>,
    copy: &mut BTreeMap<String, Value>,
) -> String {
    let mut since = since;
    loop {
        let path = match &since {
            Some(since) => format!("{feed}?since={since}&limit=3"),
            None => format!("{feed}?limit=3"),
        };
        let page = svc.get_json(token, &path).await;
        let next = page["next_cursor"].as_str().unwrap().to_string();
        assert!(page["next"].as_str().unwrap().ends_with(&format!("since={next}&limit=3")), "{page}");
        let changes = page["data"].as_array().unwrap();
        for change in changes {
            let id = change["id"].as_str().unwrap().to_string();
            match change["change"].as_str().unwrap() {
                "upsert" => copy.insert(id, change["record"].clone()),
                "delete" => copy.remove(&id),
                other => panic!("{other}"),
            };
        }
        if changes.is_empty() {
            return next;
        }
        since = Some(next);
    }
}

/// The set's records as the list answers them.
async fn listed(svc: &TestService, token: &str, path: &str, id_field: &str) -> BTreeMap<String, Value> {
    let mut records = BTreeMap::new();
    let mut next = Some(format!("{path}?limit=500"));
    while let Some(path) = next {
        let page = svc.get_json(token, &path).await;
        for record in page["data"].as_array().unwrap() {
            let id = match &record[id_field] {
                Value::String(id) => id.clone(),
                other => other.to_string(),
            };
            records.insert(id, record.clone());
        }
        next = page.get("next").and_then(Value::as_str).map(str::to_string);
    }
    records
}

/// A copy by export, then the feed after each round of inserts, updates and deletes, equals
/// the set as listed; a consumer that reads the feed from its start gets the same.
async fn a_copy_follows_the_field_report_feed(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for n in 1..=20 {
        tag(&svc, &n.to_string(), "first").await;
    }
    let (mut copy, mut position) = export(&svc, &token, "/api/v1/fieldreport/tags/export").await;
    assert_eq!(copy.len(), 20);
    for round in 0..4u32 {
        for n in 0..6u32 {
            let id = ((round * 7 + n * 5) % 26 + 1).to_string();
            match (round + n) % 3 {
                0 => tag(&svc, &id, &format!("r{round}")).await,
                1 => {
                    svc.store().mirror_delete("tags", &id).await.unwrap();
                }
                _ => tag(&svc, &format!("{id}0"), "new").await,
            }
        }
        position = follow(&svc, &token, "/api/v1/fieldreport/tags/changes", Some(position), &mut copy).await;
        assert_eq!(copy, listed(&svc, &token, "/api/v1/fieldreport/tags", "Id").await, "round {round}");
    }
    let mut from_start = BTreeMap::new();
    follow(&svc, &token, "/api/v1/fieldreport/tags/changes", None, &mut from_start).await;
    assert_eq!(from_start, copy);
    // Nothing changed: the same position again.
    let page = svc.get_json(&token, &format!("/api/v1/fieldreport/tags/changes?since={position}")).await;
    assert_eq!((page["data"].as_array().unwrap().len(), page["next_cursor"].as_str().unwrap()), (0, position.as_str()));
    svc.stop().await;
}

/// A reconcile removes what the upstream no longer has many records a statement: each removal
/// has a position of its own, a copy that follows the feed loses exactly those records, and
/// the set's count follows. An id the mirror lacks, or one written after the upstream's ids
/// were read, is not removed.
async fn many_removals_at_once_are_followed(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for n in 1..=1_500 {
        tag(&svc, &n.to_string(), "first").await;
    }
    let (mut copy, position) = export(&svc, &token, "/api/v1/fieldreport/tags/export").await;
    let read_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    tag(&svc, "7", "written after the upstream's ids were read").await;
    let mut gone: Vec<String> = (1..=1_200).map(|n| n.to_string()).collect();
    gone.push("no-such-record".into());
    let mut removed = svc.store().mirror_remove_gone("tags", &gone, read_at).await.unwrap();
    removed.sort_by_key(|id| id.parse::<u32>().unwrap());
    let expected: Vec<String> = (1..=1_200).filter(|n| *n != 7).map(|n| n.to_string()).collect();
    assert_eq!(removed, expected);
    let (removals, distinct): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT change_seq) FROM mirror_removals WHERE mirror = 'fieldreport' AND entity = 'tags'",
    )
    .fetch_one(svc.store().pool())
    .await
    .unwrap();
    assert_eq!((removals, distinct), (1_199, 1_199), "each removal has a position of its own");
    let mut changes_read = 0;
    let mut since = position;
    loop {
        let page = svc.get_json(&token, &format!("/api/v1/fieldreport/tags/changes?since={since}&limit=1000")).await;
        let changes = page["data"].as_array().unwrap();
        if changes.is_empty() {
            break;
        }
        changes_read += changes.len();
        for change in changes {
            let id = change["id"].as_str().unwrap().to_string();
            match change["change"].as_str().unwrap() {
                "upsert" => copy.insert(id, change["record"].clone()),
                _ => copy.remove(&id),
            };
        }
        since = page["next_cursor"].as_str().unwrap().to_string();
    }
    assert_eq!(changes_read, 1_199 + 1, "1,199 removals and the write of 7");
    assert_eq!(copy.len(), 301);
    assert_eq!(copy, listed(&svc, &token, "/api/v1/fieldreport/tags", "Id").await);
    let counts = svc.store().mirror_counts().await.unwrap();
    assert_eq!(counts.iter().find(|(set, _)| set == "tags").map(|(_, n)| *n), Some(301), "{counts:?}");
    svc.stop().await;
}

/// The ERP mirror's feed and export, with the records shown as `show` shows them (a
/// webhook's secret masked).
async fn a_copy_follows_the_erp_feed(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let record = |id: &str, version: i64, url: &str| ErpRecord {
        id: id.into(),
        version,
        last_modified: version,
        document: json!({"id": id, "version": version.to_string(), "url": url}),
        pending_attributes: Vec::new(),
    };
    let secret_url = "https://example.com/hook?secret=s3cr3t-value";
    svc.store()
        .erp_upsert("webhook", &[record("1", 1, secret_url), record("2", 1, "https://a.example")])
        .await
        .unwrap();
    let (mut copy, position) = export(&svc, &token, "/api/v1/erp/export/webhook").await;
    assert!(!serde_json::to_string(&copy).unwrap().contains("s3cr3t-value"), "{copy:?}");
    svc.store()
        .erp_upsert("webhook", &[record("3", 1, secret_url), record("1", 2, "https://b.example")])
        .await
        .unwrap();
    assert!(svc.store().erp_delete("webhook", "2").await.unwrap());
    follow(&svc, &token, "/api/v1/erp/changes/webhook", Some(position), &mut copy).await;
    assert!(!serde_json::to_string(&copy).unwrap().contains("s3cr3t-value"), "{copy:?}");
    assert_eq!(copy, listed(&svc, &token, "/api/v1/erp/show/webhook", "id").await);
    assert_eq!(copy.keys().collect::<Vec<_>>(), ["1", "3"]);
    let unknown = svc.get(&token, "/api/v1/erp/changes/noSuchModel").await;
    error_body(unknown, 404).await;
    svc.stop().await;
}

/// A position that is not one is 422; one the feed cannot follow (not answered by this
/// database: newer than its newest change) is 410 `cursor_expired`; from the start is always
/// followed.
async fn positions_the_feed_cannot_follow_are_refused(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    tag(&svc, "1", "a").await;
    for bad in ["abc", "-1", "1234567890123456789", "1.5"] {
        let answer = svc.get(&token, &format!("/api/v1/fieldreport/tags/changes?since={bad}")).await;
        let body = error_body(answer, 422).await;
        assert!(body["errors"]["since"].is_array(), "{bad}: {body}");
    }
    let answer = svc.get(&token, "/api/v1/fieldreport/tags/changes?since=999999").await;
    let body = error_body(answer, 410).await;
    assert_eq!(body["error_code"], "cursor_expired", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("copy the set again") && message.contains("after the last"), "{body}");
    let answer = svc.get(&token, "/api/v1/fieldreport/tags/changes?limit=0").await;
    error_body(answer, 422).await;
    let page = svc.get_json(&token, "/api/v1/fieldreport/tags/changes?since=0").await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    svc.stop().await;
}

/// Records created and deleted at once in one set (the API's creates and deletes from many
/// clients) all succeed: each write numbers its change in the set's feed and counts the set's
/// records, and no two of them wait for each other.
async fn writes_at_once_in_one_set_all_succeed(db: Db) {
    let (svc, _token) = TestService::with_user(db, &[]).await;
    let store = svc.store();
    let writer = |k: u32| async move {
        for n in 0..40 {
            let id = format!("{k}{n:03}");
            let record = MirrorRecord { id: id.clone(), version: 1, document: json!({"Id": id, "Version": 1}) };
            store.mirror_insert("tags", &record, None).await.map_err(|e| format!("insert {id}: {e}"))?;
            store.mirror_delete("tags", &id).await.map_err(|e| format!("delete {id}: {e}"))?;
        }
        Ok::<_, String>(())
    };
    let outcomes = futures::future::join_all((1..=4).map(writer)).await;
    let failed: Vec<&String> = outcomes.iter().filter_map(|outcome| outcome.as_ref().err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    svc.stop().await;
}

/// A sync's page writes a record again just after a local delete removed it (the page waited
/// for the delete's lock on the record): the record is back in the mirror, and a copy that
/// follows the feed has it too. On Postgres the page's numbers were reserved before the
/// delete took its own, so the record comes numbered before its removal.
async fn a_record_written_again_after_its_removal_is_followed(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    tag(&svc, "1", "first").await;
    tag(&svc, "2", "first").await;
    let (mut copy, position) = export(&svc, &token, "/api/v1/fieldreport/tags/export").await;
    let store = svc.store().clone();
    let document = json!({"Id": "1", "Version": 2, "Name": "synced"});
    let page = vec![SyncedRecord {
        id: "1".into(),
        version: 2,
        external_id: None,
        document: serde_json::value::to_raw_value(&document).unwrap(),
    }];
    match db {
        Db::Postgres => {
            // The local delete's transaction (`Store::mirror_delete_tombstoned`): the record
            // locked, then removed; the page waits for it in between.
            let mut delete = store.pool().begin().await.unwrap();
            sqlx::query("SELECT 1 FROM fieldreport_records WHERE entity = 'tags' AND record_id = '1' FOR UPDATE")
                .execute(&mut *delete)
                .await
                .unwrap();
            let writer = store.clone();
            let sync = tokio::spawn(async move { writer.mirror_upsert_page("tags", page).await });
            let waiting = "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE 'INSERT INTO fieldreport_records AS stored%'";
            for _ in 0..200 {
                let n: i64 = sqlx::query_scalar(waiting).fetch_one(store.pool()).await.unwrap();
                if n > 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            sqlx::query("DELETE FROM fieldreport_records WHERE entity = 'tags' AND record_id = '1'")
                .execute(&mut *delete)
                .await
                .unwrap();
            delete.commit().await.unwrap();
            sync.await.unwrap().unwrap();
        }
        Db::Sqlite => {
            assert!(store.mirror_delete("tags", "1").await.unwrap());
            store.mirror_upsert_page("tags", page).await.unwrap();
        }
    }
    assert_eq!(store.mirror_get("tags", "1").await.unwrap().map(|record| record.document), Some(document));
    follow(&svc, &token, "/api/v1/fieldreport/tags/changes", Some(position), &mut copy).await;
    assert_eq!(copy, listed(&svc, &token, "/api/v1/fieldreport/tags", "Id").await);
    svc.stop().await;
}

crate::on_both_databases!(
    a_copy_follows_the_field_report_feed,
    a_copy_follows_the_erp_feed,
    positions_the_feed_cannot_follow_are_refused,
    many_removals_at_once_are_followed,
    writes_at_once_in_one_set_all_succeed,
    a_record_written_again_after_its_removal_is_followed
);
