//! What a background task is: its [`Plan`] (its name, how often it runs, how it stops), what
//! it claims and the work it does with a claim. The driver ([`super::Background`]) runs every
//! task with the same loop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

/// A claim or a run failed; the task logged why. The driver counts it and waits before
/// claiming again.
#[derive(Debug)]
pub struct Failed;

/// How often a task runs.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    /// Claims again at once while it finds work and has room for it; when nothing was due it
    /// waits `idle` (or until woken), after a failure `after_failure`. Up to `at_once` claims
    /// are worked on at a time.
    WhenDue { idle: Duration, after_failure: Duration, at_once: usize },
    /// Runs once per period, the first time at start; a run that takes longer than the period
    /// delays the next one.
    Every(Duration),
}

/// What happens to work in flight when the service stops.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// It is dropped at once; its claims pass on to any instance when their lease runs out.
    Drop,
    /// It is let finish (it sees [`Stopping`] and hands back what it did not start), for at
    /// most `within` when given; then it is dropped.
    Finish { within: Option<Duration> },
}

/// How a task runs, said in one place.
pub struct Plan {
    /// The task's name in the metrics' `task` label.
    pub name: &'static str,
    pub pace: Pace,
    pub stop: Stop,
    /// Wakes the task while it waits for work (work was queued at this instance).
    pub wake: Option<Arc<Notify>>,
}

/// Whether the service is stopping: work that runs to a boundary of its own (a call of the
/// ERP inbox) reads it there.
#[derive(Clone)]
pub struct Stopping(pub(super) watch::Receiver<bool>);

impl Stopping {
    pub fn asked(&self) -> bool {
        *self.0.borrow()
    }
}

/// One kind of background work.
pub trait Task: Send + Sync + 'static {
    /// What one claim took: a job, a batch of rows, a tick.
    type Claim: Send + 'static;

    fn plan(&self) -> Plan;

    /// Claims the work that is due (with a lease in the database, where instances share it);
    /// `None` when nothing is.
    fn claim(&self) -> impl Future<Output = Result<Option<Self::Claim>, Failed>> + Send;

    /// Does the claimed work, and ends its claims (or lets their lease end them).
    fn work(&self, claim: Self::Claim, stopping: &Stopping) -> impl Future<Output = Result<(), Failed>> + Send;

    /// When the claimed work was due (epoch ms), for the task's lag; `None`: when the driver
    /// planned the run (the lag of a run at a period).
    fn due_at(&self, _claim: &Self::Claim) -> Option<i64> {
        None
    }

    /// Runs once the task stopped, after its work in flight ended or was dropped.
    fn stopped(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// A task that claims nothing: it runs at its period on every instance (pruning, flushing what
/// this instance noted), its statements safe to run anywhere at once, and a run in flight at a
/// stop is dropped.
pub trait Chore: Send + Sync + 'static {
    /// The task's name in the metrics' `task` label.
    const NAME: &'static str;

    /// How long from the start of one run to the next; the first runs at start.
    fn every(&self) -> Duration;

    fn run(&self) -> impl Future<Output = Result<(), Failed>> + Send;

    /// Runs once the chore stopped.
    fn stopped(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

impl<C: Chore> Task for C {
    type Claim = ();

    fn plan(&self) -> Plan {
        Plan { name: C::NAME, pace: Pace::Every(self.every()), stop: Stop::Drop, wake: None }
    }

    async fn claim(&self) -> Result<Option<()>, Failed> {
        Ok(Some(()))
    }

    async fn work(&self, (): (), _: &Stopping) -> Result<(), Failed> {
        self.run().await
    }

    fn stopped(&self) -> impl Future<Output = ()> + Send {
        Chore::stopped(self)
    }
}
