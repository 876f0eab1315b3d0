//! The leasing state watcher's tables (migration 0024): subscriptions, watched financing
//! requests, the outbox of events and their deliveries.
//!
//! A new observed state is recorded with its event and the event's deliveries in one
//! transaction ([`Store::watch_record`]), so that a change is announced once and never lost.
//! Due watches and due deliveries are claimed with a lease like jobs ([`Store::job_claim`]):
//! on Postgres with `FOR UPDATE SKIP LOCKED`, so that instances claiming together take
//! different rows; on SQLite in the write turn. A claim that is not finished (the instance
//! died) is claimable again once its lease ran out.

use sqlx::{FromRow, Row};

use crate::store::columns::IntBool;
use crate::store::lease::DueClaim;
use crate::store::{Dialect, Store, StoreError, now_ms};
pub use crate::vocabulary::owner::Viewer;
pub use deliveries::{AttemptOutcome, DeliveryRow, DeliveryTarget, DeliveryWork, Disable, Retried};
pub use subscriptions::{NewSubscription, SubscriptionRow};

pub mod deliveries;
pub mod subscriptions;

/// A watched financing request.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct WatchRow {
    pub financing_id: String,
    pub request_id: Option<String>,
    pub state: String,
    pub observed_at: i64,
    #[sqlx(try_from = "IntBool")]
    pub terminal: bool,
    pub next_poll_at: Option<i64>,
    pub failures: i64,
    /// Since when the provider has answered that it does not have the request (404, 410).
    pub gone_since: Option<i64>,
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

// UNCACHED: the claims run from the first second of an empty database on, and Postgres keeps
// a prepared statement's generic plan once it chose one. Chosen over empty tables, the
// deliveries' claim was a nested loop of scans: 35 s over 20,000 pending deliveries (2.3 s
// seen during `cargo xtask bench --db postgres --scenario leasing-watch`, where the
// deliverer fell to 20 events/s). So the claims are not kept prepared (`persistent(false)`):
// Postgres plans each with the table as it is, for about a millisecond per claim.
const WATCH_COLUMNS: &str =
    "financing_id, request_id, state, observed_at, terminal, next_poll_at, failures, gone_since";
/// A watch by the id `$1` in any case, through the unique index of migration 0037.
const BY_ID: &str = "lower(financing_id) = lower($1)";

impl Store {
    /// Starts watching a request in `state` (no event: nothing changed yet) for `user_id`,
    /// whose subscriptions receive its events; false when it is watched already, under this
    /// spelling of its id or another (the provider's ids are UUIDs, one id in any case: a
    /// second watch announced every change twice; migration 0037 keeps one per request).
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
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
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

    /// The watch of a request, by its id in any case; its `financing_id` is spelled as when
    /// it was first watched.
    pub async fn watch(&self, financing_id: &str) -> Result<Option<WatchRow>, StoreError> {
        Ok(sqlx::query_as::<_, WatchRow>(sql!("SELECT {WATCH_COLUMNS} FROM leasing_watches WHERE {BY_ID}"))
            .bind(financing_id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Records an observed state. A new state is written with its event (built by `event`
    /// from the previous state) and one pending delivery per active subscription that wants
    /// the event's type, in one transaction; the same state again writes nothing. The change
    /// is the watch's, under the spelling of its id it was first watched with.
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
        let row = sqlx::query(sql!("SELECT {WATCH_COLUMNS}, user_id FROM leasing_watches WHERE {BY_ID}{lock}"))
            .bind(observed.financing_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else { return Ok(Recorded::NotWatched) };
        let watch = WatchRow::from_row(&row)?;
        let watch_owner: Option<i64> = row.try_get("user_id")?;
        if watch.state == observed.state {
            return Ok(Recorded::Unchanged);
        }
        if watch.observed_at > observed.at {
            return Ok(Recorded::Stale);
        }
        let event = event(&watch);
        sqlx::query(
            "UPDATE leasing_watches SET state = $1, observed_at = $2, terminal = $3, \
             request_id = COALESCE($4, request_id), gone_since = NULL, \
             next_poll_at = CASE WHEN $3 = 1 THEN NULL ELSE COALESCE(next_poll_at, $6) END \
             WHERE financing_id = $5",
        )
        .bind(observed.state)
        .bind(observed.at)
        .bind(i64::from(observed.terminal))
        .bind(observed.request_id)
        .bind(&watch.financing_id)
        // A request that left a terminal state (the provider reopened it), or whose reads
        // ended while the provider said it was gone, is polled again.
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO leasing_events (id, financing_id, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING seq",
        )
        .bind(&event.id)
        .bind(&watch.financing_id)
        .bind(&event.payload)
        .bind(event.created_at)
        .fetch_one(&mut *tx)
        .await?;
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
            .bind(&watch.financing_id)
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
        let set = "lease_owner = $2, lease_until = $3";
        let claim = DueClaim { from: "leasing_watches", key: "financing_id", due, set, returning: WATCH_COLUMNS };
        let statement = claim.statement(self.dialect());
        let _turn = self.write_turn().await?;
        // Planned at every run (see `UNCACHED`).
        Ok(sqlx::query_as::<_, WatchRow>(statement)
            .persistent(false)
            .bind(now_ms())
            .bind(owner)
            .bind(until)
            .bind(limit)
            .fetch_all(self.pool())
            .await?)
    }

    /// Ends `owner`'s claim of a watch: next read at `next_poll_at` (none once terminal, or
    /// without one: the reads end), after `failures` failed reads in a row, the provider
    /// saying it does not have the request since `gone_since`.
    pub async fn watch_reschedule(
        &self,
        financing_id: &str,
        owner: &str,
        next_poll_at: Option<i64>,
        failures: i64,
        gone_since: Option<i64>,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await?;
        sqlx::query(
            "UPDATE leasing_watches SET next_poll_at = CASE WHEN terminal = 1 THEN NULL ELSE $1 END, \
             failures = $2, gone_since = $5, lease_owner = NULL, lease_until = NULL \
             WHERE financing_id = $3 AND lease_owner = $4",
        )
        .bind(next_poll_at)
        .bind(failures)
        .bind(financing_id)
        .bind(owner)
        .bind(gone_since)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Watched requests: (still read, no longer read: terminal, or gone at the provider).
    pub async fn watch_counts(&self) -> Result<(i64, i64), StoreError> {
        let rows = sqlx::query(
            "SELECT CASE WHEN next_poll_at IS NULL THEN 1 ELSE 0 END AS ended, COUNT(*) AS n \
             FROM leasing_watches GROUP BY 1",
        )
        .fetch_all(self.pool())
        .await?;
        let (mut active, mut ended) = (0, 0);
        for row in &rows {
            let n: i64 = row.try_get("n")?;
            if row.try_get::<i64, _>("ended")? == 0 { active += n } else { ended += n }
        }
        Ok((active, ended))
    }
}

#[cfg(test)]
mod tests;
