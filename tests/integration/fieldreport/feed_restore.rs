//! A consumer's position across a restore (docs/operations.md, "Backups"): a database restored
//! from a backup numbers its changes again after the backup's, so a position answered before
//! the restore, followed on, would skip the restored database's changes and keep records it
//! lacks. Such a position is refused (410 `cursor_expired`) and the consumer copies again, here
//! with the restore on a new host (SQLite: no replaced database to carry numbers from; Postgres:
//! a dump restored into another database).

use crate::common::Api;
use std::collections::BTreeMap;

use integration_service::store::fieldreport::records::MirrorRecord;
use serde_json::{Value, json};

use crate::common::binary::{Binary, text};
use crate::common::{Db, TestService, error_body, fresh_database};

async fn tag(svc: &TestService, id: &str) {
    let record = MirrorRecord { id: id.into(), version: 1, document: json!({"Id": id, "Version": 1, "Name": id}) };
    svc.store().mirror_insert("tags", &record, None).await.unwrap();
}

/// Every tag as the feed answers it from the start, and the position reached.
async fn copied(svc: &TestService, token: &str) -> (BTreeMap<String, Value>, String) {
    let page = svc.get_json(token, "/api/v1/fieldreport/tags/changes?limit=1000").await;
    let copy = page["data"].as_array().unwrap().iter().map(|c| (c["id"].as_str().unwrap().into(), c["record"].clone()));
    (copy.collect(), page["next_cursor"].as_str().unwrap().to_string())
}

/// A database of its own holding the backup `svc`'s database is taken to: its URL, and what to
/// drop afterwards (Postgres: the database).
async fn restored_on_a_new_host(
    svc: &TestService,
    schema: Option<&str>,
    backup: &std::path::Path,
) -> (String, Option<String>) {
    match schema {
        None => {
            let (url, _) = fresh_database(Db::Sqlite).await;
            let restored = Binary::new(["restore", "--from", backup.to_str().unwrap()]).database(&url).output();
            assert!(restored.status.success(), "{}", text(&restored.stderr));
            (url, None)
        }
        Some(schema) => {
            let admin = std::env::var("TEST_POSTGRES_URL").unwrap();
            let dumped = std::process::Command::new("pg_dump")
                .args(["--format=custom", "--schema", schema, "--file", backup.to_str().unwrap(), &admin])
                .output()
                .unwrap();
            assert!(dumped.status.success(), "{}", text(&dumped.stderr));
            let _ = svc;
            let database = format!("r_{}", uuid::Uuid::new_v4().simple());
            let pool = sqlx::AnyPool::connect(&admin).await.unwrap();
            crate::common::execute(&pool, &format!("CREATE DATABASE {database}")).await;
            pool.close().await;
            let (base, _) = admin.rsplit_once('/').unwrap();
            let url = format!("{base}/{database}");
            let restored = std::process::Command::new("pg_restore")
                .args(["--no-owner", "--exit-on-error", "--single-transaction", "--dbname", &url])
                .arg(backup)
                .output()
                .unwrap();
            assert!(restored.status.success(), "{}", text(&restored.stderr));
            (format!("{url}?options=-c%20search_path%3D{schema}"), Some(database))
        }
    }
}

/// Backup, more writes, a consumer's copy and position, a restore of the backup on a new host,
/// writes there: the old position is refused, and a copy taken again follows the mirror.
async fn a_position_from_before_a_restore_is_refused(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let schema = (db == Db::Postgres).then(|| svc.database_url.rsplit_once("search_path%3D").unwrap().1.to_string());
    tag(&svc, "1").await;
    let backup = std::env::temp_dir().join(format!("integration-service-feed-{}.backup", uuid::Uuid::new_v4()));
    if schema.is_none() {
        let taken = svc.command(&["backup", "--to", backup.to_str().unwrap()]).output();
        assert!(taken.status.success(), "{}", text(&taken.stderr));
    }
    let (url, database) = restored_on_a_new_host(&svc, schema.as_deref(), &backup).await;
    // Written after the backup: the consumer's copy has them, the restored database never will.
    tag(&svc, "2").await;
    tag(&svc, "3").await;
    let (mut copy, position) = copied(&svc, &token).await;
    assert_eq!(copy.len(), 3);
    svc.stop().await;

    let restored = TestService::start_on(url, None, &[]).await;
    for id in ["4", "5", "6"] {
        tag(&restored, id).await;
    }
    let answer = restored.get(&token, &format!("/api/v1/fieldreport/tags/changes?since={position}&limit=1000")).await;
    if answer.status() == 200 {
        let page: Value = answer.json().await.unwrap();
        for change in page["data"].as_array().unwrap() {
            let id = change["id"].as_str().unwrap().to_string();
            match change["change"].as_str().unwrap() {
                "upsert" => copy.insert(id, change["record"].clone()),
                _ => copy.remove(&id),
            };
        }
        let mirror = copied(&restored, &token).await.0;
        assert_eq!(copy.keys().collect::<Vec<_>>(), mirror.keys().collect::<Vec<_>>(), "followed across the restore");
        panic!("a position from before the restore was followed");
    }
    let body = error_body(answer, 410).await;
    assert_eq!(body["error_code"], "cursor_expired", "{body}");
    assert!(body["message"].as_str().unwrap().contains("copy the set again"), "{body}");
    // Copied again, the set is followed on.
    let (mut copy, position) = copied(&restored, &token).await;
    tag(&restored, "7").await;
    let page = restored.get_json(&token, &format!("/api/v1/fieldreport/tags/changes?since={position}")).await;
    for change in page["data"].as_array().unwrap() {
        copy.insert(change["id"].as_str().unwrap().to_string(), change["record"].clone());
    }
    assert_eq!(copy, copied(&restored, &token).await.0);
    restored.stop().await;
    let _ = std::fs::remove_file(&backup);
    if let Some(database) = database {
        let pool = sqlx::AnyPool::connect(&std::env::var("TEST_POSTGRES_URL").unwrap()).await.unwrap();
        crate::common::execute(&pool, &format!("DROP DATABASE {database} WITH (FORCE)")).await;
        pool.close().await;
    }
}

crate::on_both_databases!(a_position_from_before_a_restore_is_refused);
