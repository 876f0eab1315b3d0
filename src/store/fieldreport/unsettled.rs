//! Marks of forwarded field-report writes whose outcome is unknown (migration 0020).
//!
//! When the upstream gave no definite answer to a forwarded create or update and reading it
//! back failed too, the record is marked: the next update of it reads the upstream first, the
//! next create with the same `ExternalId` looks for an earlier arrival first, and a completed
//! sync of the set settles the update marks made before it started (it stored whatever the
//! upstream has). See docs/architecture.md, "Data rules".

use crate::store::{Store, StoreError, now_ms};

/// The key of a create's mark: known by its `ExternalId` only (the upstream assigns the Id).
const CREATE: &str = "";

const MARK: &str = "INSERT INTO fieldreport_unsettled (entity, record_id, external_id, since) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (entity, record_id, external_id) DO UPDATE SET since = EXCLUDED.since";
const MARKED: &str =
    "SELECT since FROM fieldreport_unsettled WHERE entity = $1 AND record_id = $2 AND external_id = $3";
const SETTLE: &str = "DELETE FROM fieldreport_unsettled WHERE entity = $1 AND record_id = $2 AND external_id = $3";
const SETTLE_UPDATES_BEFORE: &str =
    "DELETE FROM fieldreport_unsettled WHERE entity = $1 AND record_id <> '' AND since < $2";

impl Store {
    /// Marks an update of `id` whose outcome is unknown.
    pub async fn mark_update_unsettled(&self, entity: &str, id: &str) -> Result<(), StoreError> {
        self.mark(entity, id, "").await
    }

    /// Marks a create (known by its `ExternalId`) whose outcome is unknown.
    pub async fn mark_create_unsettled(&self, entity: &str, external_id: &str) -> Result<(), StoreError> {
        self.mark(entity, CREATE, external_id).await
    }

    pub async fn update_unsettled(&self, entity: &str, id: &str) -> Result<bool, StoreError> {
        self.marked(entity, id, "").await
    }

    pub async fn create_unsettled(&self, entity: &str, external_id: &str) -> Result<bool, StoreError> {
        self.marked(entity, CREATE, external_id).await
    }

    pub async fn settle_update(&self, entity: &str, id: &str) -> Result<(), StoreError> {
        self.settle(entity, id, "").await
    }

    pub async fn settle_create(&self, entity: &str, external_id: &str) -> Result<(), StoreError> {
        self.settle(entity, CREATE, external_id).await
    }

    /// After a completed sync of `entity` that started at `started_ms`: the updates marked
    /// before it are settled (the sync stored what the upstream has of them).
    pub async fn settle_updates_before(&self, entity: &str, started_ms: i64) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(SETTLE_UPDATES_BEFORE).bind(entity).bind(started_ms).execute(self.pool()).await?;
        Ok(())
    }

    async fn mark(&self, entity: &str, id: &str, external_id: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(MARK).bind(entity).bind(id).bind(external_id).bind(now_ms()).execute(self.pool()).await?;
        Ok(())
    }

    async fn marked(&self, entity: &str, id: &str, external_id: &str) -> Result<bool, StoreError> {
        let since: Option<i64> =
            sqlx::query_scalar(MARKED).bind(entity).bind(id).bind(external_id).fetch_optional(self.pool()).await?;
        Ok(since.is_some())
    }

    async fn settle(&self, entity: &str, id: &str, external_id: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(SETTLE).bind(entity).bind(id).bind(external_id).execute(self.pool()).await?;
        Ok(())
    }
}
