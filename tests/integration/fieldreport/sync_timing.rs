//! The field-report sync under a real upstream's timing: records changed by another client
//! while a sync pages, stamps of a coarse clock, commits that arrive after their stamp; and the
//! reconciling of both mirrors, which repairs both ways what an incremental sync cannot see.

use crate::common::{Api, JsonAnswer};
use crate::common::{erp_pull_report, erp_versions, mirrored_erp_versions};
use std::collections::BTreeMap;

use crate::common::contract::Checked;
use crate::common::process::upstream_records;
use crate::common::{Db, TestService};
use integration_service::sandbox::fieldreport::{PASSWORD as FIELDREPORT_PASSWORD, USERNAME};
use serde_json::{Value, json};

async fn sync(svc: &TestService, token: &str, path: &str) -> Value {
    let response = svc.get(token, &format!("/api/v1/fieldreport/sync/{path}")).await;
    assert_eq!(response.status(), 200);
    response.json::<Value>().await.unwrap()["data"][0].clone()
}

/// A control call to the field-report simulator (`/__sandbox/<path>`); its answer.
async fn simulator(svc: &TestService, path: &str, body: Value) -> Value {
    let answer = svc.client.post(format!("{}/__sandbox/{path}", svc.fieldreport)).json(&body).checked().await.unwrap();
    assert_eq!(answer.status(), 200, "{path}");
    answer.json_value().await
}

/// The companies of the mirror and of the simulator, each as Id → Version.
/// The mirror of `Companies` holds what the simulator holds, record for record.
async fn mirror_equals_upstream(svc: &TestService, token: &str) {
    let (mirror, upstream) = mirror_and_upstream(svc, token).await;
    assert_eq!(mirror, upstream);
}

async fn mirror_and_upstream(svc: &TestService, token: &str) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
    let mut mirror = BTreeMap::new();
    let mut page = 1;
    loop {
        let path = format!("/api/v1/fieldreport/companies?per_page=500&page={page}");
        let answer: Value = svc.get_json(token, &path).await;
        let records = answer["data"].as_array().unwrap();
        for record in records {
            mirror.insert(record["Id"].as_str().unwrap().to_string(), record["Version"].clone());
        }
        if records.len() < 500 {
            break;
        }
        page += 1;
    }
    let upstream = upstream_records(&svc.client, &svc.fieldreport, "Companies")
        .await
        .into_iter()
        .map(|(id, record)| (id, record["Version"].clone()))
        .collect();
    (mirror, upstream)
}

/// Two records of the first page are changed by another client once that page is served:
/// they move to the end of the `DateModified` order, and every record behind them moves two
/// places back. A sync that continued by position skipped two records for good; one that
/// continues from the last key reads every record, the changed ones at their new place.
async fn records_changed_while_a_sync_pages_are_not_skipped(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 250).await;
    // After the first page of records (the sync's first query, for records never modified,
    // answers none).
    simulator(&svc, "during-list", json!({"set": "Companies", "after_pages": 2, "touch": ["1001", "1002"]})).await;
    let report = sync(&svc, &token, "companies").await;
    let (mirror, upstream) = mirror_and_upstream(&svc, &token).await;
    assert_eq!(mirror.len(), 250, "{report}");
    assert_eq!(mirror, upstream, "the mirror holds every record at its version after one sync");
    assert_eq!(mirror["1001"], json!(2), "the changed record was read again at its new place");
    svc.stop().await;
}

/// Stamps of whole seconds: a record committed after a sync read, stamped with the same second
/// as the newest record it read (its cursor), is brought by the next sync.
async fn a_record_stamped_at_the_cursor_instant_is_not_lost(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    simulator(&svc, "behaviour", json!({"stamps": "seconds"})).await;
    svc.seed("Companies", 5).await;
    let first = sync(&svc, &token, "companies").await;
    let late = simulator(&svc, "late", json!({"set": "Companies", "at_newest": true})).await;
    assert_eq!(late["DateModified"], first["cursor"], "the same instant as the cursor");
    let next = sync(&svc, &token, "companies").await;
    assert_eq!(next["inserted"], 1, "{next}");
    assert_eq!(next["updated"], 0, "the records read again in the overlap are unchanged: {next}");
    mirror_equals_upstream(&svc, &token).await;
    svc.stop().await;
}

