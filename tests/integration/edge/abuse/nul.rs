//! The NUL character (U+0000): a text value of Postgres cannot hold it, SQLite's can. Records
//! that hold one (as `\u0000` in their JSON) and requests that carry one are answered on both
//! databases alike, never with a 500.

use crate::common::contract::Checked;
use crate::common::{Api, Db, TestService};
use serde_json::json;

/// One caller's company named with a NUL leaves everyone's lookups of the companies by a field
/// working: on Postgres each lookup cast every document of the set to `jsonb`, which refuses
/// an escaped NUL, so the whole set answered 500 to every user.
async fn a_record_holding_a_nul_leaves_the_lookups_of_its_set_working(db: Db) {
    let svc = TestService::start(db, &[]).await;
    let token = svc.user_token().await;
    let (bob, _) = svc.bob_and_root().await;
    for name in ["ACME GmbH", "Evil\u{0}Corp"] {
        let company = json!({"Id": "new", "Version": 1, "Name": name, "IsPhysicalPerson": false});
        let answer = svc.client.post(svc.url("/api/v1/fieldreport/companies")).bearer_auth(&token).json(&company);
        assert_eq!(answer.checked().await.unwrap().status(), 201, "{name:?}");
    }
    let found = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Name/ACME%20GmbH").await;
    assert_eq!(found["data"].as_array().map(Vec::len), Some(1), "{found}");
    let having = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Name").await;
    assert_eq!(having["data"].as_array().map(Vec::len), Some(2), "{having}");
    let none = svc.get_json(&bob, "/api/v1/fieldreport/show/companies/Missing").await;
    assert_eq!(none["data"].as_array().map(Vec::len), Some(0), "{none}");
    svc.stop().await;
}

crate::on_both_databases!(a_record_holding_a_nul_leaves_the_lookups_of_its_set_working);
