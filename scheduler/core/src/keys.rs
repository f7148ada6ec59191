//! API keys and signing secrets: generation and one-way hashing.
//!
//! API keys are 32 random bytes, so a plain SHA-256 is a sufficient one-way hash
//! (no password stretching is needed for high-entropy secrets). Only the hash
//! and a short display prefix are stored.

use base64::Engine as _;
use rand::RngCore;
use sha2::{Digest, Sha256};

pub const API_KEY_PREFIX: &str = "sk_";
pub const SECRET_PREFIX: &str = "whsec_";

/// A fresh API key: `sk_` and 43 URL-safe base64 characters.
pub fn generate_api_key() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    format!("{API_KEY_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
}

/// The stored form of an API key.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The part of a key shown in listings, enough to recognise it.
pub fn display_prefix(key: &str) -> String {
    key.chars().take(10).collect()
}

/// A fresh Standard Webhooks signing secret: `whsec_` and base64 of 32 random bytes.
pub fn generate_signing_secret() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    format!("{SECRET_PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_stored_hash_is_sha256_hex_of_the_key() {
        // Known answers, from `printf %s KEY | sha256sum`.
        assert_eq!(
            hash_api_key("sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            "12576e7a680e2c3225b7d080cd3e1484262cfd95d5596652e4649a8325ac8ea8"
        );
        assert_eq!(hash_api_key(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn keys_and_secrets_are_32_random_bytes() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let a = generate_api_key();
        assert!(a.starts_with("sk_") && a.len() == 46, "{a}");
        assert_eq!(URL_SAFE_NO_PAD.decode(&a[3..]).unwrap().len(), 32, "{a}");
        assert_ne!(a, generate_api_key());
        assert_eq!(display_prefix(&a), a[..10]);
        let s = generate_signing_secret();
        assert!(s.starts_with("whsec_"), "{s}");
        assert_eq!(STANDARD.decode(&s[6..]).unwrap().len(), 32, "{s}");
        assert_ne!(s, generate_signing_secret());
    }
}
