//! Held work (a `wait-ready-to-sign`, a one-shot leasing flow) stops early when nobody waits
//! for its answer any more: its client went away, or the service is shutting down.
//!
//! The front notices a client leaving (its connection hung up) and tells the handler through
//! [`Departures`], by the key it gave the request; shutdown is one signal for the whole
//! service. A handler waits on both with [`StopSignal::stopped`] wherever it would sleep.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The header by which the front names a watched request to its handler (set by the front
/// only: a client's own is replaced).
pub const HELD_CALL_HEADER: &str = "x-held-call";

/// Why held work stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    ClientGone,
    ShuttingDown,
}

/// What held work waits on to stop.
#[derive(Clone)]
pub struct StopSignal {
    client: Option<watch::Receiver<bool>>,
    shutdown: watch::Receiver<bool>,
}

impl StopSignal {
    pub fn new(client: Option<watch::Receiver<bool>>, shutdown: watch::Receiver<bool>) -> StopSignal {
        StopSignal { client, shutdown }
    }

    /// A signal that never fires (work run outside a request, in tests).
    pub fn never() -> StopSignal {
        let (sender, shutdown) = watch::channel(false);
        // Kept for the life of the process: a dropped sender would read as "never" anyway,
        // but an explicit one says what is meant.
        std::mem::forget(sender);
        StopSignal { client: None, shutdown }
    }

    /// Resolves when the work should stop; pending for ever when neither happens.
    pub async fn stopped(&mut self) -> Stop {
        let StopSignal { client, shutdown } = self;
        let gone = async {
            if let Some(client) = client {
                let gone = client.wait_for(|gone| *gone).await.is_ok();
                if gone {
                    return Stop::ClientGone;
                }
            }
            std::future::pending().await
        };
        let stopping = async {
            // The guard `wait_for` answers with is let go at once: it may not cross an await.
            let stopped = shutdown.wait_for(|stopping| *stopping).await.is_ok();
            if stopped {
                return Stop::ShuttingDown;
            }
            std::future::pending().await
        };
        tokio::select! {
            stop = gone => stop,
            stop = stopping => stop,
        }
    }
}

/// The requests whose client the front watches, by the key it gave each.
#[derive(Default)]
pub struct Departures {
    watched: Mutex<HashMap<u64, watch::Sender<bool>>>,
}

/// A watched request; it leaves [`Departures`] when dropped.
pub struct Watched {
    departures: Arc<Departures>,
    pub key: u64,
}

impl Departures {
    /// Starts watching a request; its key goes to the handler.
    pub fn watch(self: &Arc<Self>) -> Watched {
        let (sender, _) = watch::channel(false);
        let mut watched = self.watched.lock().expect("departures");
        let key = loop {
            let key = rand::random::<u64>();
            if !watched.contains_key(&key) {
                break key;
            }
        };
        watched.insert(key, sender);
        Watched { departures: self.clone(), key }
    }

    /// The handler's side: told when the request's client has gone.
    pub fn subscribe(&self, key: u64) -> Option<watch::Receiver<bool>> {
        self.watched.lock().expect("departures").get(&key).map(watch::Sender::subscribe)
    }
}

impl Watched {
    /// The client has gone.
    pub fn gone(&self) {
        if let Some(sender) = self.departures.watched.lock().expect("departures").get(&self.key) {
            sender.send_replace(true);
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.departures.watched.lock().expect("departures").remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_departure_and_a_shutdown_each_stop_the_work() {
        let departures = Arc::new(Departures::default());
        let (shutdown, shutdown_rx) = watch::channel(false);
        let watched = departures.watch();
        let mut signal = StopSignal::new(departures.subscribe(watched.key), shutdown_rx.clone());
        watched.gone();
        assert_eq!(signal.stopped().await, Stop::ClientGone);
        let mut other = StopSignal::new(None, shutdown_rx);
        shutdown.send_replace(true);
        assert_eq!(other.stopped().await, Stop::ShuttingDown);
        drop(watched);
        assert!(departures.subscribe(1).is_none() && departures.watched.lock().unwrap().is_empty());
    }
}
