use serde_json::json;
use sqlx::Executor;

use super::*;
use crate::store::erp::ErpRecord;
use crate::store::fieldreport::records::MirrorRecord;
use crate::store::{Dialect, TestQuery, TestValues, plan_of};

/// Ids of mixed lengths, inserted out of order: pages after a key come in key order (numeric
/// ids in numeric order), each starting right after the last id of the one before.
#[tokio::test]
async fn pages_after_a_key_walk_the_set_in_key_order() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        let ids = ["100", "9", "a", "10", "11", "bb", "2", "1000", "99"];
        for id in ids {
            let document = json!({"Id": id, "Version": 1});
            store.mirror_insert("tags", &MirrorRecord { id: id.into(), version: 1, document }, None).await.unwrap();
            let record = ErpRecord {
                id: id.into(),
                version: 1,
                last_modified: 0,
                document: json!({"id": id}),
                pending_attributes: Vec::new(),
            };
            store.erp_upsert("customer", &[record]).await.unwrap();
        }
        store
            .mirror_insert("users", &MirrorRecord { id: "5".into(), version: 1, document: json!({}) }, None)
            .await
            .unwrap();
        let expected = ["2", "9", "a", "10", "11", "99", "bb", "100", "1000"];
        let (mut read, mut after) = (Vec::new(), None::<String>);
        loop {
            let page = store.mirror_after("tags", after.as_deref(), 2).await.unwrap();
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            read.extend(page.into_iter().map(|(id, document)| {
                let document: serde_json::Value = serde_json::from_str(document.get()).unwrap();
                assert_eq!(document["Id"], id.as_str());
                id
            }));
        }
        assert_eq!(read, expected, "{:?}", store.dialect());
        let (mut read, mut after) = (Vec::new(), None::<String>);
        loop {
            let page = store.erp_after("customer", after.as_deref(), 4).await.unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            read.extend(page.into_iter().map(|record| record.id));
        }
        assert_eq!(read, expected, "{:?}", store.dialect());
        assert!(store.mirror_after("tags", Some("1000"), 5).await.unwrap().is_empty());
        test.finish().await;
    }
}

/// Both ranges of a page walk the key index from their key, and nothing is sorted: the cost of
/// a page does not depend on its depth.
#[tokio::test]
async fn a_page_after_a_key_walks_the_key_index() {
    crate::store::testing::on_both_databases(async |store| {
        let same = |query: TestQuery| query.bind("tags").bind(3_i64).bind("500").bind(50_i64);
        let longer = |query: TestQuery| query.bind("tags").bind(3_i64).bind(50_i64);
        let statements: [(&str, TestValues, &str); 4] = [
            (MIRROR_SAME_LENGTH, same, "fieldreport_records_key"),
            (MIRROR_LONGER, longer, "fieldreport_records_key"),
            (ERP_SAME_LENGTH, same, "erp_records_key"),
            (ERP_LONGER, longer, "erp_records_key"),
        ];
        for (statement, values, index) in statements {
            let plan = match store.dialect() {
                Dialect::Sqlite => plan_of(store.dialect(), store.pool(), statement, values).await,
                Dialect::Postgres => {
                    let mut tx = store.pool().begin().await.unwrap();
                    tx.execute("SET LOCAL enable_seqscan = off").await.unwrap();
                    plan_of(store.dialect(), &mut *tx, statement, values).await
                }
            };
            assert!(plan.contains(index), "{statement}\n{plan}");
            let range = match (store.dialect(), statement.contains("= $2")) {
                (Dialect::Sqlite, true) => "=? AND <expr>=? AND record_id>?)",
                (Dialect::Sqlite, false) => "=? AND <expr>>?)",
                (Dialect::Postgres, true) => "(length(record_id) = '3'::bigint) AND (record_id > '500'::text)",
                (Dialect::Postgres, false) => "(length(record_id) > '3'::bigint)",
            };
            assert!(plan.contains(range), "{statement}\n{plan}");
            assert!(!plan.contains("TEMP B-TREE") && !plan.contains("Sort"), "{statement}\n{plan}");
        }
    })
    .await;
}
