//! The `leasing_flows` and `leasing_flow_steps` tables: where each one-shot flow got to.

use crate::store::{Store, StoreError, now_ms};

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FlowStepRow {
    pub position: i32,
    pub action: String,
    pub outcome: String,
    pub duration_ms: i64,
    pub detail: Option<String>,
}

/// A recorded flow.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FlowRow {
    pub id: i64,
    pub user_id: i64,
    pub mode: String,
    pub status: String,
    pub financing_id: Option<String>,
    pub error_code: Option<String>,
    pub message: Option<String>,
    /// Read by a statement of their own.
    #[sqlx(skip)]
    pub steps: Vec<FlowStepRow>,
}

impl Store {
    /// Records a new running flow, under the caller's `Idempotency-Key` when it sent one.
    pub async fn start_flow(&self, user_id: i64, mode: &str, idempotency_key: Option<&str>) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "INSERT INTO leasing_flows (user_id, mode, status, started_at, lease_until, idempotency_key) \
             VALUES ($1, $2, 'running', $3, $4, $5) RETURNING id",
        )
        .bind(user_id)
        .bind(mode)
        .bind(now_ms())
        .bind(self.lease_deadline())
        .bind(idempotency_key)
        .fetch_one(self.pool())
        .await?)
    }

    /// The flow that holds the caller's `Idempotency-Key`, if one does.
    pub async fn flow_by_idempotency_key(&self, user_id: i64, key: &str) -> Result<Option<FlowRow>, StoreError> {
        let id: Option<i64> =
            sqlx::query_scalar("SELECT id FROM leasing_flows WHERE user_id = $1 AND idempotency_key = $2")
                .bind(user_id)
                .bind(key)
                .fetch_optional(self.pool())
                .await?;
        match id {
            Some(id) => self.flow(id).await,
            None => Ok(None),
        }
    }

    /// Names the financing request a running flow created, as soon as it exists.
    pub async fn note_flow_financing_id(&self, flow_id: i64, financing_id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE leasing_flows SET financing_id = $1 WHERE id = $2")
            .bind(financing_id)
            .bind(flow_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Lets go of a flow's `Idempotency-Key` (its create created nothing), so that a retry
    /// with the key runs a new flow.
    pub async fn release_flow_idempotency_key(&self, flow_id: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE leasing_flows SET idempotency_key = NULL WHERE id = $1")
            .bind(flow_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn record_flow_step(
        &self,
        flow_id: i64,
        position: i32,
        action: &str,
        outcome: &str,
        started_at: i64,
        duration_ms: i64,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO leasing_flow_steps (flow_id, position, action, outcome, started_at, duration_ms, detail) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(flow_id)
        .bind(position)
        .bind(action)
        .bind(outcome)
        .bind(started_at)
        .bind(duration_ms)
        .bind(detail)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn finish_flow(
        &self,
        flow_id: i64,
        status: &str,
        financing_id: Option<&str>,
        error_code: Option<&str>,
        message: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE leasing_flows SET status = $1, financing_id = $2, error_code = $3, message = $4, finished_at = $5 WHERE id = $6",
        )
        .bind(status)
        .bind(financing_id)
        .bind(error_code)
        .bind(message)
        .bind(now_ms())
        .bind(flow_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Renews the lease of a running flow (its process is alive).
    pub async fn renew_flow_lease(&self, flow_id: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE leasing_flows SET lease_until = $1 WHERE id = $2 AND status = 'running'")
            .bind(self.lease_deadline())
            .bind(flow_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Marks running flows whose process stopped renewing their lease (it crashed or was
    /// killed) as `interrupted`; their steps show where they stopped. Returns how many.
    pub async fn interrupt_abandoned_flows(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE leasing_flows SET status = 'interrupted', error_code = 'interrupted', \
             message = 'The service stopped while this flow ran; its steps show where it stopped.', finished_at = $1 \
             WHERE status = 'running' AND (lease_until IS NULL OR lease_until < $1)",
        )
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }

    pub async fn flow(&self, flow_id: i64) -> Result<Option<FlowRow>, StoreError> {
        let Some(mut flow) = sqlx::query_as::<_, FlowRow>(
            "SELECT id, user_id, mode, status, financing_id, error_code, message FROM leasing_flows WHERE id = $1",
        )
        .bind(flow_id)
        .fetch_optional(self.pool())
        .await?
        else {
            return Ok(None);
        };
        flow.steps = sqlx::query_as::<_, FlowStepRow>(
            "SELECT position, action, outcome, duration_ms, detail FROM leasing_flow_steps WHERE flow_id = $1 ORDER BY position",
        )
        .bind(flow_id)
        .fetch_all(self.pool())
        .await?;
        Ok(Some(flow))
    }
}
