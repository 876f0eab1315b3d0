//! The secret values of this process's configuration, and their removal from text that came
//! from elsewhere (an upstream's error body, a library's error) before it becomes an error
//! message or a log line. An upstream that echoes what it received (an `Authorization`
//! header, a query string) would otherwise hand our own credentials to a caller.
//!
//! Every setting read as a secret ([`super::settings::Settings::secret`]) is registered, and
//! so are the forms a client sends it in (`register` by the clients: a Basic header's
//! base64 of `user:password`).

use std::sync::RwLock;

/// What replaces a secret in text.
pub const REDACTED: &str = "***";
/// Values shorter than this are not registered: they would match ordinary text.
const SHORTEST: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers a secret value (and nothing shorter than [`SHORTEST`]) for [`scrub`].
pub fn register(value: &str) {
    let value = value.trim();
    if value.chars().count() < SHORTEST {
        return;
    }
    let mut secrets = SECRETS.write().expect("secrets lock");
    if !secrets.iter().any(|known| known == value) {
        secrets.push(value.to_string());
        // Longest first: a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `text` with every registered secret value replaced by [`REDACTED`].
pub fn scrub(text: &str) -> String {
    let secrets = SECRETS.read().expect("secrets lock");
    let mut text = text.to_string();
    for secret in secrets.iter() {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn registered_values_are_scrubbed_and_short_ones_ignored() {
        super::register("hunter2-secret");
        super::register("hunter2-secret-longer");
        super::register("abc");
        assert_eq!(super::scrub("got hunter2-secret-longer and hunter2-secret, abc"), "got *** and ***, abc");
    }
}
