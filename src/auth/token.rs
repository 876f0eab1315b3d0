//! Personal access tokens: `<id>|<40 random characters>`.
//!
//! The id finds the row; the secret is checked against the stored SHA-256 in constant time.

use rand::Rng;
use rand::distr::Alphanumeric;
use subtle::ConstantTimeEq;

pub const SECRET_LEN: usize = 40;

/// A token as presented by a client, split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedToken<'a> {
    pub id: i64,
    pub secret: &'a str,
}

/// Parses `<id>|<secret>`; anything else is `None`.
/// The token of an `Authorization` value `Bearer <token>`. The scheme is matched without regard
/// to case (`bearer` too), as RFC 7235 says of authentication schemes.
pub fn from_authorization(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub fn parse(token: &str) -> Option<PresentedToken<'_>> {
    let (id, secret) = token.split_once('|')?;
    // The id exactly as issued: digits without a leading zero (`01|…` names no token).
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || (id.len() > 1 && id.starts_with('0')) {
        return None;
    }
    if secret.len() != SECRET_LEN || !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some(PresentedToken { id: id.parse().ok()?, secret })
}

pub fn new_secret() -> String {
    rand::rng().sample_iter(&Alphanumeric).take(SECRET_LEN).map(char::from).collect()
}

/// Hex SHA-256 of a secret, as stored.
pub fn digest(secret: &str) -> String {
    crate::digest::sha256_hex(secret.as_bytes())
}

/// Compares a presented secret with a stored digest without leaking where they differ.
pub fn matches(secret: &str, stored_digest: &str) -> bool {
    digest(secret).as_bytes().ct_eq(stored_digest.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_well_formed_tokens() {
        let secret = new_secret();
        assert_eq!(secret.len(), SECRET_LEN);
        let token = format!("12|{secret}");
        assert_eq!(parse(&token), Some(PresentedToken { id: 12, secret: &secret }));
        for bad in [
            "",
            "12",
            "|x",
            "x|".to_string().as_str(),
            "12|short",
            "-1|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "012|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "99999999999999999999999|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(parse("1|aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"), None);
    }

    #[test]
    fn digest_matches_only_its_secret() {
        let d = digest("abc");
        assert_eq!(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(matches("abc", &d));
        assert!(!matches("abd", &d));
    }
}
