//! Signals: Ctrl-C and SIGTERM stop `serve` gracefully and long commands after their current
//! page or record.

use crate::fieldreport::service::FieldReportService;

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: a signal sent right after the service said it listens must not
/// find the default action (the process killed without a clean stop).
pub(super) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = term.recv() => {}
        }
    }
}

/// Long command-line work stops after its current page or record on Ctrl-C or SIGTERM,
/// releasing what it holds, so that running the command again resumes it.
pub(super) fn stop_on_signal(service: &FieldReportService) {
    let service = service.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        eprintln!("stopping after the current page…");
        service.request_stop();
    });
}
