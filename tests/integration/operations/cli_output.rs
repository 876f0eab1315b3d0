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

/// A database the service cannot open stops the start with one line: the setting that names
/// it and the cause, said once, and never the password of its URL.
async fn a_database_that_cannot_be_opened_stops_the_start_naming_the_setting(db: Db) {
    let (database_url, cause, password) = match db {
        Db::Sqlite => {
            let dir = std::env::temp_dir().join(format!("integration-service-unreadable-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("service.db");
            std::fs::write(&file, [b'x'; 4096]).unwrap();
            (format!("sqlite://{}", file.display()), "database unavailable", None)
        }
        Db::Postgres => {
            let mut url = url::Url::parse(&std::env::var("TEST_POSTGRES_URL").unwrap()).unwrap();
            url.set_path(&format!("/missing_{}", uuid::Uuid::new_v4().simple()));
            if url.password().is_none() {
                url.set_password(Some("a-password-of-the-test")).unwrap();
            }
            let password = url.password().map(str::to_string);
            (url.to_string(), "does not exist", password)
        }
    };
    let output = Binary::new(["serve", "--bind", "127.0.0.1:0"]).database(&database_url).output();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("DATABASE_URL"), "the setting is named: {stderr}");
    assert_eq!(stderr.matches(cause).count(), 1, "the cause, once: {stderr}");
    if let Some(password) = password {
        assert!(!stderr.contains(&password), "{stderr}");
    }
}

/// A `DATABASE_URL` that names no database the service can use stops the start with the cause
/// (a file that is not a database, a folder, no file at all, a server that refuses the
/// connection), not the pool's time-out, and not serving on something else.
async fn a_database_url_naming_no_usable_database_stops_the_start_with_the_cause(db: Db) {
    let dir = std::env::temp_dir().join(format!("integration-service-unusable-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = match db {
        Db::Sqlite => {
            let notes = dir.join("notes.txt");
            std::fs::write(&notes, [b'x'; 4096]).unwrap();
            vec![
                (format!("sqlite://{}", notes.display()), "file is not a database"),
                (format!("sqlite://{}", dir.display()), "is a folder, not a database file"),
                ("sqlite://".to_string(), "names no database file"),
            ]
        }
        Db::Postgres => {
            let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
            vec![(format!("postgres://postgres:a-password-of-the-test@{closed}/postgres"), "Connection refused")]
        }
    };
    for (database_url, cause) in cases {
        let binary = Binary::new(["serve", "--bind", "127.0.0.1:0"]).database(&database_url);
        let output = output_within(binary, std::time::Duration::from_secs(30));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{database_url}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{database_url}: {stderr}");
        assert!(errors[0].contains("DATABASE_URL"), "{database_url}: the setting is named: {stderr}");
        assert!(errors[0].contains(cause), "{database_url}: the cause, {cause:?}, is named: {stderr}");
        assert!(!stderr.contains("timed out"), "{database_url}: not the pool's time-out: {stderr}");
        assert!(!stderr.contains("a-password-of-the-test"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

crate::on_both_databases!(
    a_database_that_cannot_be_opened_stops_the_start_naming_the_setting,
    a_database_url_naming_no_usable_database_stops_the_start_with_the_cause,
);

/// Runs `binary` to its end, or kills it after `limit` (a start that should have failed).
fn output_within(binary: Binary, limit: std::time::Duration) -> std::process::Output {
    use std::io::Read;
    let mut child = binary.spawn();
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::process::Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// An address taken by another process stops the start with one line naming it and the cause,
/// once.
#[test]
fn an_address_in_use_stops_the_start_with_its_cause_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("integration-service-taken-{}", uuid::Uuid::new_v4()));
    let database_url = format!("sqlite://{}/service.db", dir.display());
    let output = Binary::new(["serve", "--bind", &address]).database(&database_url).output();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(&format!("cannot listen on {address}")), "{stderr}");
    assert_eq!(stderr.matches("Address already in use").count(), 1, "the cause, once: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
