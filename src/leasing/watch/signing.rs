//! Standard Webhooks signatures (<https://www.standardwebhooks.com/>): `webhook-signature` is
//! `v1,<base64 of HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the
//! base64-decoded part of the secret after `whsec_`; several signatures are separated by
//! spaces (during a rotation, one per secret).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;

const PREFIX: &str = "whsec_";
/// Bytes of a new secret (the specification asks for 24 to 64).
const SECRET_BYTES: usize = 32;

/// A new secret, `whsec_<base64 of 32 random bytes>`.
pub fn new_secret() -> String {
    let mut key = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut key);
    format!("{PREFIX}{}", STANDARD.encode(key))
}

/// One `v1,` signature of a message with `secret`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    // Our own secrets always decode; anything else signs with its text as the key rather than
    // failing a delivery.
    let encoded = secret.strip_prefix(PREFIX).unwrap_or(secret);
    let key = STANDARD.decode(encoded).unwrap_or_else(|_| encoded.as_bytes().to_vec());
    let mut mac = Hmac::<sha2_hmac::Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header: one signature per secret, space separated.
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &str) -> String {
    secrets.iter().map(|secret| sign(secret, id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the specification's reference libraries (standard-webhooks, "Example").
    #[test]
    fn signs_the_specification_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn new_secrets_differ_and_decode() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert_eq!(STANDARD.decode(a.strip_prefix(PREFIX).unwrap()).unwrap().len(), SECRET_BYTES);
        assert_eq!(signature_header(&[&a, &b], "m", 1, "{}").split(' ').count(), 2);
    }
}
