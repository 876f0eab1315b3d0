use serde_json::json;

use super::*;
use crate::store::engine::sync_page::SyncedRecord;
use crate::store::fieldreport::records::MirrorRecord;
use crate::store::now_ms;

/// The changes as (id, the record's `Name`, or `None` for a removal), in number order.
fn read(changes: &[Change]) -> Vec<(String, Option<String>)> {
    changes
        .iter()
        .map(|change| {
            let name = change.document.as_ref().map(|document| {
                let value: serde_json::Value = serde_json::from_str(document.get()).unwrap();
                value["Name"].as_str().unwrap_or_default().to_string()
            });
            (change.id.clone(), name)
        })
        .collect()
}

fn change(id: &str, name: Option<&str>) -> (String, Option<String>) {
    (id.to_string(), name.map(str::to_string))
}

fn record(id: &str, version: i64, name: &str) -> MirrorRecord {
    MirrorRecord { id: id.into(), version, document: json!({"Id": id, "Version": version, "Name": name}) }
}

/// Writes by a sync (numbered by its writer) and by the service's other statements (numbered
/// by the triggers) come out in the order they were stored, each record once as it is now;
/// a removal and a rename leave the removed id; an unchanged record read again takes no new
/// number.
#[tokio::test]
async fn every_write_and_removal_is_numbered_in_the_order_stored() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        let dialect = store.dialect();
        store.mirror_upsert_page("tags", vec![SyncedRecord::named(1, "a"), SyncedRecord::named(2, "b")]).await.unwrap();
        store.mirror_insert("tags", &record("3", 1, "c"), None).await.unwrap();
        assert!(store.mirror_replace("tags", &record("1", 2, "a2"), 1, None).await.unwrap());
        assert!(store.mirror_delete("tags", "2").await.unwrap());
        store.mirror_insert("tags", &record("local-9", 1, "n"), Some("create")).await.unwrap();
        assert!(store.mirror_mark_pushed("tags", "local-9", &record("9", 1, "n"), None).await.unwrap());
        store.mirror_upsert_page("tags", vec![SyncedRecord::named(4, "d")]).await.unwrap();
        // The same document again: no write, no number.
        store.mirror_upsert_page("tags", vec![SyncedRecord::named(4, "d")]).await.unwrap();

        let all = store.feed_changes(Mirror::FieldReport, "tags", 0, 100).await.unwrap();
        let expected = [
            change("3", Some("c")),
            change("1", Some("a2")),
            change("2", None),
            change("9", Some("n")),
            change("local-9", None),
            change("4", Some("d")),
        ];
        // The rename's two changes may come in either order.
        let mut got = read(&all);
        if got.get(3).map(|c| c.0.as_str()) == Some("local-9") {
            got.swap(3, 4);
        }
        assert_eq!(got, expected, "{dialect:?}");
        assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "{dialect:?}: numbers rise");
        // Postgres's upserts take numbers for the records they find unchanged: gaps, never a
        // change after the set's last number.
        let position = store.feed_position(Mirror::FieldReport, "tags").await.unwrap();
        assert!(position.last_seq >= all.last().unwrap().seq, "{dialect:?}");

        // Read after a position, a few at a time: the same changes.
        let mut since = 0;
        let mut paged = Vec::new();
        loop {
            let page = store.feed_changes(Mirror::FieldReport, "tags", since, 2).await.unwrap();
            let Some(last) = page.last() else { break };
            since = last.seq;
            paged.extend(page);
        }
        assert_eq!(read(&paged), read(&all), "{dialect:?}");
        // Another set's feed is its own.
        assert!(store.feed_changes(Mirror::FieldReport, "users", 0, 10).await.unwrap().is_empty());
        test.finish().await;
    }
}

