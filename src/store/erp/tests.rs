use super::attributes::settle_push;
use super::inbox::claim_statement;
use super::*;
use serde_json::json;

#[test]
fn pending_attribute_values_survive_a_newer_document() {
    let local = json!({"customAttributes": [
        {"attributeDefinitionId": "1", "stringValue": "local"},
        {"attributeDefinitionId": "2", "stringValue": "old"}
    ]});
    let mut incoming = json!({"name": "new", "customAttributes": [
        {"attributeDefinitionId": "1", "stringValue": "erp"},
        {"attributeDefinitionId": "2", "stringValue": "erp"}
    ]});
    keep_pending_attributes(&mut incoming, &local, &["1".to_string()]);
    assert_eq!(
        incoming,
        json!({"name": "new", "customAttributes": [
            {"attributeDefinitionId": "2", "stringValue": "erp"},
            {"attributeDefinitionId": "1", "stringValue": "local"}
        ]})
    );
}

/// The claim reads the due calls from their index in order, neither sorting every pending
/// call nor walking past the ones waiting for a retry, also behind a backlog that arrived
/// in one burst once the statistics are refreshed (without them, Postgres planned a sort
/// of every pending call for each claim).
#[tokio::test]
async fn the_claim_takes_the_oldest_pending_calls_from_their_index() {
    crate::store::testing::on_both_databases(async |store| {
        // 70,000 calls waiting for a retry in an hour, older than the due ones.
        let retry_at = now_ms() + 3_600_000;
        let backlog = match store.dialect() {
            Dialect::Postgres => sql!(
                "INSERT INTO erp_webhook_inbox \
                    (received_at, entity_name, entity_id, event, payload, state, next_attempt_at) \
                 SELECT 1, 'customer', '5', 'updated', '{{}}', 'pending', {retry_at} FROM generate_series(1, 70000)"
            ),
            Dialect::Sqlite => sql!(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 70000) \
                 INSERT INTO erp_webhook_inbox \
                    (received_at, entity_name, entity_id, event, payload, state, next_attempt_at) \
                 SELECT 1, 'customer', '5', 'updated', '{{}}', 'pending', {retry_at} FROM n"
            ),
        };
        sqlx::query(backlog).execute(store.pool()).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..5 {
            ids.push(store.inbox_store("customer", &n.to_string(), "updated", &json!({})).await.unwrap());
        }

        store.inbox_refresh_statistics().await.unwrap();
        let statement = claim_statement(store.dialect()).0;
        let now = now_ms();
        let plan = crate::store::plan_of(store.dialect(), store.pool(), &statement, |query| {
            query.bind(now + 60_000).bind(now).bind(16_i64)
        })
        .await;
        assert!(plan.contains("erp_webhook_inbox_pending"), "{:?}: {plan}", store.dialect());
        // The due time bounds the walk: the calls waiting for a retry are not read.
        let bounded = match store.dialect() {
            Dialect::Sqlite => plan.contains("erp_webhook_inbox_pending (next_attempt_at<?)"),
            Dialect::Postgres => plan.contains("Index Cond: (next_attempt_at <="),
        };
        assert!(bounded, "{:?}, a range of the index: {plan}", store.dialect());
        let sorted = plan.contains("TEMP B-TREE") || plan.contains("Sort");
        assert!(!sorted, "{:?}, no sort: {plan}", store.dialect());

        store.inbox_done(&ids[..1], "{}").await.unwrap();
        let claimed: Vec<i64> = store.inbox_claim(2, 60_000).await.unwrap().iter().map(|item| item.id).collect();
        assert_eq!(claimed, ids[1..3], "the oldest due calls, in order");
    })
    .await;
}

