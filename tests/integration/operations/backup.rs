//! The backup drill of docs/operations.md ("Backups"), as an operator runs it: `backup` while
//! the service serves and writes, `restore` refused while the service runs, the service
//! stopped, the backup restored, the service started on it, and the mirror brought up to date
//! by a sync.

use crate::common::{Api, JsonAnswer};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::Db;
use crate::common::binary::{Binary, cli, text};
use crate::common::contract::Checked;
use crate::common::process::{Instance, odata_root, upstream_records};

/// A company the writer created, and when its answer arrived.
type Acknowledged = Arc<Mutex<Vec<(Instant, String)>>>;

/// Creates companies one after the other until `stop`, noting each one acknowledged.
async fn write_companies(
    client: reqwest::Client,
    url: String,
    token: String,
    acknowledged: Acknowledged,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut n = 0;
    while !*stop.borrow() {
        n += 1;
        let body = json!({"Id": "new", "Version": 1, "Name": format!("Drill {n} GmbH"), "IsPhysicalPerson": false});
        let answer = client.post(&url).bearer_auth(&token).json(&body).checked().await.unwrap();
        assert_eq!(answer.status(), 201, "a write of the drill failed");
        let created: Value = answer.json_value().await;
        let id = created["data"]["Id"].as_str().expect("the assigned Id").to_string();
        acknowledged.lock().unwrap().push((Instant::now(), id));
    }
}

async fn wait_for_writes(acknowledged: &Acknowledged, at_least: usize) {
    while acknowledged.lock().unwrap().len() < at_least {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn company_status(instance: &Instance, token: &str, id: &str) -> u16 {
    let url = instance.url(&format!("/api/v1/fieldreport/companies/{id}"));
    instance.client.get(url).bearer_auth(token).checked().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn a_backup_taken_while_writing_restores_every_write_acknowledged_before_it() {
    let (mut instance, sandboxes, store) = Instance::start(Db::Sqlite, &[]).await;
    // The test's own connections would keep the database in use.
    store.close().await;
    drop(store);
    let token = instance.token().await;
    let backup_file = std::env::temp_dir().join(format!("integration-service-drill-{}.db", uuid::Uuid::new_v4()));
    let backup_path = backup_file.to_str().unwrap();

    let acknowledged: Acknowledged = Arc::default();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let writer = tokio::spawn(write_companies(
        instance.client.clone(),
        instance.url("/api/v1/fieldreport/companies"),
        token.clone(),
        acknowledged.clone(),
        stopped,
    ));
    wait_for_writes(&acknowledged, 5).await;
    let began = Instant::now();
    let backup = instance.command(&["backup", "--to", backup_path]).await;
    let stdout = String::from_utf8_lossy(&backup.stdout);
    assert!(backup.status.success(), "backup failed: {}", String::from_utf8_lossy(&backup.stderr));
    assert!(stdout.contains(&format!("to {backup_path}")), "{stdout}");
    let written_at_backup = acknowledged.lock().unwrap().len();
    wait_for_writes(&acknowledged, written_at_backup + 3).await;
    stop.send(true).unwrap();
    writer.await.unwrap();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let before: Vec<&str> = acknowledged.iter().filter(|(at, _)| *at < began).map(|(_, id)| id.as_str()).collect();
    assert!(before.len() >= 5);

    // Not over a database in use.
    let refused = instance.command(&["restore", "--from", backup_path]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is in use") && stderr.contains("stop every instance"), "{stderr}");

    instance.terminate();
    let restored = instance.command(&["restore", "--from", backup_path]).await;
    let stdout = String::from_utf8_lossy(&restored.stdout);
    assert!(restored.status.success(), "restore failed: {}", String::from_utf8_lossy(&restored.stderr));
    assert!(stdout.contains("restored") && stdout.contains("moved to"), "{stdout}");
    instance.restart();

    // Every write acknowledged before the backup began is there, and the token still works.
    for id in &before {
        assert_eq!(company_status(&instance, &token, id).await, 200, "company {id} was acknowledged before the backup");
    }
    // The writes after it were forwarded to the field-report system: a sync brings them back.
    let answer = instance.client.get(instance.url("/api/v1/fieldreport/sync/companies")).bearer_auth(&token);
    assert_eq!(answer.checked().await.unwrap().status(), 200);
    let upstream = upstream_records(&instance.client, &odata_root(&sandboxes), "Companies").await;
    for (_, id) in &acknowledged {
        assert!(upstream.contains_key(id), "company {id} reached the field-report system");
        assert_eq!(company_status(&instance, &token, id).await, 200, "company {id} is mirrored again after the sync");
    }
    let _ = std::fs::remove_file(&backup_file);
    instance.stop(&[&token]).await;
}

/// A folder of the test's own, and the URL of a migrated SQLite database in it.
fn migrated_database() -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("integration-service-backup-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}/service.db", dir.display());
    let migrated = Binary::new(["migrate"]).database(&url).output();
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    (dir, url)
}

/// [`migrated_database`], backed up to `backup.db` in its folder: the folder, the database's
/// URL and the backup's path.
fn backed_up_database() -> (std::path::PathBuf, String, std::path::PathBuf) {
    let (dir, url) = migrated_database();
    let copy = dir.join("backup.db");
    let backup = Binary::new(["backup", "--to", copy.to_str().unwrap()]).database(&url).output();
    assert!(backup.status.success(), "{}", text(&backup.stderr));
    (dir, url, copy)
}

/// A backup holds password hashes, token digests and signing secrets: only its owner may read
/// it, wherever it is written and whatever the umask.
#[test]
fn a_backup_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, _, copy) = backed_up_database();
    let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the backup's mode is {mode:o}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A restore onto a new host, where the database's folder does not exist yet, makes it (as
/// `serve` does); a backup into a folder that does not exist is refused with one line naming
/// it, its cause said once.
#[test]
fn a_restore_on_a_new_host_makes_the_database_folder() {
    let (dir, url, copy) = backed_up_database();

    let new_host = format!("sqlite://{}/new-host/var/service.db", dir.display());
    let restored = Binary::new(["restore", "--from", copy.to_str().unwrap()]).database(&new_host).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert!(dir.join("new-host/var/service.db").is_file());
    let migrated = Binary::new(["migrate"]).database(&new_host).output();
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));

    let nowhere = dir.join("no-such-folder/backup.db");
    let refused = Binary::new(["backup", "--to", nowhere.to_str().unwrap()]).database(&url).output();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = text(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("error: {}: ", nowhere.display())), "{stderr}");
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The service's user, as the test sets it: another one when the test runs as root (as an
/// operator's restore does), else the test's own (which is all a user may give a file).
fn service_user(own: &std::fs::Metadata) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    if own.uid() == 0 { (65534, 65534) } else { (own.uid(), own.gid()) }
}

