//! What the command line prints when a command fails: the cause of a failed request, and
//! nothing of a result before its error.

use crate::common::Db;
use crate::common::binary::{Binary, cli, text};

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

/// `token list` for an email no user has prints its error alone: no table header on standard
/// output before it, so a script reading the table sees nothing.
#[tokio::test]
async fn token_list_of_an_unknown_user_prints_only_its_error() {
    let (url, _) = crate::common::fresh_database(Db::Sqlite).await;
    let unknown = cli(&url, &["token", "list", "--email", "ghost@example.com"], None);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown.stderr));
    assert_eq!(text(&unknown.stdout), "", "nothing before the error");
    assert!(text(&unknown.stderr).starts_with("error: "), "{}", text(&unknown.stderr));

    let created =
        cli(&url, &["user", "create", "--email", "known@example.com", "--password-stdin"], Some("a passphrase\n"));
    assert!(created.status.success(), "{}", text(&created.stderr));
    let made = cli(&url, &["token", "create", "--email", "known@example.com", "--name", "n8n"], None);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let listed = cli(&url, &["token", "list", "--email", "known@example.com"], None);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let stdout = text(&listed.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("NAME\tABILITIES"), "{stdout}");
    assert!(lines[1].starts_with("n8n\t*\t"), "{stdout}");
}
