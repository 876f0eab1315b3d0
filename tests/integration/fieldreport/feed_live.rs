//! A consumer copies a set with its export and follows its change feed while every kind of
//! writer works on the same set at once (docs/api.md, "Copying and following a set"): the
//! API's forwarded creates, updates and deletes, syncs (over HTTP, and a sync's pages stored
//! directly), local deletes and re-creates of the same ids, tombstoned records stored again
//! and purged, and the janitor's pruning. On Postgres one writer's sync page reserves its
//! numbers and then waits for a record another transaction holds, so that writes numbered
//! after it commit before it. Once the writers stop, the copy must equal the mirror record
//! for record. Both databases. The export is read slowly: the set is larger than the sockets
//! and the export's chunks hold, so the export waits for its reader while the writers go on
//! (on SQLite too, where an export holding the write turn would stop them).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use integration_service::store::fieldreport::records::{MirrorRecord, SyncedRecord};
use integration_service::store::retention::Retention;
use integration_service::store::{Store, now_ms};
use serde_json::{Value, json};

use crate::common::{Db, TestService};

const SET: &str = "companies";
/// Records stored directly (ids `5000000` on), each with a kilobyte of text: 20 MB of export.
const LOCAL: u32 = 20_000;
/// Records the simulator holds (ids 1001 on), which the HTTP syncs read.
const UPSTREAM: u64 = 300;

/// What the writers share: when to stop, and how many rounds they finished in all.
#[derive(Default)]
struct Work {
    stop: AtomicBool,
    rounds: AtomicU64,
}

impl Work {
    fn going(&self) -> bool {
        !self.stop.load(Ordering::SeqCst)
    }

