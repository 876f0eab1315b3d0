use serde_json::json;
use serde_json::value::RawValue;

use super::*;
use crate::store::Dialect;
use crate::store::fieldreport::records::MirrorRecord;
use crate::store::fieldreport::records::tests::plan_by_record;

#[tokio::test]
async fn record_counts_follow_inserts_syncs_and_deletes() {
    for test in crate::store::testing::stores_on_both_databases().await {
        record_counts_follow_inserts_syncs_and_deletes_on(&test.store).await;
        test.finish().await;
    }
}

/// A synced record with the `ExternalId` `x-<id>`.
fn synced(id: usize, name: &str) -> SyncedRecord {
    SyncedRecord { external_id: Some(format!("x-{id}")), ..SyncedRecord::named(id, name) }
}

/// `size` records named "first" (more than a sync's batch, with ids of four lengths), and
/// record 3 again, named "last", at the end.
fn large_page() -> (usize, Vec<SyncedRecord>) {
    let size = 9_005;
    let mut page: Vec<SyncedRecord> = (0..size).map(|id| synced(id, "first")).collect();
    page.push(synced(3, "last"));
    (size, page)
}

/// Stores [`large_page`] and checks each record's outcome in order (record 3, repeated far
/// apart, unchanged by its last copy, which is stored; `stored`, if any, updated; the rest
/// inserted); the page's size.
async fn store_large_page(store: &Store, stored: Option<usize>) -> usize {
    let dialect = store.dialect();
    let (size, page) = large_page();
    let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
    assert_eq!(outcomes.len(), size + 1, "{dialect:?}");
    for (i, outcome) in outcomes.iter().enumerate() {
        let expected = match i {
            3 => Upserted::Unchanged,
            i if Some(i) == stored => Upserted::Updated,
            _ => Upserted::Inserted,
        };
        assert_eq!(*outcome, expected, "record {i} on {dialect:?}");
    }
    assert_eq!(store.mirror_get("tags", "3").await.unwrap().unwrap().document["Name"], "last", "{dialect:?}");
    size
}

/// A large page with a stored record among new ones is stored whole (by one `COPY` and an
/// upsert on Postgres): each record's outcome in order, a record repeated far apart stored
/// as its last copy, the count right.
#[tokio::test]
async fn a_large_page_is_stored_whole() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        store.mirror_upsert_page("tags", vec![synced(7, "before")]).await.unwrap();
        // Record 7 is stored already.
        let size = store_large_page(store, Some(7)).await;
        let last = (size - 1).to_string();
        assert_eq!(store.mirror_get("tags", &last).await.unwrap().unwrap().document["Name"], "first");
        assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64, "{dialect:?}");
    })
    .await;
}

/// A large page of new records goes in whole without looking up stored copies (by a
/// `COPY` on Postgres), each record once as its last copy, found by its id and
/// its `ExternalId`, counted; a page with a stored record among new ones is upserted. On
/// Postgres, a page of which another transaction wrote a record after the look (see
/// [`may_hold_any_of`]) stores nothing by the plain path, and is left to the upsert.
#[tokio::test]
async fn a_page_of_new_records_is_inserted_and_one_with_a_stored_record_upserted() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        let size = store_large_page(store, None).await;
        let stored = store.mirror_by_external_id("tags", "x-9").await.unwrap().expect("by its ExternalId");
        assert_eq!((stored.id.as_str(), &stored.document["Name"]), ("9", &json!("first")), "{dialect:?}");
        assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64, "{dialect:?}");

        let again = vec![synced(size + 1, "new"), synced(5, "changed")];
        assert_eq!(
            store.mirror_upsert_page("tags", again).await.unwrap(),
            [Upserted::Inserted, Upserted::Updated],
            "{dialect:?}"
        );
        assert_eq!(store.mirror_get("tags", "5").await.unwrap().unwrap().document["Name"], "changed");

        if dialect == Dialect::Postgres {
            let late = [synced(size + 2, "late"), synced(6, "late")];
            let inserted = store.insert_new_postgres("tags", &late.iter().collect::<Vec<_>>()).await;
            assert!(matches!(inserted, Err(StoreError::Duplicate(_))), "{inserted:?}");
            assert!(store.mirror_get("tags", &(size + 2).to_string()).await.unwrap().is_none());
            assert_eq!(store.mirror_get("tags", "6").await.unwrap().unwrap().document["Name"], "first");
        }
        assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, size as i64 + 1, "{dialect:?}");
        assert_eq!(store.mirror_upsert_page("tags", vec![]).await.unwrap(), []);
    })
    .await;
}

