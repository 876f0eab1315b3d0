//! Logging: one slog logger for the process, text or JSON.
//!
//! Nothing here ever receives a password, token, API key or `Authorization` header: request
//! lines carry the path without its query string, and configuration is logged through its
//! redacting `Debug`.

use std::sync::OnceLock;

use slog::{Drain, Logger, o};

use crate::config::LogFormat;

static GLOBAL: OnceLock<Logger> = OnceLock::new();

/// Builds the process logger writing to stderr and remembers it for [`report_internal_error`].
pub fn init(format: LogFormat) -> Logger {
    let logger = build(format, std::io::stderr());
    let _ = GLOBAL.set(logger.clone());
    GLOBAL.get().cloned().unwrap_or(logger)
}

/// A logger writing to any sink (tests capture the log this way).
pub fn build<W: std::io::Write + Send + 'static>(format: LogFormat, sink: W) -> Logger {
    let drain = match format {
        LogFormat::Json => {
            let json = slog_json::Json::new(sink).add_default_keys().build().fuse();
            slog_async::Async::new(json).chan_size(4096).build().fuse()
        }
        LogFormat::Text => {
            let decorator = slog_term::PlainDecorator::new(sink);
            let term = slog_term::FullFormat::new(decorator).build().fuse();
            slog_async::Async::new(term).chan_size(4096).build().fuse()
        }
    };
    Logger::root(drain, o!("service" => "integration-service"))
}

/// A logger that drops everything.
pub fn discard() -> Logger {
    Logger::root(slog::Discard, o!())
}

/// Logs the detail of an error whose client-facing message is generic.
pub fn report_internal_error(detail: &str) {
    if let Some(log) = GLOBAL.get() {
        slog::error!(log, "internal error"; "detail" => detail);
    }
}
