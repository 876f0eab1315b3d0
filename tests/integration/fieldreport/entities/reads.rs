//! What a read answers: a record changed anywhere (by another instance, or another connection) is
//! answered changed at once, and a record read is accepted back by its update route.

use crate::common::Api;
use crate::common::contract::Checked;
use crate::common::execute;
use crate::common::{Db, TestService, error_body};
use serde_json::{Value, json};

use super::*;

/// Postgres: each instance keeps records and pages it read in memory, and forgets them when
/// any instance (or anyone with SQL) changes the mirror.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_changed_anywhere_are_answered_changed_on_every_instance() {
    let Some((first, second, sql)) = crate::common::two_instances_on_postgres().await else { return };
    let on_first = api(&first).await;
    let on_second = Caller { svc: &second, token: on_first.token.clone() };
    let set_name = |id: String, name: String| {
        let sql = sql.clone();
        async move {
            sqlx::query(
                "UPDATE fieldreport_records SET document = jsonb_set(document::jsonb, '{Name}', to_jsonb($1::text))::text \
                 WHERE entity = 'companies' AND record_id = $2",
            )
            .bind(name)
            .bind(id)
            .execute(&sql)
            .await
            .unwrap();
        }
    };
    let created = on_first.create("/api/v1/fieldreport/companies", json!({"Id": "a", "Version": 1})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/fieldreport/companies/{id}");

    // Without the notification (its trigger off), a change by SQL is not seen by an instance
    // that read the record while listening: it answers from memory.
    execute(&sql, "ALTER TABLE fieldreport_records DISABLE TRIGGER fieldreport_records_notify_updated").await;
    let mut cached = false;
    for round in 0..50 {
        on_second.json(reqwest::Method::GET, &path, None, 200).await;
        let name = format!("unseen {round}");
        set_name(id.clone(), name.clone()).await;
        if on_second.json(reqwest::Method::GET, &path, None, 200).await["Name"] != name.as_str() {
            cached = true;
            break;
        }
        // The second instance was not listening yet, so it cached nothing.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(cached, "the second instance caches records");
    assert!(lookups(&second, "hit").await >= 1.0, "the cache's hits are counted");
    execute(&sql, "ALTER TABLE fieldreport_records ENABLE TRIGGER fieldreport_records_notify_updated").await;

    // With it: a change by SQL, then a write through the first instance.
    set_name(id.clone(), "by hand".into()).await;
    answered_soon(&on_second, &path, |record| record["Name"] == "by hand").await;
    on_first.json(reqwest::Method::PATCH, &path, Some(json!({"Name": "on the first"})), 200).await;
    answered_soon(&on_second, &path, |record| record["Name"] == "on the first").await;

    // Pages: a page read on the second instance, then 20 records inserted by one statement
    // (a notification for the whole set), then every record changed by one statement.
    let list = "/api/v1/fieldreport/companies?per_page=100";
    assert_eq!(on_second.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 1);
    assert_eq!(on_second.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 1);
    sqlx::query(
        "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
         SELECT 'companies', 'bulk-' || n, 1, json_build_object('Id', 'bulk-' || n, 'Version', 1)::text, 0, 0 \
         FROM generate_series(1, 20) AS n",
    )
    .execute(&sql)
    .await
    .unwrap();
    answered_soon(&on_second, list, |page| page["meta"]["total"] == 21 && page["data"].as_array().unwrap().len() == 21)
        .await;
    on_second.json(reqwest::Method::GET, &path, None, 200).await;
    sqlx::query(
        "UPDATE fieldreport_records SET document = jsonb_set(document::jsonb, '{Name}', to_jsonb('all'::text))::text \
         WHERE entity = 'companies'",
    )
    .execute(&sql)
    .await
    .unwrap();
    answered_soon(&on_second, &path, |record| record["Name"] == "all").await;
    answered_soon(&on_second, list, |page| page["data"][20]["Name"] == "all").await;

    // An instance's own write is answered at once by that instance (each instance has an upstream
    // simulator of its own: the record is the first's).
    for n in 0..5 {
        let name = format!("own write {n}");
        on_first.json(reqwest::Method::GET, &path, None, 200).await;
        on_first.json(reqwest::Method::PATCH, &path, Some(json!({"Name": name})), 200).await;
        assert_eq!(on_first.json(reqwest::Method::GET, &path, None, 200).await["Name"], name.as_str());
    }
    let deleted = on_first.send(reqwest::Method::DELETE, &path, None).await;
    assert_eq!(deleted.status(), 204);
    error_body(on_first.send(reqwest::Method::GET, &path, None).await, 404).await;
    assert_eq!(on_first.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 20);
    sql.close().await;
    second.stop().await;
    first.stop().await;
}

/// SQLite: pages read are kept in memory too, and forgotten as soon as anyone commits to the
/// database file (another process, a statement run by hand): the very next read answers the
/// change, with no notification to wait for. (Single records are read in place.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_changed_by_another_connection_are_answered_changed_at_once_on_sqlite() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let api = api(&svc).await;
    sqlx::any::install_default_drivers();
    let sql = sqlx::AnyPool::connect(&svc.database_url).await.expect("a connection of another's to the file");
    let created = api.create("/api/v1/fieldreport/companies", json!({"Id": "a", "Version": 1})).await;
    let id = created["data"]["Id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/fieldreport/companies/{id}");
    let list = "/api/v1/fieldreport/companies?per_page=100";
    let hits_before = lookups(&svc, "hit").await;
    for round in 0..3 {
        // Read twice: the second read is answered from memory.
        api.json(reqwest::Method::GET, &path, None, 200).await;
        api.json(reqwest::Method::GET, list, None, 200).await;
        api.json(reqwest::Method::GET, &path, None, 200).await;
        api.json(reqwest::Method::GET, list, None, 200).await;
        let name = format!("by hand {round}");
        sqlx::query(
            "UPDATE fieldreport_records SET document = json_set(document, '$.Name', $1) \
             WHERE entity = 'companies' AND record_id = $2",
        )
        .bind(name.clone())
        .bind(id.clone())
        .execute(&sql)
        .await
        .unwrap();
        assert_eq!(api.json(reqwest::Method::GET, &path, None, 200).await["Name"], name.as_str());
        assert_eq!(api.json(reqwest::Method::GET, list, None, 200).await["data"][0]["Name"], name.as_str());
    }
    assert!(lookups(&svc, "hit").await >= hits_before + 3.0, "the second page read of each round was a hit");
    sqlx::query(
        "INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at) \
         VALUES ('companies', 'by-hand', 1, '{\"Id\":\"by-hand\",\"Version\":1}', 0, 0)",
    )
    .execute(&sql)
    .await
    .unwrap();
    assert_eq!(api.json(reqwest::Method::GET, list, None, 200).await["meta"]["total"], 2);
    sql.close().await;
    svc.stop().await;
}