/// The look for stored ids answers no only when no record of the set lies within the
/// range of the ids of any one length (ordered by length first), and yes past
/// `ID_LENGTHS_LOOKED_AT` lengths.
#[tokio::test]
async fn the_look_for_stored_ids_covers_the_range_of_each_length() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        store.mirror_upsert_page("tags", vec![synced(50, "x"), synced(5000, "x")]).await.unwrap();
        let mut connection = store.pool().acquire().await.unwrap();
        for (entity, ids, expected) in [
            ("tags", &["1", "49"][..], false),
            ("tags", &["40", "60"], true),
            ("tags", &["51", "99", "100", "4999"], false),
            ("tags", &["4000", "6000"], true),
            ("tags", &["5", "500", "50000"], false),
            ("tags", &["50"], true),
            ("other", &["50", "5000"], false),
            ("tags", &["1", "22", "333", "4444", "55555"], true),
        ] {
            let records: Vec<SyncedRecord> = ids.iter().map(|id| SyncedRecord::named(id, "p")).collect();
            let records: Vec<&SyncedRecord> = records.iter().collect();
            let found = may_hold_any_of(dialect, &mut connection, entity, &records).await.unwrap();
            assert_eq!(found, expected, "{entity} {ids:?} on {dialect:?}");
        }
        let statement = mirror_any_in_range(dialect);
        let plan = plan_by_record(store, statement, |query| query.bind("tags").bind(2_i64).bind("10").bind("20")).await;
        match dialect {
            Dialect::Postgres => assert!(
                plan.lines().any(|line| line.contains("Index Cond")
                    && line.contains("length(record_id)")
                    && line.contains("record_id >=")),
                "{plan}"
            ),
            Dialect::Sqlite => {
                assert!(plan.contains("fieldreport_records_key") && plan.contains("record_id>?"), "{plan}")
            }
        }
        drop(connection);
    })
    .await;
}

/// A sync stores the upstream's text as it came, whatever it holds (whitespace between
/// tokens, escapes, backslashes, text past ASCII), and each record's id and `ExternalId`
/// as they were read: by the insert of new records and by the upsert alike.
#[tokio::test]
async fn synced_records_are_stored_as_sent() {
    let record = |id: &str, external_id: Option<&str>, text: String| SyncedRecord {
        id: id.into(),
        version: 3,
        external_id: external_id.map(Into::into),
        document: RawValue::from_string(text).expect("JSON"),
    };
    let page = |name: &str| {
        vec![
            record(r"a\b", None, format!("{{\"Id\":\"a\\\\b\",\t\"Name\":\"{name}\\t\\\"q\\\"\"}}")),
            record(
                "ü-€-😀",
                Some("x\ty\\z"),
                format!(
                    "{{\r\n  \"Id\": \"ü-€-😀\",\n  \"ExternalId\": \"x\\ty\\\\z\",\n  \"Name\": \"{name} \\u0000\"\n}}"
                ),
            ),
            record("3", None, format!("{{\"Id\":\"3\",\"Name\":\"{name}\",\"Nested\":[{{\"Id\":\"30\"}}]}}")),
        ]
    };
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        for (records, inserted) in [(Arc::new(page("first")), true), (Arc::new(page("second")), false)] {
            let outcomes = store.mirror_upsert_page("tags", records.clone()).await.unwrap();
            let expected = if inserted { Upserted::Inserted } else { Upserted::Updated };
            assert_eq!(outcomes, [expected; 3], "{dialect:?}");
            for record in records.iter() {
                let stored = store.mirror_document("tags", &record.id).await.unwrap().expect("stored");
                assert_eq!(stored.get(), record.document.get(), "{} on {dialect:?}", record.id);
                assert_eq!(store.mirror_get("tags", &record.id).await.unwrap().unwrap().version, 3);
            }
            let by_external_id = store.mirror_by_external_id("tags", "x\ty\\z").await.unwrap().expect("found");
            assert_eq!(by_external_id.id, "ü-€-😀", "{dialect:?}");
        }
        assert_eq!(store.mirror_page("tags", 0, 1).await.unwrap().1, 3, "{dialect:?}");
    })
    .await;
}

