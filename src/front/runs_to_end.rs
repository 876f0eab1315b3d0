//! Handlers run to their end: a request is handled in the front's task, and when hyper lets
//! go of it early (the client left), what is left of the handler runs on in a task of its
//! own, so that no handler stops halfway between an upstream call and storing its outcome.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::Notify;

/// Handlers that run on after their client left; shutdown waits for them.
#[derive(Default)]
pub struct Remainders {
    running: AtomicUsize,
    changed: Notify,
}

impl Remainders {
    /// Waits until no remainder runs.
    pub async fn all_done(&self) {
        loop {
            let changed = self.changed.notified();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            changed.await;
        }
    }
}

/// A handler's future, polled in place; dropped before it ends, it is spawned to finish.
pub struct RunsToEnd<F: Future + Send + 'static>
where
    F::Output: Send,
{
    /// Boxed so that it can move to a task of its own when dropped.
    handler: Option<Pin<Box<F>>>,
    remainders: Arc<Remainders>,
}

impl<F: Future + Send + 'static> RunsToEnd<F>
where
    F::Output: Send,
{
    pub fn new(handler: F, remainders: &Arc<Remainders>) -> Self {
        RunsToEnd { handler: Some(Box::pin(handler)), remainders: remainders.clone() }
    }
}

impl<F: Future + Send + 'static> Future for RunsToEnd<F>
where
    F::Output: Send,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let handler = self.handler.as_mut().expect("polled after it was ready");
        let ready = handler.as_mut().poll(cx);
        if ready.is_ready() {
            self.handler = None;
        }
        ready
    }
}

impl<F: Future + Send + 'static> Drop for RunsToEnd<F>
where
    F::Output: Send,
{
    fn drop(&mut self) {
        let Some(handler) = self.handler.take() else { return };
        // Outside a runtime (it is shutting down) there is nothing left to run it on.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let remainders = self.remainders.clone();
        remainders.running.fetch_add(1, Ordering::AcqRel);
        runtime.spawn(async move {
            let _ = handler.await;
            remainders.running.fetch_sub(1, Ordering::AcqRel);
            remainders.changed.notify_waiters();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handler_dropped_early_runs_to_its_end() {
        let remainders = Arc::new(Remainders::default());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let (finished, has_finished) = tokio::sync::oneshot::channel::<()>();
        let handler = async move {
            let _ = released.await;
            let _ = finished.send(());
        };
        let mut running = Box::pin(RunsToEnd::new(handler, &remainders));
        // Polled once, then dropped while waiting: as when a client leaves.
        assert!(futures::poll!(running.as_mut()).is_pending());
        drop(running);
        assert_eq!(remainders.running.load(Ordering::Acquire), 1);
        release.send(()).expect("the remainder still waits");
        has_finished.await.expect("the remainder ran to its end");
        remainders.all_done().await;
        assert_eq!(remainders.running.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_finished_handler_leaves_nothing_behind() {
        let remainders = Arc::new(Remainders::default());
        let answer = RunsToEnd::new(async { 7 }, &remainders).await;
        assert_eq!(answer, 7);
        assert_eq!(remainders.running.load(Ordering::Acquire), 0);
    }
}
