//! The `error_code`s a leasing flow can end with: answered by the leasing routes
//! (`crate::leasing::service::LeasingError::code`) and counted by the metrics as flow outcomes.

/// Every code `LeasingError::code` answers (a unit test of the leasing service keeps them equal).
pub const LEASING_ERROR_CODES: [&str; 19] = [
    "validation_failed",
    "declined",
    "cancelled",
    "missing_info",
    "already_past_signing",
    "not_ready_to_sign",
    "storage_error",
    "too_many_financing_requests",
    "service_unavailable",
    "upstream_not_configured",
    "upstream_timeout",
    "upstream_unavailable",
    "upstream_busy",
    "upstream_rejected",
    "upstream_error",
    "upstream_invalid_response",
    "upstream_client_error",
    "client_gone",
    "shutting_down",
];