/// The depths (of their indexes), the counts (a scan) and the overview agree with the calls.
#[tokio::test]
async fn depths_and_the_overview_follow_the_calls() {
    crate::store::testing::on_both_databases(async |store| {
        let mut ids = Vec::new();
        for n in 0..6 {
            ids.push(store.inbox_store("customer", &n.to_string(), "updated", &json!({})).await.unwrap());
        }
        store.inbox_done(&ids[0..2], "{}").await.unwrap();
        store.inbox_attempt_failed(ids[2], "gone", None).await.unwrap();
        store.inbox_attempt_failed(ids[4], "later", Some(now_ms() + 60_000)).await.unwrap();
        let depths = store.inbox_depths().await.unwrap();
        assert_eq!((depths.pending, depths.failed), (3, 1), "{:?}", store.dialect());
        let (oldest,): (i64,) = sqlx::query_as("SELECT received_at FROM erp_webhook_inbox WHERE id = $1")
            .bind(ids[3])
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(depths.oldest_pending_received_at, Some(oldest), "the oldest call still waiting");
        let counts = store.inbox_counts().await.unwrap();
        assert_eq!(counts, InboxCounts { pending: 3, done: 2, failed: 1 });

        let recent: Vec<(i64, String)> =
            store.inbox_recent(3).await.unwrap().into_iter().map(|item| (item.id, item.state)).collect();
        let expected = vec![
            (ids[2], "failed".to_string()),
            (ids[3], "pending".to_string()),
            (ids[4], "pending".to_string()),
            (ids[1], "done".to_string()),
            (ids[0], "done".to_string()),
        ];
        assert_eq!(recent, expected, "the oldest not done, then the newest done");
    })
    .await;
}

/// A record removed from the mirror, or found absent, since a moment is told by its id alone.
#[tokio::test]
async fn a_removal_since_a_moment_is_found_by_its_record() {
    crate::store::testing::on_both_databases(async |store| {
        let record = |id: &str| ErpRecord {
            id: id.into(),
            version: 1,
            last_modified: 1,
            document: json!({"id": id}),
            pending_attributes: Vec::new(),
        };
        store.erp_upsert("party", &[record("1"), record("2")]).await.unwrap();
        let before = crate::store::now_ms() - 1;
        assert!(store.erp_delete("party", "1").await.unwrap());
        assert!(!store.erp_delete("party", "7").await.unwrap(), "7 was never there: its absence is noted");
        for (id, removed) in [("1", true), ("7", true), ("2", false), ("10", false)] {
            assert_eq!(store.erp_removed_since_one("party", id, before).await.unwrap(), removed, "party {id}");
        }
        assert!(!store.erp_removed_since_one("article", "1", before).await.unwrap(), "another model's");
        let later = crate::store::now_ms() + 60_000;
        assert!(!store.erp_removed_since_one("party", "1", later).await.unwrap(), "removed before `since`");
    })
    .await;
}

fn customer(version: i64, values: &[(&str, &str)], pending: &[&str]) -> ErpRecord {
    let values: Vec<Value> =
        values.iter().map(|(d, v)| json!({"attributeDefinitionId": d, "stringValue": v})).collect();
    ErpRecord {
        id: "5".into(),
        version,
        last_modified: version,
        document: json!({"id": "5", "version": version.to_string(), "customAttributes": values}),
        pending_attributes: pending.iter().map(|d| d.to_string()).collect(),
    }
}