/// A change committed 10 s after its stamp, within the overlap (default 300 s), is brought by
/// the next sync; the records read again in the window are not written.
async fn a_late_commit_within_the_overlap_is_brought_by_the_next_sync(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 20).await;
    sync(&svc, &token, "companies").await;
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 10})).await;
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 10, "id": "1003"})).await;
    let next = sync(&svc, &token, "companies").await;
    assert_eq!((next["inserted"].clone(), next["updated"].clone()), (json!(1), json!(1)), "{next}");
    assert_eq!(next["unchanged"], 19, "{next}");
    mirror_equals_upstream(&svc, &token).await;
    svc.stop().await;
}

/// Changes committed an hour after their stamp, beyond the overlap, and a delete: no
/// incremental sync sees them; a reconciling sync fetches the record the mirror lacks, fetches
/// again the one whose version differs, removes the deleted one, and counts each repair.
async fn a_reconciling_sync_repairs_both_ways(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("FIELDREPORT_SYNC_OVERLAP_SECONDS", "60")]).await;
    svc.seed("Companies", 30).await;
    sync(&svc, &token, "companies").await;
    let missing = simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 3600})).await;
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 3600, "id": "1004"})).await;
    let deleted = svc.odata(reqwest::Method::DELETE, "Companies(1005L)").checked().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let incremental = sync(&svc, &token, "companies").await;
    assert_eq!(incremental["inserted"].as_u64().unwrap() + incremental["updated"].as_u64().unwrap(), 0);
    let (mirror, upstream) = mirror_and_upstream(&svc, &token).await;
    assert_ne!(mirror, upstream, "beyond the overlap, an incremental sync cannot see them");

    let report = sync(&svc, &token, "companies?reconcile=true").await["reconcile"].clone();
    assert_eq!(report["fetched_missing"], 1, "{report}");
    assert_eq!(report["refreshed"], 1, "{report}");
    assert_eq!(report["removed"], 1, "{report}");
    assert_eq!(report["kept_pending"], 0, "{report}");
    let (mirror, upstream) = mirror_and_upstream(&svc, &token).await;
    assert_eq!(mirror, upstream, "a completed reconciling leaves the mirror equal to the upstream");
    assert!(mirror.contains_key(missing["Id"].as_str().unwrap()));
    let record: Value = svc.get_json(&token, "/api/v1/fieldreport/companies/1004").await;
    assert_eq!(record["Version"], 2, "the stale record was fetched again: {record}");

    let metrics = svc.client.get(svc.url("/metrics")).checked().await.unwrap().text().await.unwrap();
    for kind in ["fetched_missing", "refreshed", "removed"] {
        let series =
            format!("integration_mirror_repairs_total{{system=\"fieldreport\",set=\"companies\",kind=\"{kind}\"}} 1\n");
        assert!(metrics.contains(&series), "{series} in\n{metrics}");
    }
    let again = sync(&svc, &token, "companies?reconcile=true").await["reconcile"].clone();
    for kind in ["fetched_missing", "refreshed", "removed", "kept_pending"] {
        assert_eq!(again[kind], 0, "nothing is left to repair: {again}");
    }
    svc.stop().await;
}

