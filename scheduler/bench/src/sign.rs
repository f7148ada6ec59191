//! Standard Webhooks signatures, written here from the protocol in docs/executors.md rather than
//! taken from Sundial's code, so the sink checks Sundial's deliveries independently:
//! `webhook-signature: v1,<base64 HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>`,
//! key = base64 decoding of what follows `whsec_`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// An app's signing key (the decoded secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key(Vec<u8>);

impl Key {
    /// Parse `whsec_<base64>`.
    pub fn parse(secret: &str) -> anyhow::Result<Key> {
        let b64 = secret.strip_prefix("whsec_").ok_or_else(|| anyhow::anyhow!("secret without the whsec_ prefix"))?;
        let bytes = B64.decode(b64)?;
        anyhow::ensure!(!bytes.is_empty(), "empty secret");
        Ok(Key(bytes))
    }

    /// A fresh random key and its `whsec_` form (for the floor baseline).
    pub fn generate() -> (Key, String) {
        let bytes: [u8; 24] = rand::random();
        (Key(bytes.to_vec()), format!("whsec_{}", B64.encode(bytes)))
    }

    fn mac(&self, msg_id: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        m.update(msg_id.as_bytes());
        m.update(b".");
        m.update(timestamp.as_bytes());
        m.update(b".");
        m.update(body);
        m
    }

    /// The `webhook-signature` value: `v1,<base64>`.
    pub fn sign(&self, msg_id: &str, timestamp: &str, body: &[u8]) -> String {
        format!("v1,{}", B64.encode(self.mac(msg_id, timestamp, body).finalize().into_bytes()))
    }

    /// Does any of the space-separated `v1,` signatures match (constant-time compare)?
    pub fn verify(&self, msg_id: &str, timestamp: &str, signature_header: &str, body: &[u8]) -> bool {
        signature_header.split_whitespace().any(|candidate| {
            let Some(b64) = candidate.strip_prefix("v1,") else { return false };
            let Ok(sig) = B64.decode(b64) else { return false };
            self.mac(msg_id, timestamp, body).verify_slice(&sig).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_and_tamper() {
        let (key, secret) = Key::generate();
        assert_eq!(Key::parse(&secret).unwrap(), key);
        let sig = key.sign("msg_1", "1700000000", b"{}");
        assert!(key.verify("msg_1", "1700000000", &sig, b"{}"));
        assert!(key.verify("msg_1", "1700000000", &format!("v1,AAAA {sig}"), b"{}"), "any of several");
        assert!(!key.verify("msg_2", "1700000000", &sig, b"{}"));
        assert!(!key.verify("msg_1", "1700000001", &sig, b"{}"));
        assert!(!key.verify("msg_1", "1700000000", &sig, b"{ }"));
        assert!(Key::parse("sk_nope").is_err());
    }

    #[test]
    fn known_vector() {
        // HMAC-SHA256 with key "key" of "id.1.body", computed independently (python hmac).
        let key = Key::parse(&format!("whsec_{}", B64.encode(b"key"))).unwrap();
        assert_eq!(key.sign("id", "1", b"body"), format!("v1,{}", B64.encode(hex_decode(KNOWN))));
    }

    const KNOWN: &str = "b18037ffef0abf25db7b8280299cb4416285a0b2921c3abf416bb4c5067263bb";

    fn hex_decode(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }
}
