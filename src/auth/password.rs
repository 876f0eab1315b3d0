//! Password hashing with argon2id (the crate's defaults: m=19 MiB, t=2, p=1).

use argon2::{Argon2, PasswordHasher, PasswordVerifier};
use rand::RngCore;

/// Hashes a password into a PHC string (`$argon2id$v=19$...`).
pub fn hash(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("password hashing failed: {e}"))
}

/// Checks a password against a PHC string; a malformed hash never verifies.
pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default().verify_password(password.as_bytes(), phc).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_are_argon2id_salted_and_verify() {
        let a = super::hash("correct horse").unwrap();
        let b = super::hash("correct horse").unwrap();
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b);
        assert!(super::verify("correct horse", &a));
        assert!(!super::verify("wrong horse", &a));
        assert!(!super::verify("correct horse", "not a hash"));
    }
}