/// A push's answer settles only what the push carried: values set since it read the record
/// stay (and stay pending), and a newer version stored meanwhile is not replaced by it.
#[test]
fn a_push_answer_settles_only_what_it_carried() {
    let pushed = customer(1, &[("1", "a")], &["1"]);
    let answer = customer(2, &[("1", "a")], &[]);
    assert_eq!(settle_push(&pushed, &pushed, Some(&answer)), answer, "nothing changed meanwhile");
    assert_eq!(settle_push(&pushed, &pushed, None), customer(1, &[("1", "a")], &[]), "no record answered");

    let changed = customer(1, &[("1", "b")], &["1"]);
    assert_eq!(settle_push(&changed, &pushed, Some(&answer)), customer(2, &[("1", "b")], &["1"]), "set again");

    let other = customer(1, &[("1", "a"), ("2", "x")], &["1", "2"]);
    let with_other = settle_push(&other, &pushed, Some(&answer));
    assert_eq!(with_other, customer(2, &[("1", "a"), ("2", "x")], &["2"]), "another definition set meanwhile");

    let newer = customer(3, &[("1", "a"), ("9", "erp")], &["1"]);
    assert_eq!(settle_push(&newer, &pushed, Some(&answer)), customer(3, &[("1", "a"), ("9", "erp")], &[]), "pulled");
}

/// Local values set on one record at once, while pulls store newer versions of it, are all
/// kept and all pending: each edit reads and writes the record in one locked transaction.
#[tokio::test]
async fn edits_of_one_record_at_once_lose_none() {
    crate::store::testing::on_both_databases(async |store| {
        store.erp_upsert("customer", &[customer(1, &[], &[])]).await.unwrap();
        let definitions: Vec<String> = (0..24).map(|d| d.to_string()).collect();
        let edits = definitions.iter().map(|definition| async move {
            let edited = store.erp_edit_attributes("customer", "5", |record| {
                let mut document = record.document.clone();
                let entry = json!({"attributeDefinitionId": definition, "stringValue": "local"});
                document["customAttributes"].as_array_mut().unwrap().push(entry);
                let mut pending = record.pending_attributes.clone();
                pending.push(definition.clone());
                Some((document, pending))
            });
            assert_eq!(edited.await.unwrap(), Some(true));
        });
        let pulls = (2..8).map(|version| async move {
            store.erp_upsert("customer", &[customer(version, &[("erp", "v")], &[])]).await.unwrap();
        });
        tokio::join!(futures::future::join_all(edits), futures::future::join_all(pulls));

        let record = store.erp_get("customer", "5").await.unwrap().unwrap();
        let mut pending = record.pending_attributes.clone();
        pending.sort();
        let mut expected = definitions.clone();
        expected.sort();
        assert_eq!(pending, expected, "{:?}", store.dialect());
        for definition in &definitions {
            let value = super::attributes::entry(&record.document, definition);
            assert_eq!(value, Some(&json!({"attributeDefinitionId": definition, "stringValue": "local"})));
        }
        assert_eq!(record.version, 7, "the newest pull's version");
        assert_eq!(store.erp_edit_attributes("customer", "6", |_| None).await.unwrap(), None, "not mirrored");
    })
    .await;
}

/// A record read again at a lower version never replaces a higher one, whatever its stamp (a
/// clock set back); a record created again under its id (a later `createdDate`) replaces the
/// earlier one, and a late read of the earlier one does not come back over it.
#[test]
fn a_record_moves_forward_or_to_its_next_creation_only() {
    let read = |created: i64, version: i64, stamp: i64| ErpRecord {
        id: "5".into(),
        version,
        last_modified: stamp,
        document: json!({"id": "5", "createdDate": created, "version": version.to_string()}),
        pending_attributes: Vec::new(),
    };
    let (first, ahead, after) = (read(100, 0, 100), read(100, 1, 9_000), read(100, 2, 500));
    assert!(ahead.supersedes(&first) && after.supersedes(&ahead));
    assert!(!ahead.supersedes(&after), "a lower version stamped by a clock that ran ahead");
    assert!(after.supersedes(&after), "the same version read again");
    let again = read(600, 0, 600);
    assert!(again.supersedes(&after) && !after.supersedes(&again), "created again under its id");
    let bare = |version: i64, stamp: i64| ErpRecord { document: json!({"id": "5"}), ..read(0, version, stamp) };
    assert!(bare(0, 600).supersedes(&bare(2, 500)) && !bare(1, 400).supersedes(&bare(2, 500)));
}