/// The ERP's mirror diverged without a webhook (a record lost here, one changed and one deleted
/// at the ERP): a reconciling (`update`) fetches the missing one, fetches the changed one
/// again and removes the deleted one, then finds nothing left to repair.
async fn an_erp_reconciling_repairs_both_ways(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let setup = svc.get(&token, "/api/v1/erp/setup/customer").await;
    assert_eq!(setup.status(), 200);
    let local = svc.store().erp_all("customer").await.unwrap();
    assert!(local.len() >= 3, "the simulator seeds customers");
    let (lost, changed, deleted) = (&local[0].id, &local[1].id, &local[2].id);
    assert!(svc.store().erp_delete("customer", lost).await.unwrap());
    let erp = |method: reqwest::Method, path: String, body: Option<Value>| {
        let mut request = svc.erp_api(method, &path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.checked()
    };
    let put = erp(
        reqwest::Method::PUT,
        format!("/customer/id/{changed}?ignoreMissingProperties=true"),
        Some(json!({"email": "x@example.com"})),
    );
    assert!(put.await.unwrap().status().is_success());
    assert!(erp(reqwest::Method::DELETE, format!("/customer/id/{deleted}"), None).await.unwrap().status().is_success());

    let answer = svc.get(&token, "/api/v1/erp/update/customer").await;
    assert_eq!(answer.status(), 200);
    let report = answer.json::<Value>().await.unwrap()["data"][0].clone();
    assert_eq!(
        (report["fetched_missing"].clone(), report["refreshed"].clone(), report["removed"].clone()),
        (json!(1), json!(1), json!(1)),
        "{report}"
    );
    let at_erp: Value =
        erp(reqwest::Method::GET, "/customer?pageSize=1000".into(), None).await.unwrap().json_value().await;
    assert_eq!(erp_versions(&at_erp), mirrored_erp_versions(svc.store(), "customer").await);
    reconciling_repairs_nothing(&svc, &token, "customer").await;
    svc.stop().await;
}

/// The simulator as the description says (OData v3) refuses a bare stamp in a `$filter` and
/// takes `datetime'…'`; set to act as a v4 server, it refuses the typed form, and a sync, refused
/// once, asks again with bare stamps: every record is read, the first sync and the next. The
/// same with a v3 server whose stamps are `Edm.DateTimeOffset`.
async fn a_server_of_the_other_odata_version_is_synced_too(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 250).await;
    let status_of = |filter: &str| {
        let url = format!("{}/odata/Companies?$filter={}", svc.fieldreport, urlencode(filter));
        let request = svc.client.get(url).basic_auth(USERNAME, Some(FIELDREPORT_PASSWORD));
        async move { request.checked().await.unwrap().status().as_u16() }
    };
    assert_eq!(status_of("DateModified ge 2020-01-01T00:00:00Z").await, 400, "v3 takes no bare stamp");
    assert_eq!(status_of("DateModified ge datetime'2020-01-01T00:00:00'").await, 200);
    simulator(&svc, "behaviour", json!({"stamp_literals": "bare"})).await;
    assert_eq!(status_of("DateModified ge datetime'2020-01-01T00:00:00'").await, 400, "v4 takes no typed stamp");
    let first = sync(&svc, &token, "companies").await;
    assert_eq!((first["fetched"].clone(), first["inserted"].clone()), (json!(250), json!(250)), "{first}");
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 10, "id": "1003"})).await;
    let next = sync(&svc, &token, "companies").await;
    assert_eq!(next["updated"], 1, "{next}");
    mirror_equals_upstream(&svc, &token).await;
    // A v3 server that types its stamps `Edm.DateTimeOffset` takes only `datetimeoffset'…'`.
    simulator(&svc, "behaviour", json!({"stamp_literals": "offset"})).await;
    assert_eq!(status_of("DateModified ge datetime'2020-01-01T00:00:00'").await, 400);
    assert_eq!(status_of("DateModified ge datetimeoffset'2020-01-01T00:00:00Z'").await, 200);
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 10, "id": "1004"})).await;
    let offset = sync(&svc, &token, "companies").await;
    assert_eq!(offset["updated"], 1, "{offset}");
    mirror_equals_upstream(&svc, &token).await;
    svc.stop().await;
}

