//! What a history is checked against: the sync's guarantee, the documented convergence steps
//! (the webhook inbox drained, `post`, `sync --reconcile`) and every invariant.

use crate::common::clear_faults;
use crate::common::process::upstream_records;
use crate::common::{erp_versions, mirrored_erp_versions};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use super::*;

/// The companies with a local change waiting for the upstream: a pending push or delete, or an
/// update of unknown outcome. The mirror may differ from the upstream on these until a post.
pub(super) async fn waiting_locally(world: &World) -> HashSet<String> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT record_id FROM fieldreport_records WHERE entity = 'companies' AND pending_push IS NOT NULL \
         UNION SELECT record_id FROM fieldreport_unsettled WHERE entity = 'companies' \
         UNION SELECT record_id FROM fieldreport_deletes WHERE entity = 'companies'",
    )
    .fetch_all(world.store.pool())
    .await
    .unwrap();
    rows.into_iter().map(|(id,)| id).collect()
}

/// The clause of the sync's guarantee that applies after a sync that completed: every record
/// the upstream has is in the mirror at its version (the changes were all committed before the
/// sync began, none later than the overlap after its stamp); after a reconciling sync, the
/// mirror has no other record. Records with a local change waiting are left aside, and those
/// changed after the sync began (`changed_since`).
pub(super) async fn sync_guarantee(world: &World, reconcile: bool) -> Result<(), String> {
    sync_guarantee_except(world, reconcile, &[]).await
}

/// [`sync_guarantee`], but for records changed after the sync began.
pub(super) async fn sync_guarantee_except(
    world: &World,
    reconcile: bool,
    changed_since: &[String],
) -> Result<(), String> {
    let upstream = upstream_records(world.client(), &world.odata, "Companies").await;
    let mirror: BTreeMap<String, i64> = world
        .store
        .mirror_reconcile_candidates("companies", i64::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|record| (record.id, record.version))
        .collect();
    let mut waiting = waiting_locally(world).await;
    waiting.extend(changed_since.iter().cloned());
    let mut failures = Vec::new();
    for (id, record) in upstream.iter().filter(|(id, _)| !waiting.contains(*id)) {
        let version = record["Version"].as_i64().unwrap_or_default();
        match mirror.get(id) {
            None => failures.push(format!("{id} (version {version}) is upstream, not in the mirror")),
            Some(here) if *here != version => {
                failures.push(format!("{id} is at version {here} in the mirror, {version} upstream"))
            }
            Some(_) => {}
        }
    }
    if reconcile {
        for id in mirror.keys().filter(|id| !upstream.contains_key(*id) && !waiting.contains(*id)) {
            failures.push(format!("{id} is in the mirror after a reconciling sync, not upstream"));
        }
    }
    let kind = if reconcile { "reconciling" } else { "incremental" };
    if failures.is_empty() { Ok(()) } else { Err(format!("after an {kind} sync: {}", failures.join("; "))) }
}

/// The documented convergence steps: the webhook inbox drained, `post`, `sync --reconcile`.
pub(super) async fn converge(world: &World) -> Result<(), String> {
    clear_faults(world.client(), &world.odata).await;
    for _ in 0..600 {
        let (waiting,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM erp_webhook_inbox WHERE state = 'pending'")
            .fetch_one(world.store.pool())
            .await
            .unwrap();
        if waiting == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (failed,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM erp_webhook_inbox WHERE state <> 'done'")
        .fetch_one(world.store.pool())
        .await
        .unwrap();
    if failed > 0 {
        return Err(format!("{failed} webhook calls were not processed"));
    }
    let (status, posted) = world.api(reqwest::Method::GET, "/api/v1/fieldreport/post/2", None).await;
    if status != 200 {
        return Err(format!("post answered {status}: {posted}"));
    }
    let failures: Vec<&Value> =
        posted["data"].as_array().into_iter().flatten().filter(|r| r["failed"].as_u64() != Some(0)).collect();
    if !failures.is_empty() {
        return Err(format!("post reported failures: {failures:?}"));
    }
    let (status, synced) =
        world.api(reqwest::Method::GET, "/api/v1/fieldreport/sync/companies?reconcile=true", None).await;
    if status != 200 {
        return Err(format!("the reconciling sync answered {status}: {synced}"));
    }
    let kept = &synced["data"][0]["reconcile"]["kept_pending"];
    if kept != 0 {
        return Err(format!("the reconciling sync kept records with local changes waiting: {synced}"));
    }
    Ok(())
}

/// Every invariant; each failure says which.
pub(super) async fn check(world: &World, model: &Model) -> Result<(), String> {
    let upstream = upstream_records(world.client(), &world.odata, "Companies").await;
    let (status, local) = world.api(reqwest::Method::GET, "/api/v1/fieldreport/companies?per_page=500", None).await;
    assert_eq!(status, 200, "{local}");
    let local: BTreeMap<String, Value> = local["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| (record["Id"].as_str().unwrap().to_string(), record.clone()))
        .collect();
    let mut failures = Vec::new();

    // The mirror equals the upstream.
    for (id, up) in &upstream {
        match local.get(id) {
            None => failures.push(format!("mirror: {id} is upstream ({}) but not here", up["Name"])),
            Some(here) => {
                for field in ["Version", "Name", "ExternalId"] {
                    if here[field] != up[field] {
                        failures.push(format!("mirror: {id}.{field} is {} here, {} upstream", here[field], up[field]));
                    }
                }
            }
        }
    }
    for id in local.keys().filter(|id| !upstream.contains_key(*id)) {
        failures.push(format!("mirror: {id} is here but not upstream"));
    }
    // No acknowledged write is lost.
    for (id, (name, version)) in &model.acknowledged {
        match upstream.get(id) {
            None if model.deleted_elsewhere.contains(id) || model.delete_asked.contains(id) => {}
            None => failures.push(format!("lost: {id} (acknowledged {name} at version {version}) is gone upstream")),
            Some(up) => {
                let up_version = up["Version"].as_i64().unwrap_or_default();
                if up_version < *version || (up_version == *version && up["Name"] != json!(name)) {
                    failures.push(format!(
                        "lost: {id} was acknowledged as {name} at version {version}; upstream has {} at {up_version}",
                        up["Name"]
                    ));
                }
            }
        }
    }
    // No acknowledged delete is undone.
    for id in &model.deleted {
        if upstream.contains_key(id) || local.contains_key(id) {
            failures.push(format!(
                "undone: {id} was acknowledged deleted but exists (upstream {}, here {})",
                upstream.contains_key(id),
                local.contains_key(id)
            ));
        }
    }
    // The ERP mirror equals the ERP simulator.
    let (_, customers) = world.erp(reqwest::Method::GET, "/customer?pageSize=1000", None).await;
    let at_erp = erp_versions(&customers);
    let mirrored = mirrored_erp_versions(&world.store, "customer").await;
    if at_erp != mirrored {
        failures.push(format!("erp: the ERP has {at_erp:?}, the mirror {mirrored:?}"));
    }
    // Nothing is stuck: every record accepts a write.
    if failures.is_empty() {
        for id in local.keys() {
            let path = format!("/api/v1/fieldreport/companies/{id}");
            let (status, answer) = world.api(reqwest::Method::PATCH, &path, Some(json!({"Name": "final"}))).await;
            if status != 200 {
                failures.push(format!("stuck: {id} refuses a write: {status} {answer}"));
            }
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}
