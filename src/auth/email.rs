//! What makes two emails one: they are compared after NFKC and lower case, so that forms that
//! look alike (decomposed accents, fullwidth letters, upper case) name one user at creation
//! and at login. Characters that show nothing (zero-width, direction overrides, controls) are
//! refused at creation: with them, two users' emails would look the same and differ.

use unicode_normalization::UnicodeNormalization;

use crate::vocabulary::field_errors::FieldErrors;

/// The longest email accepted (RFC 5321's path limit).
pub const MAX_EMAIL_LEN: usize = 254;

/// The email as stored and looked up.
pub(super) fn normalize_email(email: &str) -> String {
    // Lower case can undo NFC (U+0130 becomes `i` and a combining dot), hence NFC after it.
    email.trim().nfkc().collect::<String>().to_lowercase().nfc().collect()
}

/// The form emails were stored in before they were compared in NFKC: trimmed, lower case.
pub(super) fn stored_before_nfkc(email: &str) -> String {
    email.trim().to_lowercase()
}

pub(super) fn validate_email(email: &str, errors: &mut FieldErrors) {
    let valid = email.len() <= MAX_EMAIL_LEN
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.')
        })
        && !email.chars().any(|c| c.is_whitespace() || invisible(c));
    if !valid {
        errors.entry("email".into()).or_default().push("The email must be a valid email address.".into());
    }
}

/// Controls and the format characters of Unicode (category Cf) that show nothing.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}'
            | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}
