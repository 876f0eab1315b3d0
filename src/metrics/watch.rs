//! The metrics of the leasing state watcher: observations by source, events recorded and
//! delivery attempts at this instance, how long after its change an event was delivered;
//! and, read from the database when scraped, the watched requests and the deliveries by
//! status (the outbox's depth is the pending ones).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::exposition::Exposition;
use super::timing::Timing;

/// Where a state read came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservationSource {
    /// The watcher's poller.
    Poll,
    /// A route's read: show, a change, create, watch.
    Read,
    /// A read of `wait-ready-to-sign` or the one-shot flow's wait.
    Wait,
}

impl ObservationSource {
    const ALL: [ObservationSource; 3] = [ObservationSource::Poll, ObservationSource::Read, ObservationSource::Wait];

    fn label(self) -> &'static str {
        match self {
            ObservationSource::Poll => "poll",
            ObservationSource::Read => "read",
            ObservationSource::Wait => "wait",
        }
    }
}

/// The watcher's counters of one instance.
#[derive(Default)]
pub struct WatchMetrics {
    observations: [AtomicU64; ObservationSource::ALL.len()],
    events: AtomicU64,
    /// Attempts: delivered, failed.
    attempts: [Timing; 2],
    /// From the change's event to its delivery.
    latency: Timing,
}

/// What the scrape reads from the database for the watcher.
#[derive(Debug, Clone, Default)]
pub struct WatchGauges {
    /// Watched requests: still watched, ended (terminal).
    pub watched: (i64, i64),
    /// Deliveries by status.
    pub deliveries: Vec<(String, i64)>,
    /// When the oldest pending delivery was created (epoch ms).
    pub oldest_pending: Option<i64>,
}

impl WatchMetrics {
    pub fn observed(&self, source: ObservationSource) {
        let s = ObservationSource::ALL.iter().position(|s| *s == source).expect("every source is listed");
        self.observations[s].fetch_add(1, Ordering::Relaxed);
    }

    pub fn event_recorded(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    pub fn attempted(&self, delivered: bool, elapsed: Duration, latency: Option<Duration>) {
        self.attempts[usize::from(!delivered)].observe(elapsed);
        if let Some(latency) = latency {
            self.latency.observe(latency);
        }
    }

    pub fn render(&self, out: &mut Exposition, gauges: Option<&WatchGauges>) {
        let name = "integration_leasing_watch_observations_total";
        out.family(
            name,
            "counter",
            "States of watched financing requests read at this instance, by source (poll: the watcher, read: a route, wait: wait-ready-to-sign or the flow).",
        );
        for (source, count) in ObservationSource::ALL.iter().zip(&self.observations) {
            out.sample(name, &[("source", source.label())], count.load(Ordering::Relaxed));
        }
        let name = "integration_leasing_watch_events_total";
        out.family(name, "counter", "State changes recorded at this instance (each one event in the outbox).");
        out.sample(name, &[], self.events.load(Ordering::Relaxed));
        let name = "integration_leasing_delivery_attempts_total";
        out.family(name, "counter", "Delivery attempts made at this instance, by outcome (delivered: a 2xx; failed).");
        for (outcome, timing) in ["delivered", "failed"].iter().zip(&self.attempts) {
            out.sample(name, &[("outcome", outcome)], timing.count());
        }
        let name = "integration_leasing_delivery_latency_seconds";
        out.family(
            name,
            "histogram",
            "From a state change's event to its delivery (the 2xx), for deliveries made at this instance.",
        );
        out.histogram(name, &[], &self.latency.snapshot());
        let Some(gauges) = gauges else { return };
        let name = "integration_leasing_watched_requests";
        out.family(name, "gauge", "Financing requests watched (still polled) and ended (terminal), across instances.");
        out.sample(name, &[("status", "watched")], gauges.watched.0);
        out.sample(name, &[("status", "ended")], gauges.watched.1);
        let name = "integration_leasing_events";
        out.family(
            name,
            "gauge",
            "Deliveries of events to subscriptions by status (pending, delivered, failed), across instances; pending is the outbox's depth.",
        );
        for status in ["pending", "delivered", "failed"] {
            let count = gauges.deliveries.iter().find(|(s, _)| s == status).map_or(0, |(_, n)| *n);
            out.sample(name, &[("status", status)], count);
        }
        let name = "integration_leasing_outbox_oldest_pending_age_seconds";
        out.family(name, "gauge", "Age of the oldest pending delivery (0 when none is pending).");
        let age = gauges.oldest_pending.map_or(0.0, |at| (crate::store::now_ms() - at).max(0) as f64 / 1000.0);
        out.sample(name, &[], age);
    }
}
