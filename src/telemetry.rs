//! Logging: one slog logger for the process, text or JSON.
//!
//! Nothing here ever receives a password, token, API key or `Authorization` header: request
//! lines carry the path without its query string, and configuration is logged through its
//! redacting `Debug`.

use std::sync::OnceLock;

use slog::{Drain, Logger, o};

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

mod json;
mod text;

static GLOBAL: OnceLock<Logger> = OnceLock::new();

/// Output format of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// Reads `LOG_FORMAT` (`text`, the default, or `json`).
    pub fn read(raw: &Settings) -> Result<LogFormat, ConfigError> {
        match raw.string_or("LOG_FORMAT", "text").to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(invalid("LOG_FORMAT", format!("expected text or json, got {other:?}"))),
        }
    }
}

/// Keeps the process logger's background writer alive; dropping it flushes the log.
pub struct LogGuard(#[allow(dead_code)] slog_async::AsyncGuard);

/// Builds the process logger writing to stderr through a background thread, and remembers it
/// for [`report_internal_error`]. Keep the guard until the process ends.
pub fn init(format: LogFormat) -> (Logger, LogGuard) {
    // stderr is unbuffered and the formatters write a record in many small pieces: one write
    // per line instead of one per piece (the bench's profile showed the log's `write` calls as
    // the largest cost of a request).
    let sink = std::io::LineWriter::new(std::io::stderr());
    let (drain, guard) = slog_async::Async::new(format_drain(format, sink)).chan_size(4096).build_with_guard();
    let logger = Logger::root(drain.fuse(), o!("service" => "integration-service"));
    let _ = GLOBAL.set(logger.clone());
    (logger, LogGuard(guard))
}

/// A logger writing synchronously to any sink (tests capture the log this way).
pub fn build<W: std::io::Write + Send + 'static>(format: LogFormat, sink: W) -> Logger {
    let drain = std::sync::Mutex::new(format_drain(format, sink)).fuse();
    Logger::root(drain, o!("service" => "integration-service"))
}

fn format_drain<W: std::io::Write + Send + 'static>(
    format: LogFormat,
    sink: W,
) -> Box<dyn Drain<Ok = (), Err = slog::Never> + Send> {
    match format {
        LogFormat::Json => Box::new(slog_json::Json::new(json::LineSafe(sink)).add_default_keys().build().fuse()),
        LogFormat::Text => {
            let decorator = text::EscapingDecorator::new(sink);
            Box::new(slog_term::FullFormat::new(decorator).build().fuse())
        }
    }
}

/// A logger that drops everything.
pub fn discard() -> Logger {
    Logger::root(slog::Discard, o!())
}

std::thread_local! {
    /// Set while [`quietly`] runs: the reports below log nothing.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` without the reports of this module: for errors made up to read their answer (the
/// document's error answers, `api::support::answers`), which nobody met.
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    let before = QUIET.replace(true);
    let result = f();
    QUIET.set(before);
    result
}

fn logger() -> Option<&'static Logger> {
    if QUIET.get() { None } else { GLOBAL.get() }
}

/// Logs the detail of an error whose client-facing message is generic.
pub fn report_internal_error(detail: &str) {
    if let Some(log) = logger() {
        slog::error!(log, "internal error"; "detail" => crate::vocabulary::redaction::scrub(detail));
    }
}

/// Logs a failed leasing operation (the seed logs every one).
pub fn report_leasing_failure(error_code: &str, message: &str) {
    if let Some(log) = logger() {
        slog::warn!(log, "leasing operation failed"; "error_code" => error_code, "message" => message);
    }
}

/// Logs the detail of a failed storage call (its caller is told a short cause).
pub fn report_storage_failure(action: &str, key: &str, detail: &str) {
    if let Some(log) = GLOBAL.get() {
        slog::error!(log, "storage failed"; "action" => action, "key" => key, "detail" => detail.replace('\n', " "));
    }
}

/// Logs that a user's email, stored before emails were compared in NFKC, was left in its old
/// form because its normalized form is another user's (`Authenticator::normalize_stored_emails`).
pub fn report_email_left_as_stored(user_id: i64, other_user_id: Option<i64>) {
    if let Some(log) = logger() {
        slog::warn!(log, "a user's email looks like another user's and was left as stored; \
            `user delete` with that email as stored removes the one not wanted";
            "user_id" => user_id, "other_user_id" => other_user_id);
    }
}

/// Logs that the field-report system refused the described form of a `$filter` literal and
/// answered the other (an OData server of another version than its description says).
pub fn report_literal_form(set: &str, described: &str, used: &str) {
    if let Some(log) = logger() {
        slog::warn!(log, "the field-report system refused the described $filter literal; the sync uses the other form";
            "set" => set, "described" => described, "used" => used);
    }
}