/// An ERP that serves fewer records a page than `pageSize` asks (7 of 1000): a short page is no
/// end, so a full pull, an incremental one after changes, and a reconciling all read every
/// record; each ends on a query that answers none.
async fn an_erp_serving_short_pages_is_pulled_whole(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.erp_sandbox("seed", json!({"model": "article", "count": 40})).await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 7})).await;
    let erp_articles = async || {
        let pages = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut all = BTreeMap::new();
        for page in pages {
            let path = format!("/article?pageSize=7&page={page}");
            let answer: Value = svc.erp_api(reqwest::Method::GET, &path).checked().await.unwrap().json_value().await;
            all.extend(erp_versions(&answer));
        }
        all
    };
    let setup = svc.get(&token, "/api/v1/erp/setup/article").await.json::<Value>().await.unwrap()["data"][0].clone();
    let upstream = erp_articles().await;
    assert!(upstream.len() > 40, "{}", upstream.len());
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, upstream, "{setup}");
    let changed = upstream.keys().nth(20).unwrap().clone();
    rename_article(&svc, &changed).await;
    let pull = erp_pull_report(&svc, &token, "article").await;
    assert_eq!(pull["updated"], 1, "{pull}");
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, erp_articles().await);
    reconciling_repairs_nothing(&svc, &token, "article").await;
    svc.stop().await;
}

/// Renames an article at the ERP simulator, which stamps it anew.
async fn rename_article(svc: &TestService, id: &str) {
    let path = format!("/article/id/{id}?ignoreMissingProperties=true");
    let put = svc.erp_api(reqwest::Method::PUT, &path).json(&json!({"name": "changed"})).checked().await.unwrap();
    assert!(put.status().is_success());
}

/// An ERP that ignores `sort` (as it ignores unknown filter names) lists a model in id order.
/// An incremental pull that went on from the greatest (`lastModifiedDate`, `id`) of such a page
/// skipped every record modified before it that the page did not hold, and completed as if
/// whole (its cursor moved past them). A page out of key order tells the sort ignored: the
/// pull reads its window again by id and brings every record, and so does the next one.
async fn an_erp_ignoring_sort_is_pulled_without_skipping(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.erp_sandbox("seed", json!({"model": "article", "count": 40})).await;
    let articles = async || {
        let answer = svc.erp_api(reqwest::Method::GET, "/article?pageSize=1000").checked().await.unwrap();
        erp_versions(&answer.json_value().await)
    };
    // The first article in id order becomes the newest: in key order it comes last.
    let first = articles().await.into_keys().min_by_key(|id| id.parse::<u64>().unwrap()).unwrap();
    rename_article(&svc, &first).await;
    let upstream = articles().await;
    svc.erp_sandbox("behaviour", json!({"most_per_page": 7, "sort": "ignored"})).await;
    let pull = erp_pull_report(&svc, &token, "article").await;
    assert_eq!(pull["errors"], json!([]), "{pull}");
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, upstream, "{pull}");
    svc.erp_sandbox("behaviour", json!({})).await;
    let pulled: Value = svc.get_json(&token, "/api/v1/erp/get").await;
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, articles().await, "{pulled}");
    svc.stop().await;
}

/// A reconciling of an ERP that serves 7 records a page: the 30 records the mirror lost are
/// fetched by id in batches larger than a page. A short answer to `id-in` is no proof that
/// the ids it left out are gone: each is fetched, and the mirror ends equal to the ERP.
async fn an_erp_serving_short_pages_is_reconciled_whole(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.erp_sandbox("seed", json!({"model": "article", "count": 40})).await;
    let setup = svc.get(&token, "/api/v1/erp/setup/article").await;
    assert_eq!(setup.status(), 200);
    let upstream = mirrored_erp_versions(svc.store(), "article").await;
    for id in upstream.keys().take(30) {
        assert!(svc.store().erp_delete("article", id).await.unwrap());
    }
    svc.erp_sandbox("behaviour", json!({"most_per_page": 7})).await;
    let reconcile =
        svc.get(&token, "/api/v1/erp/update/article").await.json::<Value>().await.unwrap()["data"][0].clone();
    assert_eq!(reconcile["fetched_missing"], 30, "{reconcile}");
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, upstream);
    svc.stop().await;
}

