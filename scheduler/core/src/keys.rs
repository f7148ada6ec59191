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
    fn keys_are_random_and_hashes_stable() {
        let a = generate_api_key();
        assert!(a.starts_with("sk_") && a.len() == 46, "{a}");
        assert_ne!(a, generate_api_key());
        assert_eq!(hash_api_key(&a), hash_api_key(&a));
        assert_ne!(hash_api_key(&a), a);
        let s = generate_signing_secret();
        assert!(crate::signing::SigningKey::parse(&s).is_ok());
    }
}
