//! Calls held open for minutes (`wait-ready-to-sign`, the one-shot leasing flow): at most
//! `MAX_HELD_CALLS_PER_USER` at once per user (whatever tokens they use: each login mints a
//! new one), counted on this instance ([`PerUser`]), so that one caller cannot fill the
//! service with waits (429 with `Retry-After` beyond); and each stops
//! early when its client goes away or the service shuts down (see [`crate::stop`]).

use std::sync::Arc;

use tokio::sync::watch;

use crate::api::support::per_user::{PerUser, Place};
use crate::stop::{Departures, StopSignal};

pub struct HeldCalls {
    places: Arc<PerUser>,
    pub departures: Arc<Departures>,
    shutdown: watch::Receiver<bool>,
}

/// A held call's place; given back when dropped.
pub type HeldCall = Place;

impl HeldCalls {
    pub fn new(per_user: usize, departures: Arc<Departures>, shutdown: watch::Receiver<bool>) -> Arc<HeldCalls> {
        Arc::new(HeldCalls { places: PerUser::new(per_user), departures, shutdown })
    }

    pub fn per_user(&self) -> usize {
        self.places.most()
    }

    /// A place for one more held call of `user_id`, or `None` when it holds its most.
    pub fn take(&self, user_id: i64) -> Option<HeldCall> {
        self.places.take(user_id)
    }

    /// What the call with the front's key (`None` when the front watches none) stops on.
    pub fn stop_signal(&self, key: Option<u64>) -> StopSignal {
        StopSignal::new(key.and_then(|key| self.departures.subscribe(key)), self.shutdown.clone())
    }
}
