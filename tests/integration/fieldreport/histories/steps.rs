//! One step of a history run against the service, its simulators and the database; the model
//! follows what each promised.

use crate::common::Api;
use crate::common::add_fault;
use crate::common::contract::Checked;
use serde_json::json;
use std::time::Duration;

use super::convergence::{sync_guarantee, sync_guarantee_except};
use super::*;

/// Runs one step; `n` names the values it writes. A broken promise of an answer is an `Err`.
pub(super) async fn run_step(world: &mut World, model: &mut Model, n: usize, step: &Step) -> Result<(), String> {
    use reqwest::Method;
    let name = format!("v{n}");
    match step {
        Step::Create => {
            let body = json!({"Id": "0", "Version": 1, "Name": name, "ExternalId": format!("H-{n}")});
            let (mut status, mut answer) =
                world.api(Method::POST, "/api/v1/fieldreport/companies", Some(body.clone())).await;
            if status >= 500 {
                (status, answer) = world.api(Method::POST, "/api/v1/fieldreport/companies", Some(body)).await;
                if status != 201 {
                    return Err(format!("step {n}: a create sent again after a failure answered {status}: {answer}"));
                }
            }
            if status == 201 {
                let id = answer["data"]["Id"].as_str().unwrap_or_default().to_string();
                model.acknowledged.insert(id.clone(), (name, 1));
                model.companies.push(id);
            }
        }
        Step::Update { pick: p } => {
            let Some(id) = pick(&model.companies, *p) else { return Ok(()) };
            let path = format!("/api/v1/fieldreport/companies/{id}");
            let body = json!({"Name": name});
            let (mut status, mut answer) = world.api(Method::PATCH, &path, Some(body.clone())).await;
            if status >= 500 || status == 409 {
                let first = (status, answer.clone());
                (status, answer) = world.api(Method::PATCH, &path, Some(body)).await;
                if status != 200 && status != 404 {
                    return Err(format!(
                        "step {n}: an update of {id} sent again after {first:?} answered {status}: {answer}"
                    ));
                }
            }
            if status == 200 {
                let version = answer["data"]["Version"].as_i64().unwrap_or_default();
                model.acknowledged.insert(id, (name, version));
            }
        }
        Step::Delete { pick: p } => {
            let Some(id) = pick(&model.companies, *p) else { return Ok(()) };
            let path = format!("/api/v1/fieldreport/companies/{id}");
            let (mut status, _) = world.api(Method::DELETE, &path, None).await;
            if status >= 500 {
                let (again, answer) = world.api(Method::DELETE, &path, None).await;
                // After an unknown outcome the record is deleted here already (pending): 404.
                if again != 204 && again != 404 {
                    return Err(format!("step {n}: a delete of {id} sent again answered {again}: {answer}"));
                }
                status = again;
            }
            if status == 204 {
                model.acknowledged.remove(&id);
                model.deleted.insert(id);
            } else {
                model.delete_asked.insert(id);
            }
        }
        Step::OtherEdit { pick: p } => {
            let Some(id) = pick(&model.companies, *p) else { return Ok(()) };
            let (status, mut record) = world.upstream(Method::GET, &format!("Companies({id}L)"), None).await;
            if status == 200 {
                record["Name"] = json!(format!("other-{n}"));
                record["Version"] = json!(record["Version"].as_i64().unwrap_or_default() + 1);
                world.upstream(Method::PUT, &format!("Companies({id}L)"), Some(record)).await;
            }
        }
        Step::OtherDelete { pick: p } => {
            let Some(id) = pick(&model.companies, *p) else { return Ok(()) };
            if world.upstream(Method::DELETE, &format!("Companies({id}L)"), None).await.0 == 204 {
                model.deleted_elsewhere.insert(id);
            }
        }
        Step::ErpCreate => {
            let body = json!({"customerNumber": format!("3{n:05}"), "company": name, "partyType": "ORGANIZATION"});
            let (status, answer) = world.erp(Method::POST, "/customer", Some(body)).await;
            assert_eq!(status, 201, "the ERP simulator creates: {answer}");
            let id = answer["id"].as_str().unwrap().to_string();
            world.webhook(&id, "created").await;
            model.customers.push(id);
        }
        Step::ErpUpdate { pick: p } => {
            let Some(id) = pick(&model.customers, *p) else { return Ok(()) };
            let path = format!("/customer/id/{id}?ignoreMissingProperties=true");
            world.erp(Method::PUT, &path, Some(json!({"company": name}))).await;
            world.webhook(&id, "updated").await;
        }
        Step::ErpDelete { pick: p } => {
            let Some(id) = pick(&model.customers, *p) else { return Ok(()) };
            world.erp(Method::DELETE, &format!("/customer/id/{id}"), None).await;
            world.webhook(&id, "deleted").await;
            model.customers.retain(|c| *c != id);
        }
        Step::Sync { reconcile } => {
            let query = if *reconcile { "?reconcile=true" } else { "" };
            let (status, _) = world.api(Method::GET, &format!("/api/v1/fieldreport/sync/companies{query}"), None).await;
            if status == 200 {
                sync_guarantee(world, *reconcile).await.map_err(|failure| format!("step {n}: {failure}"))?;
            }
        }
        Step::SyncWhileEdited { picks } => {
            let touch: Vec<String> = [picks.0, picks.1].iter().filter_map(|p| pick(&model.companies, *p)).collect();
            // After the first page of records (the sync's first query, for records never
            // modified, answers none).
            world.simulator("during-list", json!({"set": "Companies", "after_pages": 2, "touch": touch})).await;
            let (status, _) = world.api(Method::GET, "/api/v1/fieldreport/sync/companies", None).await;
            // A script not used up (the sync failed first) must not fire in a later step.
            world.simulator("during-list", json!({"set": "Companies", "after_pages": 1, "touch": []})).await;
            // The records changed while the sync paged were committed after it began: the
            // guarantee holds them for the next sync (a stamp of whole seconds may fall behind
            // the key this one reached).
            if status == 200 {
                sync_guarantee_except(world, false, &touch).await.map_err(|failure| format!("step {n}: {failure}"))?;
            }
        }
        Step::SlowSync => {
            // Three calls: a sync of a small set asks for the records never modified (none),
            // reads one page and the empty query that ends it.
            let rule = json!({"path_prefix": "/odata/Companies", "status": 200, "delay_ms": 150, "times": 3});
            add_fault(world.client(), &world.odata, rule).await;
            let (status, _) = world.api(Method::GET, "/api/v1/fieldreport/sync/companies", None).await;
            if status == 200 {
                sync_guarantee(world, false).await.map_err(|failure| format!("step {n}: {failure}"))?;
            }
        }
        Step::CoarseStamps(coarse) => {
            world.simulator("behaviour", json!({"stamps": if *coarse { "seconds" } else { "micros" }})).await;
        }
        Step::LateCommit { pick: p, seconds } => {
            let mut late = json!({"set": "Companies", "ago_seconds": seconds});
            if let Some(id) = p.and_then(|p| pick(&model.companies, p)) {
                late["id"] = json!(id);
                // A record deleted meanwhile (404) has nothing to change.
                let (status, answer) = world.simulator_call("late", late).await;
                assert!(status == 200 || status == 404, "late: {status} {answer}");
            } else {
                let record = world.simulator("late", late).await;
                model.companies.push(record["Id"].as_str().unwrap().to_string());
            }
        }
        Step::Post => {
            world.api(Method::GET, "/api/v1/fieldreport/post/2", None).await;
        }
        Step::Fault(kind) => world.fault(*kind).await,
        Step::Kill { during_write, pick: p } => {
            let id = pick(&model.companies, *p);
            match (during_write, id) {
                (true, Some(id)) => {
                    // The write reaches the upstream, which holds its answer; the process dies.
                    world.fault(FaultKind::LostAnswer).await;
                    let request = world
                        .client()
                        .patch(world.instance.url(&format!("/api/v1/fieldreport/companies/{id}")))
                        .bearer_auth(&world.token)
                        .json(&json!({"Name": name}))
                        .checked();
                    let in_flight = tokio::spawn(request);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    world.restart();
                    let _ = in_flight.await;
                }
                _ => world.restart(),
            }
        }
    }
    Ok(())
}