/// An article deleted at the ERP and created again under its id starts again at version 0,
/// stamped now. The mirror held it at version 2: the record the ERP has now reaches the
/// mirror, by the next pull, though its version is lower (a copy older than the stored one,
/// a page read before a webhook stored a newer version, is still refused: its stamp is older).
async fn an_erp_record_created_again_under_its_id_is_pulled(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let erp = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = svc.erp_api(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let path = path.to_string();
        async move { assert!(request.checked().await.unwrap().status().is_success(), "{path}") }
    };
    let setup = svc.get(&token, "/api/v1/erp/setup/article").await;
    assert_eq!(setup.status(), 200);
    let id = mirrored_erp_versions(svc.store(), "article").await.into_keys().next().unwrap();
    for name in ["first", "second"] {
        let path = format!("/article/id/{id}?ignoreMissingProperties=true");
        erp(reqwest::Method::PUT, &path, Some(json!({"name": name}))).await;
    }
    svc.get(&token, "/api/v1/erp/get").await;
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await[&id], json!("2"));
    erp(reqwest::Method::DELETE, &format!("/article/id/{id}"), None).await;
    svc.erp_sandbox("seed", json!({"model": "article", "records": [{"id": id, "name": "created again"}]})).await;
    let at_erp = async || {
        let list = svc.erp_api(reqwest::Method::GET, "/article?pageSize=1000").checked().await.unwrap();
        erp_versions(&list.json_value().await)
    };
    let pull = svc.get(&token, "/api/v1/erp/get").await.json::<Value>().await.unwrap();
    assert_eq!(mirrored_erp_versions(svc.store(), "article").await, at_erp().await, "{pull}");
    let reconcile = svc.get(&token, "/api/v1/erp/update/article").await.json::<Value>().await.unwrap();
    assert_eq!(reconcile["data"][0]["refreshed"], 0, "{reconcile}");
    svc.stop().await;
}

/// The upstream's clock ran an hour ahead and was set right: a record changed meanwhile is
/// stamped an hour ahead, and the sync that read it took that stamp as its cursor. A change
/// made after the correction, stamped by the right clock, must still be brought by the next
/// sync, which asked only for stamps after that cursor less the overlap.
async fn a_change_after_the_upstream_clock_was_set_back_is_synced(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    svc.seed("Companies", 5).await;
    sync(&svc, &token, "companies").await;
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": -3600, "id": "1002"})).await;
    sync(&svc, &token, "companies").await;
    simulator(&svc, "late", json!({"set": "Companies", "ago_seconds": 0, "id": "1003"})).await;
    let next = sync(&svc, &token, "companies").await;
    assert_eq!(next["updated"], 1, "{next}");
    mirror_equals_upstream(&svc, &token).await;
    svc.stop().await;
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

on_both_databases!(
    an_erp_ignoring_sort_is_pulled_without_skipping,
    a_server_of_the_other_odata_version_is_synced_too,
    an_erp_serving_short_pages_is_pulled_whole,
    an_erp_serving_short_pages_is_reconciled_whole,
    an_erp_record_created_again_under_its_id_is_pulled,
    an_erp_reconciling_repairs_both_ways,
    records_changed_while_a_sync_pages_are_not_skipped,
    a_record_stamped_at_the_cursor_instant_is_not_lost,
    a_late_commit_within_the_overlap_is_brought_by_the_next_sync,
    a_reconciling_sync_repairs_both_ways,
    a_change_after_the_upstream_clock_was_set_back_is_synced,
);

/// A reconciling pull of the ERP's `model` (`erp/update/{model}`) finds nothing to repair: the
/// mirror already equals the ERP.
async fn reconciling_repairs_nothing(svc: &TestService, token: &str, model: &str) {
    let answer: Value = svc.get_json(token, &format!("/api/v1/erp/update/{model}")).await;
    for kind in ["fetched_missing", "refreshed", "removed"] {
        assert_eq!(answer["data"][0][kind], 0, "{answer}");
    }
}
