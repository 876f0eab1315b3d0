use super::*;
use crate::store::engine::sync_page::SyncedRecord;
use crate::store::feed::Mirror;

/// Tombstones for `ids` of set `entity`, written as a local delete leaves them.
async fn tombstones(store: &Store, entity: &str, ids: &[String]) {
    let mut tx = store.pool().begin().await.unwrap();
    for id in ids {
        sqlx::query(INSERT_TOMBSTONE).bind(entity).bind(id).bind(now_ms()).execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

/// Postgres: a counter of the statements that delete from `fieldreport_records`, whatever
/// they remove (a statement trigger of the test's own schema).
async fn count_delete_statements(store: &Store) {
    for statement in [
        "CREATE TABLE delete_statements (n BIGINT NOT NULL)",
        "INSERT INTO delete_statements (n) VALUES (0)",
        "CREATE FUNCTION count_delete_statement() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN UPDATE delete_statements SET n = n + 1; RETURN NULL; END $$",
        "CREATE TRIGGER zz_count_delete_statements AFTER DELETE ON fieldreport_records \
         FOR EACH STATEMENT EXECUTE FUNCTION count_delete_statement()",
    ] {
        sqlx::query(statement).execute(store.pool()).await.unwrap();
    }
}

/// A sync's purge of many records that have a tombstone (stored again while they were deleted)
/// removes exactly those, each with its removal in the feed, a thousand a statement: one
/// statement a record updated the set's `mirror_feed` and count rows once a record, and on
/// Postgres a row updated again in one transaction costs more with every version it left, so
/// the purge cost the square of the tombstones (bench/HISTORY.md, 2026-11-30: 50,000 took 62 s).
#[tokio::test]
async fn many_tombstoned_records_are_purged_a_thousand_a_statement() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        let stored: Vec<String> = (1..=2_500).map(|n| n.to_string()).collect();
        let page: Vec<_> = stored.iter().map(|id| SyncedRecord::named(id, "stored again")).collect();
        store.mirror_upsert_page("tags", page).await.unwrap();
        // Record 7 has no tombstone; 9001 to 9100 have one and are not stored.
        let mut deleted: Vec<String> = stored.iter().filter(|id| *id != "7").cloned().collect();
        deleted.extend((9_001..=9_100).map(|n| n.to_string()));
        tombstones(store, "tags", &deleted).await;
        let before = store.feed_position(Mirror::FieldReport, "tags").await.unwrap().last_seq;
        if dialect == Dialect::Postgres {
            count_delete_statements(store).await;
        }

        let mut purged = store.mirror_purge_tombstoned("tags").await.unwrap();

        purged.sort_by_key(|id| id.parse::<u32>().unwrap());
        let expected: Vec<String> = stored.iter().filter(|id| *id != "7").cloned().collect();
        assert_eq!(purged, expected, "{dialect:?}");
        assert!(store.mirror_get("tags", "7").await.unwrap().is_some(), "{dialect:?}");
        assert!(store.mirror_get("tags", "8").await.unwrap().is_none(), "{dialect:?}");
        let changes = store.feed_changes(Mirror::FieldReport, "tags", before, 1_000).await.unwrap();
        assert!(changes.iter().all(|change| change.document.is_none()), "{dialect:?}: removals only");
        let mut removals = changes.len();
        let mut since = changes.last().map_or(before, |change| change.seq);
        loop {
            let page = store.feed_changes(Mirror::FieldReport, "tags", since, 1_000).await.unwrap();
            let Some(last) = page.last() else { break };
            since = last.seq;
            removals += page.len();
        }
        assert_eq!(removals, 2_499, "{dialect:?}: one removal a record purged");
        if dialect == Dialect::Postgres {
            let statements: i64 =
                sqlx::query_scalar("SELECT n FROM delete_statements").fetch_one(store.pool()).await.unwrap();
            assert!(statements <= 3, "{statements} statements deleted 2,499 records of 2,599 tombstones");
        }
    })
    .await;
}
