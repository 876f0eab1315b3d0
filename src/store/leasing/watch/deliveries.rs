//! The deliveries of the leasing watcher's events to their subscriptions (migration 0024):
//! claimed with a lease like jobs, in order per subscription and financing request, their
//! attempts recorded, listed and retried.

use sqlx::Row;

use crate::store::lease::DueClaim;
use crate::store::rates::{Rated, take_turn_on};
use crate::store::{Store, StoreError, now_ms};

/// One delivery as listed.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: i64,
    pub subscription_id: String,
    pub event_id: String,
    pub financing_id: String,
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub last_attempt_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// What a retry asked for came to.
#[derive(Debug)]
pub enum Retried {
    /// Queued: the delivery as it is now.
    Queued(DeliveryRow),
    /// The subscription has no such delivery.
    NotFound,
    /// The user asked for as many retries within the last minute as they may.
    TooFast { retry_after_seconds: u64 },
}

/// A claimed delivery with what sending it needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryWork {
    pub id: i64,
    pub subscription_id: String,
    pub attempts: i64,
    pub created_at: i64,
    /// When it became the next of its subscription and request to send: its creation, or
    /// when the one before it ended. Its retries are timed from here, so that one held behind
    /// a failing delivery is not failed after a single attempt.
    pub in_line_since: i64,
    pub event_id: String,
    pub payload: String,
    pub event_created_at: i64,
}

/// Where a delivery goes and what signs it, read when it is sent: a subscription rotated,
/// disabled or deleted after its deliveries were claimed is sent to as it is then.
#[derive(Debug, Clone)]
pub struct DeliveryTarget {
    pub url: String,
    pub secret: String,
    /// The secret before a rotation, while it still signs.
    pub previous_secret: Option<String>,
    /// Disabled (after failing for five days): nothing more is sent to it.
    pub disabled: bool,
}

/// When a failed attempt disables its subscription, and why.
#[derive(Debug, Clone)]
pub struct Disable<'a> {
    /// The subscription is disabled when it began failing before this (epoch ms).
    pub failing_before: i64,
    /// Recorded as the error of its deliveries that were still pending.
    pub why: &'a str,
}

/// How an attempt ended.
#[derive(Debug, Clone)]
pub enum AttemptOutcome<'a> {
    Delivered {
        status_code: i64,
    },
    /// Failed; `next_attempt_at` `None` ends the delivery as failed.
    Failed {
        status_code: Option<i64>,
        error: &'a str,
        next_attempt_at: Option<i64>,
    },
}

/// A delivery (named `alias`) that may be claimed now: pending, due, and not claimed by
/// anyone whose claim still runs.
fn claimable(alias: &str) -> String {
    format!(
        "{alias}.status = 'pending' AND {alias}.next_attempt_at <= $1 \
         AND ({alias}.lease_until IS NULL OR {alias}.lease_until < $1)"
    )
}

/// The ids of up to `$4` due deliveries by turns of their subscriptions' owners: each due
/// delivery ranked among its owner's by age (subscriptions without owner, the operators', are
/// one owner), then taken rank by rank, the oldest first within a rank. Due: claimable, and no
/// older pending delivery of its subscription and financing request left.
fn due_by_turns() -> String {
    let claimable = claimable("w");
    format!(
        "SELECT ranked.id FROM (SELECT w.id, w.next_attempt_at, \
         ROW_NUMBER() OVER (PARTITION BY s.user_id ORDER BY w.next_attempt_at, w.id) AS turn \
         FROM leasing_deliveries w LEFT JOIN leasing_subscriptions s ON s.id = w.subscription_id \
         WHERE {claimable} AND NOT EXISTS (SELECT 1 FROM leasing_deliveries o \
         WHERE o.subscription_id = w.subscription_id AND o.financing_id = w.financing_id \
         AND o.status = 'pending' AND o.id < w.id)) ranked \
         ORDER BY ranked.turn, ranked.next_attempt_at, ranked.id LIMIT $4"
    )
}

const DELIVERY_COLUMNS: &str = "d.id, d.subscription_id, e.id AS event_id, d.financing_id, d.status, d.attempts, \
     d.last_status_code, d.last_error, d.next_attempt_at, d.created_at, d.last_attempt_at, d.finished_at";

