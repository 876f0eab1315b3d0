//! What the command line prints when a command fails: the cause of a failed request.

use crate::common::binary::{Binary, text};

/// `ready` asked at an address nothing listens on names why the request failed (the refused
/// connection), not only that it could not be sent.
#[test]
fn ready_names_the_cause_of_a_failed_request() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}/readyz");
    let output = Binary::new(["ready", "--url", &url]).output();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("error: {url}: ")), "{stderr}");
    assert!(stderr.contains("Connection refused"), "the cause is named: {stderr}");
}
