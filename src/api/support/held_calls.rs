//! Calls held open for minutes (`wait-ready-to-sign`, the one-shot leasing flow): at most
//! `MAX_HELD_CALLS_PER_USER` at once per user (whatever tokens they use: each login mints a
//! new one), counted on this instance, so that one caller cannot fill the service with waits
//! (429 with `Retry-After` beyond); and each stops
//! early when its client goes away or the service shuts down (see [`crate::stop`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::stop::{Departures, StopSignal};

pub struct HeldCalls {
    per_user: usize,
    open: Mutex<HashMap<i64, usize>>,
    pub departures: Arc<Departures>,
    shutdown: watch::Receiver<bool>,
}

/// A held call's place; given back when dropped.
pub struct HeldCall {
    calls: Arc<HeldCalls>,
    user_id: i64,
}

impl HeldCalls {
    pub fn new(per_user: usize, departures: Arc<Departures>, shutdown: watch::Receiver<bool>) -> Arc<HeldCalls> {
        Arc::new(HeldCalls { per_user, open: Mutex::default(), departures, shutdown })
    }

    pub fn per_user(&self) -> usize {
        self.per_user
    }

    /// A place for one more held call of `user_id`, or `None` when it holds its most.
    pub fn take(self: &Arc<Self>, user_id: i64) -> Option<HeldCall> {
        let mut open = self.open.lock().expect("held calls");
        let count = open.entry(user_id).or_insert(0);
        if *count >= self.per_user {
            return None;
        }
        *count += 1;
        Some(HeldCall { calls: self.clone(), user_id })
    }

    /// What the call with the front's key (`None` when the front watches none) stops on.
    pub fn stop_signal(&self, key: Option<u64>) -> StopSignal {
        StopSignal::new(key.and_then(|key| self.departures.subscribe(key)), self.shutdown.clone())
    }
}

impl Drop for HeldCall {
    fn drop(&mut self) {
        let mut open = self.calls.open.lock().expect("held calls");
        if let Some(count) = open.get_mut(&self.user_id) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user_id);
            }
        }
    }
}
