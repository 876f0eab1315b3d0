use serde_json::json;
use sqlx::{AnyConnection, Connection, Executor};

use super::pushes::{MIRROR_CLAIM_PUSH, MIRROR_MARK_PUSHED, MIRROR_RELEASE_PUSH, MIRROR_REPLACE_PENDING};
use super::*;
use crate::store::{Dialect, TestQuery, plan_of};

/// The unflushed statements turn `synchronous_commit` off for their own transaction only:
/// a request connection runs other statements next (a webhook's, whose 202 promises a
/// flushed commit).
#[tokio::test]
async fn unflushed_mirror_writes_relax_their_own_commit_only() {
    let Ok(url) = std::env::var("TEST_POSTGRES_URL") else {
        eprintln!("skipped: TEST_POSTGRES_URL is not set");
        return;
    };
    sqlx::any::install_default_drivers();
    let mut connection = AnyConnection::connect(&url).await.unwrap();
    // A temporary table of this connection only, shadowing any of the same name.
    connection
        .execute(
            "CREATE TEMP TABLE fieldreport_records (entity TEXT, record_id TEXT, version BIGINT, \
             document TEXT, pending_push TEXT, created_at BIGINT, updated_at BIGINT, external_id TEXT, \
             push_claimed_until BIGINT)",
        )
        .await
        .unwrap();
    async fn setting(connection: &mut AnyConnection) -> String {
        sqlx::query_scalar("SELECT current_setting('synchronous_commit')").fetch_one(connection).await.unwrap()
    }
    let insert = |statement| {
        sqlx::query(statement)
            .bind("tags")
            .bind("1")
            .bind(1_i64)
            .bind(r#"{"Id":"1"}"#)
            .bind(None::<String>)
            .bind(5_i64)
            .bind(None::<String>)
    };

    let mut transaction = connection.begin().await.unwrap();
    insert(MIRROR_INSERT).execute(&mut *transaction).await.unwrap();
    assert_eq!(setting(&mut transaction).await, "on");
    insert(MIRROR_INSERT_UNFLUSHED).execute(&mut *transaction).await.unwrap();
    assert_eq!(setting(&mut transaction).await, "off", "the statement sets it for its transaction");
    transaction.rollback().await.unwrap();
    assert_eq!(setting(&mut connection).await, "on", "and no longer");

    insert(MIRROR_INSERT_UNFLUSHED).execute(&mut connection).await.unwrap();
    assert_eq!(setting(&mut connection).await, "on");
    let replaced = sqlx::query(MIRROR_REPLACE_UNFLUSHED)
        .bind(2_i64)
        .bind(r#"{"Id":"1","Version":2}"#)
        .bind(6_i64)
        .bind(None::<String>)
        .bind("tags")
        .bind("1")
        .bind(1_i64)
        .bind(None::<String>)
        .execute(&mut connection)
        .await
        .unwrap();
    assert_eq!(replaced.rows_affected(), 1);
    assert_eq!(setting(&mut connection).await, "on");
    let stored: Vec<(i64, String)> =
        sqlx::query_as("SELECT version, document FROM fieldreport_records").fetch_all(&mut connection).await.unwrap();
    assert_eq!(stored, [(2, r#"{"Id":"1","Version":2}"#.to_string())]);
}

/// A local write while a pending update is pushed (an ERP webhook's) clears its claim: the
/// push is then not marked over it, and the record stays pending as written.
#[tokio::test]
async fn a_local_write_during_a_push_keeps_the_record_pending() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        let record =
            MirrorRecord { id: "7".into(), version: 1, document: json!({"Id": "7", "Version": 1, "Name": "a"}) };
        store.mirror_insert("tags", &record, Some("update")).await.unwrap();
        let claim = store.mirror_claim_push("tags", "7", "update").await.unwrap().unwrap();
        let newer = MirrorRecord { document: json!({"Id": "7", "Version": 1, "Name": "b"}), ..record.clone() };
        assert!(store.mirror_replace("tags", &newer, 1, Some("update")).await.unwrap());
        let sent = MirrorRecord { version: 2, document: json!({"Id": "7", "Version": 2, "Name": "a"}), ..record };
        assert!(!store.mirror_mark_pushed("tags", "7", &sent, Some(claim.until)).await.unwrap());
        let pending = store.mirror_pending("tags", "update").await.unwrap();
        assert_eq!(pending[0].document["Name"], "b", "the later write waits for the next push");
        // With no write in between, the mark holds.
        let claim = store.mirror_claim_push("tags", "7", "update").await.unwrap().unwrap();
        assert!(store.mirror_mark_pushed("tags", "7", &sent, Some(claim.until)).await.unwrap());
        assert!(store.mirror_pending("tags", "update").await.unwrap().is_empty());
    }
}

/// Each local write records the fields it changed, added to those of the writes before it
/// until the push, which clears them; a pending create, and an update made pending before the
/// fields were recorded (none stored), are sent whole.
#[tokio::test]
async fn local_writes_record_the_fields_they_changed_until_the_push() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        let document = json!({"Id": "7", "Version": 1, "Name": "a", "Color": "red"});
        let record = MirrorRecord { id: "7".into(), version: 1, document: document.clone() };
        store.mirror_insert("tags", &record, None).await.unwrap();
        let write = |fields: serde_json::Value| {
            let mut document = document.clone();
            document.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
            MirrorRecord { document, ..record.clone() }
        };
        let claimed_fields = async |kind| {
            let claim = store.mirror_claim_push("tags", "7", kind).await.unwrap().unwrap();
            store.mirror_release_push("tags", "7").await.unwrap();
            claim.fields
        };
        assert!(
            store
                .mirror_replace("tags", &write(json!({"Name": "b", "Color": "red"})), 1, Some("update"))
                .await
                .unwrap()
        );
        assert_eq!(claimed_fields("update").await, Some(vec!["Name".to_string()]), "Color was written as it was");
        let later = write(json!({"Name": "b", "Description": "d"}));
        assert!(store.mirror_replace("tags", &later, 1, Some("update")).await.unwrap());
        let claim = store.mirror_claim_push("tags", "7", "update").await.unwrap().unwrap();
        assert_eq!(claim.fields, Some(vec!["Name".to_string(), "Description".to_string()]));
        assert_eq!(claim.record, later, "the claim carries the record as it is");
        assert!(store.mirror_mark_pushed("tags", "7", &later, Some(claim.until)).await.unwrap());
        let mut blue = later.clone();
        blue.document["Color"] = json!("blue");
        assert!(store.mirror_replace("tags", &blue, 1, Some("update")).await.unwrap());
        assert_eq!(claimed_fields("update").await, Some(vec!["Color".to_string()]), "a push starts the list anew");

        sqlx::query("UPDATE fieldreport_records SET pending_fields = NULL").execute(store.pool()).await.unwrap();
        assert!(store.mirror_replace("tags", &write(json!({"Name": "c"})), 1, Some("update")).await.unwrap());
        assert_eq!(claimed_fields("update").await, None, "pending from before the list: whole");

        let created = MirrorRecord { id: "8".into(), ..record.clone() };
        store.mirror_insert("tags", &created, Some("create")).await.unwrap();
        let changed = MirrorRecord { document: json!({"Id": "8", "Version": 1, "Name": "z"}), ..created };
        assert!(store.mirror_replace("tags", &changed, 1, Some("update")).await.unwrap());
        let claim = store.mirror_claim_push("tags", "8", "create").await.unwrap().unwrap();
        assert_eq!((claim.fields, claim.record.document["Name"].as_str()), (None, Some("z")), "a create is sent whole");
        test.finish().await;
    }
}

use crate::store::TestValues as Values;

/// Each statement on one record, with a function that binds values to its parameters.
fn statements_by_record() -> Vec<(&'static str, Values)> {
    vec![
        (MIRROR_ROW, |query| query.bind("companies").bind("12")),
        (MIRROR_DELETE, |query| query.bind("companies").bind("12")),
        (MIRROR_RELEASE_PUSH, |query| query.bind("companies").bind("12")),
        (MIRROR_CLAIM_PUSH, |query| query.bind(1_i64).bind("companies").bind("12").bind("create").bind(1_i64)),
        (MIRROR_REPLACE, replace_values),
        (MIRROR_REPLACE_UNFLUSHED, replace_values),
        (MIRROR_REPLACE_PENDING, |query| {
            query.bind(2_i64).bind("{}").bind(1_i64).bind("update").bind("[]").bind("e").bind("companies").bind("12")
        }),
        (MIRROR_MARK_PUSHED, |query| {
            query.bind("40").bind(2_i64).bind("{}").bind(1_i64).bind("companies").bind("12").bind("e").bind(1_i64)
        }),
    ]
}

fn replace_values(query: TestQuery) -> TestQuery {
    query.bind(2_i64).bind("{}").bind(1_i64).bind("update").bind("companies").bind("12").bind(1_i64).bind("e")
}

#[tokio::test]
async fn statements_on_one_record_find_it_through_an_index_by_its_id() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        for (statement, values) in statements_by_record() {
            if statement == MIRROR_REPLACE_UNFLUSHED && store.dialect() == Dialect::Sqlite {
                continue; // Postgres's only (`set_config`)
            }
            let plan = plan_by_record(store, statement, values).await;
            match store.dialect() {
                // Only the length and the id tell the record apart within its set: without
                // both in the index's condition, the record is looked for through its set.
                Dialect::Postgres => assert!(
                    plan.contains("fieldreport_records_key")
                        && plan.lines().any(|line| line.contains("Index Cond")
                            && line.contains("length(record_id)")
                            && line.contains("(record_id =")),
                    "{statement}\n{plan}"
                ),
                Dialect::Sqlite => assert_finds_one_record(&plan, statement),
            }
        }
        if store.dialect() == Dialect::Sqlite {
            for (statement, values) in crate::store::engine::sqlite_sync_writes::tests::statements_by_record() {
                assert_finds_one_record(&plan_by_record(store, statement, values).await, statement);
            }
        }
        test.finish().await;
    }
}