/// The ERP mirror's writes and removals are numbered per model the same way.
#[tokio::test]
async fn erp_records_are_numbered_per_model() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        let party = |id: &str, version: i64, name: &str| crate::store::erp::ErpRecord {
            id: id.into(),
            version,
            last_modified: 1,
            document: json!({"id": id, "version": version.to_string(), "Name": name}),
            pending_attributes: Vec::new(),
        };
        store.erp_upsert("party", &[party("1", 1, "a"), party("2", 1, "b")]).await.unwrap();
        store.erp_upsert("article", &[party("1", 1, "x")]).await.unwrap();
        store.erp_upsert("party", &[party("1", 2, "a2")]).await.unwrap();
        assert!(store.erp_delete("party", "2").await.unwrap());
        let changes = store.feed_changes(Mirror::Erp, "party", 0, 10).await.unwrap();
        assert_eq!(read(&changes), [change("1", Some("a2")), change("2", None)], "{dialect:?}");
        assert_eq!(read(&store.feed_changes(Mirror::Erp, "article", 0, 10).await.unwrap()), [change("1", Some("x"))]);
    })
    .await;
}

/// Pruned tombstones move the set's `expired_through` to the newest of them; the records'
/// own numbers stay.
#[tokio::test]
async fn pruned_removals_mark_where_the_feed_expired() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        store.mirror_upsert_page("tags", vec![SyncedRecord::named(1, "a"), SyncedRecord::named(2, "b")]).await.unwrap();
        assert!(store.mirror_delete("tags", "1").await.unwrap());
        let removal = store.feed_changes(Mirror::FieldReport, "tags", 0, 10).await.unwrap().pop().unwrap();
        assert!(removal.document.is_none());
        assert_eq!(store.prune_feed_removals(now_ms() - 60_000).await.unwrap(), 0, "{dialect:?}: a fresh one stays");
        assert_eq!(store.prune_feed_removals(now_ms() + 60_000).await.unwrap(), 1, "{dialect:?}");
        let position = store.feed_position(Mirror::FieldReport, "tags").await.unwrap();
        assert_eq!(position.expired_through, removal.seq, "{dialect:?}");
        assert_eq!(
            read(&store.feed_changes(Mirror::FieldReport, "tags", 0, 10).await.unwrap()),
            [change("2", Some("b"))]
        );
    })
    .await;
}

/// A removal committed between the prune's two statements (on Postgres each reads what was
/// committed before it began), made before the cutoff, in a set that had no tombstone to
/// expire: the delete leaves it, or counts it in the set's `expired_through`; never drops it
/// uncounted, which would leave a consumer before it with neither the removal nor a 410.
/// Postgres takes it from another connection, committed; SQLite, which lets one writer in at
/// a time, in the prune's transaction, where its delete sees it the same way.
#[tokio::test]
async fn a_removal_committed_during_a_prune_is_counted_or_kept() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        store.mirror_upsert_page("tags", vec![SyncedRecord::named(1, "a"), SyncedRecord::named(2, "b")]).await.unwrap();
        store.mirror_upsert_page("users", vec![SyncedRecord::named(1, "u")]).await.unwrap();
        assert!(store.mirror_delete("tags", "1").await.unwrap());
        let before = store.feed_position(Mirror::FieldReport, "users").await.unwrap().last_seq;
        let cutoff = now_ms() + 60_000;

        let mut tx = store.write_transaction().await.unwrap();
        sqlx::query(expire_removals(dialect)).bind(cutoff).execute(&mut *tx).await.unwrap();
        let number = "UPDATE mirror_feed SET last_seq = last_seq + 1 WHERE mirror = 'fieldreport' AND entity = 'users'";
        let tombstone = "INSERT INTO mirror_removals (mirror, entity, change_seq, record_id, removed_at) \
             SELECT mirror, entity, last_seq, 'gone', $1 FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = 'users'";
        if dialect == Dialect::Postgres {
            let mut late = store.pool().begin().await.unwrap();
            sqlx::query(number).execute(&mut *late).await.unwrap();
            sqlx::query(tombstone).bind(cutoff - 1).execute(&mut *late).await.unwrap();
            late.commit().await.unwrap();
        } else {
            sqlx::query(number).execute(&mut *tx).await.unwrap();
            sqlx::query(tombstone).bind(cutoff - 1).execute(&mut *tx).await.unwrap();
        }
        sqlx::query(DELETE_EXPIRED_REMOVALS).bind(cutoff).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();

        let late = before + 1;
        let kept = store.feed_changes(Mirror::FieldReport, "users", before, 10).await.unwrap();
        let expired_through = store.feed_position(Mirror::FieldReport, "users").await.unwrap().expired_through;
        assert!(
            read(&kept) == [change("gone", None)] || expired_through >= late,
            "{dialect:?}: the removal {late} committed during the prune is gone uncounted (expired_through \
             {expired_through}): a consumer at {before} would read {:?} and no 410",
            read(&kept)
        );
        assert!(
            read(&store.feed_changes(Mirror::FieldReport, "tags", 0, 10).await.unwrap()) == [change("2", Some("b"))],
            "{dialect:?}: the tombstone counted is pruned"
        );
        // The next prune counts and removes it.
        assert_eq!(store.prune_feed_removals(cutoff).await.unwrap(), 1, "{dialect:?}");
        assert_eq!(store.feed_position(Mirror::FieldReport, "users").await.unwrap().expired_through, late);
    })
    .await;
}