impl Store {
    /// Claims up to `limit` due deliveries for `owner` until `until`: pending ones whose time
    /// came and behind which no older pending delivery of the same subscription and financing
    /// request waits (so that each request's events arrive in order). They are taken by turns
    /// of their subscriptions' owners ([`due_by_turns`]): each owner's oldest, then each one's
    /// second oldest, and so on, so that one user's backlog does not hold back another's
    /// deliveries. `owner` must name this claim alone (the deliverer takes a new one per
    /// claim): the claimed rows are read back by it, in the same turns.
    pub async fn delivery_claim_due(
        &self,
        owner: &str,
        until: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryWork>, StoreError> {
        // Claimable said again outside the ranking: on Postgres the ranked rows are locked only
        // here (a window is not computed over rows it locks), and a row another instance
        // claimed meanwhile is read again as that claim left it, and skipped.
        let due = format!("d.id IN ({}) AND {}", due_by_turns(), claimable("d"));
        let set = "lease_owner = $2, lease_until = $3";
        let claim = DueClaim { from: "leasing_deliveries d", key: "d.id", due: &due, set, returning: "" };
        let statement = claim.statement(self.dialect());
        {
            let _turn = self.write_turn().await?;
            sqlx::query(statement)
                .persistent(false)
                .bind(now_ms())
                .bind(owner)
                .bind(until)
                .bind(limit)
                .execute(self.pool())
                .await?;
        }
        // One read for the whole claim: `owner` names this claim alone.
        Ok(sqlx::query_as::<_, DeliveryWork>(
            "SELECT d.id, d.subscription_id, d.attempts, d.created_at, e.id AS event_id, e.payload, \
             e.created_at AS event_created_at, COALESCE((SELECT MAX(o.finished_at) FROM leasing_deliveries o \
             WHERE o.subscription_id = d.subscription_id AND o.financing_id = d.financing_id AND o.id < d.id \
             AND o.finished_at > d.created_at), d.created_at) AS in_line_since \
             FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             LEFT JOIN leasing_subscriptions s ON s.id = d.subscription_id \
             WHERE d.lease_owner = $1 AND d.status = 'pending' \
             ORDER BY ROW_NUMBER() OVER (PARTITION BY s.user_id ORDER BY d.next_attempt_at, d.id), d.next_attempt_at, d.id",
        )
        .persistent(false)
        .bind(owner)
        .fetch_all(self.pool())
        .await?)
    }

    /// Where a delivery to `subscription_id` goes now and what signs it; `None` once the
    /// subscription was deleted (its deliveries with it).
    pub async fn delivery_target(&self, subscription_id: &str) -> Result<Option<DeliveryTarget>, StoreError> {
        let row = sqlx::query(
            "SELECT url, secret, previous_secret, previous_secret_until, disabled_at \
             FROM leasing_subscriptions WHERE id = $1",
        )
        .bind(subscription_id)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let previous_until: Option<i64> = row.try_get("previous_secret_until")?;
        let previous_secret: Option<String> = row.try_get("previous_secret")?;
        Ok(Some(DeliveryTarget {
            url: row.try_get("url")?,
            secret: row.try_get("secret")?,
            previous_secret: previous_secret.filter(|_| previous_until.is_some_and(|until| until > now_ms())),
            disabled: row.try_get::<Option<i64>, _>("disabled_at")?.is_some(),
        }))
    }

    /// Records one attempt of a delivery claimed by `owner`, and what it means for its
    /// subscription: a success ends its failing; a failure begins it, and disables the
    /// subscription (failing its pending deliveries) when it began before
    /// `disable.failing_before`. True when the subscription was disabled by this attempt.
    pub async fn delivery_record(
        &self,
        work: &DeliveryWork,
        owner: &str,
        outcome: &AttemptOutcome<'_>,
        disable: &Disable<'_>,
    ) -> Result<bool, StoreError> {
        match *outcome {
            AttemptOutcome::Delivered { status_code } => {
                self.delivery_delivered(work, owner, status_code).await.map(|()| false)
            }
            AttemptOutcome::Failed { status_code, error, next_attempt_at } => {
                self.delivery_failed(work, owner, status_code, error, next_attempt_at, disable).await
            }
        }
    }

    /// The common case, without a transaction: the delivery, then the end of its
    /// subscription's failing, which another attempt may have begun after this one was
    /// claimed (a beginning left behind would disable it at the next failure). The second
    /// statement changes nothing while the subscription is not failing.
    async fn delivery_delivered(&self, work: &DeliveryWork, owner: &str, status_code: i64) -> Result<(), StoreError> {
        let now = now_ms();
        let _turn = self.write_turn().await?;
        sqlx::query(
            "UPDATE leasing_deliveries SET status = 'delivered', attempts = attempts + 1, last_status_code = $1, \
             last_error = NULL, next_attempt_at = NULL, last_attempt_at = $2, finished_at = $2, \
             lease_owner = NULL, lease_until = NULL WHERE id = $3 AND lease_owner = $4",
        )
        .bind(status_code)
        .bind(now)
        .bind(work.id)
        .bind(owner)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "UPDATE leasing_subscriptions SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL",
        )
        .bind(&work.subscription_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A failed attempt: the delivery is due again at `next_attempt_at`, or failed without one.
    /// An attempt that failed after its delivery stopped being pending (the subscription was
    /// disabled meanwhile) leaves it as it is.
    async fn delivery_failed(
        &self,
        work: &DeliveryWork,
        owner: &str,
        status_code: Option<i64>,
        error: &str,
        next_attempt_at: Option<i64>,
        disable: &Disable<'_>,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut tx = self.write_transaction().await?;
        sqlx::query(
            "UPDATE leasing_deliveries SET status = $1, attempts = attempts + 1, last_status_code = $2, \
             last_error = $3, next_attempt_at = $4, last_attempt_at = $5, \
             finished_at = CASE WHEN $1 = 'pending' THEN NULL ELSE $5 END, lease_owner = NULL, lease_until = NULL \
             WHERE id = $6 AND lease_owner = $7 AND status = 'pending'",
        )
        .bind(if next_attempt_at.is_some() { "pending" } else { "failed" })
        .bind(status_code)
        .bind(error)
        .bind(next_attempt_at)
        .bind(now)
        .bind(work.id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE leasing_subscriptions SET failing_since = $1 WHERE id = $2 AND failing_since IS NULL")
            .bind(now)
            .bind(&work.subscription_id)
            .execute(&mut *tx)
            .await?;
        let disabling = sqlx::query(
            "UPDATE leasing_subscriptions SET disabled_at = $1 \
             WHERE id = $2 AND disabled_at IS NULL AND failing_since <= $3",
        )
        .bind(now)
        .bind(&work.subscription_id)
        .bind(disable.failing_before)
        .execute(&mut *tx)
        .await?;
        let disabled = disabling.rows_affected() == 1;
        if disabled {
            sqlx::query(
                "UPDATE leasing_deliveries SET status = 'failed', finished_at = $1, last_error = $3 \
                 WHERE subscription_id = $2 AND status = 'pending'",
            )
            .bind(now)
            .bind(&work.subscription_id)
            .bind(disable.why)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(disabled)
    }

    /// Up to `limit` of a subscription's deliveries, newest first, older than delivery
    /// `before` (from the newest without one): a walk of `leasing_deliveries_by_subscription`
    /// from the key, whatever its depth.
    pub async fn deliveries_before(
        &self,
        subscription_id: &str,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        Ok(sqlx::query_as::<_, DeliveryRow>(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3"
        ))
        .bind(subscription_id)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// A subscription's deliveries, newest first: `limit` after the newest `skip`.
    pub async fn deliveries_of(
        &self,
        subscription_id: &str,
        limit: i64,
        skip: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        Ok(sqlx::query_as::<_, DeliveryRow>(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 ORDER BY d.id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(subscription_id)
        .bind(limit)
        .bind(skip)
        .fetch_all(self.pool())
        .await?)
    }

    pub async fn delivery(&self, subscription_id: &str, id: i64) -> Result<Option<DeliveryRow>, StoreError> {
        Ok(sqlx::query_as::<_, DeliveryRow>(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 AND d.id = $2"
        ))
        .bind(subscription_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Sends a delivery again (whatever its status): pending, due now, as `user_id` asked,
    /// who may ask for `per_minute` a minute ([`Retried::TooFast`] beyond, and nothing
    /// changes). Counted in the transaction that queues it (under the user's row lock on
    /// Postgres, in the write turn on SQLite): retries asked for at once pass no count
    /// together. The user's rows older than the minute counted go at the same time.
    pub async fn delivery_retry(
        &self,
        subscription_id: &str,
        id: i64,
        user_id: i64,
        per_minute: u64,
    ) -> Result<Retried, StoreError> {
        let now = now_ms();
        {
            let mut tx = self.write_transaction().await?;
            self.hold_user(&mut tx, user_id).await?;
            if let Some(seconds) = take_turn_on(&mut tx, Rated::DeliveryRetries, user_id, per_minute).await? {
                return Ok(Retried::TooFast { retry_after_seconds: seconds });
            }
            let queued = sqlx::query(
                "UPDATE leasing_deliveries SET status = 'pending', next_attempt_at = $1, finished_at = NULL \
                 WHERE subscription_id = $2 AND id = $3",
            )
            .bind(now)
            .bind(subscription_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            // Dropped, the transaction takes the turn back.
            if queued.rows_affected() == 0 {
                return Ok(Retried::NotFound);
            }
            tx.commit().await?;
        }
        Ok(self.delivery(subscription_id, id).await?.map_or(Retried::NotFound, Retried::Queued))
    }

    /// Deliveries by status, and the oldest pending one's creation (epoch ms), for the metrics.
    pub async fn delivery_depths(&self) -> Result<(Vec<(String, i64)>, Option<i64>), StoreError> {
        let counts =
            sqlx::query_as("SELECT status, COUNT(*) AS n FROM leasing_deliveries GROUP BY status ORDER BY status")
                .fetch_all(self.pool())
                .await?;
        let oldest =
            sqlx::query_scalar("SELECT MIN(created_at) AS oldest FROM leasing_deliveries WHERE status = 'pending'")
                .fetch_one(self.pool())
                .await?;
        Ok((counts, oldest))
    }
}
