//! The leasing state watcher's tables (migration 0024): subscriptions, watched financing
//! requests, the outbox of events and their deliveries.
//!
//! A new observed state is recorded with its event and the event's deliveries in one
//! transaction ([`Store::watch_record`]), so that a change is announced once and never lost.
//! Due watches and due deliveries are claimed with a lease like jobs ([`Store::job_claim`]):
//! on Postgres with `FOR UPDATE SKIP LOCKED`, so that instances claiming together take
//! different rows; on SQLite in the write turn. A claim that is not finished (the instance
//! died) is claimable again once its lease ran out.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::store::{Dialect, Store, StoreError, now_ms};
pub use crate::vocabulary::owner::Viewer;

/// A subscription as listed (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRow {
    pub id: String,
    pub url: String,
    pub description: Option<String>,
    pub events: Vec<String>,
    pub created_at: i64,
    pub previous_secret_until: Option<i64>,
    pub failing_since: Option<i64>,
    pub disabled_at: Option<i64>,
    /// The user who created it (none: made before subscriptions had owners).
    pub user_id: Option<i64>,
    /// Whether it receives the events of every request, not only its owner's.
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

/// A watched financing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRow {
    pub financing_id: String,
    pub request_id: Option<String>,
    pub state: String,
    pub observed_at: i64,
    pub terminal: bool,
    pub next_poll_at: Option<i64>,
    pub failures: i64,
}

/// A state read at the provider.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    pub financing_id: &'a str,
    pub request_id: Option<&'a str>,
    pub state: &'a str,
    pub terminal: bool,
    /// When the read started (epoch ms): an observation older than the recorded one is stale.
    pub at: i64,
}

/// The event of one change, built from the previous state.
pub struct NewEvent {
    pub id: String,
    pub event_type: &'static str,
    pub payload: String,
    pub created_at: i64,
}

/// What recording an observation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The request is not watched.
    NotWatched,
    /// The state is the recorded one: no event.
    Unchanged,
    /// A newer observation was recorded already: this one is ignored.
    Stale,
    /// The new state, its event (`id`) and how many deliveries were queued.
    Changed { event_id: String, deliveries: u64 },
}