/// Asks for `path` until `answered` holds of its JSON (a notification reaches other instances
/// once the changing transaction commits), at most about five seconds.
async fn answered_soon(api: &Caller<'_>, path: &str, answered: impl Fn(&Value) -> bool) {
    let mut last = Value::Null;
    for _ in 0..50 {
        last = api.json(reqwest::Method::GET, path, None, 200).await;
        if answered(&last) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{path} still answers {last}");
}

/// The record cache's lookups with this result (`hit`, `miss`), from the metrics.
async fn lookups(svc: &TestService, result: &str) -> f64 {
    let text = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    let series = format!("integration_service_fieldreport_record_cache_lookups_total{{result=\"{result}\"}} ");
    let line = text.lines().find_map(|line| line.strip_prefix(series.as_str()));
    line.unwrap_or_else(|| panic!("no {series} in {text}")).parse().unwrap()
}

/// A record read from the API goes back to its update route as it was read (its `Id` a string,
/// its `Version` an integer, as the document types both) and is accepted: for every set, a
/// record the simulator holds with its `Version` written as OData v3 writes an `Edm.Int64`
/// (`"1"`), and one seeded with what its set expands, synced, listed and PUT back unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_read_is_accepted_back_by_its_update_route() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let api = api(&svc).await;
    for (route, set) in ENTITIES {
        let v3 = json!({"Name": format!("{set} v3"), "Version": "1"});
        let created = svc.odata(reqwest::Method::POST, set).json(&v3).send().await.unwrap();
        assert!(created.status().is_success(), "{set}: {}", created.status());
        svc.seed(set, 1).await;
        api.json(reqwest::Method::GET, &format!("/api/v1/fieldreport/sync/{route}"), None, 200).await;
        let base = format!("/api/v1/fieldreport/{route}");
        let list = api.json(reqwest::Method::GET, &base, None, 200).await;
        let records = list["data"].as_array().unwrap();
        assert_eq!(records.len(), 2, "{route}: {list}");
        for record in records {
            let id = record["Id"].as_str().unwrap_or_else(|| panic!("{route}: {record}")).to_string();
            let version = record["Version"].as_i64().unwrap_or_else(|| panic!("{route}: {record}"));
            let written = api.json(reqwest::Method::PUT, &format!("{base}/{id}"), Some(record.clone()), 200).await;
            assert_eq!(written["data"]["Id"], id.as_str(), "{route}");
            assert_eq!(written["data"]["Version"], version + 1, "{route}");
            assert_eq!(written["data"]["Name"], record["Name"], "{route}");
        }
    }
}
