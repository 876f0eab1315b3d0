//! Reading a mirror back by key (`?after=<cursor>&limit=N`), as a consumer copying a whole set
//! does: the field-report sets and the ERP's models, while the mirror changes under the reader.
//! Both databases.

use crate::common::Api;
use std::collections::BTreeSet;

use integration_service::store::erp::ErpRecord;
use integration_service::store::fieldreport::records::MirrorRecord;
use serde_json::{Value, json};

use crate::common::{Db, TestService, error_body};

/// Numeric order, as the key orders ids of digits.
fn numeric(ids: impl IntoIterator<Item = u32>) -> Vec<String> {
    ids.into_iter().map(|n| n.to_string()).collect()
}

/// Reads `first` and then every `next` link, calling `between` after the first page; the ids
/// read (field `id_field`) in the order answered, and how many pages.
async fn read_back<F: AsyncFnMut()>(
    svc: &TestService,
    token: &str,
    first: &str,
    id_field: &str,
    mut between: F,
) -> (Vec<String>, usize) {
    let (mut ids, mut pages, mut path) = (Vec::new(), 0, first.to_string());
    loop {
        let page = svc.get_json(token, &path).await;
        pages += 1;
        assert!(page.get("meta").is_none(), "read by key: no count\n{page}");
        ids.extend(page["data"].as_array().unwrap().iter().map(|r| r[id_field].as_str().unwrap().to_string()));
        if pages == 1 {
            between().await;
        }
        let Some(next) = page.get("next").and_then(Value::as_str) else {
            assert!(page.get("next_cursor").is_none(), "{page}");
            break;
        };
        let cursor = page["next_cursor"].as_str().unwrap();
        assert!(next.contains(&format!("after={cursor}")), "{page}");
        path = next.to_string();
    }
    (ids, pages)
}

fn assert_each_once(ids: &[String]) {
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "a record repeated: {ids:?}");
}

async fn tag(svc: &TestService, id: &str) {
    let record = MirrorRecord { id: id.into(), version: 1, document: json!({"Id": id, "Version": 1, "Name": id}) };
    svc.store().mirror_insert("tags", &record, None).await.unwrap();
}

/// A copy of a field-report set by key sees every record that was there throughout exactly
/// once, in key order, while records are inserted and deleted before and after its position.
async fn a_field_report_set_reads_back_by_key_while_it_changes(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for n in 1..=40 {
        tag(&svc, &n.to_string()).await;
    }
    let (ids, pages) = read_back(&svc, &token, "/api/v1/fieldreport/tags?limit=7", "Id", async || {
        // Behind the reader (the first page ended at 7): an insert and a delete, which by
        // position would move every later record one place and make one repeat or skip.
        tag(&svc, "0").await;
        assert!(svc.store().mirror_delete("tags", "2").await.unwrap());
        // Ahead of the reader: what the copy then shows.
        assert!(svc.store().mirror_delete("tags", "20").await.unwrap());
        tag(&svc, "41").await;
    })
    .await;
    let expected: Vec<String> = numeric((1..=41).filter(|n| *n != 20));
    assert_eq!(ids, expected, "every record of the set throughout, once, in key order");
    assert_each_once(&ids);
    assert_eq!(pages, 6, "41 records read by 7, and no empty page after the last");

    // Without `limit`, 50 a page; a cursor passed on as it came.
    let all = svc.get_json(&token, "/api/v1/fieldreport/tags?limit=500").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 40, "{all}");
    assert!(all.get("next_cursor").is_none(), "one page holds the set: {all}");
    let first = svc.get_json(&token, "/api/v1/fieldreport/tags?limit=39").await;
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let rest = svc.get_json(&token, &format!("/api/v1/fieldreport/tags?after={cursor}")).await;
    assert_eq!(rest["data"][0]["Id"], "41", "{rest}");
    // Other sets do not show through, and an empty set has one empty page.
    let empty = svc.get_json(&token, "/api/v1/fieldreport/users?limit=5").await;
    assert_eq!(empty, json!({"data": []}));

    // Paging by position stays as it was, with its count.
    let page = svc.get_json(&token, "/api/v1/fieldreport/tags?page=2&per_page=10").await;
    assert_eq!(page["meta"], json!({"current_page": 2, "per_page": 10, "total": 40, "last_page": 4}), "{page}");
    assert!(page.get("next_cursor").is_none(), "{page}");

    // Read by key wins over position; a cursor the document admits is never refused.
    let by_key = svc.get_json(&token, "/api/v1/fieldreport/tags?limit=5&page=2").await;
    assert!(by_key.get("meta").is_none() && by_key["data"].as_array().unwrap().len() == 5, "{by_key}");
    svc.get_json(&token, "/api/v1/fieldreport/tags?after=gA").await;
    for query in ["after=%25%25", "after=0.5", "limit=0", "limit=501"] {
        let path = format!("/api/v1/fieldreport/tags?{query}");
        let body = error_body(svc.get(&token, &path).await, 422).await;
        assert_eq!(body["error_code"], "validation_failed", "{query}: {body}");
    }
    svc.stop().await;
}

async fn customer(svc: &TestService, id: &str) {
    let record = ErpRecord {
        id: id.into(),
        version: 1,
        last_modified: 0,
        document: json!({"id": id, "version": "1", "company": format!("Customer {id}")}),
        pending_attributes: Vec::new(),
    };
    svc.store().erp_upsert("customer", &[record]).await.unwrap();
}

/// The ERP mirror's models read back by key the same way.
async fn an_erp_model_reads_back_by_key_while_it_changes(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    for n in 95..=130 {
        customer(&svc, &n.to_string()).await;
    }
    let (ids, pages) = read_back(&svc, &token, "/api/v1/erp/show/customer?limit=10", "id", async || {
        customer(&svc, "1").await;
        assert!(svc.store().erp_delete("customer", "96").await.unwrap());
        assert!(svc.store().erp_delete("customer", "110").await.unwrap());
        customer(&svc, "131").await;
    })
    .await;
    let expected: Vec<String> = numeric((95..=131).filter(|n| *n != 110));
    assert_eq!(ids, expected, "numeric ids in numeric order (99 before 100), each once");
    assert_each_once(&ids);
    assert_eq!(pages, 4);
    let page = svc.get_json(&token, "/api/v1/erp/show/customer?page=1&per_page=5").await;
    assert_eq!(page["meta"]["total"], 36, "{page}");
    svc.get_json(&token, "/api/v1/erp/show/customer?limit=5&page=1").await;
    for query in ["after=0.5", "limit=0"] {
        error_body(svc.get(&token, &format!("/api/v1/erp/show/customer?{query}")).await, 422).await;
    }
    svc.stop().await;
}

on_both_databases!(
    a_field_report_set_reads_back_by_key_while_it_changes,
    an_erp_model_reads_back_by_key_while_it_changes,
);