/// One delivery as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// A claimed delivery with what sending it needs.
#[derive(Debug, Clone)]
pub struct DeliveryWork {
    pub id: i64,
    pub subscription_id: String,
    pub attempts: i64,
    pub created_at: i64,
    pub event_id: String,
    pub payload: String,
    pub event_created_at: i64,
    pub url: String,
    pub secret: String,
    /// The secret before a rotation, while it still signs.
    pub previous_secret: Option<String>,
    /// Whether the subscription's deliveries were failing when this one was claimed.
    pub subscription_failing: bool,
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

// UNCACHED: the claims run from the first second of an empty database on, and Postgres keeps
// a prepared statement's generic plan once it chose one. Chosen over empty tables, the
// deliveries' claim was a nested loop of scans: 35 s over 20,000 pending deliveries (2.3 s
// seen during `cargo xtask bench --db postgres --scenario leasing-watch`, where the
// deliverer fell to 20 events/s). So the claims are not kept prepared (`persistent(false)`):
// Postgres plans each with the table as it is, for about a millisecond per claim.
const SUBSCRIPTION_COLUMNS: &str = "id, url, description, events, created_at, previous_secret_until, \
     failing_since, disabled_at, user_id, all_requests";
const WATCH_COLUMNS: &str = "financing_id, request_id, state, observed_at, terminal, next_poll_at, failures";
const DELIVERY_COLUMNS: &str = "d.id, d.subscription_id, e.id AS event_id, d.financing_id, d.status, d.attempts, \
     d.last_status_code, d.last_error, d.next_attempt_at, d.created_at, d.last_attempt_at, d.finished_at";

fn subscription_row(row: &AnyRow) -> Result<SubscriptionRow, StoreError> {
    let events: String = row.try_get("events")?;
    Ok(SubscriptionRow {
        id: row.try_get("id")?,
        url: row.try_get("url")?,
        description: row.try_get("description")?,
        events: events.split_whitespace().map(str::to_string).collect(),
        created_at: row.try_get("created_at")?,
        previous_secret_until: row.try_get("previous_secret_until")?,
        failing_since: row.try_get("failing_since")?,
        disabled_at: row.try_get("disabled_at")?,
        user_id: row.try_get("user_id")?,
        all_requests: row.try_get::<i64, _>("all_requests")? != 0,
    })
}

fn watch_row(row: &AnyRow) -> Result<WatchRow, StoreError> {
    Ok(WatchRow {
        financing_id: row.try_get("financing_id")?,
        request_id: row.try_get("request_id")?,
        state: row.try_get("state")?,
        observed_at: row.try_get("observed_at")?,
        terminal: row.try_get::<i64, _>("terminal")? != 0,
        next_poll_at: row.try_get("next_poll_at")?,
        failures: row.try_get("failures")?,
    })
}

fn delivery_row(row: &AnyRow) -> Result<DeliveryRow, StoreError> {
    Ok(DeliveryRow {
        id: row.try_get("id")?,
        subscription_id: row.try_get("subscription_id")?,
        event_id: row.try_get("event_id")?,
        financing_id: row.try_get("financing_id")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        last_status_code: row.try_get("last_status_code")?,
        last_error: row.try_get("last_error")?,
        next_attempt_at: row.try_get("next_attempt_at")?,
        created_at: row.try_get("created_at")?,
        last_attempt_at: row.try_get("last_attempt_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

impl Store {
    pub async fn subscription_insert(&self, new: &NewSubscription<'_>) -> Result<SubscriptionRow, StoreError> {
        let _turn = self.write_turn().await?;
        let row = sqlx::query(sql!(
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
        .fetch_one(self.pool())
        .await?;
        subscription_row(&row)
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
        let rows = sqlx::query(sql!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} \
             AND (created_at, id) > ($3, $4) ORDER BY created_at, id LIMIT $5"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(created_at)
        .bind(id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(subscription_row).collect()
    }

    /// A page of the subscriptions `viewer` sees, oldest first, and how many there are.
    pub async fn subscriptions(
        &self,
        viewer: Viewer,
        page: u32,
        per_page: u32,
    ) -> Result<(Vec<SubscriptionRow>, i64), StoreError> {
        let total: i64 = sqlx::query(sql!("SELECT COUNT(*) AS n FROM leasing_subscriptions WHERE {VISIBLE}"))
            .bind(viewer.user_id)
            .bind(i64::from(viewer.operator))
            .fetch_one(self.pool())
            .await?
            .try_get("n")?;
        let rows = sqlx::query(sql!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} \
             ORDER BY created_at, id LIMIT $3 OFFSET $4"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(i64::from(per_page))
        .bind(i64::from(page.saturating_sub(1)) * i64::from(per_page))
        .fetch_all(self.pool())
        .await?;
        Ok((rows.iter().map(subscription_row).collect::<Result<_, _>>()?, total))
    }

    /// How many subscriptions a user has.
    pub async fn subscription_count(&self, user_id: i64) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM leasing_subscriptions WHERE user_id = $1")
            .bind(user_id)
            .fetch_one(self.pool())
            .await?
            .try_get("n")?;
        Ok(n.max(0) as u64)
    }

    /// A subscription, when `viewer` sees it.
    pub async fn subscription(&self, viewer: Viewer, id: &str) -> Result<Option<SubscriptionRow>, StoreError> {
        let row =
            sqlx::query(sql!("SELECT {SUBSCRIPTION_COLUMNS} FROM leasing_subscriptions WHERE {VISIBLE} AND id = $3"))
                .bind(viewer.user_id)
                .bind(i64::from(viewer.operator))
                .bind(id)
                .fetch_optional(self.pool())
                .await?;
        row.as_ref().map(subscription_row).transpose()
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
        let row = sqlx::query(sql!(
            "UPDATE leasing_subscriptions SET previous_secret = secret, previous_secret_until = $3, secret = $4 \
             WHERE {VISIBLE} AND id = $5 RETURNING {SUBSCRIPTION_COLUMNS}"
        ))
        .bind(viewer.user_id)
        .bind(i64::from(viewer.operator))
        .bind(previous_until)
        .bind(secret)
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(subscription_row).transpose()
    }

    /// Starts watching a request in `state` (no event: nothing changed yet) for `user_id`,
    /// whose subscriptions receive its events; false when it is watched already.
    pub async fn watch_start(
        &self,
        observed: &Observed<'_>,
        next_poll_at: i64,
        user_id: i64,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await?;
        let inserted = sqlx::query(
            "INSERT INTO leasing_watches \
             (financing_id, request_id, state, observed_at, terminal, next_poll_at, created_at, user_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (financing_id) DO NOTHING",
        )
        .bind(observed.financing_id)
        .bind(observed.request_id)
        .bind(observed.state)
        .bind(observed.at)
        .bind(i64::from(observed.terminal))
        .bind((!observed.terminal).then_some(next_poll_at))
        .bind(now_ms())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        Ok(inserted.rows_affected() == 1)
    }

    pub async fn watch(&self, financing_id: &str) -> Result<Option<WatchRow>, StoreError> {
        let row = sqlx::query(sql!("SELECT {WATCH_COLUMNS} FROM leasing_watches WHERE financing_id = $1"))
            .bind(financing_id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(watch_row).transpose()
    }

    /// Records an observed state. A new state is written with its event (built by `event`
    /// from the previous state) and one pending delivery per active subscription that wants
    /// the event's type, in one transaction; the same state again writes nothing.
    pub async fn watch_record(
        &self,
        observed: &Observed<'_>,
        event: impl FnOnce(&WatchRow) -> NewEvent,
    ) -> Result<Recorded, StoreError> {
        // Most observations repeat the recorded state: one read, no write.
        match self.watch(observed.financing_id).await? {
            None => return Ok(Recorded::NotWatched),
            Some(watch) if watch.state == observed.state => return Ok(Recorded::Unchanged),
            Some(watch) if watch.observed_at > observed.at => return Ok(Recorded::Stale),
            Some(_) => {}
        }
        let lock = match self.dialect() {
            Dialect::Postgres => " FOR UPDATE",
            Dialect::Sqlite => "",
        };
        let mut tx = self.write_transaction().await?;
        // Read again under the lock: another observer may have recorded this change meanwhile.
        let row =
            sqlx::query(sql!("SELECT {WATCH_COLUMNS}, user_id FROM leasing_watches WHERE financing_id = $1{lock}"))
                .bind(observed.financing_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(watch) = row.as_ref().map(watch_row).transpose()? else { return Ok(Recorded::NotWatched) };
        let watch_owner: Option<i64> = row.as_ref().map(|r| r.try_get("user_id")).transpose()?.flatten();
        if watch.state == observed.state {
            return Ok(Recorded::Unchanged);
        }
        if watch.observed_at > observed.at {
            return Ok(Recorded::Stale);
        }
        let event = event(&watch);
        sqlx::query(
            "UPDATE leasing_watches SET state = $1, observed_at = $2, terminal = $3, \
             request_id = COALESCE($4, request_id), \
             next_poll_at = CASE WHEN $3 = 1 THEN NULL ELSE next_poll_at END \
             WHERE financing_id = $5",
        )
        .bind(observed.state)
        .bind(observed.at)
        .bind(i64::from(observed.terminal))
        .bind(observed.request_id)
        .bind(observed.financing_id)
        .execute(&mut *tx)
        .await?;
        let seq: i64 = sqlx::query(
            "INSERT INTO leasing_events (id, financing_id, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING seq",
        )
        .bind(&event.id)
        .bind(observed.financing_id)
        .bind(&event.payload)
        .bind(event.created_at)
        .fetch_one(&mut *tx)
        .await?
        .try_get("seq")?;
        // The owner's subscriptions, and those for every request.
        let subscribers = sqlx::query(
            "SELECT id, events FROM leasing_subscriptions \
             WHERE disabled_at IS NULL AND (all_requests = 1 OR user_id = $1) ORDER BY id",
        )
        .bind(watch_owner)
        .fetch_all(&mut *tx)
        .await?;
        let mut deliveries = 0;
        for subscriber in &subscribers {
            let events: String = subscriber.try_get("events")?;
            if !events.split_whitespace().any(|t| t == event.event_type) {
                continue;
            }
            let id: String = subscriber.try_get("id")?;
            sqlx::query(
                "INSERT INTO leasing_deliveries \
                 (subscription_id, event_seq, financing_id, status, next_attempt_at, created_at) \
                 VALUES ($1, $2, $3, 'pending', $4, $4)",
            )
            .bind(&id)
            .bind(seq)
            .bind(observed.financing_id)
            .bind(event.created_at)
            .execute(&mut *tx)
            .await?;
            deliveries += 1;
        }
        tx.commit().await?;
        Ok(Recorded::Changed { event_id: event.id, deliveries })
    }

    /// Claims up to `limit` watches due for a read for `owner` until `until`.
    pub async fn watch_claim_due(&self, owner: &str, until: i64, limit: i64) -> Result<Vec<WatchRow>, StoreError> {
        let due = "next_poll_at <= $1 AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_poll_at LIMIT $4";
        let statement = match self.dialect() {
            Dialect::Postgres => sql!(
                "WITH picked AS MATERIALIZED (SELECT financing_id FROM leasing_watches WHERE {due} \
                 FOR UPDATE SKIP LOCKED) \
                 UPDATE leasing_watches SET lease_owner = $2, lease_until = $3 FROM picked \
                 WHERE leasing_watches.financing_id = picked.financing_id RETURNING {}",
                WATCH_COLUMNS.split(", ").map(|c| format!("leasing_watches.{c}")).collect::<Vec<_>>().join(", ")
            ),
            Dialect::Sqlite => sql!(
                "UPDATE leasing_watches SET lease_owner = $2, lease_until = $3 \
                 WHERE financing_id IN (SELECT financing_id FROM leasing_watches WHERE {due}) RETURNING {WATCH_COLUMNS}"
            ),
        };
        let _turn = self.write_turn().await?;
        // Planned at every run (see `UNCACHED`).
        let rows = sqlx::query(statement)
            .persistent(false)
            .bind(now_ms())
            .bind(owner)
            .bind(until)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(watch_row).collect()
    }

    /// Ends `owner`'s claim of a watch: next read at `next_poll_at` (none once terminal),
    /// after `failures` failed reads in a row.
    pub async fn watch_reschedule(
        &self,
        financing_id: &str,
        owner: &str,
        next_poll_at: i64,
        failures: i64,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(
            "UPDATE leasing_watches SET next_poll_at = CASE WHEN terminal = 1 THEN NULL ELSE $1 END, \
             failures = $2, lease_owner = NULL, lease_until = NULL \
             WHERE financing_id = $3 AND lease_owner = $4",
        )
        .bind(next_poll_at)
        .bind(failures)
        .bind(financing_id)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Watched requests: (still watched, terminal).
    pub async fn watch_counts(&self) -> Result<(i64, i64), StoreError> {
        let rows = sqlx::query("SELECT terminal, COUNT(*) AS n FROM leasing_watches GROUP BY terminal")
            .fetch_all(self.pool())
            .await?;
        let (mut active, mut ended) = (0, 0);
        for row in &rows {
            let n: i64 = row.try_get("n")?;
            if row.try_get::<i64, _>("terminal")? == 0 { active += n } else { ended += n }
        }
        Ok((active, ended))
    }

    /// Claims up to `limit` due deliveries for `owner` until `until`: pending ones whose time
    /// came and behind which no older pending delivery of the same subscription and financing
    /// request waits (so that each request's events arrive in order). `owner` must name this
    /// claim alone (the deliverer takes a new one per claim): the claimed rows are read back by it.
    pub async fn delivery_claim_due(
        &self,
        owner: &str,
        until: i64,
        limit: i64,
    ) -> Result<Vec<DeliveryWork>, StoreError> {
        let due = "d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until < $1) \
                   AND NOT EXISTS (SELECT 1 FROM leasing_deliveries o WHERE o.subscription_id = d.subscription_id \
                   AND o.financing_id = d.financing_id AND o.status = 'pending' AND o.id < d.id) \
                   ORDER BY d.next_attempt_at, d.id LIMIT $4";
        let statement = match self.dialect() {
            Dialect::Postgres => sql!(
                "WITH picked AS MATERIALIZED (SELECT d.id FROM leasing_deliveries d WHERE {due} \
                 FOR UPDATE OF d SKIP LOCKED) \
                 UPDATE leasing_deliveries SET lease_owner = $2, lease_until = $3 FROM picked \
                 WHERE leasing_deliveries.id = picked.id"
            ),
            Dialect::Sqlite => sql!(
                "UPDATE leasing_deliveries SET lease_owner = $2, lease_until = $3 \
                 WHERE id IN (SELECT d.id FROM leasing_deliveries d WHERE {due})"
            ),
        };
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
        let rows = sqlx::query(
            "SELECT d.id, d.subscription_id, d.attempts, d.created_at, e.id AS event_id, e.payload, \
             e.created_at AS event_created_at, s.url, s.secret, s.previous_secret, s.previous_secret_until, \
             s.failing_since FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             JOIN leasing_subscriptions s ON s.id = d.subscription_id \
             WHERE d.lease_owner = $1 AND d.status = 'pending' ORDER BY d.next_attempt_at, d.id",
        )
        .persistent(false)
        .bind(owner)
        .fetch_all(self.pool())
        .await?;
        let mut work = Vec::with_capacity(rows.len());
        for row in &rows {
            let previous_until: Option<i64> = row.try_get("previous_secret_until")?;
            let previous_secret: Option<String> = row.try_get("previous_secret")?;
            work.push(DeliveryWork {
                id: row.try_get("id")?,
                subscription_id: row.try_get("subscription_id")?,
                attempts: row.try_get("attempts")?,
                created_at: row.try_get("created_at")?,
                event_id: row.try_get("event_id")?,
                payload: row.try_get("payload")?,
                event_created_at: row.try_get("event_created_at")?,
                url: row.try_get("url")?,
                secret: row.try_get("secret")?,
                previous_secret: previous_secret.filter(|_| previous_until.is_some_and(|until| until > now_ms())),
                subscription_failing: row.try_get::<Option<i64>, _>("failing_since")?.is_some(),
            });
        }
        Ok(work)
    }

    /// Records one attempt of a delivery claimed by `owner`, and what it means for its
    /// subscription: a success clears `failing_since`; a failure sets it, and disables the
    /// subscription (failing its pending deliveries) when it was set before `disable_before`.
    /// True when the subscription was disabled by this attempt.
    pub async fn delivery_record(
        &self,
        work: &DeliveryWork,
        owner: &str,
        outcome: &AttemptOutcome<'_>,
        disable_before: i64,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        if let AttemptOutcome::Delivered { status_code } = outcome
            && !work.subscription_failing
        {
            // The common case, one statement: nothing to change at the subscription.
            let _turn = self.write_turn().await?;
            sqlx::query(
                "UPDATE leasing_deliveries SET status = 'delivered', attempts = attempts + 1, last_status_code = $1, \
                 last_error = NULL, next_attempt_at = NULL, last_attempt_at = $2, finished_at = $2, \
                 lease_owner = NULL, lease_until = NULL WHERE id = $3 AND lease_owner = $4",
            )
            .bind(*status_code)
            .bind(now)
            .bind(work.id)
            .bind(owner)
            .execute(self.pool())
            .await?;
            return Ok(false);
        }
        let mut tx = self.write_transaction().await?;
        let (status, code, error, next) = match outcome {
            AttemptOutcome::Delivered { status_code } => ("delivered", Some(*status_code), None, None),
            AttemptOutcome::Failed { status_code, error, next_attempt_at: Some(next) } => {
                ("pending", *status_code, Some(*error), Some(*next))
            }
            AttemptOutcome::Failed { status_code, error, next_attempt_at: None } => {
                ("failed", *status_code, Some(*error), None)
            }
        };
        sqlx::query(
            "UPDATE leasing_deliveries SET status = $1, attempts = attempts + 1, last_status_code = $2, \
             last_error = $3, next_attempt_at = $4, last_attempt_at = $5, \
             finished_at = CASE WHEN $1 = 'pending' THEN NULL ELSE $5 END, lease_owner = NULL, lease_until = NULL \
             WHERE id = $6 AND lease_owner = $7",
        )
        .bind(status)
        .bind(code)
        .bind(error)
        .bind(next)
        .bind(now)
        .bind(work.id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        let mut disabled = false;
        if status == "delivered" {
            sqlx::query(
                "UPDATE leasing_subscriptions SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL",
            )
            .bind(&work.subscription_id)
            .execute(&mut *tx)
            .await?;
        } else {
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
            .bind(disable_before)
            .execute(&mut *tx)
            .await?;
            if disabling.rows_affected() == 1 {
                disabled = true;
                sqlx::query(
                    "UPDATE leasing_deliveries SET status = 'failed', finished_at = $1, \
                     last_error = 'the subscription was disabled after failing for five days' \
                     WHERE subscription_id = $2 AND status = 'pending'",
                )
                .bind(now)
                .bind(&work.subscription_id)
                .execute(&mut *tx)
                .await?;
            }
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
        let rows = sqlx::query(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3"
        ))
        .bind(subscription_id)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(delivery_row).collect()
    }

    /// A subscription's deliveries, newest first: `limit` after the newest `skip`.
    pub async fn deliveries_of(
        &self,
        subscription_id: &str,
        limit: i64,
        skip: i64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let rows = sqlx::query(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 ORDER BY d.id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(subscription_id)
        .bind(limit)
        .bind(skip)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(delivery_row).collect()
    }

    pub async fn delivery(&self, subscription_id: &str, id: i64) -> Result<Option<DeliveryRow>, StoreError> {
        let row = sqlx::query(sql!(
            "SELECT {DELIVERY_COLUMNS} FROM leasing_deliveries d JOIN leasing_events e ON e.seq = d.event_seq \
             WHERE d.subscription_id = $1 AND d.id = $2"
        ))
        .bind(subscription_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(delivery_row).transpose()
    }

    /// Sends a delivery again (whatever its status): pending, due now.
    pub async fn delivery_retry(&self, subscription_id: &str, id: i64) -> Result<Option<DeliveryRow>, StoreError> {
        {
            let _turn = self.write_turn().await?;
            sqlx::query(
                "UPDATE leasing_deliveries SET status = 'pending', next_attempt_at = $1, finished_at = NULL \
                 WHERE subscription_id = $2 AND id = $3",
            )
            .bind(now_ms())
            .bind(subscription_id)
            .bind(id)
            .execute(self.pool())
            .await?;
        }
        self.delivery(subscription_id, id).await
    }

    /// Deliveries by status, and the oldest pending one's creation (epoch ms), for the metrics.
    pub async fn delivery_depths(&self) -> Result<(Vec<(String, i64)>, Option<i64>), StoreError> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM leasing_deliveries GROUP BY status ORDER BY status")
            .fetch_all(self.pool())
            .await?;
        let counts = rows
            .iter()
            .map(|row| Ok((row.try_get("status")?, row.try_get("n")?)))
            .collect::<Result<_, StoreError>>()?;
        let oldest: Option<i64> =
            sqlx::query("SELECT MIN(created_at) AS oldest FROM leasing_deliveries WHERE status = 'pending'")
                .fetch_one(self.pool())
                .await?
                .try_get("oldest")?;
        Ok((counts, oldest))
    }
}

#[cfg(test)]
mod tests;