/// SQLite: `plan` looks the record up in the record index by its set, its id's length and
/// its id.
fn assert_finds_one_record(plan: &str, statement: &str) {
    assert!(
        plan.contains("USING INDEX fieldreport_records_key (entity=? AND <expr>=? AND record_id=?)"),
        "{statement}\n{plan}"
    );
}

/// The plan of `statement` with `values`; on Postgres with sequential scans ruled out (in a
/// transaction rolled back), so that the plan shows the index condition the statement gives.
pub(in crate::store) async fn plan_by_record(store: &Store, statement: &str, values: Values) -> String {
    match store.dialect() {
        Dialect::Sqlite => plan_of(store.dialect(), store.pool(), statement, values).await,
        Dialect::Postgres => {
            let mut tx = store.pool().begin().await.unwrap();
            tx.execute("SET LOCAL enable_seqscan = off").await.unwrap();
            // The claim of a push may also go through the pending records' index (a small
            // one); without it, the plan shows what the record's index is given.
            tx.execute("DROP INDEX fieldreport_records_pending_push").await.unwrap();
            plan_of(store.dialect(), &mut *tx, statement, values).await
        }
    }
}

#[tokio::test]
async fn the_external_id_lookup_uses_its_index_and_finds_the_first_record() {
    for test in crate::store::testing::stores_on_both_databases().await {
        external_id_lookup_on(&test.store).await;
        test.finish().await;
    }
}

