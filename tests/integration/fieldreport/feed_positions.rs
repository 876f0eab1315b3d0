//! Positions a consumer passes that the feed it asks did not answer: another set's (every set
//! numbers its changes from 1), another mirror's, or one whose digits were changed. Each is
//! 410 `cursor_expired` (copy again), never a page of changes read from a number that counts
//! another set's changes. Both databases.

use crate::common::Api;

use integration_service::store::erp::ErpRecord;
use integration_service::store::fieldreport::records::MirrorRecord;
use serde_json::json;

use crate::common::{Db, TestService};

async fn write(svc: &TestService, entity: &str, ids: std::ops::RangeInclusive<u32>) {
    for id in ids.map(|id| id.to_string()) {
        let record = MirrorRecord { id: id.clone(), version: 1, document: json!({"Id": id, "Version": 1, "Name": id}) };
        svc.store().mirror_insert(entity, &record, None).await.unwrap();
    }
}

/// The position after the feed at `path` read from the start (at most 1,000 changes).
async fn position(svc: &TestService, token: &str, path: &str) -> String {
    let page = svc.get_json(token, &format!("{path}?limit=1000")).await;
    page["next_cursor"].as_str().unwrap().to_string()
}

async fn refused(svc: &TestService, token: &str, path: &str, since: &str, what: &str) {
    let answer = svc.get(token, &format!("{path}?since={since}")).await;
    let status = answer.status();
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(status, 410, "{what}: {since} at {path} was answered {status}: {body}");
    assert_eq!(body["error_code"], "cursor_expired", "{what}: {body}");
    assert!(body["message"].as_str().unwrap().contains("copy the set again"), "{what}: {body}");
}

/// A position answered by one set's feed, asked of another set whose numbers go past it, of
/// the other mirror, and with its generation's digits changed, is refused; the set's own
/// position is followed.
async fn a_position_of_another_feed_is_refused(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let (tags, companies) = ("/api/v1/fieldreport/tags/changes", "/api/v1/fieldreport/companies/changes");
    let webhooks = "/api/v1/erp/changes/webhook";
    write(&svc, "tags", 1..=2).await;
    write(&svc, "companies", 1..=6).await;
    let erp = |id: u32| ErpRecord {
        id: id.to_string(),
        version: 1,
        last_modified: 1,
        document: json!({"id": id.to_string(), "version": "1", "url": "https://a.example"}),
        pending_attributes: Vec::new(),
    };
    svc.store().erp_upsert("webhook", &(1..=6).map(erp).collect::<Vec<_>>()).await.unwrap();
    let of_tags = position(&svc, &token, tags).await;
    refused(&svc, &token, companies, &of_tags, "another set's position").await;
    refused(&svc, &token, webhooks, &of_tags, "another mirror's position").await;
    let of_companies = position(&svc, &token, companies).await;
    let (generation, number) = of_companies.split_at(6);
    let other = format!("{}{number}", (generation.parse::<u32>().unwrap() - 100_000 + 1) % 900_000 + 100_000);
    refused(&svc, &token, companies, &other, "another generation's position").await;
    refused(&svc, &token, companies, &format!("000000{number}"), "a generation never taken").await;
    let page = svc.get_json(&token, &format!("{tags}?since={of_tags}")).await;
    assert_eq!(page["data"], json!([]), "{page}");
    assert_eq!(page["next_cursor"], json!(of_tags), "{page}");
    svc.stop().await;
}

crate::on_both_databases!(a_position_of_another_feed_is_refused);
