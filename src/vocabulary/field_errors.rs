//! Validation failures by field: what the domains report for invalid input and the API answers
//! as 422 with `errors` (`crate::error::ApiError::validation`).

use std::collections::BTreeMap;

/// Validation messages per field name.
pub type FieldErrors = BTreeMap<String, Vec<String>>;