/// A restore run as root, for a service that runs as another user, leaves a database that user
/// can open: the restored file has the owner and mode of the database it replaces, or the owner
/// of the database's folder when there was none.
#[test]
fn a_restored_database_keeps_the_owner_and_mode_of_the_one_it_replaces() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
    let (dir, url, copy) = backed_up_database();
    let (uid, gid) = service_user(&std::fs::metadata(&copy).unwrap());
    let database = dir.join("service.db");
    chown(&database, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o640)).unwrap();

    let restored = Binary::new(["restore", "--from", copy.to_str().unwrap()]).database(&url).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let file = std::fs::metadata(&database).unwrap();
    assert_eq!((file.uid(), file.gid(), file.mode() & 0o7777), (uid, gid, 0o640), "the restored database");

    // None to replace: the folder's owner, and the backup's private mode.
    let folder = dir.join("new-host");
    std::fs::create_dir(&folder).unwrap();
    chown(&folder, Some(uid), Some(gid)).unwrap();
    let new_host = format!("sqlite://{}/service.db", folder.display());
    let restored = Binary::new(["restore", "--from", copy.to_str().unwrap()]).database(&new_host).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let file = std::fs::metadata(folder.join("service.db")).unwrap();
    assert_eq!((file.uid(), file.gid(), file.mode() & 0o7777), (uid, gid, 0o600), "the database on a new host");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A service that crashed leaves its write-ahead log and its shared-memory index beside the
/// database. A restore folds the log into the database it sets aside, so that the set-aside file
/// is whole on its own, and leaves no companion beside it under a name SQLite never pairs with it.
/// Runs the service on `url`, creates a user `late@example.com` through the command line and
/// kills the service: its write-ahead log, holding the user, and its index stay beside the file.
fn crash_after_a_write(dir: &std::path::Path, url: &str) {
    use std::io::BufRead;
    let mut serve = Binary::new(["serve", "--bind", "127.0.0.1:0"])
        .database(url)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut stdout = std::io::BufReader::new(serve.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the service ended before it listened");
    }
    let created =
        cli(url, &["user", "create", "--email", "late@example.com", "--password-stdin"], Some("a passphrase\n"));
    assert!(created.status.success(), "{}", text(&created.stderr));
    serve.kill().unwrap();
    serve.wait().unwrap();
    assert!(dir.join("service.db-wal").exists() && dir.join("service.db-shm").exists(), "a crash leaves both");
}

