//! Validation failures by field: what the domains report for invalid input and the API answers
//! as 422 with `errors` (`crate::error::ApiError::validation`).

use std::collections::BTreeMap;

/// Validation messages per field name.
pub type FieldErrors = BTreeMap<String, Vec<String>>;

/// Every message, each after its field: `stage: The stage is 1, 2 or 3.; type: …`, for a
/// line of text (the command line, a log) where the 422's `errors` object is not shown.
pub fn describe(errors: &FieldErrors) -> String {
    let lines: Vec<String> =
        errors.iter().flat_map(|(field, messages)| messages.iter().map(move |m| format!("{field}: {m}"))).collect();
    if lines.is_empty() { "The given data was invalid.".to_string() } else { lines.join("; ") }
}