/// Postgres: a sync's writer reserves its numbers outside its transaction (migration 0033).
/// While it has not committed, a reader passes neither its numbers nor any after them (a
/// batch of the same sync and another write committed meanwhile wait); once it commits, every
/// change comes in number order; once it rolls back, its numbers are skipped. A reservation
/// naming a transaction this database never gave (restored from another cluster's dump)
/// blocks nothing and is cleared by the next reservation. (The writes made while a writer
/// inserting new records is open update records: another insert into the set would wait for
/// the set's record count, which that writer holds.)
#[tokio::test]
async fn a_reader_waits_for_a_sync_writer_that_has_not_committed() {
    for test in crate::store::testing::stores_on_both_databases().await {
        let store = &test.store;
        if store.dialect() != Dialect::Postgres {
            test.finish().await;
            continue;
        }
        let hold = async |ids: [i64; 2]| {
            let records = ids.map(|id| SyncedRecord::named(id, &format!("n{id}")));
            let mut tx = store.sync_writers().unwrap().begin().await.unwrap();
            let first = reserve_numbers(store.pool(), &mut tx, "fieldreport", "tags", 2).await.unwrap();
            let records: Vec<&SyncedRecord> = records.iter().collect();
            crate::store::engine::sync_writers::insert(&mut tx, "tags", now_ms(), first, &records).await.unwrap();
            tx
        };
        let position = async || store.feed_position(Mirror::FieldReport, "tags").await.unwrap().last_seq;
        let ids = async || {
            let changes = store.feed_changes(Mirror::FieldReport, "tags", 0, 100).await.unwrap();
            changes.into_iter().map(|change| change.id).collect::<Vec<_>>()
        };
        let rename = async |id: &str, version: i64| {
            let renamed = record(id, version + 1, &format!("{id}-{version}"));
            assert!(store.mirror_replace("tags", &renamed, version, None).await.unwrap());
        };

        store.mirror_upsert_page("tags", vec![SyncedRecord::named(3, "c"), SyncedRecord::named(4, "d")]).await.unwrap();
        store.mirror_insert("tags", &record("5", 1, "e"), None).await.unwrap();
        assert_eq!((ids().await, position().await), (vec!["3".to_string(), "4".into(), "5".into()], 3));

        let writer = hold([1, 2]).await;
        store
            .mirror_upsert_page("tags", vec![SyncedRecord::named(3, "c2"), SyncedRecord::named(4, "d2")])
            .await
            .unwrap();
        rename("5", 1).await;
        assert!(ids().await.is_empty(), "3, 4 and 5 now stand after the open reservation, and wait");
        assert_eq!(position().await, 3);
        writer.commit().await.unwrap();
        assert_eq!(ids().await, ["1", "2", "3", "4", "5"]);
        assert_eq!(position().await, 8);

        let writer = hold([6, 7]).await;
        rename("1", 1).await;
        assert_eq!(ids().await, ["2", "3", "4", "5"], "the change after the open reservation waits");
        assert_eq!(position().await, 8);
        writer.rollback().await.unwrap();
        assert_eq!(ids().await, ["2", "3", "4", "5", "1"], "a rolled back writer's numbers are skipped");
        assert_eq!(position().await, 11);

        sqlx::query(
            "INSERT INTO mirror_feed_reservations (mirror, entity, first_seq, writer) \
             VALUES ('fieldreport', 'tags', 12, (pg_current_xact_id()::text::bigint + 1000000)::text::xid8)",
        )
        .execute(store.pool())
        .await
        .unwrap();
        rename("2", 1).await;
        assert_eq!(ids().await.last().map(String::as_str), Some("2"), "a foreign reservation blocks nothing");
        hold([8, 9]).await.commit().await.unwrap();
        let left: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM mirror_feed_reservations").fetch_one(store.pool()).await.unwrap();
        assert_eq!(left, 1, "only the last reservation is left: the foreign and the ended ones are cleared");
        assert_eq!(position().await, 14);
        test.finish().await;
    }
}

