//! Standard Webhooks signing (<https://www.standardwebhooks.com/>), both directions.
//!
//! `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`,
//! timestamps in Unix seconds, secrets `whsec_<base64>`. Several signatures may be
//! sent (space separated) while a secret is being rotated; one match suffices.
//! Comparison is constant-time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::keys::SECRET_PREFIX;

pub const HEADER_ID: &str = "webhook-id";
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const HEADER_SIGNATURE: &str = "webhook-signature";
/// Signatures older or newer than this are refused.
pub const TOLERANCE_SECS: i64 = 5 * 60;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signing secret must be `whsec_` followed by base64")]
    BadSecret,
    #[error("missing header `{0}`")]
    MissingHeader(&'static str),
    #[error("`webhook-timestamp` is not a Unix timestamp in seconds")]
    BadTimestamp,
    #[error("`webhook-timestamp` is outside the {TOLERANCE_SECS} second tolerance")]
    Stale,
    #[error("no signature in `webhook-signature` matches")]
    NoMatch,
}

#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    pub fn parse(secret: &str) -> Result<Self, SignatureError> {
        let b = secret.strip_prefix(SECRET_PREFIX).ok_or(SignatureError::BadSecret)?;
        let bytes = B64.decode(b).map_err(|_| SignatureError::BadSecret)?;
        if bytes.is_empty() {
            return Err(SignatureError::BadSecret);
        }
        Ok(SigningKey(bytes))
    }

    /// `v1,<base64 signature>` for one message.
    pub fn sign(&self, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
        format!("v1,{}", B64.encode(self.mac(msg_id, timestamp_secs, body)))
    }

    fn mac(&self, msg_id: &str, timestamp_secs: i64, body: &[u8]) -> Vec<u8> {
        let mut m = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        m.update(msg_id.as_bytes());
        m.update(b".");
        m.update(timestamp_secs.to_string().as_bytes());
        m.update(b".");
        m.update(body);
        m.finalize().into_bytes().to_vec()
    }
}

/// The `webhook-signature` value for a message signed with every given key
/// (the current secret first, then any still-valid previous one).
pub fn signature_header(keys: &[SigningKey], msg_id: &str, timestamp_secs: i64, body: &[u8]) -> String {
    keys.iter().map(|k| k.sign(msg_id, timestamp_secs, body)).collect::<Vec<_>>().join(" ")
}

/// Verify a message against any of `keys`. `now_secs` comes from the injected clock.
pub fn verify(
    keys: &[SigningKey],
    msg_id: Option<&str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_secs: i64,
) -> Result<(), SignatureError> {
    let msg_id = msg_id.filter(|s| !s.is_empty()).ok_or(SignatureError::MissingHeader(HEADER_ID))?;
    let ts = timestamp.ok_or(SignatureError::MissingHeader(HEADER_TIMESTAMP))?;
    let signature = signature.ok_or(SignatureError::MissingHeader(HEADER_SIGNATURE))?;
    let ts: i64 = ts.trim().parse().map_err(|_| SignatureError::BadTimestamp)?;
    if (now_secs - ts).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    for key in keys {
        let expected = key.mac(msg_id, ts, body);
        for candidate in signature.split_whitespace() {
            let Some(b64) = candidate.strip_prefix("v1,") else {
                continue;
            };
            let Ok(got) = B64.decode(b64) else { continue };
            if got.len() == expected.len() && bool::from(got.ct_eq(&expected)) {
                return Ok(());
            }
        }
    }
    Err(SignatureError::NoMatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example from the Standard Webhooks specification's reference tests.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn matches_the_reference_implementation() {
        let key = SigningKey::parse(SECRET).unwrap();
        let sig = key.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn verifies_within_tolerance_with_any_of_several_signatures() {
        let old = SigningKey::parse(SECRET).unwrap();
        let new = SigningKey::parse(&crate::keys::generate_signing_secret()).unwrap();
        let body = b"{}";
        let header = signature_header(&[new.clone(), old.clone()], "id1", 1000, body);
        assert!(verify(std::slice::from_ref(&old), Some("id1"), Some("1000"), Some(&header), body, 1100).is_ok());
        assert!(verify(std::slice::from_ref(&new), Some("id1"), Some("1000"), Some(&header), body, 1100).is_ok());
        assert_eq!(
            verify(std::slice::from_ref(&old), Some("id1"), Some("1000"), Some(&header), body, 1301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(std::slice::from_ref(&old), Some("id2"), Some("1000"), Some(&header), body, 1000),
            Err(SignatureError::NoMatch)
        );
        assert_eq!(
            verify(std::slice::from_ref(&old), Some("id1"), Some("1000"), Some(&header), b"{ }", 1000),
            Err(SignatureError::NoMatch)
        );
        assert_eq!(
            verify(&[old], None, Some("1000"), Some(&header), body, 1000),
            Err(SignatureError::MissingHeader(HEADER_ID))
        );
    }

    #[test]
    fn refuses_malformed_secrets() {
        assert!(SigningKey::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
        assert!(SigningKey::parse("whsec_***").is_err());
    }
}
