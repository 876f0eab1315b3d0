//! A consumer of the mirrors' change feeds while a history runs: it copies the companies from
//! their export and the ERP's customers from their feed's start, then follows both feeds after
//! every step (through kills and restarts alike); after each step its copies must equal the
//! mirrors, record for record (docs/api.md, "Copying and following a set").

use crate::common::Api;
use std::collections::BTreeMap;

use serde_json::Value;

use super::World;
use crate::common::contract::Checked;

/// A copy of one set and the position it follows its feed from.
struct Replica {
    /// The feed's path, e.g. `/api/v1/fieldreport/companies/changes`.
    feed: String,
    since: Option<String>,
    records: BTreeMap<String, Value>,
}

pub struct Consumer {
    companies: Replica,
    customers: Replica,
}

impl Replica {
    /// Applies one change item (of a feed page or an export line).
    fn apply(&mut self, item: &Value) -> Result<(), String> {
        let id = item["id"].as_str().ok_or_else(|| format!("a change without an id: {item}"))?.to_string();
        match item["change"].as_str() {
            Some("upsert") => self.records.insert(id, item["record"].clone()),
            Some("delete") => self.records.remove(&id),
            _ => return Err(format!("an unknown change: {item}")),
        };
        Ok(())
    }

    /// Reads the feed from `since` until a page has no change.
    async fn follow(&mut self, world: &World) -> Result<(), String> {
        loop {
            let path = match &self.since {
                Some(since) => format!("{}?since={since}&limit=7", self.feed),
                None => format!("{}?limit=7", self.feed),
            };
            let (status, page) = world.api(reqwest::Method::GET, &path, None).await;
            if status != 200 {
                return Err(format!("{path} answered {status}: {page}"));
            }
            let changes = page["data"].as_array().ok_or_else(|| format!("{path}: {page}"))?;
            for item in changes {
                self.apply(item)?;
            }
            let next = page["next_cursor"].as_str().ok_or_else(|| format!("{path}: no next_cursor: {page}"))?;
            if changes.is_empty() {
                if self.since.as_deref().is_some_and(|since| since != next) {
                    return Err(format!("{path}: an empty page moved the position to {next}"));
                }
                return Ok(());
            }
            self.since = Some(next.to_string());
        }
    }

    fn compare(&self, mirror: &BTreeMap<String, Value>, what: &str) -> Result<(), String> {
        if &self.records == mirror {
            return Ok(());
        }
        let differ: Vec<&String> =
            self.records.keys().chain(mirror.keys()).filter(|id| self.records.get(*id) != mirror.get(*id)).collect();
        Err(format!("the copy of {what} that follows the feed differs from the mirror at {differ:?}"))
    }
}

impl Consumer {
    /// Copies both sets: the companies by their export, the customers by their feed from its
    /// start.
    pub async fn start(world: &World) -> Result<Consumer, String> {
        let mut companies =
            Replica { feed: "/api/v1/fieldreport/companies/changes".into(), since: None, records: BTreeMap::new() };
        let answer = world
            .client()
            .get(world.instance.url("/api/v1/fieldreport/companies/export"))
            .bearer_auth(&world.token)
            .checked()
            .await
            .map_err(|e| format!("the export did not answer: {e}"))?;
        if answer.status() != 200 {
            return Err(format!("the export answered {}", answer.status()));
        }
        let text = answer.text().await.map_err(|e| format!("the export was cut short: {e}"))?;
        let mut lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let end = lines.pop().ok_or("an empty export")?;
        let position = end["next_cursor"].as_str().ok_or_else(|| format!("the export ended with {end}"))?;
        if end["records"].as_u64() != Some(lines.len() as u64) {
            return Err(format!("the export counted {} and sent {} records", end["records"], lines.len()));
        }
        for line in &lines {
            companies.apply(line)?;
        }
        companies.since = Some(position.to_string());
        let customers = Replica { feed: "/api/v1/erp/changes/customer".into(), since: None, records: BTreeMap::new() };
        let mut consumer = Consumer { companies, customers };
        consumer.follow(world).await?;
        Ok(consumer)
    }

    /// Follows both feeds to their ends; the copies must then equal the mirrors. Writes that
    /// go on by themselves (the webhook inbox's worker) may change a mirror while the copies
    /// are compared: the mirrors are read before and after following, and the comparison is
    /// made once they stood still meanwhile.
    pub async fn follow(&mut self, world: &World) -> Result<(), String> {
        for _ in 0..100 {
            let before = mirrors(world).await?;
            self.companies.follow(world).await?;
            self.customers.follow(world).await?;
            let after = mirrors(world).await?;
            if before == after {
                self.companies.compare(&after.0, "the companies")?;
                return self.customers.compare(&after.1, "the customers");
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Err("the mirrors did not stand still for 10 s".into())
    }
}

type Mirrors = (BTreeMap<String, Value>, BTreeMap<String, Value>);

/// The companies and the customers as the mirrors hold them (the customers as shown).
async fn mirrors(world: &World) -> Result<Mirrors, String> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT record_id, document FROM fieldreport_records WHERE entity = 'companies'")
            .fetch_all(world.store.pool())
            .await
            .map_err(|e| e.to_string())?;
    let companies = rows.into_iter().map(|(id, document)| (id, serde_json::from_str(&document).unwrap())).collect();
    let customers = world.store.erp_all("customer").await.map_err(|e| e.to_string())?;
    let customers = customers
        .into_iter()
        .map(|record| (record.id, integration_service::erp::secrets::masked(record.document)))
        .collect();
    Ok((companies, customers))
}