async fn record_counts_follow_inserts_syncs_and_deletes_on(store: &Store) {
    let record = |id: &str, name: &str| MirrorRecord {
        id: id.into(),
        version: 1,
        document: json!({"Id": id, "Version": 1, "Name": name}),
    };
    let total = |store: &Store, entity: &'static str| {
        let store = store.clone();
        async move { store.mirror_page(entity, 0, 1).await.unwrap().1 }
    };
    let dialect = store.dialect();
    assert_eq!(total(store, "tags").await, 0, "a set that never had a record");
    store.mirror_insert("tags", &record("1", "a"), None).await.unwrap();
    // A page of a sync: one record stored already (changed), two new, one of them twice
    // (its last copy counts).
    let synced = |id: &str, name: &str| {
        let MirrorRecord { id, version, document } = record(id, name);
        SyncedRecord { id, version, external_id: None, document: RawValue::from_string(document.to_string()).unwrap() }
    };
    let page = vec![synced("1", "b"), synced("2", "a"), synced("3", "a"), synced("3", "c")];
    let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
    assert_eq!(
        outcomes,
        [Upserted::Updated, Upserted::Inserted, Upserted::Unchanged, Upserted::Inserted],
        "{dialect:?}"
    );
    assert_eq!(store.mirror_get("tags", "3").await.unwrap().unwrap().document["Name"], "c", "{dialect:?}");
    assert_eq!(store.mirror_get("tags", "1").await.unwrap().unwrap().document["Name"], "b", "{dialect:?}");
    // The same page again: nothing changed; one record changed since.
    let page = vec![synced("1", "b"), synced("2", "x"), synced("3", "c")];
    let outcomes = store.mirror_upsert_page("tags", page).await.unwrap();
    assert_eq!(outcomes, [Upserted::Unchanged, Upserted::Updated, Upserted::Unchanged], "{dialect:?}");
    assert_eq!(store.mirror_get("tags", "2").await.unwrap().unwrap().document["Name"], "x", "{dialect:?}");
    store.mirror_insert("companies", &record("1", "a"), None).await.unwrap();
    assert_eq!(total(store, "tags").await, 3, "{dialect:?}");
    assert!(store.mirror_delete("tags", "2").await.unwrap());
    assert!(!store.mirror_delete("tags", "2").await.unwrap());
    assert_eq!(total(store, "tags").await, 2, "{dialect:?}");
    // The second page starts past the end: the count comes on its own.
    let (beyond, total_beyond) = store.mirror_page("tags", 5, 1).await.unwrap();
    assert!(beyond.is_empty());
    assert_eq!(total_beyond, 2);
    let mut counts = store.mirror_counts().await.unwrap();
    counts.sort();
    assert_eq!(counts, [("companies".to_string(), 1), ("tags".to_string(), 2)], "{dialect:?}");
    // A record cannot move to another set behind the counts' back.
    let moved = sqlx::query("UPDATE fieldreport_records SET entity = 'users' WHERE entity = 'tags'")
        .execute(store.pool())
        .await;
    assert!(moved.unwrap_err().to_string().contains("cannot move"), "{dialect:?}");
}

/// On Postgres the statistics a sync refreshes are sampled at 20 (migration 0032), which
/// makes the closing `ANALYZE` about five times cheaper; the refresh runs on both databases.
#[tokio::test]
async fn the_mirror_statistics_are_sampled_coarsely() {
    crate::store::testing::on_both_databases(async |store| {
        store.refresh_mirror_statistics().await.unwrap();
        if store.dialect() == Dialect::Postgres {
            let targets: Vec<(String, i32)> = sqlx::query_as(
                "SELECT attname::text AS attname, attstattarget::integer AS attstattarget FROM pg_attribute \
                 WHERE attrelid = 'fieldreport_records'::regclass \
                   AND attname IN ('entity', 'record_id', 'pending_push') ORDER BY attname",
            )
            .fetch_all(store.pool())
            .await
            .unwrap();
            let expected = [("entity", 20), ("pending_push", 20), ("record_id", 20)];
            assert_eq!(targets, expected.map(|(name, target)| (name.to_string(), target)));
        }
    })
    .await;
}
