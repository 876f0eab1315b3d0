//! The subscriptions to the leasing watcher's events (migration 0024): their receivers, the
//! events they take, their secrets, and who sees them.

use crate::store::columns::{IntBool, SpaceSeparated};
use crate::store::{Store, StoreError};
use crate::vocabulary::owner::Viewer;

/// A subscription as listed (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SubscriptionRow {
    pub id: String,
    pub url: String,
    pub description: Option<String>,
    #[sqlx(try_from = "SpaceSeparated")]
    pub events: Vec<String>,
    pub created_at: i64,
    pub previous_secret_until: Option<i64>,
    pub failing_since: Option<i64>,
    pub disabled_at: Option<i64>,
    /// The user who created it (none: made before subscriptions had owners).
    pub user_id: Option<i64>,
    /// Whether it receives the events of every request, not only its owner's.
    #[sqlx(try_from = "IntBool")]
    pub all_requests: bool,
}

/// Who sees a subscription: its owner; an operator also those without an owner. The
/// condition of [`Viewer`] on `leasing_subscriptions`, its two values bound at `$1`, `$2`.
const VISIBLE: &str = "(user_id = $1 OR (user_id IS NULL AND $2 = 1))";

/// A new subscription.
pub struct NewSubscription<'a> {
    pub id: &'a str,
    pub url: &'a str,
    pub description: Option<&'a str>,
    pub events: &'a [String],
    pub secret: &'a str,
    pub created_at: i64,
    pub user_id: i64,
    pub all_requests: bool,
}

const SUBSCRIPTION_COLUMNS: &str = "id, url, description, events, created_at, previous_secret_until, \
     failing_since, disabled_at, user_id, all_requests";

impl Store {
    /// Stores a subscription unless its user has `most` already (then `None`). Counted and
    /// stored in one transaction that holds the user ([`Store::hold_user`]): subscriptions
    /// asked for at once are counted one after the other.
    pub async fn subscription_insert(
        &self,
        new: &NewSubscription<'_>,
        most: u64,
    ) -> Result<Option<SubscriptionRow>, StoreError> {
        let mut tx = self.write_transaction().await?;
        self.hold_user(&mut tx, new.user_id).await?;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM leasing_subscriptions WHERE user_id = $1")
            .bind(new.user_id)
            .fetch_one(&mut *tx)
            .await?;
        if count.max(0) as u64 >= most {
            return Ok(None);
        }
        let row = sqlx::query_as::<_, SubscriptionRow>(sql!(
            "INSERT INTO leasing_subscriptions (id, url, description, events, secret, created_at, user_id, all_requests) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING {SUBSCRIPTION_COLUMNS}"
        ))
        .bind(new.id)
        .bind(new.url)
        .bind(new.description)
        .bind(new.events.join(" "))
        .bind(new.secret)
        .bind(new.created_at)
        .bind(new.user_id)
        .bind(i64::from(new.all_requests))
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(row))
    }

    /// Up to `limit` of the subscriptions `viewer` sees, oldest first, after the one keyed
    /// `(created_at, id)` (from the oldest without one).
    pub async fn subscriptions_after(
        &self,
        viewer: Viewer,
        after: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<SubscriptionRow>, StoreError> {
        // Without a key: after the least key of all (ids are never empty, times never negative).
        let (created_at, id) = after.unwrap_or((i64::MIN, ""));
        Ok(sqlx::query_as::<_, SubscriptionRow>(sql!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} \
             AND (created_at, id) > ($3, $4) ORDER BY created_at, id LIMIT $5"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(created_at)
        .bind(id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// A page of the subscriptions `viewer` sees, oldest first, and how many there are.
    pub async fn subscriptions(
        &self,
        viewer: Viewer,
        page: u32,
        per_page: u32,
    ) -> Result<(Vec<SubscriptionRow>, i64), StoreError> {
        let total: i64 = sqlx::query_scalar(sql!("SELECT COUNT(*) FROM leasing_subscriptions WHERE {VISIBLE}"))
            .bind(viewer.user_id)
            .bind(i64::from(viewer.operator))
            .fetch_one(self.pool())
            .await?;
        let subscriptions = sqlx::query_as::<_, SubscriptionRow>(sql!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} \
             ORDER BY created_at, id LIMIT $3 OFFSET $4"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(i64::from(per_page))
        .bind(i64::from(page.saturating_sub(1)) * i64::from(per_page))
        .fetch_all(self.pool())
        .await?;
        Ok((subscriptions, total))
    }

    /// How many subscriptions a user has.
    pub async fn subscription_count(&self, user_id: i64) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM leasing_subscriptions WHERE user_id = $1")
            .bind(user_id)
            .fetch_one(self.pool())
            .await?;
        Ok(n.max(0) as u64)
    }

    /// A subscription, when `viewer` sees it.
    pub async fn subscription(&self, viewer: Viewer, id: &str) -> Result<Option<SubscriptionRow>, StoreError> {
        Ok(sqlx::query_as::<_, SubscriptionRow>(sql!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} AND id = $3"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Deletes a subscription `viewer` sees, and its deliveries; false when there was none.
    pub async fn subscription_delete(&self, viewer: Viewer, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.write_transaction().await?;
        let deleted = sqlx::query(sql!("DELETE FROM leasing_subscriptions WHERE {VISIBLE} AND id = $3"))
            .bind(viewer.user_id)
            .bind(i64::from(viewer.operator))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if deleted.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM leasing_deliveries WHERE subscription_id = $1").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Puts `secret` in place; the one it replaces signs alongside it until `previous_until`.
    pub async fn subscription_rotate(
        &self,
        viewer: Viewer,
        id: &str,
        secret: &str,
        previous_until: i64,
    ) -> Result<Option<SubscriptionRow>, StoreError> {
        let _turn = self.write_turn().await?;
        Ok(sqlx::query_as::<_, SubscriptionRow>(sql!(
            "UPDATE leasing_subscriptions SET previous_secret = secret, previous_secret_until = $3, secret = $4 \
             WHERE {VISIBLE} AND id = $5 RETURNING {SUBSCRIPTION_COLUMNS}"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(previous_until)
        .bind(secret)
        .bind(id)
        .fetch_optional(self.pool())
        .await?)
    }
}
