use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;

use super::{Background, Failed, Pace, Plan, Stop, Stopping, Task};
use crate::metrics::operations::OperationMatcher;
use crate::metrics::{DatabaseGauges, Metrics};

/// What a probe task saw.
#[derive(Default)]
struct Seen {
    /// Claims still to be found; `usize::MAX`: always one.
    due: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    done: AtomicUsize,
    /// The work saw `Stopping` asked and ended.
    ended_at_stop: AtomicBool,
    stopped: AtomicBool,
}

struct Probe {
    pace: Pace,
    stop: Stop,
    wake: Option<Arc<Notify>>,
    fail_claims: bool,
    /// How long a run works; `None`: until the stop.
    work_for: Option<Duration>,
    seen: Arc<Seen>,
}

impl Probe {
    fn new(pace: Pace, stop: Stop, work_for: Option<Duration>, due: usize) -> (Probe, Arc<Seen>) {
        let seen = Arc::new(Seen { due: AtomicUsize::new(due), ..Default::default() });
        (Probe { pace, stop, wake: None, fail_claims: false, work_for, seen: seen.clone() }, seen)
    }
}

impl Task for Probe {
    type Claim = ();

    fn plan(&self) -> Plan {
        Plan { name: "probe", pace: self.pace, stop: self.stop, wake: self.wake.clone() }
    }

    async fn claim(&self) -> Result<Option<()>, Failed> {
        if self.fail_claims {
            return Err(Failed);
        }
        let taken = self.seen.due.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |due| match due {
            0 => None,
            usize::MAX => Some(usize::MAX),
            due => Some(due - 1),
        });
        Ok(taken.is_ok().then_some(()))
    }

    async fn work(&self, (): (), stopping: &Stopping) -> Result<(), Failed> {
        let now = self.seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.seen.most_in_flight.fetch_max(now, Ordering::SeqCst);
        match self.work_for {
            Some(time) => tokio::time::sleep(time).await,
            None => {
                while !stopping.asked() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                self.seen.ended_at_stop.store(true, Ordering::SeqCst);
            }
        }
        self.seen.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.seen.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn stopped(&self) {
        self.seen.stopped.store(true, Ordering::SeqCst);
    }
}

fn metrics() -> Arc<Metrics> {
    Arc::new(Metrics::new(OperationMatcher::new(&json!({"paths": {}}), &[])))
}

const LONG: Duration = Duration::from_secs(3600);

/// Waits up to a second for `done` runs.
async fn until_done(seen: &Seen, done: usize) {
    for _ in 0..200 {
        if seen.done.load(Ordering::SeqCst) >= done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{} runs of {done}", seen.done.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_task_claims_while_work_is_due_with_at_most_at_once_claims_in_flight() {
    let metrics = metrics();
    let pace = Pace::WhenDue { idle: LONG, after_failure: LONG, at_once: 2 };
    let (probe, seen) = Probe::new(pace, Stop::Drop, Some(Duration::from_millis(20)), 5);
    let mut background = Background::new(metrics.clone());
    background.start(probe);
    until_done(&seen, 5).await;
    assert_eq!(seen.most_in_flight.load(Ordering::SeqCst), 2);
    background.stop().await;
    assert!(seen.stopped.load(Ordering::SeqCst));
    let text = metrics.render(&DatabaseGauges::default());
    assert!(text.contains("integration_background_runs_total{task=\"probe\"} 5\n"), "{text}");
    assert!(text.contains("integration_background_failures_total{task=\"probe\"} 0\n"), "{text}");
    assert!(text.contains("integration_background_lag_seconds{task=\"probe\"} "), "{text}");
}

#[tokio::test]
async fn an_idle_task_is_woken_by_its_wake() {
    let pace = Pace::WhenDue { idle: LONG, after_failure: LONG, at_once: 1 };
    let (mut probe, seen) = Probe::new(pace, Stop::Drop, Some(Duration::ZERO), 0);
    let wake = Arc::new(Notify::new());
    probe.wake = Some(wake.clone());
    let mut background = Background::new(metrics());
    background.start(probe);
    tokio::time::sleep(Duration::from_millis(20)).await;
    seen.due.store(1, Ordering::SeqCst);
    wake.notify_one();
    until_done(&seen, 1).await;
    background.stop().await;
}

#[tokio::test]
async fn a_periodic_task_runs_at_start_and_once_per_period() {
    let (probe, seen) =
        Probe::new(Pace::Every(Duration::from_millis(100)), Stop::Drop, Some(Duration::ZERO), usize::MAX);
    let mut background = Background::new(metrics());
    background.start(probe);
    until_done(&seen, 1).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    let runs = seen.done.load(Ordering::SeqCst);
    assert!((3..=4).contains(&runs), "{runs} runs in 250 ms at a 100 ms period");
    background.stop().await;
}

#[tokio::test]
async fn a_failed_claim_is_counted_and_waits_after_failure() {
    let metrics = metrics();
    let pace = Pace::WhenDue { idle: Duration::ZERO, after_failure: LONG, at_once: 1 };
    let (mut probe, _seen) = Probe::new(pace, Stop::Drop, Some(Duration::ZERO), usize::MAX);
    probe.fail_claims = true;
    let mut background = Background::new(metrics.clone());
    background.start(probe);
    tokio::time::sleep(Duration::from_millis(50)).await;
    background.stop().await;
    let text = metrics.render(&DatabaseGauges::default());
    assert!(text.contains("integration_background_failures_total{task=\"probe\"} 1\n"), "{text}");
    assert!(text.contains("integration_background_runs_total{task=\"probe\"} 0\n"), "{text}");
}

#[tokio::test]
async fn a_stop_drops_work_in_flight_or_lets_it_finish_as_the_plan_says() {
    let pace = Pace::WhenDue { idle: LONG, after_failure: LONG, at_once: 1 };
    let (dropped, dropped_seen) = Probe::new(pace, Stop::Drop, Some(LONG), 1);
    let (finished, finished_seen) = Probe::new(pace, Stop::Finish { within: None }, None, 1);
    let (late, late_seen) = Probe::new(pace, Stop::Finish { within: Some(Duration::from_millis(50)) }, Some(LONG), 1);
    let mut background = Background::new(metrics());
    background.start(dropped);
    background.start(finished);
    background.start(late);
    tokio::time::sleep(Duration::from_millis(30)).await;
    tokio::time::timeout(Duration::from_secs(2), background.stop()).await.expect("the stop ends");
    // Dropped at once, its hook run.
    assert_eq!(dropped_seen.done.load(Ordering::SeqCst), 0);
    assert!(dropped_seen.stopped.load(Ordering::SeqCst));
    // Ended when it saw the stop, then the hook ran.
    assert!(finished_seen.ended_at_stop.load(Ordering::SeqCst));
    assert!(finished_seen.stopped.load(Ordering::SeqCst));
    // Not finished within its time: dropped with its loop.
    assert_eq!(late_seen.done.load(Ordering::SeqCst), 0);
    assert!(!late_seen.stopped.load(Ordering::SeqCst));
}