    fn done(&self) {
        self.rounds.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits (bounded) until the writers finished `more` rounds after now, or were stopped.
    async fn progress(&self, more: u64) {
        let target = self.rounds.load(Ordering::SeqCst) + more;
        for _ in 0..3_000 {
            if self.rounds.load(Ordering::SeqCst) >= target || !self.going() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the writers made no progress for 30 s");
    }
}

fn local_id(n: u32) -> String {
    (5_000_000 + n).to_string()
}

fn synced(id: &str, name: &str) -> SyncedRecord {
    let document = json!({"Id": id, "Version": 1, "Name": name, "Notes": "n".repeat(1_000)});
    let document = serde_json::value::to_raw_value(&document).unwrap();
    SyncedRecord { id: id.into(), version: 1, external_id: None, document }
}

fn failed(what: &str) -> impl Fn(integration_service::store::StoreError) -> String + '_ {
    move |error| format!("{what}: {error}")
}

/// A call to the service; the answer's body when its status is `status`.
async fn call(
    svc: &Svc,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) -> Result<Value, String> {
    let mut request = svc.client.request(method, format!("{}{path}", svc.base)).bearer_auth(&svc.token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.map_err(|e| format!("{path}: {e}"))?;
    let got = response.status();
    let text = response.text().await.map_err(|e| format!("{path}: {e}"))?;
    if got != status {
        return Err(format!("{path} answered {got}: {text}"));
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// What the writers and the consumer call the service with.
#[derive(Clone)]
struct Svc {
    client: reqwest::Client,
    base: String,
    fieldreport: String,
    token: String,
    store: Store,
}

/// The API's forwarded writes: a create, an update of it, and a delete of the one before.
async fn api_writes(svc: Svc, work: Arc<Work>) -> Result<(), String> {
    let collection = format!("/api/v1/fieldreport/{SET}");
    let mut previous: Option<String> = None;
    for k in 0.. {
        if !work.going() {
            break;
        }
        let body = json!({"Id": "0", "Version": 1, "Name": format!("api {k}")});
        let created = call(&svc, reqwest::Method::POST, &collection, Some(body), 201).await?;
        let id = created["data"]["Id"].as_str().ok_or("a create without an Id")?.to_string();
        let item = format!("{collection}/{id}");
        call(&svc, reqwest::Method::PATCH, &item, Some(json!({"Name": format!("patched {k}")})), 200).await?;
        if let Some(before) = previous.replace(id) {
            call(&svc, reqwest::Method::DELETE, &format!("{collection}/{before}"), None, 204).await?;
        }
        work.done();
    }
    Ok(())
}

/// Changes at the upstream, each followed by a sync over HTTP.
async fn syncs(svc: Svc, work: Arc<Work>) -> Result<(), String> {
    let mut versions: BTreeMap<u64, i64> = BTreeMap::new();
    for k in 0u64.. {
        if !work.going() {
            break;
        }
        let id = 1001 + (k * 7) % UPSTREAM;
        let version = versions.entry(id).or_insert(1);
        *version += 1;
        let body = json!({"Id": id.to_string(), "Version": *version, "Name": format!("upstream {k}")});
        let url = format!("{}/odata/Companies({id}L)", svc.fieldreport);
        use integration_service::sandbox::fieldreport::{PASSWORD, USERNAME};
        let put = svc.client.put(url).basic_auth(USERNAME, Some(PASSWORD)).json(&body).send().await;
        let status = put.map_err(|e| e.to_string())?.status();
        if status != 200 {
            return Err(format!("the upstream's update of {id} answered {status}"));
        }
        call(&svc, reqwest::Method::GET, &format!("/api/v1/fieldreport/sync/{SET}"), None, 200).await?;
        work.done();
    }
    Ok(())
}

/// Local deletes and re-creates of the same ids, and updates.
async fn recreates(svc: Svc, work: Arc<Work>) -> Result<(), String> {
    let store = &svc.store;
    for k in 0u32.. {
        if !work.going() {
            break;
        }
        let id = local_id((k * 7919) % 10_000);
        store.mirror_delete(SET, &id).await.map_err(failed("delete"))?;
        let record = MirrorRecord { id: id.clone(), version: 1, document: json!({"Id": id, "Version": 1, "Name": k}) };
        store.mirror_insert(SET, &record, None).await.map_err(failed("create again"))?;
        let other = local_id((k * 104_729 + 1) % 10_000);
        if let Some(stored) = store.mirror_get(SET, &other).await.map_err(failed("read"))? {
            let version = stored.version + 1;
            let document = json!({"Id": other, "Version": version, "Name": format!("updated {k}")});
            let record = MirrorRecord { id: other, version, document };
            store.mirror_replace(SET, &record, stored.version, None).await.map_err(failed("update"))?;
        }
        work.done();
    }
    Ok(())
}

/// Local deletes with a tombstone, the record stored again by a sync's page, then purged;
/// and the janitor's pruning, of removals older than `pruned_before`.
async fn purges(svc: Svc, work: Arc<Work>, pruned_before: i64) -> Result<(), String> {
    let store = &svc.store;
    for k in 0u32.. {
        if !work.going() {
            break;
        }
        let id = local_id(10_000 + (k * 31) % 5_000);
        store.mirror_delete_tombstoned(SET, &id).await.map_err(failed("tombstoned delete"))?;
        store.mirror_upsert_page(SET, vec![synced(&id, &format!("back {k}"))]).await.map_err(failed("page"))?;
        store.mirror_purge_tombstoned(SET).await.map_err(failed("purge"))?;
        store.mirror_forget_tombstone(SET, &id).await.map_err(failed("forget"))?;
        if k % 3 == 0 {
            store.mirror_upsert_page(SET, vec![synced(&id, &format!("again {k}"))]).await.map_err(failed("page"))?;
        }
        store.prune(&Retention::default()).await.map_err(failed("prune"))?;
        store.prune_feed_removals(pruned_before).await.map_err(failed("prune removals"))?;
        work.done();
    }
    Ok(())
}

/// A sync's page of a record and a new one, written while another transaction holds the
/// record (as a local delete does, and on even rounds deletes it): on Postgres the page has
/// reserved its numbers by then, and the other writers commit numbers after them before it.
async fn pages_out_of_order(svc: Svc, work: Arc<Work>) -> Result<(), String> {
    let store = svc.store.clone();
    for k in 0u32.. {
        if !work.going() {
            break;
        }
        let id = local_id(15_000 + (k * 13) % 4_000);
        let page = vec![synced(&id, &format!("reordered {k}")), synced(&format!("7{k:06}"), "new")];
        if store.dialect() == integration_service::store::Dialect::Postgres {
            page_behind_a_holder(&store, &work, &id, k % 2 == 0, page).await?;
        } else {
            if k % 2 == 0 {
                store.mirror_delete(SET, &id).await.map_err(failed("delete"))?;
            }
            store.mirror_upsert_page(SET, page).await.map_err(failed("page"))?;
        }
        work.done();
    }
    Ok(())
}

/// Postgres: `page` written while another transaction holds record `id` (and deletes it when
/// `delete`) until the other writers finished two rounds.
async fn page_behind_a_holder(
    store: &Store,
    work: &Work,
    id: &str,
    delete: bool,
    page: Vec<SyncedRecord>,
) -> Result<(), String> {
    let sql = |e: sqlx::Error| e.to_string();
    let mut holder = store.pool().begin().await.map_err(sql)?;
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&mut *holder).await.map_err(sql)?;
    let lock = "SELECT 1 FROM fieldreport_records WHERE entity = $1 AND record_id = $2 FOR UPDATE";
    let held = on_the_record(&mut holder, lock, id).await?;
    let writer = store.clone();
    let written = tokio::spawn(async move { writer.mirror_upsert_page(SET, page).await });
    // Removed meanwhile (a sync found the upstream without it): nothing holds the page up.
    if held.is_some() {
        let blocked = "SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))";
        for _ in 0..500 {
            let n: i64 = sqlx::query_scalar(blocked).bind(pid).fetch_one(store.pool()).await.map_err(sql)?;
            if n > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Writes numbered after the page's reservation commit before it.
        work.progress(2).await;
        if delete {
            let delete = "DELETE FROM fieldreport_records WHERE entity = $1 AND record_id = $2 RETURNING 1";
            on_the_record(&mut holder, delete, id).await?;
        }
    }
    holder.commit().await.map_err(sql)?;
    written.await.map_err(|e| e.to_string())?.map_err(failed("page"))?;
    Ok(())
}

/// `statement` (`$1` the set, `$2` the record's id, one row or none) run by `holder`.
async fn on_the_record(
    holder: &mut sqlx::Transaction<'static, sqlx::Any>,
    statement: &'static str,
    id: &str,
) -> Result<Option<i32>, String> {
    let row = sqlx::query_scalar(statement).bind(SET).bind(id).fetch_optional(&mut **holder).await;
    row.map_err(|e| e.to_string())
}

/// The export read to its end, slowly: a pause for some of the writers' rounds every few
/// megabytes. The copy, and the position its last line names.
async fn export(svc: &Svc, work: &Work) -> (BTreeMap<String, Value>, String) {
    let url = format!("{}/api/v1/fieldreport/{SET}/export", svc.base);
    // Read as it streams (the contract's check reads an answer whole first).
    let mut answer = svc.client.get(url).bearer_auth(&svc.token).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let mut body = Vec::new();
    let mut paused_at = 0;
    while let Some(chunk) = answer.chunk().await.unwrap() {
        body.extend_from_slice(&chunk);
        if body.len() >= paused_at {
            paused_at = body.len() + 4_000_000;
            work.progress(4).await;
        }
    }
    let mut lines: Vec<Value> =
        String::from_utf8(body).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let end = lines.pop().expect("the last line");
    assert_eq!(end["records"], json!(lines.len()), "{end}");
    let copy = lines.into_iter().map(|line| (line["id"].as_str().unwrap().to_string(), line["record"].clone()));
    (copy.collect(), end["next_cursor"].as_str().unwrap().to_string())
}

/// Follows the feed from `since` until a page has no change, applying each change to `copy`;
/// the position reached. A position never goes back.
async fn follow(svc: &Svc, since: String, copy: &mut BTreeMap<String, Value>) -> String {
    let mut since = since;
    loop {
        let path = format!("/api/v1/fieldreport/{SET}/changes?since={since}&limit=100");
        let page = call(svc, reqwest::Method::GET, &path, None, 200).await.unwrap();
        let next = page["next_cursor"].as_str().unwrap().to_string();
        assert!(next.parse::<i64>().unwrap() >= since.parse::<i64>().unwrap(), "{since} → {next}");
        let changes = page["data"].as_array().unwrap();
        for change in changes {
            let id = change["id"].as_str().unwrap().to_string();
            match change["change"].as_str().unwrap() {
                "upsert" => copy.insert(id, change["record"].clone()),
                _ => copy.remove(&id),
            };
        }
        if changes.is_empty() {
            return next;
        }
        since = next;
    }
}

/// The set as the mirror holds it.
async fn mirrored(store: &Store) -> BTreeMap<String, Value> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT record_id, document FROM fieldreport_records WHERE entity = $1")
            .bind(SET)
            .fetch_all(store.pool())
            .await
            .unwrap();
    rows.into_iter().map(|(id, document)| (id, serde_json::from_str(&document).unwrap())).collect()
}

async fn a_copy_followed_while_every_writer_works_equals_the_mirror(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("FIELDREPORT_SYNC_OVERLAP_SECONDS", "1")]).await;
    svc.seed("Companies", UPSTREAM).await;
    let ctx = Svc {
        client: svc.client.clone(),
        base: svc.base.clone(),
        fieldreport: svc.fieldreport.clone(),
        token,
        store: svc.store().clone(),
    };
    call(&ctx, reqwest::Method::GET, &format!("/api/v1/fieldreport/sync/{SET}"), None, 200).await.unwrap();
    for page in 0..LOCAL / 1_000 {
        let records: Vec<SyncedRecord> =
            (page * 1_000..(page + 1) * 1_000).map(|n| synced(&local_id(n), "local")).collect();
        ctx.store.mirror_upsert_page(SET, records).await.unwrap();
    }
    // Removals from before the consumer came, which the janitor prunes meanwhile.
    for n in LOCAL - 20..LOCAL {
        assert!(ctx.store.mirror_delete(SET, &local_id(n)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    let pruned_before = now_ms();
    tokio::time::sleep(Duration::from_millis(5)).await;

    let work = Arc::new(Work::default());
    let writers = vec![
        tokio::spawn(api_writes(ctx.clone(), work.clone())),
        tokio::spawn(syncs(ctx.clone(), work.clone())),
        tokio::spawn(recreates(ctx.clone(), work.clone())),
        tokio::spawn(purges(ctx.clone(), work.clone(), pruned_before)),
        tokio::spawn(pages_out_of_order(ctx.clone(), work.clone())),
    ];
    work.progress(5).await;
    let (mut copy, mut since) = export(&ctx, &work).await;
    for _ in 0..3 {
        since = follow(&ctx, since, &mut copy).await;
        work.progress(10).await;
    }
    work.stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.unwrap().expect("a writer");
    }
    follow(&ctx, since, &mut copy).await;
    let mirror = mirrored(&ctx.store).await;
    let differ: Vec<&String> =
        copy.keys().chain(mirror.keys()).filter(|id| copy.get(*id) != mirror.get(*id)).take(20).collect();
    assert!(differ.is_empty(), "the copy differs from the mirror at {differ:?} ({} records)", mirror.len());
    assert!(mirror.len() > LOCAL as usize, "{}", mirror.len());
    svc.stop().await;
}

crate::on_both_databases!(a_copy_followed_while_every_writer_works_equals_the_mirror);
