//! `/metrics` stays small: an operation has series (its counter and histogram per status) only
//! once it was called, so a fresh instance does not write a histogram for each of the
//! document's operations, and a scrape grows with the operations and statuses actually seen.

use crate::common::Api;
use crate::common::{Db, TestService};

async fn exposition(svc: &TestService) -> String {
    let response = svc.client.get(svc.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// The sample lines of an operation, counter and histogram.
fn series_of(text: &str, operation: &str) -> Vec<String> {
    let label = format!("operation=\"{operation}\"");
    text.lines().filter(|line| !line.starts_with('#') && line.contains(&label)).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_has_series_only_once_it_was_called() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    let fresh = exposition(&svc).await;
    for operation in ["fieldreport_companies_list", "leasing_show", "erp_show_model", "jobs_create"] {
        assert_eq!(series_of(&fresh, operation), Vec::<String>::new(), "{operation} was never called");
    }
    // A fresh instance writes well under 32 KiB (16 to 18 KB when measured).
    assert!(fresh.len() < 32 * 1024, "a fresh scrape is {} bytes", fresh.len());

    assert_eq!(svc.get(&token, "/api/v1/fieldreport/companies").await.status(), 200);
    assert_eq!(svc.get(&token, "/api/v1/fieldreport/companies/424242").await.status(), 404);
    let after = exposition(&svc).await;
    let list = series_of(&after, "fieldreport_companies_list");
    assert!(
        list.contains(
            &"integration_service_http_requests_total{operation=\"fieldreport_companies_list\",status=\"200\"} 1"
                .to_string()
        ),
        "{list:?}"
    );
    let buckets =
        list.iter().filter(|line| line.starts_with("integration_service_http_request_duration_seconds_bucket")).count();
    assert_eq!(buckets, 17, "one histogram (16 bounds and +Inf) for the one status seen: {list:?}");
    let show = series_of(&after, "fieldreport_companies_show");
    assert!(show.iter().any(|line| line.contains("status=\"404\"")), "{show:?}");
    assert!(!show.iter().any(|line| line.contains("status=\"200\"")), "no series for a status not seen: {show:?}");
    assert_eq!(series_of(&after, "leasing_show"), Vec::<String>::new(), "still never called");
    eprintln!("metrics size: fresh {} bytes, after two operations {} bytes", fresh.len(), after.len());
    svc.stop().await;
}

/// A request is counted under the operation that answered it, however its path was spelled:
/// dropshot routes `//api/v1/…`, a trailing `/` and percent-encoded letters as the plain path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_counts_under_the_operation_it_reached() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    for path in ["/api/v1/fieldreport/companies", "//api/v1/fieldreport/companies", "/api/v1/%66ieldreport/companies/"]
    {
        assert_eq!(svc.get(&token, path).await.status(), 200, "{path}");
    }
    let list = series_of(&exposition(&svc).await, "fieldreport_companies_list");
    let counter = "integration_service_http_requests_total{operation=\"fieldreport_companies_list\",status=\"200\"} 3";
    assert!(list.contains(&counter.to_string()), "{list:?}");
    svc.stop().await;
}