/// On Postgres both halves of a feed read (records and removals) pass one bound, taken once
/// (see `passable_bound`); SQLite's read has none.
#[test]
fn a_feed_read_takes_its_bound_once() {
    for mirror in [Mirror::FieldReport, Mirror::Erp] {
        let postgres = changes_statement(mirror, Dialect::Postgres).0;
        assert_eq!(postgres.matches("mirror_feed_passable(").count(), 1, "{postgres}");
        assert_eq!(postgres.matches("change_seq <= (SELECT seq FROM bound)").count(), 2, "{postgres}");
        let sqlite = changes_statement(mirror, Dialect::Sqlite).0;
        assert!(!sqlite.contains("bound"), "{sqlite}");
    }
}

/// The expiry of pruned tombstones reads them by their time's index only (on Postgres with
/// sequential scans ruled out, so that the plan shows the index chosen). Before, the newest
/// pruned of a set was looked up backwards by number, filtering on time.
#[tokio::test]
async fn the_expiry_of_pruned_tombstones_reads_them_by_time() {
    crate::store::testing::on_both_databases(async |store| {
        let statement = expire_removals(store.dialect());
        let plan = match store.dialect() {
            Dialect::Sqlite => crate::store::plan_of(store.dialect(), store.pool(), statement, |q| q.bind(0_i64)).await,
            Dialect::Postgres => {
                let mut tx = store.pool().begin().await.unwrap();
                sqlx::Executor::execute(&mut *tx, "SET LOCAL enable_seqscan = off").await.unwrap();
                crate::store::plan_of(store.dialect(), &mut *tx, statement, |q| q.bind(0_i64)).await
            }
        };
        let reads: Vec<&str> = plan
            .lines()
            .filter(|step| {
                step.contains("mirror_removals") && ["Scan", "SCAN", "SEARCH"].iter().any(|r| step.contains(r))
            })
            .collect();
        assert!(!reads.is_empty(), "{plan}");
        for step in reads {
            let by_time = step.contains("mirror_removals_removed_at") || step.contains("Bitmap Heap Scan");
            assert!(by_time, "{:?}: a read of the tombstones not by their time: {step}\n{plan}", store.dialect());
        }
    })
    .await;
}

