//! SHA-256 as lower-case hex: token secrets, stored files, idempotent request bodies.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a presented secret equals the expected one, in time independent of where they
/// differ and of the expected secret's length (both are hashed to 32 bytes first).
pub fn same_secret(presented: &str, expected: &str) -> bool {
    Sha256::digest(presented.as_bytes()).ct_eq(&Sha256::digest(expected.as_bytes())).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digest() {
        assert_eq!(super::sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn secrets_compare_by_value() {
        assert!(super::same_secret("metrics-000", "metrics-000"));
        assert!(!super::same_secret("metrics-00", "metrics-000"));
        assert!(!super::same_secret("", "metrics-000"));
    }
}