async fn external_id_lookup_on(store: &Store) {
    if store.dialect() == Dialect::Sqlite {
        let plan =
            plan_of(store.dialect(), store.pool(), MIRROR_BY_EXTERNAL_ID, |query| query.bind("companies").bind("9"))
                .await;
        assert!(plan.contains("fieldreport_records_external_id"), "{plan}");
    }
    for (id, external) in [("12", json!(9)), ("3", json!("9")), ("4", json!("10")), ("5", json!({"id": "9"}))] {
        let document = json!({"Id": id, "Version": 1, "ExternalId": external});
        store.mirror_insert("companies", &MirrorRecord { id: id.into(), version: 1, document }, None).await.unwrap();
    }
    let found = |value: &'static str| async move {
        store.mirror_by_external_id("companies", value).await.unwrap().map(|record| record.id)
    };
    assert_eq!(found("9").await.as_deref(), Some("3"), "Id order: 3 before 12, a number and a string alike");
    assert!(store.mirror_by_external_id("contacts", "9").await.unwrap().is_none());

    // The service's replace, push and sync write the column with the document.
    let moved = MirrorRecord { id: "4".into(), version: 2, document: json!({"Id": "4", "ExternalId": "11"}) };
    assert!(store.mirror_replace("companies", &moved, 1, None).await.unwrap());
    let pushed = MirrorRecord { id: "40".into(), version: 3, document: json!({"Id": "40", "ExternalId": "12"}) };
    assert!(store.mirror_mark_pushed("companies", "4", &pushed, None).await.unwrap());
    let synced = SyncedRecord {
        id: "6".into(),
        version: 1,
        external_id: Some("13".into()),
        document: RawValue::from_string(r#"{"Id":"6","ExternalId":"13"}"#.into()).unwrap(),
    };
    store.mirror_upsert_page("companies", vec![synced]).await.unwrap();
    assert_eq!((found("10").await, found("11").await), (None, None));
    assert_eq!((found("12").await.as_deref(), found("13").await.as_deref()), (Some("40"), Some("6")));

    // Another writer's statements have the column filled in from the document. On
    // Postgres the service's connections say that they write it themselves: this one
    // stops saying so for its transaction.
    let mut tx = store.pool().begin().await.unwrap();
    if store.dialect() == Dialect::Postgres {
        tx.execute("SET LOCAL integration_service.writes_external_id = 'off'").await.unwrap();
    }
    tx.execute(
        r#"INSERT INTO fieldreport_records (entity, record_id, version, document, created_at, updated_at)
           VALUES ('companies', '77', 1, '{"Id":"77","ExternalId":"erp-77"}', 0, 0),
                  ('companies', '78', 1, '{"Id":"78","ExternalId":78}', 0, 0),
                  ('companies', '79', 1, '{"Id":"79"}', 0, 0)"#,
    )
    .await
    .unwrap();
    tx.execute(r#"UPDATE fieldreport_records SET document = '{"Id":"6","ExternalId":"erp-6"}' WHERE record_id = '6'"#)
        .await
        .unwrap();
    tx.execute(r#"UPDATE fieldreport_records SET document = '{"Id":"3"}' WHERE record_id = '3'"#).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(found("erp-77").await.as_deref(), Some("77"));
    assert_eq!(found("78").await.as_deref(), Some("78"));
    assert_eq!((found("13").await, found("erp-6").await.as_deref()), (None, Some("6")));
    assert_eq!(found("9").await.as_deref(), Some("12"), "3 has no ExternalId any more");
}