/// Postgres: a page of the feed is answered once the write-ahead log is on disk through the
/// commits it read: the mirror's writes that commit without waiting for the flush (here an
/// answered forwarded write) are read before it, and a crash would hand their numbers out
/// again. Rounds until five found the log unflushed before the read (the WAL writer flushes
/// it within its delay, 200 ms, and so does any commit that waits for the flush, another
/// test's): the read must have flushed it. SQLite: the pages only.
#[tokio::test]
async fn a_feed_page_is_answered_once_what_it_read_is_on_disk() {
    crate::store::testing::on_both_databases(async |store| {
        let dialect = store.dialect();
        let mut unflushed_rounds = 0;
        for round in 0..20 {
            let id = format!("r{round}");
            store.mirror_insert("tags", &record(&id, 1, "n"), None).await.unwrap();
            let behind = if dialect == Dialect::Postgres {
                let (written, behind): (String, i64) = sqlx::query_as(
                    "SELECT pg_current_wal_insert_lsn()::text, \
                     CAST(CASE WHEN pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() THEN 1 ELSE 0 END AS BIGINT)",
                )
                .fetch_one(store.pool())
                .await
                .unwrap();
                Some((written, behind == 1))
            } else {
                None
            };
            let page = crate::feed::changes(store, Mirror::FieldReport, "tags", None, None).await.unwrap();
            assert_eq!(page.changes.last().map(|change| change.id.as_str()), Some(id.as_str()), "{dialect:?}");
            let Some((written, behind)) = behind else { continue };
            let flushed: i64 = sqlx::query_scalar(
                "SELECT CAST(CASE WHEN pg_current_wal_flush_lsn() >= CAST($1 AS pg_lsn) THEN 1 ELSE 0 END AS BIGINT)",
            )
            .bind(&written)
            .fetch_one(store.pool())
            .await
            .unwrap();
            assert_eq!(flushed, 1, "round {round}: the page answered a write not yet on disk (log at {written})");
            unflushed_rounds += i32::from(behind);
            if unflushed_rounds >= 5 {
                break;
            }
        }
        if dialect == Dialect::Postgres {
            assert!(unflushed_rounds > 0, "no round found the log unflushed before the read: nothing was shown");
        }
    })
    .await;
}

/// Pages of the file at `path` in memory and not on disk yet (dirty, or being written), as
/// Linux's `cachestat` (6.5 and later) counts them; `None` where the kernel has no such call.
#[cfg(target_os = "linux")]
fn unwritten_pages(path: &std::path::Path) -> Option<u64> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Range {
        offset: u64,
        /// Zero: to the end of the file.
        length: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cached: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    const CACHESTAT: libc::c_long = 451;
    let file = std::fs::File::open(path).ok()?;
    let range = Range { offset: 0, length: 0 };
    let mut stat = Stat::default();
    // SAFETY: the call reads `range` and writes `stat`, both live and laid out as the kernel's.
    let done = unsafe { libc::syscall(CACHESTAT, file.as_raw_fd(), &range, &mut stat, 0u32) };
    (done == 0).then_some(stat.dirty + stat.writeback)
}

/// SQLite: a page of the feed is answered once the write-ahead log is on disk through the
/// commits it read. The store commits with `synchronous = NORMAL`, which leaves a commit's
/// pages to the kernel; a crash of the machine would lose them, and the feed would hand their
/// numbers out again. The checkpoint thread (which syncs the log before it copies it) is held
/// meanwhile. Rounds until three found the log's pages not yet on disk before the read.
#[cfg(target_os = "linux")]
#[tokio::test]
// The guard is held across the reads on purpose; the thread that waits for it is not a task
// of this runtime.
#[allow(clippy::await_holding_lock)]
async fn a_sqlite_feed_page_is_answered_once_the_log_is_on_disk() {
    let test = crate::store::testing::stores_on_both_databases().await.into_iter().next().unwrap();
    let store = &test.store;
    let file = store.engine.sqlite_file().expect("a SQLite file");
    let log = file.log_sync.path().to_path_buf();
    if unwritten_pages(&log).is_none() {
        eprintln!("skipped: the kernel has no cachestat (Linux 6.5 and later)");
        return test.finish().await;
    }
    let held = file.checkpoints.hold();
    let mut unwritten_rounds = 0;
    for round in 0..20 {
        let id = format!("r{round}");
        store.mirror_insert("tags", &record(&id, 1, "n"), None).await.unwrap();
        let before = unwritten_pages(&log).unwrap();
        let page = crate::feed::changes(store, Mirror::FieldReport, "tags", None, None).await.unwrap();
        assert_eq!(page.changes.last().map(|change| change.id.as_str()), Some(id.as_str()));
        let after = unwritten_pages(&log).unwrap();
        assert_eq!(
            after, 0,
            "round {round}: the page answered a write not yet on disk ({before} pages before, {after} after)"
        );
        unwritten_rounds += i32::from(before > 0);
        if unwritten_rounds >= 3 {
            break;
        }
    }
    drop(held);
    assert!(unwritten_rounds > 0, "no round found the log's pages not yet on disk before the read: nothing was shown");
    test.finish().await;
}
