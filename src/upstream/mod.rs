//! Thin wrappers over the generated upstream clients: configuration, time-outs, retries and
//! the mapping of every failure to one [`UpstreamError`].

pub mod fieldreport;
pub mod leasing;

use std::future::Future;
use std::time::Duration;

/// The upstream systems, as named in errors and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Leasing,
    FieldReport,
    Erp,
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            System::Leasing => "leasing provider",
            System::FieldReport => "field-report system",
            System::Erp => "ERP",
        })
    }
}

/// Why a call to an upstream system did not give a usable answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("the {system} is not configured: set {setting}")]
    NotConfigured { system: System, setting: &'static str },
    #[error("the {system} did not answer in time")]
    Timeout { system: System },
    #[error("the {system} could not be reached: {detail}")]
    Unreachable { system: System, detail: String },
    /// The upstream answered with an error status; `message` summarises its error body.
    #[error("the {system} answered {status}: {message}")]
    Refused { system: System, status: u16, message: String },
    #[error("the {system} sent an answer that could not be read: {detail}")]
    Malformed { system: System, detail: String },
    #[error("the {system} client is misconfigured: {detail}")]
    Client { system: System, detail: String },
}

impl UpstreamError {
    /// Worth another try for a read: the upstream may answer next time.
    pub fn is_transient(&self) -> bool {
        match self {
            UpstreamError::Unreachable { .. } => true,
            UpstreamError::Refused { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    /// Maps a transport error; the URL is left out (its query may carry secrets).
    pub fn from_reqwest(system: System, error: reqwest::Error) -> UpstreamError {
        let error = error.without_url();
        if error.is_timeout() {
            return UpstreamError::Timeout { system };
        }
        if error.is_decode() {
            return UpstreamError::Malformed { system, detail: error_chain(&error) };
        }
        UpstreamError::Unreachable { system, detail: error_chain(&error) }
    }
}

/// An error and its sources in one line.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

/// Shortens an upstream's error text for a `message`.
pub fn summarise(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= 300 {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(300).collect::<String>())
    }
}

/// Runs a read up to three times, backing off 100 ms then 400 ms, while it fails transiently.
pub async fn retry_read<T, F, Fut>(mut call: F) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match call().await {
            Err(error) if error.is_transient() && attempt < 3 => {
                tokio::time::sleep(delay).await;
                delay *= 4;
                attempt += 1;
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_are_retried_only_while_transient() {
        let mut calls = 0;
        let result: Result<u8, _> = retry_read(|| {
            calls += 1;
            let n = calls;
            async move {
                if n < 3 {
                    Err(UpstreamError::Refused { system: System::Leasing, status: 503, message: "busy".into() })
                } else {
                    Ok(7)
                }
            }
        })
        .await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(calls, 3);

        let mut calls = 0;
        let result: Result<u8, _> = retry_read(|| {
            calls += 1;
            async { Err(UpstreamError::Refused { system: System::Leasing, status: 404, message: "gone".into() }) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls, 1, "a 404 is not retried");
    }

    #[test]
    fn summaries_are_bounded() {
        assert_eq!(summarise("  short "), "short");
        assert_eq!(summarise(&"x".repeat(500)).chars().count(), 301);
    }
}
