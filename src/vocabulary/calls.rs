//! How calls to the upstream systems are named and counted: shared by the upstream clients
//! (`crate::upstream`), which make the calls, and the metrics (`crate::metrics`), which count
//! them.

/// The upstream systems, as named in errors and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Leasing,
    FieldReport,
    Erp,
}

impl System {
    pub const ALL: [System; 3] = [System::Leasing, System::FieldReport, System::Erp];

    /// The name in metrics labels.
    pub fn label(self) -> &'static str {
        match self {
            System::Leasing => "leasing",
            System::FieldReport => "fieldreport",
            System::Erp => "erp",
        }
    }
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

/// How one call to an upstream system ended, as counted in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    /// The upstream answered with a status of this class.
    Http3xx,
    /// 4xx, 429 included.
    Http4xx,
    Http5xx,
    Timeout,
    ConnectionError,
    /// An answer that could not be read (not the expected JSON, an impossible status).
    InvalidResponse,
    /// The request could not be built or sent for a reason on our side.
    ClientError,
}

impl CallOutcome {
    pub const ALL: [CallOutcome; 8] = [
        CallOutcome::Ok,
        CallOutcome::Http3xx,
        CallOutcome::Http4xx,
        CallOutcome::Http5xx,
        CallOutcome::Timeout,
        CallOutcome::ConnectionError,
        CallOutcome::InvalidResponse,
        CallOutcome::ClientError,
    ];

    /// The outcome of an answer with this HTTP status.
    pub fn of_status(status: u16) -> CallOutcome {
        match status {
            200..=299 => CallOutcome::Ok,
            300..=399 => CallOutcome::Http3xx,
            400..=499 => CallOutcome::Http4xx,
            500..=599 => CallOutcome::Http5xx,
            _ => CallOutcome::InvalidResponse,
        }
    }

    /// The name in metrics labels.
    pub fn label(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Http3xx => "http_3xx",
            CallOutcome::Http4xx => "http_4xx",
            CallOutcome::Http5xx => "http_5xx",
            CallOutcome::Timeout => "timeout",
            CallOutcome::ConnectionError => "connection_error",
            CallOutcome::InvalidResponse => "invalid_response",
            CallOutcome::ClientError => "client_error",
        }
    }
}
