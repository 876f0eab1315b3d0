//! The leasing state watcher. The provider has no webhooks, so the service watches the
//! financing requests it created (or was asked to watch), records every state it reads, and
//! tells subscribers of each change, signed per Standard Webhooks and delivered at least once.
//!
//! - [`Watcher::observe`]: a state read anywhere (the poller, a read or wait route, the flow)
//!   is recorded; a new one is written with its event and deliveries in one transaction
//!   ([`crate::store::leasing::watch`]).
//! - [`poller`]: reads the due watched requests, `LEASING_WATCH_CONCURRENCY` at a time.
//! - [`delivery`]: sends the due deliveries, retries failures with back-off.
//! - [`subscriptions`]: the subscriptions, their secrets and deliveries.
//!
//! Both background tasks claim their rows with leases, so that several instances share the
//! work and a crashed instance's claims are taken over (docs/reliability.md).

pub mod config;
pub mod delivery;
pub mod event;
pub mod owners;
pub mod poller;
pub mod signing;
pub mod subscriptions;
pub mod target;
mod unstarted;

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde_json::Value;

use crate::metrics::{Metrics, ObservationSource};
use crate::store::leasing::watch::{Observed, Recorded, WatchRow};
use crate::store::{Store, StoreError, now_ms};
use crate::vocabulary::field_errors::FieldErrors;
pub use config::WatchConfig;

/// Why a subscription operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("{}", crate::vocabulary::field_errors::describe(.0))]
    Invalid(FieldErrors),
    #[error("There is no subscription {0}.")]
    SubscriptionNotFound(String),
    /// A financing request created (or first watched) through the service by another user.
    #[error("There is no financing request {0}.")]
    RequestNotFound(String),
    #[error("The subscription has no delivery {0}.")]
    DeliveryNotFound(i64),
    #[error("You have {0} subscriptions, the most a user may have; delete one first.")]
    TooManySubscriptions(u64),
    /// The user asked for as many deliveries to be sent again within the last minute as they may.
    #[error(
        "You asked for {most} deliveries to be sent again within a minute, the most a user may; retry in {retry_after_seconds} s."
    )]
    TooManyRetries { most: u64, retry_after_seconds: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The watcher of one instance: records observations and owns the subscriptions. Cheap to
/// clone.
#[derive(Clone)]
pub struct Watcher {
    store: Store,
    config: WatchConfig,
    metrics: Arc<Metrics>,
    /// Wakes this instance's deliverer when a change was recorded here.
    deliveries_queued: Arc<tokio::sync::Notify>,
    /// Requests created here whose watch could not be started yet, with their creators.
    unstarted: unstarted::Unstarted,
}

/// A state of `financing_id` read at `read_at`, as the store records it (the read and the
/// start of a watch record the same).
fn observation<'a>(financing_id: &'a str, request: &'a Value, read_at: i64) -> Observed<'a> {
    let state = crate::leasing::state::canonical(request.get("State").and_then(Value::as_str).unwrap_or_default());
    Observed {
        financing_id,
        request_id: request.get("RequestId").and_then(Value::as_str),
        state,
        terminal: crate::leasing::state::StateMeta::of(state).terminal,
        at: read_at,
    }
}

impl Watcher {
    pub fn new(store: Store, config: WatchConfig, metrics: Arc<Metrics>) -> Watcher {
        Watcher { store, config, metrics, deliveries_queued: Default::default(), unstarted: Default::default() }
    }

    /// Records a state read at `read_at` (epoch ms, when the read started). A change of a
    /// watched request is announced; anything else writes nothing. A failure to record is
    /// reported and left: the read itself succeeded, and the poller reads again.
    pub async fn observe(&self, source: ObservationSource, financing_id: &str, request: &Value, read_at: i64) {
        let observed = observation(financing_id, request, read_at);
        let state = observed.state;
        if state.is_empty() {
            return;
        }
        self.metrics.watch_observed(source);
        let recorded = self
            .store
            .watch_record(&observed, |before: &WatchRow| {
                let request_id = observed.request_id.or(before.request_id.as_deref());
                // Named as the request was first watched, whatever spelling this read used.
                event::state_changed(&before.financing_id, request_id, &before.state, state)
            })
            .await;
        match recorded {
            Ok(Recorded::Changed { deliveries, .. }) => {
                self.metrics.watch_event_recorded();
                if deliveries > 0 {
                    self.deliveries_queued.notify_one();
                }
            }
            Ok(_) => {}
            Err(error) => crate::telemetry::report_internal_error(&format!(
                "leasing watch: the state of {financing_id} was not recorded: {error}"
            )),
        }
    }

    /// Starts watching a request read (or created) at `read_at` for `user_id`, whose
    /// subscriptions receive its events; the watch as recorded (an existing one is kept as it
    /// is, with its owner). A request created here whose watch could not be started then is
    /// its creator's, whoever starts it now ([`Watcher::start_created`]).
    pub async fn start(
        &self,
        financing_id: &str,
        request: &Value,
        read_at: i64,
        user_id: i64,
    ) -> Result<WatchRow, StoreError> {
        let user_id = self.unstarted.creator(financing_id).unwrap_or(user_id);
        let observed = observation(financing_id, request, read_at);
        if !self.store.watch_start(&observed, self.next_poll_at(), user_id).await? {
            // Watched already: what was just read is an observation like any other.
            self.observe(ObservationSource::Read, financing_id, request, read_at).await;
        }
        self.unstarted.started(financing_id);
        self.store
            .watch(financing_id)
            .await?
            .ok_or_else(|| StoreError::Query(format!("the watch of {financing_id} vanished")))
    }

    /// When a request read now is read next: one interval on, plus up to a fifth of it, so
    /// that requests created together spread out.
    fn next_poll_at(&self) -> i64 {
        let interval = self.config.interval.as_millis() as i64;
        now_ms() + interval + rand::rng().random_range(0..=interval / 5)
    }

    /// When a request whose read failed `failures` times in a row is read next: the interval
    /// doubled per failure (up to an hour, or the interval when that is longer), and no sooner
    /// than the provider asked (`Retry-After`).
    fn retry_poll_at(&self, failures: i64, retry_after: Option<Duration>) -> i64 {
        let interval = self.config.interval;
        let ceiling = interval.max(Duration::from_secs(3600));
        let backoff = interval.saturating_mul(1 << failures.clamp(0, 6)).min(ceiling);
        let delay = backoff.max(retry_after.unwrap_or_default());
        now_ms() + delay.as_millis() as i64
    }
}
