//! A consumer is answered only changes on disk (`Store::make_feed_durable`): on Postgres the
//! mirror's writes of a sync and of an answered forwarded write commit before the write-ahead
//! log is flushed, and a crash of the server would hand the numbers of those it lost out again
//! for other changes, which a consumer past them would skip. A feed page and an export end
//! once the log is on disk through what they read. SQLite: the answers alone here; that the
//! log is synced first is shown by `store::feed::tests`
//! (`a_sqlite_feed_page_is_answered_once_the_log_is_on_disk`).

use serde_json::json;

use integration_service::store::fieldreport::records::MirrorRecord;

use crate::common::{Api, Db, TestService};

/// Where the log's insertion stands, and whether its flush is behind it.
async fn log(svc: &TestService) -> (String, bool) {
    let (written, behind): (String, i64) = sqlx::query_as(
        "SELECT pg_current_wal_insert_lsn()::text, \
         CAST(CASE WHEN pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() THEN 1 ELSE 0 END AS BIGINT)",
    )
    .fetch_one(svc.store().pool())
    .await
    .unwrap();
    (written, behind == 1)
}

async fn flushed_through(svc: &TestService, written: &str) -> bool {
    let flushed: i64 = sqlx::query_scalar(
        "SELECT CAST(CASE WHEN pg_current_wal_flush_lsn() >= CAST($1 AS pg_lsn) THEN 1 ELSE 0 END AS BIGINT)",
    )
    .bind(written)
    .fetch_one(svc.store().pool())
    .await
    .unwrap();
    flushed == 1
}

/// Rounds of a write committed without the flush (an answered forwarded write's), then each
/// of a feed page and two exports: the log is flushed through the write when each answers.
/// Until six requests found the log unflushed before them (most do: the WAL writer flushes
/// within its delay, 200 ms). The check passes by chance on a server that others flush
/// meanwhile (another test's commit that waits for the flush); alone, it fails without it.
async fn the_feed_and_the_export_answer_what_is_on_disk(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let (mut unflushed, mut early) = (0, Vec::new());
    let requests = [
        "/api/v1/fieldreport/tags/changes?limit=1000",
        "/api/v1/fieldreport/tags/export",
        "/api/v1/erp/export/customer",
    ];
    for round in 0..10 {
        for path in requests {
            let id = format!("{round}-{}", path.len());
            let record = MirrorRecord { id: id.clone(), version: 1, document: json!({"Id": id, "Version": 1}) };
            svc.store().mirror_insert("tags", &record, None).await.unwrap();
            let before = if db == Db::Postgres { Some(log(&svc).await) } else { None };
            let answer = svc.get(&token, path).await;
            assert_eq!(answer.status(), 200, "{path}");
            let text = answer.text().await.unwrap();
            assert!(text.contains("next_cursor"), "{path}: {text}");
            let Some((written, behind)) = before else { continue };
            if !flushed_through(&svc, &written).await {
                early.push(format!("round {round}, {path}, the log at {written}"));
            }
            unflushed += i32::from(behind);
        }
        if unflushed >= 6 || db == Db::Sqlite {
            break;
        }
    }
    assert!(early.is_empty(), "answered before the log was on disk through the write: {early:#?}");
    if db == Db::Postgres {
        assert!(unflushed > 0, "no request found the log unflushed: nothing was shown");
    }
    svc.stop().await;
}

crate::on_both_databases!(the_feed_and_the_export_answer_what_is_on_disk);