#[test]
fn a_restore_after_a_crash_sets_the_database_aside_whole_and_alone() {
    let (dir, url, copy) = backed_up_database();
    crash_after_a_write(&dir, &url);

    let restored = Binary::new(["restore", "--from", copy.to_str().unwrap()]).database(&url).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.retain(|name| name != "var");
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names[..2], ["backup.db", "service.db"], "{names:?}");
    let set_aside = &names[2];
    assert!(set_aside.starts_with("service.db.before-restore-"), "{names:?}");
    assert!(!set_aside.ends_with("-wal") && !set_aside.ends_with("-shm"), "{names:?}");
    // The set-aside database holds the user the log held.
    let aside_url = format!("sqlite://{}", dir.join(set_aside).display());
    let listed = cli(&aside_url, &["user", "list"], None);
    assert!(text(&listed.stdout).contains("late@example.com"), "{}{}", text(&listed.stdout), text(&listed.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A backup onto a disk that fills up leaves no file there, and its error names the backup's
/// path, not the database's (whose disk has room). Needs root, to mount a small disk.
#[test]
fn a_backup_onto_a_full_disk_names_the_backup_and_leaves_nothing() {
    let (dir, url) = migrated_database();
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    let mount =
        std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&small).output();
    if !mount.is_ok_and(|m| m.status.success()) {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let target = small.join("backup.db");
    let output = Binary::new(["backup", "--to", target.to_str().unwrap()]).database(&url).output();
    let left: Vec<_> = std::fs::read_dir(&small).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    let unmounted = std::process::Command::new("umount").arg(&small).status().unwrap();
    assert!(unmounted.success());
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    assert_eq!(text(&output.stderr), format!("error: {}: SQLite: database or disk is full\n", target.display()));
    assert!(left.is_empty(), "left on the full disk: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The users a database at `url` lists, as the command line prints them.
fn listed_users(url: &str) -> String {
    let listed = cli(url, &["user", "list"], None);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    text(&listed.stdout)
}

/// A copy of a database taken with its write-ahead log (a snapshot of the volume, the file
/// copied with its `-wal`) restores with what the log holds: the restore checks the database
/// and its log together, so it must put back both, not the file alone.
#[test]
fn a_restore_from_a_copy_with_its_write_ahead_log_keeps_what_the_log_holds() {
    let (dir, url) = migrated_database();
    crash_after_a_write(&dir, &url);
    let snapshot = dir.join("snapshot");
    std::fs::create_dir(&snapshot).unwrap();
    for name in ["service.db", "service.db-wal"] {
        std::fs::copy(dir.join(name), snapshot.join(name)).unwrap();
    }

    let new_host = format!("sqlite://{}/new-host/service.db", dir.display());
    let from = snapshot.join("service.db");
    let restored = Binary::new(["restore", "--from", from.to_str().unwrap()]).database(&new_host).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    assert!(listed_users(&new_host).contains("late@example.com"), "the log's write is lost");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two restores within one second keep both databases they replace: the second never takes
/// the name of the first one's set-aside file (nor of any other file already there).
#[test]
fn a_restore_never_replaces_a_database_an_earlier_restore_set_aside() {
    let (dir, url, copy) = backed_up_database();
    let created =
        cli(&url, &["user", "create", "--email", "first@example.com", "--password-stdin"], Some("a passphrase\n"));
    assert!(created.status.success(), "{}", text(&created.stderr));
    // Whatever second the restore runs in, its set-aside name is taken already.
    let now = chrono::Utc::now();
    let taken: Vec<std::path::PathBuf> = (0..30)
        .map(|s| now + chrono::Duration::seconds(s))
        .map(|at| dir.join(format!("service.db.before-restore-{}", at.format("%Y%m%dT%H%M%SZ"))))
        .collect();
    for path in &taken {
        std::fs::write(path, "an earlier restore's").unwrap();
    }

    let restored = Binary::new(["restore", "--from", copy.to_str().unwrap()]).database(&url).output();
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    for path in &taken {
        assert_eq!(std::fs::read_to_string(path).unwrap(), "an earlier restore's", "{} replaced", path.display());
    }
    let stdout = text(&restored.stdout);
    let moved = stdout.lines().find_map(|l| l.strip_prefix("the database it replaces was moved to ")).expect(&stdout);
    assert!(listed_users(&format!("sqlite://{moved}")).contains("first@example.com"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database of another program that keeps its migrations as this service does (sqlx's
/// `_sqlx_migrations`, versions this release knows) is not a backup of this service: the
/// restore refuses it and leaves the database alone, rather than one `serve` cannot start on.
#[test]
fn a_database_of_another_program_with_migrations_is_refused() {
    let (dir, url) = migrated_database();
    let other = dir.join("other.db");
    let connection = rusqlite::Connection::open(&other).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL,
                 installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL,
                 checksum BLOB NOT NULL, execution_time BIGINT NOT NULL);
             INSERT INTO _sqlx_migrations VALUES (1, 'orders', CURRENT_TIMESTAMP, TRUE, x'0123', 1);
             CREATE TABLE orders (id INTEGER PRIMARY KEY);",
        )
        .unwrap();
    drop(connection);

    let refused = Binary::new(["restore", "--from", other.to_str().unwrap()]).database(&url).output();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stdout));
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("is not a backup of this service's database"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!left.iter().any(|name| name.to_string_lossy().contains("before-restore")), "{left:?}");
    let migrated = Binary::new(["migrate"]).database(&url).output();
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
